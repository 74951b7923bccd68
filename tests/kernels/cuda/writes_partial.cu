// kforge integrity test: task softmax; violation: writes correct rows for the first half of the rows only; expected status: incorrect.
// kforge:param BLOCK = 256
// kforge:launch softmax_half grid=(M) block=(BLOCK)
extern "C" __global__ void softmax_half(const float* x, float* y, int M, int N)
{
    const int row = blockIdx.x;
    if (row >= M / 2)
        return;
    __shared__ float red[BLOCK];
    const float* in = x + (size_t)row * N;
    float m = -3.402823466e+38f;
    for (int j = threadIdx.x; j < N; j += BLOCK)
        m = fmaxf(m, in[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK)
        sum += expf(in[j] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int j = threadIdx.x; j < N; j += BLOCK)
        y[(size_t)row * N + j] = expf(in[j] - m) * inv;
}
