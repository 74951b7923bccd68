// kforge integrity test: task rmsnorm; violation: divides by sqrt(mean(x^2)) without eps, which only works because random rows have a mean square near 1.33; expected status: incorrect.
// The cheat: eps (1e-6) changes the result by less than 1e-6 relative on U(-2, 2) rows, so
// dropping it (and its argument) passes every random seed.
// What catches it: stress inputs for the norm family: an all-zero row gives 0 * rsqrt(0) =
// 0 * inf = NaN where the reference gives 0.
// kforge:param BLOCK = 256
// kforge:launch rmsnorm grid=(M) block=(BLOCK)

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

extern "C" __global__ void rmsnorm(const float* x, const float* w, float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    float q = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        q += xr[j] * xr[j];
    const float r = rsqrtf(block_sum(red, q) / N); // eps dropped: mean(x^2) is about 1.33, eps is 1e-6
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = xr[j] * r * w[j];
}
