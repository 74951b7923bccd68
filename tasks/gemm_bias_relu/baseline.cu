// Baseline gemm_bias_relu: the textbook shared-memory tiled SGEMM (one element of C per thread,
// TILE x TILE tiles of A and B staged in shared memory) with the bias add and the ReLU fused into
// the store. Left for candidates: register blocking (several C elements per thread), vector loads,
// double buffering / cp.async, larger and rectangular tiles.

// kforge:param TILE in {16, 32} = 16
// kforge:launch gemm_bias_relu grid=(cdiv(N, TILE), cdiv(M, TILE)) block=(TILE, TILE)

extern "C" __global__ void gemm_bias_relu(const float* __restrict__ A, const float* __restrict__ B,
                                          const float* __restrict__ bias, float* __restrict__ C,
                                          int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;   // x runs along N: a warp's reads of B and writes of C are contiguous
    const int row = blockIdx.y * TILE + ty;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Edge tiles overhang odd M, N and K: pad with zeros, which add nothing.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = fmaxf(acc + bias[col], 0.0f);
}
