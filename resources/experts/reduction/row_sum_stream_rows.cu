// expert:name row_sum_stream_rows
// expert:tasks row_sum
// expert:pattern each block streams RPB groups of BLOCK / TPR rows, grid-stride, with the next group's float4 loads issued before the current group is reduced; one barrier per group (double-buffered shared slots)

// Row sums that keep DRAM busy between rows. row_sum_vector_rows gives each block one group of
// rows: after its loads land, a block only adds, reduces and exits, and until the next block on
// that SM has issued its own loads those bytes are not in flight. Here each block walks RPB groups
// of ROWS = BLOCK / TPR rows (group g, g + gridDim.x, ...: at any moment the blocks read
// neighbouring rows), and the first UNROLL float4s per thread of the next group are loaded before
// the current group's sums are reduced and stored, so the reduction, the barrier and the store
// overlap the next group's loads. At N = 4096 with TPR = 512 and UNROLL = 2 that is the whole next
// row.
//  - Rows longer than UNROLL * TPR float4s take further rounds of UNROLL loads, not prefetched.
//  - float4 loads need N % 4 == 0 (every row then starts 16-byte aligned); otherwise a plain
//    scalar loop, strided by TPR, reads each row (no prefetch: the small variant's odd sizes).
//  - Rows past M load nothing and store nothing but still reach every barrier: a block's threads
//    all walk the same groups, so the barrier count is uniform.
//  - Shared slots are double-buffered by the group's parity: a group's slots are written after
//    the previous group's barrier, and read before the next group's barrier, so one barrier per
//    group suffices.
//  - HINT 1 loads evict-first (__ldcs: x is read once), HINT 0 with the default policy.
//  - OCC is the number of threads per SM the registers are limited for (__launch_bounds__).
//  - RPB = 1 is one group per block, the same schedule as row_sum_vector_rows.
// Tuning: RPB sets how many groups a block streams: 4096 rows of 1 row per block need RPB = 8 to
// fit in one wave of 4 blocks per SM on a 132-SM GPU.

// kforge:param BLOCK in {256, 512, 1024} = 512
// kforge:param TPR in {128, 256, 512, 1024} = 512
// kforge:param UNROLL in {1, 2, 4} = 2
// kforge:param RPB in {1, 2, 4, 8, 16} = 4
// kforge:param HINT in {0, 1} = 1
// kforge:param OCC in {1024, 2048} = 2048
// kforge:require TPR <= BLOCK && BLOCK <= OCC
// kforge:require UNROLL <= 2 || OCC == 1024
// kforge:launch row_sum grid=(cdiv(M, BLOCK / TPR * RPB)) block=(BLOCK)

#define ROWS (BLOCK / TPR)   // rows per group
#define WPR (TPR / 32)       // warps per row

__device__ __forceinline__ float4 load4(const float4* p)
{
#if HINT == 1
    return __ldcs(p);
#else
    return *p;
#endif
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Loads the first UNROLL float4s of this thread's share of row `row` (zeros past the row or past M).
__device__ __forceinline__ void load_round(const float4* __restrict__ x4, int row, int M, int n4, int t,
                                           float4 (&v)[UNROLL])
{
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const int i = t + u * TPR;
        v[u] = (row < M && i < n4) ? load4(x4 + (size_t)row * n4 + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// Sums the row's partial sums over its warps and stores y[row]; one barrier, on slots[parity].
__device__ __forceinline__ void store_row(float acc, float (*red)[BLOCK / 32], int parity, int row, int M,
                                          int t, int r, float* __restrict__ y)
{
    acc = warp_sum(acc);
    if (WPR == 1) {
        if (t == 0 && row < M)
            y[row] = acc;
    } else {
        if ((threadIdx.x & 31) == 0)
            red[parity][threadIdx.x >> 5] = acc;
        __syncthreads();
        if (t == 0 && row < M) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < WPR; ++w)
                s += red[parity][r * WPR + w];
            y[row] = s;
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
row_sum(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float red[2][BLOCK / 32];
    const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int groups = (M + ROWS - 1) / ROWS;
    int parity = 0;

    if ((N & 3) == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int n4 = N >> 2;
        int g = blockIdx.x;
        float4 next[UNROLL];
        load_round(x4, g * ROWS + r, M, n4, t, next);
        for (; g < groups; g += gridDim.x, parity ^= 1) {
            const int row = g * ROWS + r;
            float part[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                part[u] = (next[u].x + next[u].y) + (next[u].z + next[u].w);
            // the next group's first round goes out before this group is finished
            load_round(x4, (g + gridDim.x) * ROWS + r, M, n4, t, next);
            if (row < M) {
                const float4* xr = x4 + (size_t)row * n4;
                int i = t + UNROLL * TPR;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
                for (; i + (UNROLL - 1) * TPR < n4; i += UNROLL * TPR) {
                    float4 v[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        v[u] = load4(xr + i + u * TPR);
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        part[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
                }
                for (; i < n4; i += TPR) {
                    const float4 v = load4(xr + i);
                    part[0] += (v.x + v.y) + (v.z + v.w);
                }
            }
            float acc = 0.0f;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                acc += part[u];
            store_row(acc, red, parity, row, M, t, r, y);
        }
    } else {
        for (int g = blockIdx.x; g < groups; g += gridDim.x, parity ^= 1) {
            const int row = g * ROWS + r;
            float acc = 0.0f;
            if (row < M) {
                const float* xr = x + (size_t)row * N;
                for (int j = t; j < N; j += TPR)
                    acc += xr[j];
            }
            store_row(acc, red, parity, row, M, t, r, y);
        }
    }
}
