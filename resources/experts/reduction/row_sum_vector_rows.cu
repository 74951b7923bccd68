// expert:name row_sum_vector_rows
// expert:tasks row_sum
// expert:pattern TPR threads per row, BLOCK / TPR rows per block, float4 loads with UNROLL independent loads in flight per thread, warp-shuffle then shared-memory reduction

// Row sums at memory speed. Each row gets TPR threads (a warp or a few) and a block of BLOCK
// threads holds BLOCK / TPR rows. A thread reads its share of the row as float4s, UNROLL of them
// issued back to back before any is added (more bytes in flight per thread than the baseline's
// scalar loop), into UNROLL independent partial sums; a remainder loop takes what is left of the
// row. A warp shuffle reduces each warp and, when a row has several warps, one shared-memory slot
// per warp is summed by the row's first thread.
//  - Two kernels, chosen by the launch plan's `when`: row_sum_fit where every row is whole
//    rounds of TPR * UNROLL float4s and every block's rows exist (N % (4 * TPR * UNROLL) == 0,
//    M % (BLOCK / TPR) == 0), row_sum for every other size. row_sum_fit has no bounds checks,
//    no scalar path and no remainder loop: its loads go out a few instructions after the block
//    starts. A block lives for a few microseconds at most, so the instructions before its first
//    load and after its last are a visible part of its life.
//  - float4 loads need N % 4 == 0 (every row then starts 16-byte aligned); otherwise row_sum's
//    loops run on scalars, strided by TPR so that consecutive threads read consecutive floats.
//  - Rows past M (the last block when BLOCK / TPR does not divide M) load and store nothing but
//    still reach the block barrier.
//  - HINT chooses the float4 loads' cache policy: 0 the default, 1 streaming (__ldcs, evict
//    first: x is read once), 2 read-only and not kept in L1, asking L2 to fetch 256 bytes at a
//    time (ld.global.nc.L1::no_allocate.L2::256B), so fewer, larger DRAM requests are in flight.
//  - TPR is at most BLOCK (kforge:require): TPR = BLOCK is one row per block.
//  - OCC is the number of threads per SM the registers are limited for (__launch_bounds__):
//    2048 keeps twice the loads in flight, at 32 registers a thread.
// Tuning: at N = 4096 a row is 1024 float4s: TPR = 512 with UNROLL = 2 reads it in one round of
// 2 loads per thread; TPR = 32 (a warp per row, no barrier) needs more rounds per thread.
// Measured on the H200 (4096 x 4096): on 2026-12-04, with one kernel for all sizes, TPR 512,
// BLOCK 512, UNROLL 2, OCC 2048 took 16.03-16.14 us with HINT 0 (0.988-0.991x torch.compile in
// the same evaluations) and 16.00 us with HINT 1 (torch.compile's kernel reads evict-first too);
// HINT 2 was 5% slower than HINT 0 side by side. Nsight Compute (2026-12-05) showed torch.compile's
// kernel with the same grid, block and loads (two evict-first float4s a thread) but 64 instructions
// a warp against 82, and 89% achieved occupancy against 87%; with row_sum_fit the defaults took
// 15.74 us in four `kforge eval --pytorch` runs (1.000-1.001x torch.compile; three of them with
// the row's warp sums added by a shuffle tree instead, no different side by side), against
// 15.90 us (0.990-0.991x) for the one-kernel form in the same session.
// On an H100 (2026-12-07, 40 paired rounds in PyTorch's process) the defaults took 22.11 us
// against torch.compile's 22.06-22.08 us (0.998-0.999x, 0.996x-1.000x). Tried and dropped, on
// the H100 on 2026-12-06 and again on 2026-12-07 (tests/gpu/OFFLINE-SEARCH.md): blocks that take
// several rows and issue the next row's loads before reducing the current one (0.956-0.984x, the
// slower the longer a block lives), and bulk copies into a shared-memory ring (7-11% slower).

// kforge:param BLOCK in {128, 256, 512} = 512
// kforge:param TPR in {32, 64, 128, 256, 512} = 512
// kforge:param UNROLL in {1, 2, 4, 8} = 2
// kforge:param HINT in {0, 1, 2} = 1
// kforge:param OCC in {1024, 2048} = 2048
// kforge:require TPR <= BLOCK
// kforge:launch row_sum_fit grid=(cdiv(M, BLOCK / TPR)) block=(BLOCK) when=N > 0 && mod(N, 4 * TPR * UNROLL) == 0 && mod(M, BLOCK / TPR) == 0
// kforge:launch row_sum grid=(cdiv(M, BLOCK / TPR)) block=(BLOCK) when=N == 0 || mod(N, 4 * TPR * UNROLL) != 0 || mod(M, BLOCK / TPR) != 0

#define ROWS (BLOCK / TPR)   // rows per block
#define WPR (TPR / 32)       // warps per row

__device__ __forceinline__ float4 load4(const float4* p)
{
#if HINT == 1
    return __ldcs(p);
#elif HINT == 2
    float4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
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

// One round: UNROLL float4s, TPR apart from p, all loaded before any is added (UNROLL loads in
// flight), each into its own partial sum.
__device__ __forceinline__ void add_round(const float4* p, float (&part)[UNROLL])
{
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        v[u] = load4(p + u * TPR);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        part[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
}

// Adds a thread's partial sums across its row's TPR threads and stores the row's sum.
__device__ __forceinline__ void finish(const float (&part)[UNROLL], float* red, float* y, int r, int t,
                                       int row, bool store)
{
    float acc = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc += part[u];
    acc = warp_sum(acc);
    if (WPR == 1) {
        if (t == 0 && store)
            y[row] = acc;
    } else {
        if ((threadIdx.x & 31) == 0)
            red[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (t == 0 && store) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < WPR; ++w)
                s += red[r * WPR + w];
            y[row] = s;
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
row_sum(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float red[BLOCK / 32];
    const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + r;

    float part[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0.0f;

    if (row < M) {
        const float* xr = x + (size_t)row * N;
        if ((N & 3) == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            const int n4 = N >> 2;
            int i = t;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
            for (; i + (UNROLL - 1) * TPR < n4; i += UNROLL * TPR)
                add_round(x4 + i, part);
#pragma unroll 1
            for (; i < n4; i += TPR) {
                const float4 v = load4(x4 + i);
                part[0] += (v.x + v.y) + (v.z + v.w);
            }
        } else {
            int j = t;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
            for (; j + (UNROLL - 1) * TPR < N; j += UNROLL * TPR) {
                float v[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    v[u] = xr[j + u * TPR];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    part[u] += v[u];
            }
#pragma unroll 1
            for (; j < N; j += TPR)
                part[0] += xr[j];
        }
    }

    finish(part, red, y, r, t, row, row < M);
}

// The whole-fit case, chosen by the launch plan: N is a multiple of 4 * TPR * UNROLL and M of
// ROWS, so every row is whole float4 rounds and every block's rows exist. No bounds checks and no
// remainder loop: a thread goes from its first address to UNROLL loads in flight in a few
// instructions, and its block's slot frees sooner.
extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
row_sum_fit(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float red[BLOCK / 32];
    const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + r;
    const float4* x4 = reinterpret_cast<const float4*>(x + (size_t)(unsigned)row * (unsigned)N) + t;
    const float4* const end = x4 + (N >> 2);

    float part[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0.0f;
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
    do {   // N > 0: at least one round
        add_round(x4, part);
        x4 += UNROLL * TPR;
    } while (x4 < end);
    finish(part, red, y, r, t, row, true);
    (void)M;
}
