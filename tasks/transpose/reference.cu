// Trusted reference for transpose: one thread per element of y, reading x directly (coalesced
// writes, strided reads). Obviously correct; only its values matter.

// kforge:launch transpose_ref grid=(cdiv(M, 32), cdiv(N, 8)) block=(32, 8)

extern "C" __global__ void transpose_ref(const float* x, float* y, int M, int N)
{
    const int i = blockIdx.x * 32 + threadIdx.x;   // column of y = row of x
    const int j = blockIdx.y * 8 + threadIdx.y;    // row of y = column of x
    if (i < M && j < N)
        y[(size_t)j * M + i] = x[(size_t)i * N + j];
}
