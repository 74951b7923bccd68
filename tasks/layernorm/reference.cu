// Trusted reference for layernorm: one block per row, two-pass mean/variance in double
// (per-thread strided partials, then a shared-memory tree).

// kforge:param RB = 256
// kforge:launch layernorm_ref grid=(M) block=(RB)

// Sum over the block (RB threads, a power of two); every thread gets the result.
__device__ double block_sum_d(double v)
{
    __shared__ double buf[RB];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = RB / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    const double r = buf[0];
    __syncthreads();   // buf is reused by the next call
    return r;
}

extern "C" __global__ void layernorm_ref(const float* x, const float* gamma, const float* beta, float* y,
                                         int N, float eps)
{
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;

    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB)
        s += (double)xr[j];
    const double mean = block_sum_d(s) / N;

    double v = 0.0;
    for (int j = threadIdx.x; j < N; j += RB) {
        const double d = (double)xr[j] - mean;
        v += d * d;
    }
    const double var = block_sum_d(v) / N;   // biased variance, as in the usual layer norm definition

    const double rstd = 1.0 / sqrt(var + (double)eps);
    for (int j = threadIdx.x; j < N; j += RB)
        yr[j] = (float)(((double)xr[j] - mean) * rstd * (double)gamma[j] + (double)beta[j]);
}
