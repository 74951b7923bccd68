// Baseline for tile_add: one thread per element, a row per block row.

// kforge:launch tile_add_rows grid=(cdiv(N, 256), M) block=(256, 1)

extern "C" __global__ void tile_add_rows(const float* __restrict__ x, float* __restrict__ y, int N)
{
    const int j = blockIdx.x * 256 + threadIdx.x;
    const size_t row = (size_t)blockIdx.y * N;
    if (j < N)
        y[row + j] = x[row + j] + (float)j;
}
