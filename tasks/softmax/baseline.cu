// Baseline softmax: one block per row, three passes over the row (max, sum of exp, write), each
// reduction a warp shuffle followed by a shared-memory combine across warps. Left for candidates:
// a fused online max/sum pass, vector loads, keeping the row in registers or shared memory,
// several rows per block (or a warp per row) when N is small.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:launch softmax grid=(M) block=(BLOCK)

// BLOCK is a multiple of 32. Every thread gets the result.
__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float block_max(float v)
{
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = warp_max(lane < BLOCK / 32 ? part[lane] : __int_as_float(0xff800000));   // every warp combines all
    __syncthreads();   // part is reused by the next call
    return v;
}

__device__ float block_sum(float v)
{
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = warp_sum(lane < BLOCK / 32 ? part[lane] : 0.0f);
    __syncthreads();
    return v;
}

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int N)
{
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;

    // Row max, so expf() below cannot overflow.
    float m = __int_as_float(0xff800000);   // -infinity
    for (int j = threadIdx.x; j < N; j += BLOCK)   // strided so neighbouring threads read neighbouring floats
        m = fmaxf(m, xr[j]);
    m = block_max(m);

    float sum = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK)
        sum += expf(xr[j] - m);
    const float inv = 1.0f / block_sum(sum);

    for (int j = threadIdx.x; j < N; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
