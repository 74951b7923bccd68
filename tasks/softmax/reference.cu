// Trusted reference for softmax: one block per row, everything in double (per-thread strided
// partials, then a shared-memory tree). Only its values matter, not its speed.

// kforge:param RB = 256
// kforge:launch softmax_ref grid=(M) block=(RB)

// Sum and max over the block (RB threads, a power of two); every thread gets the result.
__device__ double block_max_d(double v)
{
    __shared__ double buf[RB];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = RB / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] = fmax(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    const double r = buf[0];
    __syncthreads();   // buf is reused by the next call
    return r;
}

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
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax_ref(const float* x, float* y, int N)
{
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;

    double m = -__longlong_as_double(0x7ff0000000000000LL);   // -infinity
    for (int j = threadIdx.x; j < N; j += RB)
        m = fmax(m, (double)xr[j]);
    m = block_max_d(m);

    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += RB)
        s += exp((double)xr[j] - m);
    s = block_sum_d(s);

    for (int j = threadIdx.x; j < N; j += RB)
        yr[j] = (float)(exp((double)xr[j] - m) / s);
}
