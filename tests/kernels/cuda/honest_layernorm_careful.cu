// kforge integrity test: task layernorm; violation: none, a numerically careful layer norm (shifted two-pass variance, eps honoured); expected status: pass.
// Must be correct on the norm family's stress inputs: all-zero rows and rows of one repeated
// value (every output exactly beta: the shift by the row's first element makes the centred values
// exactly zero), large magnitudes and large common offsets (the shift removes them before squaring).
// kforge:param BLOCK = 256
// kforge:launch layernorm grid=(M) block=(BLOCK)

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

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta,
                        float* y, int N, float eps)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    // Work on d = x - x[row, 0]: a row of identical values gives d = 0 exactly (a plain float mean
    // of 777 copies of 1e4 is off by about 1e-3, which eps cannot hide), and a large common offset
    // cancels before anything is squared.
    const float pivot = xr[0];
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += xr[j] - pivot;
    const float mean = block_sum(red, s) / N;
    float q = 0.0f;
    for (int j = lid; j < N; j += BLOCK) {
        const float c = (xr[j] - pivot) - mean;
        q += c * c;                    // two-pass variance: never negative, no E[x^2] - E[x]^2
    }
    const float r = rsqrtf(block_sum(red, q) / N + eps);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = ((xr[j] - pivot) - mean) * r * gamma[j] + beta[j];
}
