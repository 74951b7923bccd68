// expert:name gemm_bias_relu_3xtf32_wgmma
// expert:tasks gemm_bias_relu
// expert:pattern float32 GEMM + bias + ReLU at float32 accuracy on Hopper's TF32 wgmma (3xTF32: each operand split into a TF32 part and its remainder, three products), computed transposed so that B's fragments come from registers and A's tile is the K-major shared-memory operand; TMA tile loads on mbarriers, a producer warpgroup that splits A's tile in shared memory, CW consumer warpgroups; the bias add and ReLU on the accumulators on the way out; a plain tiled kernel for sizes TMA cannot describe

// GEMM + bias + ReLU, C = max(0, A B + bias), on Hopper's tensor cores without giving up float32
// accuracy ("3xTF32" through wgmma), the bias and the ReLU applied in the epilogue.
// TF32 keeps 10 of float32's 23 mantissa bits; x = big + small with big = x with its low 13
// mantissa bits cleared and small = x - big (both exact) keeps about 21, and
// a b ~ big_a big_b + big_a small_b + small_a big_b (the dropped small_a small_b is about 2^-21
// relative). Each product is a wgmma.m64nBMk8 TF32: Hopper's warpgroup MMA, which reaches what
// mma.sync (the sgemm_3xtf32 expert's instruction) does not.
//  - wgmma takes TF32 operands from shared memory only K-major (each row contiguous along k),
//    and B is row-major K x N: N-major. So the block computes the transposed tile,
//    C^T = B^T A^T: the wgmma's M dimension is n (64 columns of C per consumer warpgroup), its
//    N dimension is m (BM rows of C), and its shared-memory operand is A's BM x 32 tile exactly
//    as TMA lays it down (K-major, 128-byte swizzle). The register operand is B^T: each thread
//    reads its fragment values of B's tile from shared memory and splits them in registers.
//  - A's tile needs a small part in shared memory as well: warps 1-3 of the producer warpgroup
//    split each tile into a second buffer of the same layout as soon as it lands (the split is
//    elementwise, so the swizzle carries over) and hand the stage to the consumers on a "ready"
//    barrier. A's big part is the tile as loaded: the tensor cores read only a TF32's bits of an
//    operand, as the mma.sync experts rely on too (the errors match theirs: sgemm at 1024^3, max
//    abs error 5.1e-4 against the mma.sync expert's 5.3e-4, with a tolerance of 1e-3 + 1e-3 |C|).
//  - The first thread of warp 0 issues the TMA copies (A's BM x 32 box, B's 32 x 32 boxes) for a
//    STAGES-deep ring; each completes on the stage's "full" mbarrier. Consumers release a stage
//    on its "empty" barrier once the wgmmas that read it are done. The thread that issues the
//    copies must not split as well: waiting for a stage to come free, it held the next split
//    back, and the consumers with it (sgemm at 1024^3: 33.2 us that way, 24.4 us this way).
//  - B's tile is 32 k rows of 128 bytes per box with the 128-byte swizzle (16-byte chunk c of
//    row k sits at c ^ (k % 8)). A thread's fragment values are (k = t or t + 4, n = row g or
//    g + 8 of its warp's 16, g = lane / 4, t = lane % 4); the wgmma rows of a warp are mapped to
//    columns n = 16 (g / 4) + g % 4 (+ 4 for g + 8) within its half of a box, so that the 32
//    loads of a warp hit 32 different banks.
//  - Per stage a consumer warpgroup issues 4 k8 steps x 3 wgmmas (small_B x A, big_B x small_A,
//    big_B x A: the small products first), keeps one stage's group in flight and loads and
//    splits the next stage's fragments meanwhile (two register buffers, the loop unrolled by 2).
//  - Edges: TMA fills what lies past M, N and K with zeros, and the epilogue skips rows and
//    columns past M and N. TMA needs rows that are a multiple of 16 bytes apart (K and N
//    multiples of 4), so other sizes run the plain kernel at the end.
// Shared memory: STAGES * (2 * BM * 32 + 32 * 64 * CW) * 4 bytes + 1 KiB to align the ring to
// the swizzle atom.
// Tuning: BM x 64 CW tiles; at 2048^3, BM 128 with CW 2 makes 256 blocks (two waves on 132 SMs)
// and keeps 4 stages in 193 KiB (a BM of 256 would fit only 2, and was slower: 193 us). The
// split costs less per FLOP with two consumer warpgroups.
// Measured on an H200 (2026-12-04, kforge eval, 2048^3): 131 us at BM 128, CW 2, 4 stages
// (2.67x PyTorch's float32 GEMM + bias + ReLU, 351 us; the gemm_bias_relu_3xtf32 expert on
// mma.sync: 291 us); 3 stages: 150 us; BM 64: 160 us; CW 1: 183 us.

// kforge:param BM in {64, 128} = 128
// kforge:param CW in {1, 2} = 2
// kforge:param STAGES in {2, 3, 4} = 4
// kforge:tensormap tmA A box=(BM, 32) swizzle=128
// kforge:tensormap tmB B box=(32, 32) swizzle=128
// kforge:launch gemm_bias_relu grid=(cdiv(N, 64 * CW), cdiv(M, BM)) block=(128 * (1 + CW), 1) smem=STAGES * (2 * BM * 32 + 32 * 64 * CW) * 4 + 1024 when=(mod(K, 4) == 0 && mod(N, 4) == 0)
// kforge:launch gemm_bias_relu_unaligned grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) when=(mod(K, 4) != 0 || mod(N, 4) != 0)

// The driver's 128-byte tensor map, as cuda.h declares it (NVRTC cannot include cuda.h).
struct __align__(64) CUtensorMap_st {
    unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;

#define BK 32
#define BN (64 * CW)                   // columns of C per block
#define A_TILE (BM * BK * 4)           // bytes of A's tile (and of its small part)
#define B_BOX (BK * 128)               // one 32 x 32 box of B
#define STAGE_BYTES (2 * A_TILE + BN / 32 * B_BOX)
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

// TMA: the box of `map` at (c0 innermost, c1) into shared memory at dst, completing on bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ float ld_shared_f32(unsigned addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
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

// x less its TF32 part: exact, since the TF32 part is x with low mantissa bits cleared.
__device__ __forceinline__ float tf32_rest(float x)
{
    return x - __uint_as_float(__float_as_uint(x) & TF32_MASK);
}

// wgmma shared-memory descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
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

template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// d (64 x BM, fp32, BM / 2 per thread) += a (64 x 8 TF32 in registers, 4 per thread) * b (8 x BM
// in shared memory, K-major).
#if BM == 64
__device__ __forceinline__ void wgmma_tf32(float* d, const unsigned* a, unsigned long long db)
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
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}
#endif

#if BM == 128
__device__ __forceinline__ void wgmma_tf32(float* d, const unsigned* a, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}
#endif

// ---- end of PTX helpers

// One stage's fragments of B^T for a thread: 4 k8 steps x 4 values, split into big and small.
struct Frags {
    unsigned big[4][4], small[4][4];
};

// Reads the thread's values of B's tile at `b` (this warp's box) and splits them. Fragment value
// j of k8 step kk: row g (j even) or g + 8 (j odd) of the warp's 16, k = 8 kk + t (+ 4 for j >= 2).
__device__ __forceinline__ void load_frags(Frags& f, unsigned b, int nl0, int t)
{
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int k = 8 * kk + t + (j >= 2 ? 4 : 0);
            const int nl = nl0 + (j & 1) * 4;
            const float x = ld_shared_f32(b + k * 128 + (((nl >> 2) ^ (k & 7)) << 4) + (nl & 3) * 4);
            const unsigned big = __float_as_uint(x) & TF32_MASK;
            f.big[kk][j] = big;
            f.small[kk][j] = __float_as_uint(x - __uint_as_float(big));
        }
}

// The 12 wgmmas of one stage: A's tile at `a` (its small part A_TILE further on).
__device__ __forceinline__ void stage_mma(float* d, const Frags& f, unsigned a)
{
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
        const unsigned long long big = smem_desc(a + 32 * kk, 16, 1024);
        const unsigned long long small = smem_desc(a + A_TILE + 32 * kk, 16, 1024);
        wgmma_tf32(d, f.small[kk], big);
        wgmma_tf32(d, f.big[kk], small);
        wgmma_tf32(d, f.big[kk], big);
    }
}

extern "C" __global__ void __launch_bounds__(128 * (1 + CW), 1)
gemm_bias_relu(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
               const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], ready[STAGES], empty[STAGES];
    // The ring starts on a 1024-byte boundary, where a 128-byte swizzle atom must start.
    const unsigned ring = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&ready[s]), 96);    // every thread of the splitting warps
            mbar_init(smem_u32(&empty[s]), CW);    // one arrival per consumer warpgroup
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: TMA copies into the ring (warp 0), and the small part of each of A's tiles.
#if CW == 2
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
#endif
        const int warp = tid / 32;
        if (warp == 0) {
            // One thread issues the copies, STAGES tiles ahead of the consumers.
            if (tid == 0)
                for (int kt = 0; kt < ktiles; ++kt) {
                    const int s = kt % STAGES;
                    if (kt >= STAGES)   // the consumers are done with what the stage held before
                        mbar_wait(smem_u32(&empty[s]), ((kt / STAGES) + 1) & 1);
                    const unsigned stage = ring + s * STAGE_BYTES;
                    const unsigned bar = smem_u32(&full[s]);
                    mbar_expect_tx(bar, A_TILE + BN / 32 * B_BOX);
                    tma_load_2d(stage, &tmA, bar, kt * BK, m0);
#pragma unroll
                    for (int j = 0; j < BN / 32; ++j)
                        tma_load_2d(stage + 2 * A_TILE + j * B_BOX, &tmB, bar, n0 + 32 * j, kt * BK);
                }
        } else {
            // Warps 1-3 split each tile of A as soon as it lands, as far ahead as the copies are.
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                const unsigned stage = ring + s * STAGE_BYTES;
                mbar_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
#pragma unroll 4
                for (int i = tid - 32; i < A_TILE / 16; i += 96) {
                    float4 v = ld_shared_v4(stage + 16 * i);
                    v.x = tf32_rest(v.x);
                    v.y = tf32_rest(v.y);
                    v.z = tf32_rest(v.z);
                    v.w = tf32_rest(v.w);
                    st_shared_v4(stage + A_TILE + 16 * i, v);
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
        // This warp's 16 wgmma rows are 16 columns of C in one 32-column box of B's tile.
        const int box = 2 * c + (warp >> 1);
        const int nl0 = 8 * (warp & 1) + 16 * (g >> 2) + (g & 3);   // row g; row g + 8 is nl0 + 4
        const auto wait_stage = [&](int kt) {
            mbar_wait(smem_u32(&full[kt % STAGES]), (kt / STAGES) & 1);
            mbar_wait(smem_u32(&ready[kt % STAGES]), (kt / STAGES) & 1);
        };
        const auto b_at = [&](int kt) { return ring + (kt % STAGES) * STAGE_BYTES + 2 * A_TILE + box * B_BOX; };
        float d[BM / 2];
#pragma unroll
        for (int i = 0; i < BM / 2; ++i)
            d[i] = 0.0f;
        Frags f0, f1;
        // One stage: its wgmmas from `cur`; then, while they run, the next stage's fragments into `next`.
        const auto step = [&](Frags& cur, Frags& next, int kt) {
            wgmma_fence();
            stage_mma(d, cur, ring + (kt % STAGES) * STAGE_BYTES);
            wgmma_commit();
            wgmma_wait<1>();   // the previous stage's wgmmas are done: its buffers and `next` are free
            if (kt >= 1 && tid == 0)
                mbar_arrive(smem_u32(&empty[(kt - 1) % STAGES]));
            if (kt + 1 < ktiles) {
                wait_stage(kt + 1);
                load_frags(next, b_at(kt + 1), nl0, t);
            }
        };
        wait_stage(0);
        load_frags(f0, b_at(0), nl0, t);
        for (int kt = 0; kt < ktiles; kt += 2) {
            step(f0, f1, kt);
            if (kt + 1 < ktiles)
                step(f1, f0, kt + 1);
        }
        wgmma_wait<0>();

        // Accumulator i of a thread: wgmma row 16 warp + g (+ 8 when i % 4 >= 2), that is column
        // nA (nB) of C, and wgmma column 8 (i / 4) + 2 t + i % 2, that is row m0 + that of C.
        const int nA = n0 + 64 * c + 32 * (warp >> 1) + nl0, nB = nA + 4;
        const float biasA = nA < N ? bias[nA] : 0.0f, biasB = nB < N ? bias[nB] : 0.0f;
#pragma unroll
        for (int q = 0; q < BM / 8; ++q) {
            const int m = m0 + 8 * q + 2 * t;
#pragma unroll
            for (int e = 0; e < 2; ++e)
                if (m + e < M) {
                    float* row = C + (size_t)(m + e) * N;
                    if (nA < N)
                        row[nA] = fmaxf(d[4 * q + e] + biasA, 0.0f);
                    if (nB < N)
                        row[nB] = fmaxf(d[4 * q + 2 + e] + biasB, 0.0f);
                }
        }
    }
}

// Sizes whose rows TMA cannot address (K or N not a multiple of 4): 16 x 16 tiles through shared
// memory, float32 FMAs, then the bias and the ReLU.
extern "C" __global__ void gemm_bias_relu_unaligned(const float* __restrict__ A, const float* __restrict__ B,
                                                    const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K)
{
    __shared__ float as[16][17], bs[16][17];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        as[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
        bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k)
            acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = fmaxf(acc + bias[col], 0.0f);
}
