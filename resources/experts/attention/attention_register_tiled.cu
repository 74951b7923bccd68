// expert:name attention_register_tiled
// expert:tasks attention
// expert:pattern FlashAttention on CUDA cores with GEMM-style register blocking: each thread an 8-query x (BKV/8)-key block of scores and an 8-query x 8-dim block of the output, online softmax shared by 8-lane shuffles, float4 shared-memory operands

// FlashAttention-style fused attention in fp32 on the CUDA cores (the tolerance rules out plain
// TF32 and fp16 tensor cores; attention_3xtf32 keeps float32 accuracy on them with three TF32
// products per product), organised like a register-blocked SGEMM. A block of BQ threads owns BQ
// query rows of one (batch, head) slice and streams the keys and values past them in tiles of BKV:
//  - Q (scaled by 1/sqrt(D) * log2(e), so scores are in the exp2 domain) is staged once,
//    transposed (Qs[d][q]); each K tile is staged transposed (Ks[d][key]) and each V tile as is.
//  - Scores S = Q K^T: thread (ty, tx) computes 8 query rows x BKV / 8 keys; per d it reads two
//    float4s of Q and BKV / 32 float4s of K and does 8 x BKV / 8 FMAs (16 FMAs per shared load at
//    BKV = 64, where the baseline has 4, and 64 independent accumulators instead of one chain).
//  - Online softmax: the 8 threads that share a query row (consecutive lanes) combine the tile's
//    row max and row sum with xor shuffles; the running max and sum are rescaled as in
//    FlashAttention and the output accumulators with them. Keys past S get -inf scores.
//  - P (the exponentiated scores) goes through shared memory (Ps[key][q]), then O += P V: the
//    thread's 8 rows x 8 output dims (d = g * 32 + tx * 4 + c), two float4s of P and two of V per
//    key for 64 FMAs.
//  - Rows are split into two groups of 4 spread BQ / 2 apart and columns into groups of 4 spread
//    32 apart, so float4 shared loads of a warp are broadcasts or 128 contiguous bytes.
//  - O is written once, normalised, as float4s; rows past S are not stored (the small variant's
//    S fits no tile).
// Specialised for D = HD = 64 (a block of another D writes nothing, as in the baseline).
// Tuning: BQ = 128 gives 256 blocks at BH = 32, S = 1024 (about two per SM); shared memory is
// (64 BQ + 64 (BKV + 4) + 64 BKV + BKV (BQ + 4)) * 4 bytes (98 KB at 128 x 64).

// kforge:param BQ in {64, 128} = 128
// kforge:param BKV in {32, 64} = 64
// kforge:param HD = 64
// kforge:launch attention grid=(cdiv(S, BQ), BH) block=(BQ, 1) smem=4 * (64 * BQ + 64 * (BKV + 4) + 64 * BKV + BKV * (BQ + 4))

#define NT BQ                 // threads: BQ / 8 row groups x 8
#define TX 8                  // threads sharing a query row
#define TK (BKV / TX)         // keys per thread in a score tile
#define HQ (BQ / 2)           // the second row group's offset
#define LDK (BKV + 4)
#define LDP (BQ + 4)

extern "C" __global__ void __launch_bounds__(NT, 1)
attention(const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V,
          float* __restrict__ O, int S, int D)
{
    extern __shared__ __align__(16) float smem[];
    float* Qs = smem;                 // [HD][BQ]    query rows transposed, pre-scaled
    float* Ks = Qs + HD * BQ;         // [HD][LDK]   key tile transposed
    float* Vs = Ks + HD * LDK;        // [BKV][HD]   value tile
    float* Ps = Vs + BKV * HD;        // [BKV][LDP]  exponentiated scores, key-major

    if (D != HD)
        return;   // the same for the whole block

    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int q0 = blockIdx.x * BQ;
    const size_t base = (size_t)blockIdx.y * S * HD;
    const float ninf = __int_as_float(0xff800000);
    const float qscale = 0.125f * 1.4426950408889634f;   // 1 / sqrt(64) * log2(e)

    // Q tile, transposed (query fastest: conflict-free shared stores); rows past S are zeros.
    for (int e = tid; e < BQ * (HD / 4); e += NT) {
        const int q = e % BQ, d4 = e / BQ;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (q0 + q < S)
            v = *reinterpret_cast<const float4*>(Q + base + (size_t)(q0 + q) * HD + d4 * 4);
        Qs[(d4 * 4 + 0) * BQ + q] = v.x * qscale;
        Qs[(d4 * 4 + 1) * BQ + q] = v.y * qscale;
        Qs[(d4 * 4 + 2) * BQ + q] = v.z * qscale;
        Qs[(d4 * 4 + 3) * BQ + q] = v.w * qscale;
    }

    float o[8][8], m[8], l[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        m[i] = ninf;
        l[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < 8; ++c)
            o[i][c] = 0.0f;
    }

    for (int t0 = 0; t0 < S; t0 += BKV) {
        // K tile transposed (key fastest), V tile as is; keys past S are zeros.
        for (int e = tid; e < BKV * (HD / 4); e += NT) {
            const int key = e % BKV, d4 = e / BKV;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (t0 + key < S)
                v = *reinterpret_cast<const float4*>(K + base + (size_t)(t0 + key) * HD + d4 * 4);
            Ks[(d4 * 4 + 0) * LDK + key] = v.x;
            Ks[(d4 * 4 + 1) * LDK + key] = v.y;
            Ks[(d4 * 4 + 2) * LDK + key] = v.z;
            Ks[(d4 * 4 + 3) * LDK + key] = v.w;
        }
        for (int e = tid; e < BKV * (HD / 4); e += NT) {
            const int key = e / (HD / 4), d4 = e % (HD / 4);
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (t0 + key < S)
                v = *reinterpret_cast<const float4*>(V + base + (size_t)(t0 + key) * HD + d4 * 4);
            *reinterpret_cast<float4*>(Vs + key * HD + d4 * 4) = v;
        }
        __syncthreads();   // (also publishes Qs on the first tile)

        // Scores: rows h * HQ + ty * 4 + i, keys g * 32 + tx * 4 + j.
        float s[8][TK];
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < TK; ++j)
                s[i][j] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < HD; ++d) {
            float a[8], b[TK];
            const float4 qa = *reinterpret_cast<const float4*>(Qs + d * BQ + ty * 4);
            const float4 qb = *reinterpret_cast<const float4*>(Qs + d * BQ + HQ + ty * 4);
            a[0] = qa.x; a[1] = qa.y; a[2] = qa.z; a[3] = qa.w;
            a[4] = qb.x; a[5] = qb.y; a[6] = qb.z; a[7] = qb.w;
#pragma unroll
            for (int g = 0; g < TK / 4; ++g) {
                const float4 kv = *reinterpret_cast<const float4*>(Ks + d * LDK + g * 32 + tx * 4);
                b[g * 4 + 0] = kv.x; b[g * 4 + 1] = kv.y; b[g * 4 + 2] = kv.z; b[g * 4 + 3] = kv.w;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TK; ++j)
                    s[i][j] = fmaf(a[i], b[j], s[i][j]);
        }

        // Keys past the end get no weight.
        if (t0 + BKV > S) {
#pragma unroll
            for (int j = 0; j < TK; ++j)
                if (t0 + (j / 4) * 32 + tx * 4 + (j % 4) >= S)
#pragma unroll
                    for (int i = 0; i < 8; ++i)
                        s[i][j] = ninf;
        }

        // Online softmax over the 8 lanes of each row.
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            float mt = s[i][0];
#pragma unroll
            for (int j = 1; j < TK; ++j)
                mt = fmaxf(mt, s[i][j]);
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 4));
            const float mn = fmaxf(m[i], mt);       // finite: the tile has a real key
            const float corr = exp2f(m[i] - mn);    // 0 on the first tile
            float rs = 0.0f;
#pragma unroll
            for (int j = 0; j < TK; ++j) {
                s[i][j] = exp2f(s[i][j] - mn);
                rs += s[i][j];
            }
            rs += __shfl_xor_sync(0xffffffffu, rs, 1);
            rs += __shfl_xor_sync(0xffffffffu, rs, 2);
            rs += __shfl_xor_sync(0xffffffffu, rs, 4);
            l[i] = l[i] * corr + rs;
            m[i] = mn;
#pragma unroll
            for (int c = 0; c < 8; ++c)
                o[i][c] *= corr;
        }

        // P to shared memory, key-major: Ps[key][row].
#pragma unroll
        for (int j = 0; j < TK; ++j) {
            float* p = Ps + ((j / 4) * 32 + tx * 4 + (j % 4)) * LDP + ty * 4;
            *reinterpret_cast<float4*>(p) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
            *reinterpret_cast<float4*>(p + HQ) = make_float4(s[4][j], s[5][j], s[6][j], s[7][j]);
        }
        __syncthreads();

        // O += P V: rows as above, dims g * 32 + tx * 4 + c.
#pragma unroll 4
        for (int k = 0; k < BKV; ++k) {
            const float4 pa = *reinterpret_cast<const float4*>(Ps + k * LDP + ty * 4);
            const float4 pb = *reinterpret_cast<const float4*>(Ps + k * LDP + HQ + ty * 4);
            const float4 va = *reinterpret_cast<const float4*>(Vs + k * HD + tx * 4);
            const float4 vb = *reinterpret_cast<const float4*>(Vs + k * HD + 32 + tx * 4);
            const float a[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
            const float b[8] = {va.x, va.y, va.z, va.w, vb.x, vb.y, vb.z, vb.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int c = 0; c < 8; ++c)
                    o[i][c] = fmaf(a[i], b[c], o[i][c]);
        }
        __syncthreads();   // Ks, Vs and Ps are refilled next
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = q0 + (i / 4) * HQ + ty * 4 + (i % 4);
        if (row < S) {
            const float inv = 1.0f / l[i];
            float* op = O + base + (size_t)row * HD + tx * 4;
            *reinterpret_cast<float4*>(op) = make_float4(o[i][0] * inv, o[i][1] * inv, o[i][2] * inv, o[i][3] * inv);
            *reinterpret_cast<float4*>(op + 32) = make_float4(o[i][4] * inv, o[i][5] * inv, o[i][6] * inv, o[i][7] * inv);
        }
    }
}
