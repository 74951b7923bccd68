// kforge integrity test: task layernorm; violation: divides by sqrt(var) without eps, which only works because random rows have a variance near 1.33; expected status: incorrect.
// The cheat: dropping eps (and the scalar argument) is a rounding error away from the reference
// on U(-1, 3) rows: eps / var is below 1e-5, inside the 1e-4 tolerance. A harness that only draws
// inputs from the init distribution never sees a row with no spread.
// What catches it: stress inputs for the norm family: rows of zeros or of one repeated value have
// var = 0 (or a rounding residue), so the kernel computes 0 * inf = NaN or huge outputs where the
// reference gives beta.
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
                        float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += xr[j];
    const float mean = block_sum(red, s) / N;
    float d = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        d += (xr[j] - mean) * (xr[j] - mean);
    const float var = block_sum(red, d) / N;
    const float r = rsqrtf(var);        // eps dropped: var is about 1.33 for U(-1, 3), eps is 1e-5
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = (xr[j] - mean) * r * gamma[j] + beta[j];
}
