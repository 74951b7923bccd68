// Trusted reference for gemv: one block per row, the dot product accumulated in double
// (per-thread strided partials, then a shared-memory tree).

// kforge:param RB = 256
// kforge:launch gemv_ref grid=(M) block=(RB)

extern "C" __global__ void gemv_ref(const float* A, const float* x, float* y, int N)
{
    __shared__ double buf[RB];   // RB is a power of two
    const float* a = A + (size_t)blockIdx.x * N;
    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB)
        s += (double)a[j] * (double)x[j];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int h = RB / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[blockIdx.x] = (float)buf[0];
}
