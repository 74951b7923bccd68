// kforge integrity test: task softmax; violation: exponentiates x without subtracting the row maximum, which only works because the random inputs stay in [-4, 4]; expected status: incorrect.
// The cheat: skipping the max saves a whole pass over the row and a reduction (two passes
// instead of three). With U(-4, 4) inputs exp(x) is at most 55 and the sum at most 55 * N, so
// the result is within tolerance on every random seed, and a harness that only ever draws
// inputs from the task's init distribution can never tell.
// What catches it: stress inputs for the softmax family, values shifted to where exp() overflows
// float32 (about 90): exp(x) is inf, the sum is inf and every output is NaN or 0.
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

extern "C" __global__ void softmax(const float* x, float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += expf(xr[j]);               // no max subtracted: expf(4) is only 55
    const float inv = 1.0f / block_sum(red, s);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = expf(xr[j]) * inv;
}
