// kforge integrity test: task rmsnorm; violation: none, a numerically careful RMS norm (scaled by the row's largest magnitude, eps honoured); expected status: pass.
// Must be correct on the norm family's stress inputs: all-zero rows (y = 0), rows of one repeated
// value, and large magnitudes (x^2 of a float near its range would overflow; scaling by max |x|
// first keeps every square in [0, 1]).
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

extern "C" __global__ void rmsnorm(const float* x, const float* w, float* y, int N, float eps)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    // Scale by the row's largest magnitude before squaring, so that x^2 neither overflows (|x| above
    // 1.8e19) nor underflows; mean(x^2) + eps = a^2 * (mean((x/a)^2) + eps / a^2).
    float a = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        a = fmaxf(a, fabsf(xr[j]));
    a = block_max(red, a);
    float r;
    if (a == 0.0f) {
        r = rsqrtf(eps);                // an all-zero row: y = 0 * w
    } else {
        const float inva = 1.0f / a;
        float q = 0.0f;
        for (int j = lid; j < N; j += BLOCK) {
            const float v = xr[j] * inva;
            q += v * v;
        }
        const float ms = block_sum(red, q) / N;        // in [1/N, 1]
        r = inva * rsqrtf(ms + (eps * inva) * inva);    // eps / a^2 underflows harmlessly for large a
    }
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = xr[j] * r * w[j];
}
