// Trusted reference for sgemm: one thread per element of C, dot product accumulated in double.

// kforge:launch sgemm_ref grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16)

extern "C" __global__ void sgemm_ref(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * 16 + threadIdx.x;
    const int row = blockIdx.y * 16 + threadIdx.y;
    if (row >= M || col >= N)
        return;
    double acc = 0.0;
    for (int k = 0; k < K; ++k)
        acc += (double)A[(size_t)row * K + k] * (double)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (float)acc;
}
