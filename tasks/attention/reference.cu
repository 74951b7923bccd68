// Trusted reference for attention: one block per query row (i, bh), everything in double. The
// row's S scaled scores are kept in dynamic shared memory (S doubles, so S <= 6144); a block max
// and a block sum give the softmax, then one thread per output column sums p[j] * V[j, d].

// kforge:param RB = 128
// kforge:launch attention_ref grid=(S, BH) block=(RB, 1) smem=S*8

// Max and sum over the block (RB threads, a power of two); every thread gets the result.
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
    __syncthreads();
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

extern "C" __global__ void attention_ref(const float* Q, const float* K, const float* V, float* O, int S, int D)
{
    extern __shared__ double p[];   // scores, then unnormalised probabilities, of this query row
    const int i = blockIdx.x, bh = blockIdx.y;
    const float* q = Q + ((size_t)bh * S + i) * D;
    const float* Kb = K + (size_t)bh * S * D;
    const float* Vb = V + (size_t)bh * S * D;
    const double scale = 1.0 / sqrt((double)D);

    double m = -__longlong_as_double(0x7ff0000000000000LL);   // -infinity
    for (int j = threadIdx.x; j < S; j += RB) {
        double a = 0.0;
        for (int d = 0; d < D; ++d)
            a += (double)q[d] * (double)Kb[(size_t)j * D + d];
        a *= scale;
        p[j] = a;
        m = fmax(m, a);
    }
    m = block_max_d(m);

    double l = 0.0;
    for (int j = threadIdx.x; j < S; j += RB) {
        const double e = exp(p[j] - m);
        p[j] = e;
        l += e;
    }
    l = block_sum_d(l);   // its barriers also publish every p[j] to the whole block

    for (int d = threadIdx.x; d < D; d += RB) {
        double a = 0.0;
        for (int j = 0; j < S; ++j)
            a += p[j] * (double)Vb[(size_t)j * D + d];
        O[((size_t)bh * S + i) * D + d] = (float)(a / l);
    }
}
