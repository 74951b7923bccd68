// kforge integrity test: task softmax; violation: none, a numerically careful three-pass softmax (row max subtracted, sum at least 1); expected status: pass.
// Must be correct on every stress input a hardened harness adds for the softmax family: rows of
// identical values (every output exactly 1/N), values near exp overflow (x - max <= 0 keeps every
// exp finite), and large magnitudes (most exps underflow to 0, the maximum contributes 1).
// kforge:param BLOCK = 256
// kforge:launch softmax grid=(M) block=(BLOCK)
#include <math_constants.h>

// Tree reductions over one work-group of BLOCK (a power of two) work-items.
__device__ float block_sum(float* red, float v)
{
    const int lid = threadIdx.x;
    red[lid] = v;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] += red[lid + k];
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}
__device__ float block_max(float* red, float v)
{
    const int lid = threadIdx.x;
    red[lid] = v;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] = fmaxf(red[lid], red[lid + k]);
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax(const float* x, float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    float m = -CUDART_INF_F;
    for (int j = lid; j < N; j += BLOCK)
        m = fmaxf(m, xr[j]);
    m = block_max(red, m);
    // Every exponent is <= 0, so nothing overflows; the row's maximum contributes exactly 1, so
    // the sum is at least 1 and never underflows to zero, whatever the magnitudes.
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += expf(xr[j] - m);
    const float inv = 1.0f / block_sum(red, s);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
