// Trusted reference for row_sum: one block per row, summed in double (per-thread strided partials,
// then a shared-memory tree), exact enough that a candidate's summation order is the only error left.

// kforge:param RB = 256
// kforge:launch row_sum_ref grid=(M) block=(RB)

extern "C" __global__ void row_sum_ref(const float* x, float* y, int N)
{
    __shared__ double buf[RB];   // RB is a power of two
    const float* xr = x + (size_t)blockIdx.x * N;
    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB)
        s += (double)xr[j];
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
