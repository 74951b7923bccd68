// Baseline row_sum: one block per row; each thread sums a strided slice, a warp shuffle reduces
// each warp, and the warps' partial sums are combined through shared memory. Left for candidates:
// vector loads, several rows per block (or a warp per row), more loads in flight per thread.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:launch row_sum grid=(M) block=(BLOCK)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, int N)
{
    __shared__ float part[32];   // one partial sum per warp; BLOCK is a multiple of 32
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* xr = x + (size_t)blockIdx.x * N;

    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK)   // strided so neighbouring threads read neighbouring floats
        acc += xr[j];
    acc = warp_sum(acc);
    if (lane == 0)
        part[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = warp_sum(lane < BLOCK / 32 ? part[lane] : 0.0f);
        if (lane == 0)
            y[blockIdx.x] = acc;
    }
}
