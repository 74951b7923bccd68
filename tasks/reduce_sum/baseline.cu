// Baseline reduce_sum, the classic two-kernel reduction: GRID blocks each sum a grid-strided share
// of x (per-thread float partials, a warp shuffle, then shared memory across warps) into a scratch
// slot; a second kernel of one block sums the GRID partials and writes y. Deterministic.
// Left for candidates: vector loads (float4) and more loads in flight per thread, a grid sized to
// the machine, a single kernel (last-block-done or atomics into a scratch accumulator).

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:param GRID in {264, 528, 1056, 2112} = 1056
// kforge:scratch partial float32 [GRID]
// kforge:launch reduce_sum_partial grid=(GRID) block=(BLOCK)
// kforge:launch reduce_sum_final grid=(1) block=(BLOCK)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block (BLOCK a multiple of 32); thread 0 gets the result.
__device__ float block_sum(float v)
{
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    return warp_sum(lane < BLOCK / 32 ? part[lane] : 0.0f);
}

extern "C" __global__ void reduce_sum_partial(const float* __restrict__ x, float* __restrict__ partial, int N)
{
    float acc = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < N; i += GRID * BLOCK)   // coalesced grid-stride loop
        acc += x[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

extern "C" __global__ void reduce_sum_final(const float* __restrict__ partial, float* __restrict__ y)
{
    float acc = 0.0f;
    for (int i = threadIdx.x; i < GRID; i += BLOCK)
        acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        y[0] = acc;
}
