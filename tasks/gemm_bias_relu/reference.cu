// Trusted reference for gemm_bias_relu: shared-memory tiles of A and B widened to double, one
// thread per element of C, the dot product, bias and ReLU evaluated in double and rounded once.

// kforge:param RT = 16
// kforge:launch gemm_bias_relu_ref grid=(cdiv(N, RT), cdiv(M, RT)) block=(RT, RT)

extern "C" __global__ void gemm_bias_relu_ref(const float* A, const float* B, const float* bias, float* C,
                                              int M, int N, int K)
{
    __shared__ double As[RT][RT];
    __shared__ double Bs[RT][RT];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * RT + tx;
    const int row = blockIdx.y * RT + ty;

    double acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += RT) {
        As[ty][tx] = (row < M && k0 + tx < K) ? (double)A[(size_t)row * K + k0 + tx] : 0.0;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? (double)B[(size_t)(k0 + ty) * N + col] : 0.0;
        __syncthreads();
        for (int kk = 0; kk < RT; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = (float)fmax(acc + (double)bias[col], 0.0);
}
