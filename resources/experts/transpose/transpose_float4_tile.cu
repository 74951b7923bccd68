// expert:name transpose_float4_tile
// expert:tasks transpose
// expert:pattern TR x TC shared-memory tile per block, float4 loads along x's rows and float4 stores along y's rows, all of a thread's loads issued before any store, scalar path for edge tiles and sizes not a multiple of 4

// Transpose at memory speed. The baseline's 32 x 32 tile moves 4 bytes per thread and access, so
// each warp instruction carries 128 bytes and few bytes are in flight per SM. Here a block of
// THREADS threads moves a TR x TC tile (64 x 64 = 16 KB by default):
//  - load: each thread reads (TR * TC / 4) / THREADS float4s of x's rows, all issued before any is
//    written to shared memory (more bytes in flight), and scatters them into the tile;
//  - store: each thread gathers 4 consecutive elements of one tile column (4 rows of x) and
//    writes them as one float4 of a row of y, so a warp writes 512 contiguous bytes.
//  - The tile's rows are padded by one float: the column gathers and the row scatters then meet at
//    most two threads of a warp per bank.
//  - STREAM = 1 marks loads and stores as streaming (evict-first, __ldcs/__stcs): nothing is read
//    twice, so neither needs to stay in L1 or L2.
//  - float4 access needs M % 4 == 0 and N % 4 == 0 (rows of x and y 16-byte aligned) and a whole
//    tile inside the matrix. Other tiles (the edges, the small variant's 67 x 1001) take a scalar
//    path with bounds checks: every element is still copied exactly once.
// Tuning: at 8192 x 8192 the grid is 128 x 128 tiles of 64 x 64; 32 x 32 tiles give 4x the blocks
// with 4 KB each; THREADS sets the float4s per thread (4 at 256 threads and 64 x 64).

// kforge:param TR in {32, 64} = 64
// kforge:param TC in {32, 64, 128} = 64
// kforge:param THREADS in {128, 256, 512} = 256
// kforge:param STREAM in {0, 1} = 1
// kforge:launch transpose grid=(cdiv(N, TC), cdiv(M, TR)) block=(THREADS, 1)

#define V4_PER_TILE (TR * TC / 4)
#define V4_PER_THREAD ((V4_PER_TILE + THREADS - 1) / THREADS)

__device__ __forceinline__ float4 load4(const float4* p)
{
#if STREAM
    return __ldcs(p);
#else
    return __ldg(p);
#endif
}

__device__ __forceinline__ void store4(float4* p, float4 v)
{
#if STREAM
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
transpose(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float tile[TR][TC + 1];   // tile[r][c] = x[r0 + r][c0 + c]
    const int c0 = blockIdx.x * TC;      // first column of x (= first row of y)
    const int r0 = blockIdx.y * TR;      // first row of x (= first column of y)
    const bool whole = ((M | N) & 3) == 0 && r0 + TR <= M && c0 + TC <= N;

    if (whole) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const size_t n4 = (size_t)(N >> 2);
        float4 v[V4_PER_THREAD];
#pragma unroll
        for (int k = 0; k < V4_PER_THREAD; ++k) {   // all loads first
            const int i = threadIdx.x + k * THREADS;
            if (V4_PER_TILE % THREADS == 0 || i < V4_PER_TILE)
                v[k] = load4(x4 + (size_t)(r0 + i / (TC / 4)) * n4 + (c0 >> 2) + i % (TC / 4));
        }
#pragma unroll
        for (int k = 0; k < V4_PER_THREAD; ++k) {
            const int i = threadIdx.x + k * THREADS;
            if (V4_PER_TILE % THREADS == 0 || i < V4_PER_TILE) {
                float* t = &tile[i / (TC / 4)][(i % (TC / 4)) * 4];
                t[0] = v[k].x;
                t[1] = v[k].y;
                t[2] = v[k].z;
                t[3] = v[k].w;
            }
        }
        __syncthreads();
        float4* y4 = reinterpret_cast<float4*>(y);
        const size_t m4 = (size_t)(M >> 2);
#pragma unroll
        for (int k = 0; k < V4_PER_THREAD; ++k) {
            const int i = threadIdx.x + k * THREADS;
            if (V4_PER_TILE % THREADS == 0 || i < V4_PER_TILE) {
                const int c = i / (TR / 4), q = i % (TR / 4);   // y row c0 + c, float4 q of the tile
                const float4 w = make_float4(tile[4 * q][c], tile[4 * q + 1][c], tile[4 * q + 2][c], tile[4 * q + 3][c]);
                store4(y4 + (size_t)(c0 + c) * m4 + (r0 >> 2) + q, w);
            }
        }
    } else {
        for (int i = threadIdx.x; i < TR * TC; i += THREADS) {
            const int r = i / TC, c = i % TC;   // consecutive threads read consecutive floats of a row
            if (r0 + r < M && c0 + c < N)
                tile[r][c] = x[(size_t)(r0 + r) * N + c0 + c];
        }
        __syncthreads();
        for (int i = threadIdx.x; i < TR * TC; i += THREADS) {
            const int c = i / TR, r = i % TR;   // consecutive threads write consecutive floats of a row
            if (r0 + r < M && c0 + c < N)
                y[(size_t)(c0 + c) * M + r0 + r] = tile[r][c];
        }
    }
}
