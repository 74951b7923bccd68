// Baseline transpose: the classic shared-memory tile. A block of 32 x 8 threads reads a 32 x 32
// tile of x row by row (coalesced), and writes it to y row by row (coalesced) from the transposed
// tile; the tile's extra column keeps the column reads free of bank conflicts. Left for
// candidates: vector loads and stores, more elements per thread, larger or non-square tiles.

// kforge:launch transpose grid=(cdiv(N, 32), cdiv(M, 32)) block=(32, 8)

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c0 = blockIdx.x * TILE;   // first column of x (= row of y) in this tile
    const int r0 = blockIdx.y * TILE;   // first row of x (= column of y)

    for (int r = ty; r < TILE; r += ROWS) {
        const int row = r0 + r, col = c0 + tx;
        if (row < M && col < N)
            tile[r][tx] = x[(size_t)row * N + col];
    }
    __syncthreads();
    for (int r = ty; r < TILE; r += ROWS) {
        const int yrow = c0 + r, ycol = r0 + tx;
        if (yrow < N && ycol < M)
            y[(size_t)yrow * M + ycol] = tile[tx][r];
    }
}
