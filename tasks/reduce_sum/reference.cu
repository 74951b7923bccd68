// Trusted reference for reduce_sum, entirely in double: RG blocks each sum a grid-strided share
// of x (per-thread partials, then a shared-memory tree) into a double scratch slot; one block then
// sums the RG partials and rounds the total to float once.

// kforge:param RB = 256
// kforge:param RG = 1024
// kforge:scratch partial float64 [RG]
// kforge:launch reduce_sum_partial_ref grid=(RG) block=(RB)
// kforge:launch reduce_sum_final_ref grid=(1) block=(RB)

// Sum over the block (RB threads, a power of two); thread 0 gets the result.
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
    return buf[0];
}

extern "C" __global__ void reduce_sum_partial_ref(const float* x, double* partial, int N)
{
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * RB + threadIdx.x; i < (size_t)N; i += (size_t)RG * RB)
        s += (double)x[i];
    s = block_sum_d(s);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s;
}

extern "C" __global__ void reduce_sum_final_ref(const double* partial, float* y)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < RG; i += RB)
        s += partial[i];
    s = block_sum_d(s);
    if (threadIdx.x == 0)
        y[0] = (float)s;
}
