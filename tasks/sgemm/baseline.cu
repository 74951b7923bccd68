// Baseline sgemm: the textbook shared-memory tiled kernel. Each block stages TILE x TILE tiles of
// A and B in shared memory and each thread computes one element of C, so every element fetched
// from global memory is reused TILE times. Left for candidates: register blocking (several C
// elements per thread), vector loads, double buffering / cp.async, larger and rectangular tiles.

// kforge:param TILE in {16, 32} = 16
// kforge:launch sgemm grid=(cdiv(N, TILE), cdiv(M, TILE)) block=(TILE, TILE)

extern "C" __global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                 float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    // x runs along N so that a warp's reads of B and writes of C are contiguous.
    const int col = blockIdx.x * TILE + tx;
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
        C[(size_t)row * N + col] = acc;
}
