// expert:name attention_cp_async
// expert:tasks attention
// expert:pattern attention_register_tiled (8 x 8 register blocks for scores and output, online softmax over 8-lane shuffles) with the K and V tiles fetched by cp.async behind the math: K for the next tile while P V runs, V for the next tile while Q K^T runs

// FlashAttention-style fused attention in fp32 on CUDA cores, organised like a register-blocked
// SGEMM (the math of attention_register_tiled), with the global loads taken off the critical path.
// A block of BQ threads owns BQ query rows of one (batch, head) slice and streams the keys and
// values past them in tiles of BKV:
//  - Q (scaled by 1/sqrt(D) * log2(e), so scores are in the exp2 domain) is staged once,
//    transposed (Qs[d][q]).
//  - Scores S = Q K^T: thread (ty, tx) computes 8 query rows x BKV / 8 keys from float4 shared
//    loads of Qs and of the transposed key tile Ks[d][key] (16 FMAs per shared load at BKV = 64).
//  - Online softmax: the 8 threads sharing a query row combine the tile's row max and row sum
//    with xor shuffles; the running max, sum and the output accumulators are rescaled as in
//    FlashAttention. Keys past S get -inf scores.
//  - P goes through shared memory (Ps[key][q]), then O += P V: 8 rows x 8 dims per thread.
//  - Copies without waiting: Ks is free once every thread has its scores, so the next K tile is
//    issued (4-byte cp.async, scattered transposed) right after the barrier that publishes P, and
//    travels during P V; Vs is free after P V, so the next V tile (16-byte cp.async) travels
//    during the next Q K^T. Each wait_group is for copies issued a whole phase earlier, and no
//    extra shared memory is needed. Keys past S are zero-filled by the copies (src-size 0).
//  - O is written once, normalised, as float4s; rows past S are not stored.
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

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// Global -> shared copies of 4 and 16 bytes; they zero-fill the destination when !valid.
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 4 : 0));
}

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
// ---- end of PTX helpers

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

    // K tile t0 .. t0 + BKV - 1, transposed (key fastest: conflict-free shared stores).
    auto load_k = [&](int t0) {
        for (int e = tid; e < BKV * HD; e += NT) {
            const int key = e % BKV, d = e / BKV;
            const bool in = t0 + key < S;
            cp_async4(Ks + d * LDK + key, in ? K + base + (size_t)(t0 + key) * HD + d : K, in);
        }
    };
    // V tile, as is (16-byte chunks).
    auto load_v = [&](int t0) {
        for (int e = tid; e < BKV * (HD / 4); e += NT) {
            const int key = e / (HD / 4), d4 = e % (HD / 4);
            const bool in = t0 + key < S;
            cp_async16(Vs + key * HD + d4 * 4, in ? V + base + (size_t)(t0 + key) * HD + d4 * 4 : V, in);
        }
    };

    float o[8][8], m[8], l[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        m[i] = ninf;
        l[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < 8; ++c)
            o[i][c] = 0.0f;
    }

    // Commit groups, in order: K(0), V(0), then per tile t: K(t + 1) after the P barrier and
    // V(t + 1) after the last barrier (empty groups past the end keep the counting uniform).
    load_k(0);
    cp_async_commit();
    load_v(0);
    cp_async_commit();

    for (int t0 = 0; t0 < S; t0 += BKV) {
        cp_async_wait<1>();   // K(t) has landed for this thread; V(t) may still be in flight
        __syncthreads();      // everyone's K(t) (and Qs) visible; everyone is done with P V of t - 1

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
        cp_async_wait<0>();   // V(t) has landed for this thread
        __syncthreads();      // P and V(t) visible; everyone is done with Ks
        if (t0 + BKV < S)
            load_k(t0 + BKV);   // travels during P V
        cp_async_commit();

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
        __syncthreads();   // everyone is done with Vs and Ps
        if (t0 + BKV < S)
            load_v(t0 + BKV);   // travels during the next Q K^T
        cp_async_commit();
    }
    cp_async_wait<0>();   // nothing in flight at exit (the last groups are empty)

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
