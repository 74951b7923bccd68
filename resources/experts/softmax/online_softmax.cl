// expert:name online_softmax
// expert:tasks softmax
// expert:pattern one fused pass for the row max and the sum of exponentials (online rescaling), one pass to write; vector loads; work-group per row
//
// Online softmax (Milakov & Gimelshein 2018): a running maximum m and a running sum s of
// exp(x - m) are kept together; when a larger value arrives the sum is rescaled by exp(m_old -
// m_new). So the max and the sum take one pass over the row instead of two, and the row is read
// twice in all (the baseline reads it three times).
//
// Each work-item takes vectors of VW contiguous floats, vector v of the row at v = lid, lid +
// BLOCK, ... (neighbouring work-items read neighbouring vectors, coalesced on a GPU; on a CPU the
// vector is one SIMD register). It rescales once per vector, not once per element: the vector's
// own max first, then one exp per element. The work-group then merges the (m, s) pairs in a
// local-memory tree: (m1, s1) + (m2, s2) = (M, s1 * exp(m1 - M) + s2 * exp(m2 - M)), M = max(m1, m2),
// with empty pairs (s = 0, m = -inf) kept out of the exp so that they cannot make NaN.
// The last N % VW elements of a row are done one by one.
//
// Tuning: BLOCK work-items per row (a power of two for the tree), VW the vector width.

// kforge:param BLOCK in {16, 32, 64, 128, 256} = 64
// kforge:param VW in {4, 8, 16} = 16
// kforge:launch softmax grid=(M) block=(BLOCK)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatVW CAT(float, VW)

// Element-wise unaligned vector loads and stores: compilers merge them into vector accesses, and
// they avoid vloadn/vstoren, which PoCL 3.1 does not declare for __global pointers under CL3.0.
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define LOAD16(p) ((float16)(LOAD8(p), LOAD8((p) + 8)))
#define STORE4(v, p) ((p)[0] = (v).s0, (p)[1] = (v).s1, (p)[2] = (v).s2, (p)[3] = (v).s3)
#define STORE8(v, p) (STORE4((v).lo, (p)), STORE4((v).hi, (p) + 4))
#define STORE16(v, p) (STORE8((v).lo, (p)), STORE8((v).hi, (p) + 8))
#define LOADVW CAT(LOAD, VW)
#define STOREVW CAT(STORE, VW)

float hmax4(float4 v) { const float2 a = fmax(v.lo, v.hi); return fmax(a.x, a.y); }
float hmax8(float8 v) { return hmax4(fmax(v.lo, v.hi)); }
float hmax16(float16 v) { return hmax8(fmax(v.lo, v.hi)); }
float hsum4(float4 v) { const float2 a = v.lo + v.hi; return a.x + a.y; }
float hsum8(float8 v) { return hsum4(v.lo + v.hi); }
float hsum16(float16 v) { return hsum8(v.lo + v.hi); }
#define hmaxVW CAT(hmax, VW)
#define hsumVW CAT(hsum, VW)

// Folds the partial sum s at maximum m into the pair (*m, *s) at a common maximum.
void merge(float* m, float* s, float m2, float s2)
{
    if (s2 == 0.0f)
        return;
    if (*s == 0.0f) {
        *m = m2;
        *s = s2;
        return;
    }
    const float mx = fmax(*m, m2);
    *s = *s * exp(*m - mx) + s2 * exp(m2 - mx);
    *m = mx;
}

__kernel void softmax(__global const float* x, __global float* y, int N)
{
    __local float redM[BLOCK];
    __local float redS[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    const int nvec = N / VW;

    float m = -INFINITY, s = 0.0f;
    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW xv = LOADVW(xr + v * VW);
        const float cm = fmax(hmaxVW(xv), m);
        s = s * exp(m - cm) + hsumVW(exp(xv - cm));   // exp(-inf) = 0 on the first vector
        m = cm;
    }
    for (int j = nvec * VW + lid; j < N; j += BLOCK)
        merge(&m, &s, xr[j], 1.0f);

    redM[lid] = m;
    redS[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (lid < h) {
            m = redM[lid];
            s = redS[lid];
            merge(&m, &s, redM[lid + h], redS[lid + h]);
            redM[lid] = m;
            redS[lid] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = redM[0];
    const float inv = 1.0f / redS[0];

    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW out = exp(LOADVW(xr + v * VW) - m) * inv;
        STOREVW(out, yr + v * VW);
    }
    for (int j = nvec * VW + lid; j < N; j += BLOCK)
        yr[j] = exp(xr[j] - m) * inv;
}
