// out = A @ B for KernelBench level-1 problem 1 (N x N) imported with `kforge import`: the
// shared-memory tiled kernel, one output element per thread.
// kforge:param TILE in {16, 32} = 32
// kforge:launch matmul grid=(cdiv(N, TILE), cdiv(N, TILE)) block=(TILE, TILE)

extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out,
                                  int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < N; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = row < N && k0 + threadIdx.x < N ? A[row * N + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = col < N && k0 + threadIdx.y < N ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < N && col < N)
        out[row * N + col] = acc;
}
