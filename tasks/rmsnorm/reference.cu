// Trusted reference for rmsnorm: one block per row, the mean of squares and the scaling in double
// (per-thread strided partials, then a shared-memory tree).

// kforge:param RB = 256
// kforge:launch rmsnorm_ref grid=(M) block=(RB)

extern "C" __global__ void rmsnorm_ref(const float* x, const float* w, float* y, int N, float eps)
{
    __shared__ double buf[RB];   // RB is a power of two
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;

    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB) {
        const double v = (double)xr[j];
        s += v * v;
    }
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int h = RB / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
    const double rms = sqrt(buf[0] / N + (double)eps);

    for (int j = threadIdx.x; j < N; j += RB)
        yr[j] = (float)((double)xr[j] / rms * (double)w[j]);
}
