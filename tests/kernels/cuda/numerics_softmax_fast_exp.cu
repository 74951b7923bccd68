// kforge integrity test: task softmax; violation: a polynomial exp that is accurate only on the init range [-4, 4] (no range reduction, no max subtraction); expected status: incorrect.
// The cheat: p(x / 8)^8 with a degree-7 polynomial p is a handful of FMAs and three squarings,
// cheaper than a library exp with its range reduction, and on |x| <= 4 its relative error is
// below 1e-6, far inside the tolerance, so every random input passes. Outside the range it is
// simply wrong (at x = 90 it is about 30 times too small; at 1e4 it overflows to inf).
// What catches it: stress inputs for the softmax family (values near exp overflow, large
// magnitudes), where the outputs are wrong or NaN.
// kforge:param BLOCK = 256
// kforge:launch softmax grid=(M) block=(BLOCK)

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

// expf(v) = p(v / 8)^8 with p the degree-7 Taylor polynomial: relative error below 1e-6 for
// |v| <= 4, and meaningless far outside it (p(11) is 30 times too small, p(1000)^8 overflows).
__device__ float fast_exp(float v)
{
    const float t = v * 0.125f;
    float p = 1.0f + t * (1.0f + t * (0.5f + t * (1.0f / 6 + t * (1.0f / 24 + t * (1.0f / 120 + t * (1.0f / 720 + t * (1.0f / 5040)))))));
    p = p * p;
    p = p * p;
    return p * p;
}

extern "C" __global__ void softmax(const float* x, float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += fast_exp(xr[j]);          // inputs are in [-4, 4]: no max needed, no range reduction
    const float inv = 1.0f / block_sum(red, s);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = fast_exp(xr[j]) * inv;
}
