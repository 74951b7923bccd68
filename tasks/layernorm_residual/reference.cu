// Trusted reference for layernorm_residual: one block per row. h = x + r is a float32 add, written
// once; the mean and variance of that float h are taken in double (two-pass, per-thread strided
// partials, then a shared-memory tree) and y is evaluated in double and rounded once.

// kforge:param RB = 256
// kforge:launch layernorm_residual_ref grid=(M) block=(RB)

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
    const double res = buf[0];
    __syncthreads();   // buf is reused by the next call
    return res;
}

extern "C" __global__ void layernorm_residual_ref(const float* x, const float* r, const float* gamma,
                                                  const float* beta, float* y, float* h, int N, float eps)
{
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    const float* rr = r + base;

    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB) {
        const float hv = xr[j] + rr[j];
        h[base + j] = hv;
        s += (double)hv;
    }
    const double mean = block_sum_d(s) / N;

    double v = 0.0;
    for (int j = threadIdx.x; j < N; j += RB) {
        const double d = (double)(xr[j] + rr[j]) - mean;   // the same float h as written above
        v += d * d;
    }
    const double var = block_sum_d(v) / N;   // biased variance

    const double rstd = 1.0 / sqrt(var + (double)eps);
    for (int j = threadIdx.x; j < N; j += RB)
        y[base + j] = (float)(((double)(xr[j] + rr[j]) - mean) * rstd * (double)gamma[j] + (double)beta[j]);
}
