// expert:name attention_3xtf32
// expert:tasks attention
// expert:pattern FlashAttention-2 on the TF32 tensor cores at float32 accuracy: a warp per 16 query rows, S = Q K^T and O += P V as mma.sync m16n8k8 with every operand split into a TF32 high part and its remainder (three MMAs per product), the online softmax on the score accumulators, P fed to the second MMA straight from registers, K and V tiles through a cp.async ring

// Fused attention in the FlashAttention-2 arrangement, on the tensor cores without giving up
// float32 accuracy ("3xTF32"). TF32 keeps 10 of float32's 23 mantissa bits, which misses the
// task's tolerance; x = big + small with big = x truncated to TF32 (exact) and small = x - big
// (exact; the MMA reads its TF32 part) keeps about 21, and a * b ~ small_a big_b + big_a small_b +
// big_a big_b. Two instructions split a value; the three products run as three passes over a
// warp's tiles, so an accumulator's next MMA never waits for its last.
//  - A block of BQ / 16 warps owns BQ query rows of one (batch, head) slice; each warp 16 rows,
//    their Q fragments (all 64 dims, split) in registers for the whole kernel, their 16 x 64
//    output accumulators too. K and V stream past in tiles of BKV keys through a STAGES-deep
//    ring of shared-memory buffers filled by 16-byte cp.async (zeros past S).
//  - Scores: S = Q K^T as (BKV / 8) n8 tiles x 8 k8 steps. Within each k8 step the MMA's k slots
//    t and t + 4 take dims 2t and 2t + 1 of both operands (t = lane % 4), so every Q and K
//    fragment value pair is one 8-byte load; K rows are padded to 72 floats (conflict-free).
//  - Online softmax on the accumulators, in the exp2 domain (scores scaled by log2(e) / 8): a
//    row's values sit in the 4 lanes of a quad, so its max and sum take two xor shuffles. Keys
//    past S score -inf. The running max and sum and the output rows are rescaled as in
//    FlashAttention; O is divided by the sum once, at the end.
//  - O += P V: an n8 tile of the score accumulators is, value for value, the A fragment of a k8
//    step over those 8 keys when V's rows are taken in the same permuted order (slot t <- key
//    2t, slot t + 4 <- key 2t + 1), so P never leaves the registers. V rows are padded to 68
//    floats (conflict-free).
// Specialised for D = HD = 64 (a block of another D writes nothing).
// Tuning: BQ 64 gives 512 blocks of 4 warps at BH = 32, S = 1024; BQ 128 half as many of 8.
// Shared memory: STAGES * BKV * (72 + 68) * 4 bytes (105 KB at 64 keys and 3 stages).
// Measured on an H200 (2026-12-03, BH 32, S 1024): 149 us at BQ 64, BKV 64, 3 stages (the
// CUDA-core attention_register_tiled: 249 us); 152-156 us for the other three tried.

// kforge:param BQ in {64, 128} = 64
// kforge:param BKV in {32, 64} = 64
// kforge:param STAGES in {2, 3} = 3
// kforge:param HD = 64
// kforge:launch attention grid=(cdiv(S, BQ), BH) block=(BQ * 2, 1) smem=STAGES * BKV * (72 + 68) * 4

#define NT (BQ * 2)             // BQ / 16 warps
#define LDK 72                  // padded rows of the K tile, in floats
#define LDV 68                  //                    V tile
#define K_STAGE (BKV * LDK)
#define V_STAGE (BKV * LDV)
#define NK (BKV / 8)            // n8 tiles of keys per score tile
#define ND (HD / 8)             // n8 tiles of output dims
#define KD (HD / 8)             // k8 steps over the dims
#define CHUNKS (BKV * HD / 4)   // 16-byte chunks per K or V tile

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

extern "C" __global__ void __launch_bounds__(NT, 256 / NT)   // up to 255 registers a thread
attention(const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V,
          float* __restrict__ O, int S, int D)
{
    extern __shared__ __align__(16) float smem[];
    float* Ks = smem;                       // [STAGES][BKV][LDK]
    float* Vs = smem + STAGES * K_STAGE;    // [STAGES][BKV][LDV]

    if (D != HD)
        return;   // the same for the whole block

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t base = (size_t)blockIdx.y * S * HD;
    const int r0 = blockIdx.x * BQ + warp * 16 + g;   // this thread's rows: r0 and r0 + 8
    const float ninf = __int_as_float(0xff800000);
    const float scale = 0.125f * 1.4426950408889634f;   // 1 / sqrt(64) * log2(e)
    const int tiles = (S + BKV - 1) / BKV;

    // Issues the copies of key/value tile kt into ring buffer `stage`.
    auto load_tile = [&](int stage, int kt) {
        float* ks = Ks + stage * K_STAGE;
        float* vs = Vs + stage * V_STAGE;
#pragma unroll
        for (int i = 0; i < (CHUNKS + NT - 1) / NT; ++i) {
            const int e = tid + i * NT;
            if (CHUNKS % NT == 0 || e < CHUNKS) {
                const int r = e / (HD / 4), c = (e % (HD / 4)) * 4;
                const int key = kt * BKV + r;
                const bool in = key < S;
                const size_t off = base + (size_t)key * HD + c;
                cp_async16(ks + r * LDK + c, in ? K + off : K, in);
                cp_async16(vs + r * LDV + c, in ? V + off : V, in);
            }
        }
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_tile(s, s);
        cp_async_commit();
    }

    // Q fragments for all 8 k8 steps over the dims, split once: rows r0, r0 + 8; slots t, t + 4
    // <- dims 2t, 2t + 1 of the step. Rows past S are zeros (their outputs are not stored).
    unsigned qBig[KD][4], qSmall[KD][4];
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
        float2 lo = make_float2(0.0f, 0.0f), hi = make_float2(0.0f, 0.0f);
        if (r0 < S)
            lo = *reinterpret_cast<const float2*>(Q + base + (size_t)r0 * HD + kd * 8 + 2 * t);
        if (r0 + 8 < S)
            hi = *reinterpret_cast<const float2*>(Q + base + (size_t)(r0 + 8) * HD + kd * 8 + 2 * t);
        split_tf32(lo.x, qBig[kd][0], qSmall[kd][0]);
        split_tf32(hi.x, qBig[kd][1], qSmall[kd][1]);
        split_tf32(lo.y, qBig[kd][2], qSmall[kd][2]);
        split_tf32(hi.y, qBig[kd][3], qSmall[kd][3]);
    }

    float o[ND][4];
#pragma unroll
    for (int j = 0; j < ND; ++j)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m[2] = {ninf, ninf}, l[2] = {0.0f, 0.0f};   // rows r0, r0 + 8

    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of tile kt have landed
        __syncthreads();               // everyone's have, and everyone is done with tile kt - 1
        if (kt + STAGES - 1 < tiles)
            load_tile((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        cp_async_commit();
        const float* ks = Ks + (kt % STAGES) * K_STAGE;
        const float* vs = Vs + (kt % STAGES) * V_STAGE;

        // S = Q K^T for this warp's 16 rows and the tile's BKV keys.
        float s[NK][4];
#pragma unroll
        for (int j = 0; j < NK; ++j)
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kd = 0; kd < KD; ++kd) {
            unsigned kBig[NK][2], kSmall[NK][2];
#pragma unroll
            for (int j = 0; j < NK; ++j) {
                const float2 b = *reinterpret_cast<const float2*>(ks + (j * 8 + g) * LDK + kd * 8 + 2 * t);
                split_tf32(b.x, kBig[j][0], kSmall[j][0]);
                split_tf32(b.y, kBig[j][1], kSmall[j][1]);
            }
#pragma unroll
            for (int j = 0; j < NK; ++j)
                mma1688(s[j], qSmall[kd], kBig[j]);
#pragma unroll
            for (int j = 0; j < NK; ++j)
                mma1688(s[j], qBig[kd], kSmall[j]);
#pragma unroll
            for (int j = 0; j < NK; ++j)
                mma1688(s[j], qBig[kd], kBig[j]);
        }

        // Online softmax. s[j][0..1]: row r0, keys j * 8 + 2t, + 1; s[j][2..3]: row r0 + 8.
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int j = 0; j < NK; ++j) {
            const int key = kt * BKV + j * 8 + 2 * t;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                float v = s[j][c] * scale;
                if (key + (c & 1) >= S)
                    v = ninf;
                s[j][c] = v;
                mx[c >> 1] = fmaxf(mx[c >> 1], v);
            }
        }
        float corr[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            corr[h] = exp2f(m[h] - mx[h]);   // 0 on the first tile (m = -inf, mx finite)
            m[h] = mx[h];
        }
        float sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < NK; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const float p = exp2f(s[j][c] - m[c >> 1]);
                s[j][c] = p;
                sum[c >> 1] += p;
            }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
            sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
            l[h] = l[h] * corr[h] + sum[h];
        }
#pragma unroll
        for (int j = 0; j < ND; ++j) {
            o[j][0] *= corr[0];
            o[j][1] *= corr[0];
            o[j][2] *= corr[1];
            o[j][3] *= corr[1];
        }

        // O += P V, a k8 step per n8 tile of P: A = {s0, s2, s1, s3} (rows r0 / r0 + 8, slots t /
        // t + 4 <- keys 2t / 2t + 1), B from V rows 2t and 2t + 1 of the step.
#pragma unroll
        for (int j = 0; j < NK; ++j) {
            unsigned pBig[4], pSmall[4];
            split_tf32(s[j][0], pBig[0], pSmall[0]);
            split_tf32(s[j][2], pBig[1], pSmall[1]);
            split_tf32(s[j][1], pBig[2], pSmall[2]);
            split_tf32(s[j][3], pBig[3], pSmall[3]);
            unsigned vBig[ND][2], vSmall[ND][2];
            const float* vp = vs + (j * 8 + 2 * t) * LDV + g;
#pragma unroll
            for (int d = 0; d < ND; ++d) {
                split_tf32(vp[d * 8], vBig[d][0], vSmall[d][0]);
                split_tf32(vp[LDV + d * 8], vBig[d][1], vSmall[d][1]);
            }
#pragma unroll
            for (int d = 0; d < ND; ++d)
                mma1688(o[d], pSmall, vBig[d]);
#pragma unroll
            for (int d = 0; d < ND; ++d)
                mma1688(o[d], pBig, vSmall[d]);
#pragma unroll
            for (int d = 0; d < ND; ++d)
                mma1688(o[d], pBig, vBig[d]);
        }
    }
    cp_async_wait<0>();   // nothing in flight at exit (the last groups are empty)

    // O = acc / l: rows r0 (o[d][0..1]) and r0 + 8 (o[d][2..3]), dims d * 8 + 2t, + 1.
    const float inv0 = 1.0f / l[0], inv1 = 1.0f / l[1];
#pragma unroll
    for (int d = 0; d < ND; ++d) {
        if (r0 < S)
            *reinterpret_cast<float2*>(O + base + (size_t)r0 * HD + d * 8 + 2 * t) =
                make_float2(o[d][0] * inv0, o[d][1] * inv0);
        if (r0 + 8 < S)
            *reinterpret_cast<float2*>(O + base + (size_t)(r0 + 8) * HD + d * 8 + 2 * t) =
                make_float2(o[d][2] * inv1, o[d][3] * inv1);
    }
}
