// expert:name gemm_bias_relu_3xtf32
// expert:tasks gemm_bias_relu
// expert:pattern float32 GEMM on the TF32 tensor cores at float32 accuracy (each operand split into a TF32 high part and its remainder, three mma.sync m16n8k8 per product), 64 x 32 warp tiles, a STAGES-deep cp.async pipeline, with the bias add and ReLU applied to the accumulators on the way out

// GEMM + bias + ReLU on the tensor cores without giving up float32 accuracy ("3xTF32"):
// C = max(0, A B + bias). TF32 keeps 10 of float32's 23 mantissa bits, so one TF32 product misses
// a float32 tolerance. Splitting x = big + small with big = tf32(x) and small = x - big keeps
// about 21 bits; a * b = big_a big_b + big_a small_b + small_a big_b + small_a small_b, and the
// last term (2^-21 relative) is dropped. The three products run on the tensor cores, which on
// Hopper do TF32 several times faster than the FP32 pipes do FFMA.
//  - Each warp computes a 64 x 32 tile of C as 4 x 4 m16n8k8 MMAs (fp32 accumulators in
//    registers); a block of (BM / 64) x (BN / 32) warps a BM x BN tile.
//  - K advances in BK-wide tiles through a ring of STAGES shared-memory buffers filled by 16-byte
//    cp.async; one barrier per tile.
//  - The split costs two instructions per value: big = x with its low 13 mantissa bits cleared
//    (exact), small = x - big goes to the MMA as it is (the tensor cores read its TF32 part). The
//    small products go first so the big one adds last, each product as one pass over the warp
//    tile so no MMA waits for the one before it on the same accumulator.
//  - Within each k8 step, k is permuted the same way for A and B (column 2t holds k = t, column
//    2t + 1 holds k = t + 4), so a thread's two A values of a row come in one 8-byte load; rows
//    are padded (A by 8 floats, B by 4) so a warp's reads hit different banks.
//  - Edges: 16-byte copies past A or B zero-fill what lies outside (cp.async's src-size); when K
//    or N is not a multiple of 4 every element is copied on its own (4-byte cp.async).
//  - Fused epilogue: each thread's two columns of bias are read once per n8 tile and added, then
//    the ReLU, before the one store of C.
// Tuning: at 2048^3, 128 x 128 tiles make 256 blocks with the most reuse; 128 x 64 makes 512
// smaller ones, three per SM. Shared memory: STAGES * (BM * (BK + 8) + BK * (BN + 4)) * 4 bytes.
// Measured on an H200 (2026-12-03, 2048^3): 299 us at 128 x 128 with 64 x 64 warp tiles, BK 16,
// 4 stages (1.13-1.18x PyTorch, cuBLAS FP32 with the bias and ReLU as separate passes); 332 us
// with 64 x 32 warp tiles.

// kforge:param BM in {64, 128} = 128
// kforge:param BN in {64, 128} = 128
// kforge:param WTM in {32, 64} = 64
// kforge:param WTN in {32, 64} = 64
// kforge:param BK in {16, 32} = 16
// kforge:param STAGES in {2, 3, 4} = 4
// kforge:launch gemm_bias_relu grid=(cdiv(N, BN), cdiv(M, BM)) block=(BM / WTM * (BN / WTN) * 32, 1) smem=STAGES * (BM * (BK + 8) + BK * (BN + 4)) * 4

#define WARPS_N (BN / WTN)
#define NT (BM / WTM * WARPS_N * 32)
#define REGS (WTM * WTN / 32 + 104)   // registers a thread needs: its accumulators and about 104 more
#define MINB (NT * REGS >= 65536 ? 1 : 65536 / (NT * REGS))   // blocks per SM with REGS registers each
#define MI (WTM / 16)           // m16 tiles per warp
#define NJ (WTN / 8)            // n8 tiles per warp
#define LDA (BK + 8)            // padded rows, in floats
#define LDB (BN + 4)
#define A_STAGE (BM * LDA)      // floats per stage
#define B_STAGE (BK * LDB)
#define A_CHUNKS (BM * BK / 4)  // 16-byte chunks per tile
#define B_CHUNKS (BK * BN / 4)

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16-byte global -> shared copy of the first `bytes` bytes (0 to 16); the rest is zero-filled.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(bytes));
}

// 4-byte global -> shared copy; zero-fills the destination when !valid (nothing is read).
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 4 : 0));
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

// x = big + small exactly: big is x truncated to TF32, small the rest (the MMA reads its TF32 part).
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small)
{
    big = __float_as_uint(x) & 0xffffe000u;
    small = __float_as_uint(x - __uint_as_float(big));
}

// c += a * b for one m16n8k8 tile, TF32 inputs, fp32 accumulators.
__device__ __forceinline__ void mma1688(float* c, const unsigned* a, const unsigned* b)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// ---- end of PTX helpers

extern "C" __global__ void __launch_bounds__(NT, MINB)
gemm_bias_relu(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
               float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                       // [STAGES][BM][LDA]
    float* Bs = smem + STAGES * A_STAGE;    // [STAGES][BK][LDB]

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec = (K & 3) == 0 && (N & 3) == 0;   // every row of A and B is 16-byte aligned
    const int ktiles = (K + BK - 1) / BK;

    // Global -> shared for K tile kt into ring buffer `stage`.
    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
        float* as = As + stage * A_STAGE;
        float* bs = Bs + stage * B_STAGE;
#pragma unroll
        for (int i = 0; i < (A_CHUNKS + NT - 1) / NT; ++i) {
            const int e = tid + i * NT;
            if (A_CHUNKS % NT == 0 || e < A_CHUNKS) {
                const int r = e / (BK / 4), c = (e % (BK / 4)) * 4;
                const int gr = m0 + r, gk = k0 + c;
                float* dst = as + r * LDA + c;
                if (vec) {
                    const bool in = gr < M && gk < K;
                    cp_async16(dst, in ? A + (size_t)gr * K + gk : A, in ? min(4, K - gk) * 4 : 0);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const bool in = gr < M && gk + j < K;
                        cp_async4(dst + j, in ? A + (size_t)gr * K + gk + j : A, in);
                    }
                }
            }
        }
#pragma unroll
        for (int i = 0; i < (B_CHUNKS + NT - 1) / NT; ++i) {
            const int e = tid + i * NT;
            if (B_CHUNKS % NT == 0 || e < B_CHUNKS) {
                const int r = e / (BN / 4), c = (e % (BN / 4)) * 4;
                const int gk = k0 + r, gc = n0 + c;
                float* dst = bs + r * LDB + c;
                if (vec) {
                    const bool in = gk < K && gc < N;
                    cp_async16(dst, in ? B + (size_t)gk * N + gc : B, in ? min(4, N - gc) * 4 : 0);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const bool in = gk < K && gc + j < N;
                        cp_async4(dst + j, in ? B + (size_t)gk * N + gc + j : B, in);
                    }
                }
            }
        }
    };

    float acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    // Prologue: tiles 0 .. STAGES - 2 in flight (one commit group each, empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles)
            load_tile(s, s);
        cp_async_commit();
    }

    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of tile kt have landed
        __syncthreads();               // everyone's have, and everyone is done with tile kt - 1
        if (kt + STAGES - 1 < ktiles)
            load_tile((kt + STAGES - 1) % STAGES, kt + STAGES - 1);   // into tile kt - 1's buffer
        cp_async_commit();

        const float* as = As + (kt % STAGES) * A_STAGE + (wm * WTM) * LDA;
        const float* bs = Bs + (kt % STAGES) * B_STAGE + wn * WTN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            unsigned bBig[NJ][2], bSmall[NJ][2];
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                split_tf32(bs[(kk + 2 * t) * LDB + j * 8 + g], bBig[j][0], bSmall[j][0]);
                split_tf32(bs[(kk + 2 * t + 1) * LDB + j * 8 + g], bBig[j][1], bSmall[j][1]);
            }
            unsigned aBig[MI][4], aSmall[MI][4];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const float* ap = as + (i * 16 + g) * LDA + kk + 2 * t;
                const float2 lo = *reinterpret_cast<const float2*>(ap);             // row g: k = t, t + 4
                const float2 hi = *reinterpret_cast<const float2*>(ap + 8 * LDA);   // row g + 8
                split_tf32(lo.x, aBig[i][0], aSmall[i][0]);
                split_tf32(hi.x, aBig[i][1], aSmall[i][1]);
                split_tf32(lo.y, aBig[i][2], aSmall[i][2]);
                split_tf32(hi.y, aBig[i][3], aSmall[i][3]);
            }
            // The three products in three passes over the warp tile, so that an accumulator's next
            // MMA comes MI * NJ MMAs after its last one and never waits for it.
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
                    mma1688(acc[i][j], aSmall[i], bBig[j]);
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
                    mma1688(acc[i][j], aBig[i], bSmall[j]);
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
                    mma1688(acc[i][j], aBig[i], bBig[j]);
        }
    }
    cp_async_wait<0>();   // nothing in flight at exit (the last groups are empty)

    // Epilogue: c0, c1 at (row g, columns 2t, 2t + 1) of each m16n8 tile, c2, c3 eight rows below;
    // bias and ReLU on the way out.
    const bool pairs = (N & 1) == 0;
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const int col = n0 + wn * WTN + j * 8 + 2 * t;
        const float b0 = col < N ? bias[col] : 0.0f;
        const float b1 = col + 1 < N ? bias[col + 1] : 0.0f;
#pragma unroll
        for (int i = 0; i < MI; ++i) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WTM + i * 16 + g + h * 8;
                if (row >= M)
                    continue;
                float* cp = C + (size_t)row * N + col;
                const float v0 = fmaxf(acc[i][j][2 * h] + b0, 0.0f), v1 = fmaxf(acc[i][j][2 * h + 1] + b1, 0.0f);
                if (pairs && col + 1 < N) {
                    *reinterpret_cast<float2*>(cp) = make_float2(v0, v1);
                } else {
                    if (col < N)
                        cp[0] = v0;
                    if (col + 1 < N)
                        cp[1] = v1;
                }
            }
        }
    }
}
