// expert:name gemm_bf16_mma_pipeline
// expert:tasks gemm_bf16
// expert:pattern mma.sync m16n8k16 tensor cores fed by ldmatrix from padded shared-memory tiles, a STAGES-deep cp.async pipeline, 8 warps per block, a direct register-to-global bfloat162 epilogue

// bfloat16 GEMM with fp32 accumulation on the tensor cores through mma.sync (PTX), the
// Ampere-style recipe that the WMMA baseline leaves on the table:
//  - A block of 8 warps (2 along M x 4 along N) computes a BM x BN tile of C; each warp a
//    (BM / 2) x (BN / 4) sub-tile as (BM / 32) x (BN / 32) m16n8k16 MMAs per 16-wide k step, its
//    accumulators (fp32) in registers for the whole K loop.
//  - K advances in BK-wide tiles through a ring of STAGES shared-memory buffers filled by
//    cp.async (16-byte global -> shared copies that bypass the registers): while the warps work
//    on tile k, tiles k + 1 .. k + STAGES - 1 are in flight. One barrier per K tile: after it,
//    tile k has landed for every thread and the buffer of tile k - 1 is free for tile
//    k + STAGES - 1.
//  - Fragments are loaded with ldmatrix (x4 for A; x4.trans for B, which is stored k-major as
//    it comes from memory). Tile rows are padded by 8 halves (16 bytes), which puts the 8 rows
//    that one ldmatrix phase reads into 8 different bank groups: no conflicts, no swizzle.
//  - Edges: copies of 16-byte chunks that fall outside A or B are zero-filled by cp.async
//    (src-size 0), so ragged M, N and K tiles add nothing. When K or N is not a multiple of 8 the
//    rows are not 16-byte aligned; then each chunk is gathered element by element (bounds-checked,
//    zeros outside) and stored to shared memory directly - the same pipeline, synchronously.
//  - Epilogue: straight from the accumulator registers, rounded once to bfloat16, stored as pairs
//    where N is even, element-wise otherwise; rows and columns past M and N are skipped.
// Tuning: 128 x 128 tiles give 1024 blocks at 4096^3 and allow two blocks per SM; 128 x 256 has
// the most reuse (64 x 64 per warp) at one block per SM. STAGES 3-4 hides the global latency.
// Shared memory per block is STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2 bytes (smem= below).

#include <cuda_bf16.h>

// kforge:param BM in {64, 128} = 128
// kforge:param BN in {128, 256} = 128
// kforge:param BK in {32, 64} = 32
// kforge:param STAGES in {2, 3, 4} = 4
// kforge:launch gemm_bf16 grid=(cdiv(N, BN), cdiv(M, BM)) block=(256, 1) smem=STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2

typedef __nv_bfloat16 T;

#define NT 256                  // 8 warps
#define MINB (BM * BN <= 128 * 128 ? 2 : 1)   // two blocks per SM (<= 128 registers) for the smaller tiles
#define WARPS_N 4
#define WTM (BM / 2)            // warp tile
#define WTN (BN / WARPS_N)
#define MI (WTM / 16)           // m16 tiles per warp
#define NJ (WTN / 8)            // n8 tiles per warp
#define LDA (BK + 8)            // padded rows, in halves
#define LDB (BN + 8)
#define A_STAGE (BM * LDA)      // halves per stage
#define B_STAGE (BK * LDB)
#define A_CHUNKS (BM * BK / 8)  // 16-byte chunks per tile
#define B_CHUNKS (BK * BN / 8)

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16-byte global -> shared copy; zero-fills the destination when !valid (nothing is read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const void* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// c += a * b for one m16n8k16 tile, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma16816(float* c, const unsigned* a, const unsigned* b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// ---- end of PTX helpers

// Gathers 8 consecutive elements (zeros where !in(t)) for the unaligned fallback.
__device__ __forceinline__ uint4 gather8(const unsigned short* p, int avail)
{
    unsigned short v[8];
#pragma unroll
    for (int t = 0; t < 8; ++t)
        v[t] = t < avail ? p[t] : (unsigned short)0;
    return make_uint4(v[0] | ((unsigned)v[1] << 16), v[2] | ((unsigned)v[3] << 16),
                      v[4] | ((unsigned)v[5] << 16), v[6] | ((unsigned)v[7] << 16));
}

extern "C" __global__ void __launch_bounds__(NT, MINB)
gemm_bf16(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem[];
    T* As = reinterpret_cast<T*>(smem);              // [STAGES][BM][LDA]
    T* Bs = As + STAGES * A_STAGE;                     // [STAGES][BK][LDB]

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec = (K & 7) == 0 && (N & 7) == 0;   // every row of A and B is 16-byte aligned
    const int ktiles = (K + BK - 1) / BK;

    // Global -> shared for K tile kt into ring buffer `stage`.
    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
        T* as = As + stage * A_STAGE;
        T* bs = Bs + stage * B_STAGE;
#pragma unroll
        for (int i = 0; i < (A_CHUNKS + NT - 1) / NT; ++i) {
            const int e = tid + i * NT;
            if (A_CHUNKS % NT == 0 || e < A_CHUNKS) {
                const int r = e / (BK / 8), c = (e % (BK / 8)) * 8;
                const int gr = m0 + r, gk = k0 + c;
                T* dst = as + r * LDA + c;
                if (vec) {
                    const bool in = gr < M && gk < K;
                    cp_async16(dst, in ? A + (size_t)gr * K + gk : A, in);
                } else {
                    const int avail = gr < M ? min(8, K - gk) : 0;
                    *reinterpret_cast<uint4*>(dst) =
                        avail > 0 ? gather8(reinterpret_cast<const unsigned short*>(A) + (size_t)gr * K + gk, avail)
                                  : make_uint4(0u, 0u, 0u, 0u);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < (B_CHUNKS + NT - 1) / NT; ++i) {
            const int e = tid + i * NT;
            if (B_CHUNKS % NT == 0 || e < B_CHUNKS) {
                const int r = e / (BN / 8), c = (e % (BN / 8)) * 8;
                const int gk = k0 + r, gn = n0 + c;
                T* dst = bs + r * LDB + c;
                if (vec) {
                    const bool in = gk < K && gn < N;
                    cp_async16(dst, in ? B + (size_t)gk * N + gn : B, in);
                } else {
                    const int avail = gk < K ? min(8, N - gn) : 0;
                    *reinterpret_cast<uint4*>(dst) =
                        avail > 0 ? gather8(reinterpret_cast<const unsigned short*>(B) + (size_t)gk * N + gn, avail)
                                  : make_uint4(0u, 0u, 0u, 0u);
                }
            }
        }
    };

    float acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[i][j][q] = 0.0f;

    // Prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (possibly empty).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles)
            load_tile(s, s);
        cp_async_commit();
    }

    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of tile kt have landed
        __syncthreads();               // everyone's have; and everyone is done with tile kt - 1
        {
            const int next = kt + STAGES - 1;   // refill the buffer tile kt - 1 used
            if (next < ktiles)
                load_tile(next % STAGES, next);
            cp_async_commit();
        }

        const T* as = As + (kt % STAGES) * A_STAGE + (wm * WTM) * LDA;
        const T* bs = Bs + (kt % STAGES) * B_STAGE + wn * WTN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MI][4], bf[NJ][2];
#pragma unroll
            for (int i = 0; i < MI; ++i)   // rows i*16 + (lane % 16), k half (lane / 16)
                ldmatrix_x4(af[i], as + (i * 16 + (lane & 15)) * LDA + kk + (lane >> 4) * 8);
#pragma unroll
            for (int j = 0; j < NJ; j += 2) {   // k rows kk + (lane % 16), n8 tile j + lane / 16
                unsigned r[4];
                ldmatrix_x4_trans(r, bs + (kk + (lane & 15)) * LDB + j * 8 + (lane >> 4) * 8);
                bf[j][0] = r[0]; bf[j][1] = r[1];
                bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
                    mma16816(acc[i][j], af[i], bf[j]);
        }
    }
    cp_async_wait<0>();   // nothing is left in flight when the block exits

    // Epilogue: accumulator (i, j, q) is row g (+8 for q >= 2), column 2 * t (+1 for odd q) of its tile.
    const int g = lane >> 2, t = lane & 3;
    const bool even = (N & 1) == 0;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm * WTM + i * 16 + g + h * 8;
            if (row >= M)
                continue;
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const int col = n0 + wn * WTN + j * 8 + 2 * t;
                T* p = C + (size_t)row * N + col;
                if (even && col + 1 < N) {
                    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                } else {
                    if (col < N) p[0] = __float2bfloat16_rn(acc[i][j][2 * h]);
                    if (col + 1 < N) p[1] = __float2bfloat16_rn(acc[i][j][2 * h + 1]);
                }
            }
        }
    }
}
