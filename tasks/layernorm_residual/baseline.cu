// Baseline layernorm_residual: one block per row. The first pass writes h = x + r and sums it, a
// second pass sums the squared deviations (two-pass: no cancellation), a third writes y; x and r
// are read three times (h is recomputed rather than read back). Block reductions are warp shuffles
// followed by shared memory across warps. Left for candidates: keeping the row of h on chip
// (registers or shared memory) so x and r are read once, a single-pass statistic (Welford), vector
// loads, several rows per block when N is small.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:launch layernorm_residual grid=(M) block=(BLOCK)

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

extern "C" __global__ void layernorm_residual(const float* __restrict__ x, const float* __restrict__ r,
                                              const float* __restrict__ gamma, const float* __restrict__ beta,
                                              float* __restrict__ y, float* __restrict__ h, int N, float eps)
{
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    const float* rr = r + base;

    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK) {
        const float hv = xr[j] + rr[j];
        h[base + j] = hv;
        acc += hv;
    }
    const float mean = block_sum(acc) / N;

    acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK) {
        const float d = (xr[j] + rr[j]) - mean;
        acc += d * d;
    }
    const float rstd = rsqrtf(block_sum(acc) / N + eps);

    for (int j = threadIdx.x; j < N; j += BLOCK)
        y[base + j] = ((xr[j] + rr[j]) - mean) * rstd * gamma[j] + beta[j];
}
