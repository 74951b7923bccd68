// expert:name attention_3xtf32_wgmma
// expert:tasks attention
// expert:pattern FlashAttention on Hopper's TF32 wgmma at float32 accuracy (3xTF32: every operand split into a TF32 part and its remainder, three products): K and V tiles by TMA on mbarriers, a producer warpgroup that splits K and writes V transposed and split, CW consumer warpgroups of 64 query rows each with Q in registers, S = Q K^T and O += P V as wgmma with P fed from the score accumulators

// Fused attention, O = softmax(Q K^T / sqrt(64)) V per (batch, head) slice, on Hopper's warpgroup
// MMA without giving up float32 accuracy. The attention_3xtf32 expert does the same arithmetic on
// mma.sync; wgmma reaches what mma.sync does not, and a producer warpgroup splits each K and V
// tile once for the block instead of once per warp.
//  - 3xTF32: x = big + small with big = x with its low 13 mantissa bits cleared and small = x - big
//    (both exact); a b ~ small_a big_b + big_a small_b + big_a big_b, about 21 bits. The tensor
//    cores read only a TF32's bits of an operand, so a tile as loaded is its own big part.
//  - A block is one producer warpgroup and CW consumer warpgroups; consumer c owns 64 query rows
//    (16 a warp) of one slice, with their Q fragments for all 64 dims, split, in registers (the
//    wgmma's register operand) and their 64 x 64 output accumulators.
//  - The first producer thread issues the TMA copies of each BKV-key tile of K and V (two boxes of
//    32 dims each, 128-byte swizzle; keys past S arrive as zeros) into a STAGES-deep ring. Warps
//    1-3 then write K's small part beside it, and V transposed, big and small: wgmma takes a TF32
//    operand from shared memory only K-major, and for O += P V the k dimension is the keys, so V^T
//    rows (one per dim) must hold keys contiguous. They hand the stage over on a "ready" barrier;
//    the consumers release it on "empty".
//  - S = Q K^T: B is K's tile as TMA lays it down (rows = keys, K-major over the dims): 8 k8 steps
//    x 3 wgmma m64nBKVk8.
//  - Online softmax on the score accumulators, in the exp2 domain (scores scaled by log2(e) / 8);
//    a row's values sit in the 4 lanes of a quad (two xor shuffles for its max; its sum is kept per
//    thread and added up across the quad once, at the end). Keys past S score -inf.
//  - O += P V: the score accumulators of an n8 column block are, value for value, the register
//    operand of a k8 step over those 8 keys when the keys are taken in the order 0 2 4 6 1 3 5 7
//    (slot t <- key 2t, slot t + 4 <- key 2t + 1): V^T is written in that order, and P never
//    leaves the registers.
// Specialised for D = HD = 64 (a block of another D writes nothing).
// Shared memory: STAGES * BKV * 1280 bytes (K, K's small part, V as loaded, V^T big and small:
// BKV * 256 bytes each) + 1 KiB to align the ring to the swizzle atom; one block an SM.
// Tuning: with CW 2 two warpgroups share the tensor cores, one's softmax beside the other's
// products; BKV 32 halves the stage, so that 3 or 4 fit.
// Measured on an H100 80GB HBM3 (2026-12-06, kforge eval, BH 32, S 1024): 103 us at CW 2, BKV 64,
// 2 stages, 3.44x torch.compile (354 us) timed side by side; the mma.sync attention_3xtf32 at
// BQ 128: 146 us. CW 2, BKV 32: 112 us (4 stages); CW 1: 123 us (BKV 64), 132 us (BKV 32, 3
// stages). Issuing a tile's scores together with the previous tile's P V (the softmax then
// overlaps both), with or without the two consumer warpgroups taking turns on named barriers, was
// no faster at BKV 32 (111 us, 4 stages) and at BKV 64 starved the 2-stage ring (148 us): each
// tile holds its stage longer.

// kforge:param CW in {1, 2} = 2
// kforge:param BKV in {32, 64} = 64
// kforge:param STAGES in {2, 3, 4} = 2
// kforge:param HD = 64
// kforge:require STAGES * BKV <= 160
// kforge:tensormap tmK K box=(1, BKV, 32) swizzle=128
// kforge:tensormap tmV V box=(1, BKV, 32) swizzle=128
// kforge:launch attention grid=(cdiv(S, 64 * CW), BH) block=(128 * (1 + CW), 1) smem=STAGES * BKV * 1280 + 1024

// The driver's 128-byte tensor map, as cuda.h declares it (NVRTC cannot include cuda.h).
struct __align__(64) CUtensorMap_st {
    unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;

#define TILE (BKV * 256)          // bytes of a K tile, and of each of the stage's other four parts
#define STAGE_BYTES (5 * TILE)    // K, K small, V as loaded, V^T big, V^T small
#define NS (BKV / 2)              // score accumulators a thread: 64 x BKV over 128 threads
#define TF32_MASK 0xffffe000u

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    }
}

// TMA: the box of `map` at (c0 innermost, c1, c2) into shared memory at dst, completing on bar.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ float4 ld_shared_v4(unsigned addr)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
    return v;
}

__device__ __forceinline__ void st_shared_v4(unsigned addr, float4 v)
{
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}

__device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned v)
{
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// x = big + small exactly: big is x truncated to TF32, small the rest.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small)
{
    big = __float_as_uint(x) & TF32_MASK;
    small = __float_as_uint(x - __uint_as_float(big));
}

// x less its TF32 part (exact).
__device__ __forceinline__ float tf32_rest(float x)
{
    return x - __uint_as_float(__float_as_uint(x) & TF32_MASK);
}

// wgmma shared-memory descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr)
{
    const unsigned lbo = 16, sbo = 1024;   // 8 rows of 128 bytes between core-matrix groups
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
           | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// d (64 x N, fp32, N / 2 a thread) = d * (accumulate != 0) + a (64 x 8 TF32 in registers, 4 a
// thread) * b (8 x N in shared memory, K-major).
__device__ __forceinline__ void wgmma_n64(float* d, const unsigned* a, unsigned long long db, int accumulate)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

#if BKV == 32
__device__ __forceinline__ void wgmma_n32(float* d, const unsigned* a, unsigned long long db, int accumulate)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15"
                 "}, {%16, %17, %18, %19}, %20, p, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
#endif
// ---- end of PTX helpers

// The score wgmma: N = BKV keys.
__device__ __forceinline__ void wgmma_scores(float* d, const unsigned* a, unsigned long long db, int accumulate)
{
#if BKV == 64
    wgmma_n64(d, a, db, accumulate);
#else
    wgmma_n32(d, a, db, accumulate);
#endif
}

extern "C" __global__ void __launch_bounds__(128 * (1 + CW), 1)
attention(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV, const float* __restrict__ Q,
          float* __restrict__ O, int S, int D)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], ready[STAGES], empty[STAGES];
    if (D != HD)
        return;   // the same for the whole block
    // The ring starts on a 1024-byte boundary, where a 128-byte swizzle atom must start.
    const unsigned ring = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int bh = blockIdx.y;
    const int tiles = (S + BKV - 1) / BKV;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&ready[s]), 96);   // every thread of the splitting warps
            mbar_init(smem_u32(&empty[s]), CW);   // one arrival per consumer warpgroup
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: TMA copies into the ring (one thread of warp 0); warps 1-3 split.
#if CW == 2
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
#endif
        const int warp = tid / 32, lane = tid % 32;
        if (warp == 0) {
            if (lane == 0)
                for (int kt = 0; kt < tiles; ++kt) {
                    const int s = kt % STAGES;
                    if (kt >= STAGES)   // the consumers are done with what the stage held before
                        mbar_wait(smem_u32(&empty[s]), ((kt / STAGES) + 1) & 1);
                    const unsigned stage = ring + s * STAGE_BYTES;
                    const unsigned bar = smem_u32(&full[s]);
                    mbar_expect_tx(bar, 2 * TILE);
                    tma_load_3d(stage, &tmK, bar, 0, kt * BKV, bh);
                    tma_load_3d(stage + BKV * 128, &tmK, bar, 32, kt * BKV, bh);
                    tma_load_3d(stage + 2 * TILE, &tmV, bar, 0, kt * BKV, bh);
                    tma_load_3d(stage + 2 * TILE + BKV * 128, &tmV, bar, 32, kt * BKV, bh);
                }
        } else {
            // Key `lane` of a 32-key half goes to slot kp of V^T's rows: 0 2 4 6 1 3 5 7 in each 8.
            const int kp = (lane & 24) | ((lane >> 1) & 3) | ((lane & 1) << 2);
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % STAGES;
                const unsigned stage = ring + s * STAGE_BYTES;
                mbar_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
                // K's small part, elementwise: the swizzle carries over.
#pragma unroll 4
                for (int i = tid - 32; i < TILE / 16; i += 96) {
                    float4 v = ld_shared_v4(stage + 16 * i);
                    v.x = tf32_rest(v.x);
                    v.y = tf32_rest(v.y);
                    v.z = tf32_rest(v.z);
                    v.w = tf32_rest(v.w);
                    st_shared_v4(stage + TILE + 16 * i, v);
                }
                // V^T: item = (key half kh, dim half h, 16-byte chunk c); lane = key of the half.
                // V as loaded: row r (key) of dim half h, chunk c at c ^ (r % 8). V^T: key half kh
                // is 64 rows (dims) of 128 bytes, key slot kp's chunk at (kp / 4) ^ (n % 8).
                for (int item = warp - 1; item < (BKV / 32) * 16; item += 3) {
                    const int kh = item >> 4, h = (item >> 3) & 1, c = item & 7;
                    const int r = 32 * kh + lane;
                    const float4 v = ld_shared_v4(stage + 2 * TILE + h * (BKV * 128) + r * 128 + ((c ^ (r & 7)) << 4));
                    const float x[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int n = 32 * h + 4 * c + e;
                        const unsigned at = stage + 3 * TILE + kh * 8192 + n * 128 + (((kp >> 2) ^ (n & 7)) << 4) + (kp & 3) * 4;
                        unsigned big, small;
                        split_tf32(x[e], big, small);
                        st_shared_u32(at, big);
                        st_shared_u32(at + TILE, small);
                    }
                }
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // visible to the tensor cores
                mbar_arrive(smem_u32(&ready[s]));
            }
        }
    } else {
#if CW == 2
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
#endif
        const int c = wg - 1, warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
        const size_t base = (size_t)bh * S * HD;
        const int r0 = blockIdx.x * (64 * CW) + 64 * c + 16 * warp + g;   // this thread's rows: r0, r0 + 8
        const float ninf = __int_as_float(0xff800000);
        const float scale = 0.125f * 1.4426950408889634f;   // 1 / sqrt(64) * log2(e)

        // Q's register fragments, k8 step kk over the dims: rows r0 / r0 + 8, slots t / t + 4 <-
        // dims 8 kk + t / + 4. Rows past S are zeros (their outputs are not stored).
        unsigned qBig[8][4], qSmall[8][4];
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int row = r0 + (j & 1) * 8, dim = 8 * kk + t + (j >> 1) * 4;
                const float x = row < S ? Q[base + (size_t)row * HD + dim] : 0.0f;
                split_tf32(x, qBig[kk][j], qSmall[kk][j]);
            }

        // Accumulator i of a thread: row r0 (+ 8 when i % 4 >= 2), column 8 (i / 4) + 2t + i % 2.
        float o[32];
#pragma unroll
        for (int i = 0; i < 32; ++i)
            o[i] = 0.0f;
        float m[2] = {ninf, ninf}, l[2] = {0.0f, 0.0f};   // l: this thread's share of the row sums

        for (int kt = 0; kt < tiles; ++kt) {
            const int s = kt % STAGES;
            const unsigned stage = ring + s * STAGE_BYTES;
            mbar_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
            mbar_wait(smem_u32(&ready[s]), (kt / STAGES) & 1);

            // S = Q K^T: k8 step kk reads dims 8 kk.. of K's rows, in dim half kk / 4.
            float sc[NS];
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                const unsigned kb = stage + (kk >> 2) * (BKV * 128) + 32 * (kk & 3);
                wgmma_scores(sc, qSmall[kk], smem_desc(kb), kk > 0);
                wgmma_scores(sc, qBig[kk], smem_desc(kb + TILE), 1);
                wgmma_scores(sc, qBig[kk], smem_desc(kb), 1);
            }
            wgmma_commit();
            wgmma_wait0();

            // Online softmax.
            float mx[2] = {m[0], m[1]};
#pragma unroll
            for (int i = 0; i < NS; ++i) {
                const int key = kt * BKV + 8 * (i >> 2) + 2 * t + (i & 1);
                const float v = key < S ? sc[i] * scale : ninf;
                sc[i] = v;
                mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], v);
            }
            float corr[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
                mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
                corr[h] = exp2f(m[h] - mx[h]);   // 0 on the first tile (m = -inf, mx finite)
                m[h] = mx[h];
                l[h] *= corr[h];
            }
            unsigned pBig[NS], pSmall[NS];
#pragma unroll
            for (int i = 0; i < NS; ++i) {
                const float p = exp2f(sc[i] - m[(i >> 1) & 1]);
                l[(i >> 1) & 1] += p;
                split_tf32(p, pBig[i], pSmall[i]);
            }
#pragma unroll
            for (int i = 0; i < 32; ++i)
                o[i] *= corr[(i >> 1) & 1];

            // O += P V: k8 step kk over keys 8 kk.., register operand {p0, p2, p1, p3} of that
            // column block (rows r0 / r0 + 8, slots t / t + 4 <- keys 2t / 2t + 1).
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BKV / 8; ++kk) {
                const unsigned vb = stage + 3 * TILE + (kk >> 2) * 8192 + 32 * (kk & 3);
                const unsigned aBig[4] = {pBig[4 * kk], pBig[4 * kk + 2], pBig[4 * kk + 1], pBig[4 * kk + 3]};
                const unsigned aSmall[4] = {pSmall[4 * kk], pSmall[4 * kk + 2], pSmall[4 * kk + 1], pSmall[4 * kk + 3]};
                wgmma_n64(o, aSmall, smem_desc(vb), 1);
                wgmma_n64(o, aBig, smem_desc(vb + TILE), 1);
                wgmma_n64(o, aBig, smem_desc(vb), 1);
            }
            wgmma_commit();
            wgmma_wait0();
            if (tid == 0)
                mbar_arrive(smem_u32(&empty[s]));
        }

        // O = acc / (the row's sum, added up across its quad).
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
            l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        }
        const float inv0 = 1.0f / l[0], inv1 = 1.0f / l[1];
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            if (r0 < S)
                *reinterpret_cast<float2*>(O + base + (size_t)r0 * HD + 8 * q + 2 * t) =
                    make_float2(o[4 * q] * inv0, o[4 * q + 1] * inv0);
            if (r0 + 8 < S)
                *reinterpret_cast<float2*>(O + base + (size_t)(r0 + 8) * HD + 8 * q + 2 * t) =
                    make_float2(o[4 * q + 2] * inv1, o[4 * q + 3] * inv1);
        }
    }
}
