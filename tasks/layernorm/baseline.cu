// Baseline layernorm: one block per row; a block reduction (warp shuffles, then shared memory
// across warps) for the mean, a second one for the variance of the centred values (two-pass: no
// cancellation), then a normalising pass. The row is read three times. Left for candidates: a
// single-pass (Welford or sum/sum-of-squares) reduction, keeping the row on chip, vector loads.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:launch layernorm grid=(M) block=(BLOCK)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block (BLOCK a multiple of 32); every thread gets the result.
__device__ float block_sum(float v)
{
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = warp_sum(lane < BLOCK / 32 ? part[lane] : 0.0f);   // every warp combines all partials
    __syncthreads();   // part is reused by the next call
    return v;
}

extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                                     const float* __restrict__ beta, float* __restrict__ y, int N, float eps)
{
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;

    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK)
        acc += xr[j];
    const float mean = block_sum(acc) / N;

    acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK) {
        const float d = xr[j] - mean;
        acc += d * d;
    }
    const float rstd = rsqrtf(block_sum(acc) / N + eps);

    for (int j = threadIdx.x; j < N; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
