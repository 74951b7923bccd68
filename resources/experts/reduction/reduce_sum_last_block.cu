// expert:name reduce_sum_last_block
// expert:tasks reduce_sum
// expert:pattern float4 loads (grid-strided or a contiguous chunk per block) with UNROLL loads in flight and per-block partials, summed in a fixed order (deterministic) by a second, one-warp launch (FINISH 1, the default) or, in one kernel, by the last block to finish (FINISH 0: threadfence + atomic ticket, the whole block sums; FINISH 2: acq_rel atomic ticket, one warp sums)

// Full sum. GRID blocks (a few per SM) each sum a share of x (SPLIT below): every thread issues
// UNROLL float4 loads back to back before adding any (16 * UNROLL bytes in flight per thread,
// where the baseline has one float), into UNROLL independent partial sums; the block reduces them
// (warp shuffles, then one shared-memory slot per warp) and thread 0 stores the block's sum in a
// scratch slot. With FINISH 1 a second launch of one warp sums the GRID partials. With FINISH 0
// (the expert's name) and FINISH 2 there is no second launch: each block makes its store visible
// (__threadfence, or FINISH 2's acq_rel atomic) and takes a ticket from an atomic counter in
// scratch memory (zeroed by the harness before every run); the block that draws the last ticket
// reads all GRID partials (through L2: __ldcg) and sums them into y. Every way the partials are
// summed in a fixed order, so the result does not depend on which block finished last: it is
// deterministic.
//  - x is a single buffer (256-byte aligned), so its first 4 * (N / 4) floats are read as
//    float4s whatever N is; the N % 4 leftover floats are added by the first threads of block 0.
//  - Indices are 32-bit: fine for N < 2^31 - 8 * GRID * BLOCK.
//  - SPLIT chooses which float4s a block sums: 0 grid-strided (at any moment the whole grid reads
//    one contiguous window of GRID * BLOCK * UNROLL float4s), 1 a contiguous chunk of about
//    N / (4 * GRID) float4s per block, read BLOCK float4s at a time (torch.compile's split form).
//  - LOAD 1 reads x with ld.global.L1::evict_first (x is read once; L1 keeps nothing of it);
//    LOAD 2 also asks L2 to evict x first (createpolicy.fractional.L2::evict_first and an
//    L2::cache_hint load), which is how torch.compile's Triton kernel loads it.
//  - FINISH 1 (the default) leaves the ticket out: a second launch, one warp, sums the partials
//    instead, in the same fixed order (torch.compile's two-kernel shape; kforge, like
//    torch.profiler, sums the two kernels' times). The last block's fence, ticket and sum took
//    longer than that launch: on an H100 (2026-12-06) the ticket read 0.990x torch.compile and
//    FINISH 1 with a one-warp finish 0.999x, a tie over 80 paired rounds (with a 512-thread
//    finish block it had read 0.992x-0.996x).
//  - FINISH 2 is the ticket with FINISH 1's one-warp sum: only the block's first warp goes on
//    past its block sum; its lane 0 stores the partial and draws the ticket with one acq_rel
//    atomic (no separate fence), and in the last block that warp sums the partials as the second
//    launch would. On an H100 (2026-12-06) it read the same as FINISH 1 (0.995 side by side, 0.999x
//    torch.compile over 80 paired rounds, a tie); on the H200 the ticket had been the faster
//    finish (00:50 UTC: 1.000x against FINISH 1's 0.992x, with the 512-thread finish), so the
//    tuner tries both.
// Tuning: GRID is a multiple of the H200's 132 SMs; GRID * BLOCK threads should about fill the
// machine (at most 64 registers per thread: 1024 or more resident per SM) with UNROLL float4s
// each in flight. Blocks beyond what is resident simply run in a later wave. 64M floats are 16M
// float4s: 64 per thread at 512 x 512. OCC is the number of threads per SM the registers are
// limited for (__launch_bounds__): 2048 lets GRID * BLOCK reach 2048 a SM, at 32 registers a
// thread. Measured on the H200 (64M floats, 2026-12-04): the defaults took 61.5 us against
// torch.compile's 61.4 (two kernels) in one kforge evaluation; grid-strided at GRID 528, 62.3
// against 61.1. Loads that ask L2 for 256 bytes (ld.global.nc.L2::256B) were 8-9% slower.
// UNROLL 1 (one float4 in flight per thread, as torch.compile's loop has it; the occupancy keeps
// the bytes in flight) is in the space for the tuner; it has not been timed on the H200 yet.

// kforge:param BLOCK in {256, 512, 1024} = 512
// kforge:param GRID in {132, 264, 512, 528, 1056} = 512
// kforge:param UNROLL in {1, 2, 4, 8} = 4
// kforge:param OCC in {1024, 2048} = 2048
// kforge:param SPLIT in {0, 1} = 1
// kforge:param LOAD in {0, 1, 2} = 1
// kforge:param FINISH in {0, 1, 2} = 1
// kforge:require mod(GRID, 4) == 0
// kforge:scratch partial float32 [GRID]
// kforge:scratch ticket int32 [1]
// kforge:launch reduce_sum grid=(GRID) block=(BLOCK)
// kforge:launch reduce_sum_finish grid=(1) block=(32) when=(FINISH == 1)

#define NWARPS (BLOCK / 32)

// LOAD 2's L2 policy: x's lines are the first L2 evicts (made once a thread, used by every load).
__device__ __forceinline__ unsigned long long l2_evict_first()
{
    unsigned long long policy = 0;
#if LOAD == 2
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

__device__ __forceinline__ float4 load4(const float4* p, unsigned long long policy)
{
    float4 v;
#if LOAD == 2
    asm("ld.global.L1::evict_first.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(p), "l"(policy));
#elif LOAD == 1
    (void)policy;
    asm("ld.global.L1::evict_first.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(p));
#else
    (void)policy;
    v = *p;
#endif
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Every thread gets the result; `red` holds one slot per warp and is free again on return.
__device__ __forceinline__ float block_sum(float v, float* red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = warp_sum(lane < NWARPS ? red[lane] : 0.0f);
    __syncthreads();
    return v;
}

// One warp sums the GRID partials in a fixed order: GRID / 4 float4s (GRID is required to be a
// multiple of 4; scratch is 256-byte aligned), all of a lane's loads in flight at once, then
// shuffles. No shared memory and no barrier. Loads go through L2 (__ldcg): under FINISH 2 other
// SMs wrote the partials.
__device__ __forceinline__ void warp_finish(const float* __restrict__ partial, float* __restrict__ y)
{
    constexpr int PER_LANE = (GRID / 4 + 31) / 32;
    const float4* p4 = reinterpret_cast<const float4*>(partial);
    const int lane = threadIdx.x & 31;
    float4 v[PER_LANE];
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) {   // all loads first
        const int j = lane + 32 * k;
        v[k] = j < GRID / 4 ? __ldcg(p4 + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k)
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    s = warp_sum(s);
    if (lane == 0)
        y[0] = s;
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
reduce_sum(const float* __restrict__ x, float* __restrict__ partial, int* __restrict__ ticket,
           float* __restrict__ y, int N)
{
    __shared__ float red[32];
#if FINISH == 0
    __shared__ int last;
#endif
    const int tid = threadIdx.x;
    const int n4 = N >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const unsigned long long policy = l2_evict_first();

    float part[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0.0f;

#if SPLIT == 0
    const int stride = GRID * BLOCK;   // grid-strided
    const int end = n4;
    int i = blockIdx.x * BLOCK + tid;
#else
    const int chunk = (n4 + GRID - 1) / GRID;   // block b: float4s [b * chunk, (b + 1) * chunk)
    const int stride = BLOCK;
    const int end = min(n4, (int)(blockIdx.x + 1) * chunk);
    int i = blockIdx.x * chunk + tid;
#endif
#pragma unroll 1   // UNROLL sets the loads in flight; no further unrolling
    for (; i + (UNROLL - 1) * stride < end; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)   // all loads first
            v[u] = load4(x4 + i + u * stride, policy);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            part[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
#pragma unroll 1
    for (; i < end; i += stride) {
        const float4 v = load4(x4 + i, policy);
        part[0] += (v.x + v.y) + (v.z + v.w);
    }
    if (blockIdx.x == 0 && tid < (N & 3))
        part[0] += x[4 * n4 + tid];

    float acc = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc += part[u];
    acc = block_sum(acc, red);

#if FINISH == 1
    if (tid == 0)
        partial[blockIdx.x] = acc;   // reduce_sum_finish, the next launch, sums them
}
#elif FINISH == 2
    if (tid >= 32)
        return;   // only the first warp takes part in the ticket
    int last = 0;
    if (tid == 0) {
        partial[blockIdx.x] = acc;
        // Release: the partial is visible device-wide before the ticket counts it; acquire: the
        // last ticket sees every block's released partial.
        asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(last) : "l"(ticket) : "memory");
        last = last == GRID - 1;
    }
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    // The shuffle carries the ticket but orders no memory. __syncwarp does: lanes 1-31 read the
    // partials after lane 0's acquire, which saw every other block's release.
    __syncwarp();
    warp_finish(partial, y);
}
#else
    if (tid == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();   // the partial is visible device-wide before the ticket is taken
        last = atomicAdd(ticket, 1) == GRID - 1;
    }
    __syncthreads();
    if (!last)
        return;   // the whole block leaves together

    // The last block: every partial has been written and fenced.
    __threadfence();
    float s = 0.0f;
    for (int j = tid; j < GRID; j += BLOCK)
        s += __ldcg(&partial[j]);
    s = block_sum(s, red);
    if (tid == 0)
        y[0] = s;
}
#endif

// FINISH 1's second launch: one warp, no shared memory, no barrier, as short as a launch can be.
extern "C" __global__ void __launch_bounds__(32)
reduce_sum_finish(const float* __restrict__ partial, float* __restrict__ y)
{
    warp_finish(partial, y);
}
