// expert:name gemv_vector_rows
// expert:tasks gemv
// expert:pattern TPR threads per row of A, BLOCK / TPR rows per block, float4 loads of A (plain or read-once) and x with UNROLL independent loads in flight per thread, warp-shuffle then shared-memory reduction

// Matrix-vector product at memory speed (reading A once is the floor). Each row of A gets TPR
// threads (a warp or a few) and a block of BLOCK threads holds BLOCK / TPR rows. A thread reads
// its share of the row, and the matching part of x, as float4s, UNROLL of each issued back to
// back before any is used (more bytes in flight per thread than the baseline's scalar loop), into
// UNROLL independent partial dot products; a remainder loop takes what is left of the row. x
// (32 KB at N = 8192) is reused by every row and served from L1 / L2 through the read-only path.
// A warp shuffle reduces each warp and, when a row has several warps, one shared-memory slot per
// warp is summed by the row's first thread.
//  - float4 loads need N % 4 == 0 (every row then starts 16-byte aligned); otherwise the same
//    loops run on scalars, strided by TPR so that consecutive threads read consecutive floats.
//  - Rows past M (the last block when BLOCK / TPR does not divide M) load and store nothing but
//    still reach the block barrier.
//  - HINT chooses the cache policy of A's float4 loads: 0 the default, 1 streaming (__ldcs,
//    evict first: A is read once, x stays cached). OCC is the threads per SM the registers are
//    held to (__launch_bounds__), 1024 or 2048 (torch.compile's memory-bound kernels run 2048).
// Tuning: at N = 8192 a row is 2048 float4s: TPR = 128 with UNROLL = 4 reads it in four rounds
// of 4 + 4 loads per thread; TPR = 32 (a warp per row, no barrier) needs more rounds per thread.
// On an H100 (2026-12-06) the defaults read A at 3.12 TB/s, torch.compile's gemv at 3.14.
// On an H100 (2026-12-07, 40 paired rounds in PyTorch's process) the defaults took 84.97 us and
// BLOCK 128 with HINT 1 84.69 us, both a tie with torch.compile (0.999x). Tried and dropped the
// same day: each warp streaming its rows through a ring of shared-memory stages filled by the
// bulk copy engine (cp.async.bulk on mbarriers, 4-16 KB pieces, 2-4 stages, persistent blocks)
// took 94.9-97.0 us at 8192 x 8192, 11-14% slower: the plain float4 loads already keep enough
// bytes in flight, and the extra pass through shared memory costs more than it saves.

// kforge:param BLOCK in {128, 256, 512} = 256
// kforge:param TPR in {32, 64, 128} = 128
// kforge:param UNROLL in {1, 2, 4} = 4
// kforge:param HINT in {0, 1} = 0
// kforge:param OCC in {1024, 2048} = 1024
// kforge:launch gemv grid=(cdiv(M, BLOCK / TPR)) block=(BLOCK)

#define ROWS (BLOCK / TPR)   // rows per block
#define WPR (TPR / 32)       // warps per row

__device__ __forceinline__ float4 load_a(const float4* p)
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

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc))));
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
gemv(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float red[BLOCK / 32];
    const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + r;

    float part[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0.0f;

    if (row < M) {
        const float* ar = A + (size_t)row * N;
        if ((N & 3) == 0) {
            const float4* a4 = reinterpret_cast<const float4*>(ar);
            const float4* x4 = reinterpret_cast<const float4*>(x);
            const int n4 = N >> 2;
            int i = t;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
            for (; i + (UNROLL - 1) * TPR < n4; i += UNROLL * TPR) {
                float4 a[UNROLL], b[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {   // all loads first: UNROLL in flight
                    a[u] = load_a(&a4[i + u * TPR]);
                    b[u] = __ldg(&x4[i + u * TPR]);
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    part[u] = dot4(a[u], b[u], part[u]);
            }
            for (; i < n4; i += TPR)
                part[0] = dot4(load_a(&a4[i]), __ldg(&x4[i]), part[0]);
        } else {
            int j = t;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
            for (; j + (UNROLL - 1) * TPR < N; j += UNROLL * TPR) {
                float a[UNROLL], b[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    a[u] = ar[j + u * TPR];
                    b[u] = __ldg(&x[j + u * TPR]);
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    part[u] = fmaf(a[u], b[u], part[u]);
            }
            for (; j < N; j += TPR)
                part[0] = fmaf(ar[j], __ldg(&x[j]), part[0]);
        }
    }

    float acc = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc += part[u];
    acc = warp_sum(acc);
    if (WPR == 1) {
        if (t == 0 && row < M)
            y[row] = acc;
    } else {
        if ((threadIdx.x & 31) == 0)
            red[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (t == 0 && row < M) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < WPR; ++w)
                s += red[r * WPR + w];
            y[row] = s;
        }
    }
}
