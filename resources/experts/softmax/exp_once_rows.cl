// expert:name exp_once_rows
// expert:tasks softmax
// expert:pattern one exp per element: exp(x - max) is written to y and summed, then y is rescaled in place while the row is still in cache; several rows per work-group
//
// Where exp is the expensive part (a CPU, or a GPU with a slow exp path), computing it twice per
// element (once for the sum, once for the output, as the baseline and the online softmax do) costs
// more than a third pass over a row that is still in cache. So: pass 1 finds the row max; pass 2
// writes e = exp(x - max) to y and sums it; pass 3 multiplies the work-item's own part of y by
// 1 / sum (no barrier needed: every work-item rescales exactly what it wrote). x is read twice, y
// written twice and read once, but a 16 KiB row stays in L1/L2 between passes.
//
// A work-group of BLOCK x ROWS work-items takes ROWS rows, BLOCK work-items per row, so short rows
// still fill a group and a CPU gets fewer, larger groups (BLOCK = 1 is a row per work-item with no
// reduction at all). Each work-item handles vectors of VW contiguous floats at v = lid, lid + BLOCK,
// ...; the last N % VW elements of a row are done one by one. Rows past M (the last group when
// ROWS does not divide M) still reach every barrier but touch no memory.
//
// Tuning: BLOCK (a power of two for the tree), ROWS, VW the vector width.

// kforge:param BLOCK in {1, 4, 16, 64, 128} = 16
// kforge:param ROWS in {1, 2, 4, 8} = 2
// kforge:param VW in {4, 8, 16} = 16
// kforge:launch softmax grid=(1, cdiv(M, ROWS)) block=(BLOCK, ROWS)

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

__kernel void softmax(__global const float* x, __global float* y, int M, int N)
{
    __local float red[ROWS][BLOCK];
    const int lid = get_local_id(0);
    const int r = get_local_id(1);
    const int row = get_group_id(1) * ROWS + r;
    const int n = row < M ? N : 0;   // rows past M do no work but keep the barriers uniform
    const size_t base = (size_t)min(row, M - 1) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    const int nvec = n / VW;

    float m = -INFINITY;
    for (int v = lid; v < nvec; v += BLOCK)
        m = fmax(m, hmaxVW(LOADVW(xr + v * VW)));
    for (int j = nvec * VW + lid; j < n; j += BLOCK)
        m = fmax(m, xr[j]);
    red[r][lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (lid < h)
            red[r][lid] = fmax(red[r][lid], red[r][lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[r][0];
    barrier(CLK_LOCAL_MEM_FENCE);   // all have read the max before red is reused

    float s = 0.0f;
    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW e = exp(LOADVW(xr + v * VW) - m);
        STOREVW(e, yr + v * VW);
        s += hsumVW(e);
    }
    for (int j = nvec * VW + lid; j < n; j += BLOCK) {
        const float e = exp(xr[j] - m);
        yr[j] = e;
        s += e;
    }
    red[r][lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (lid < h)
            red[r][lid] += red[r][lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float inv = 1.0f / red[r][0];

    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW e = LOADVW(yr + v * VW) * inv;
        STOREVW(e, yr + v * VW);
    }
    for (int j = nvec * VW + lid; j < n; j += BLOCK)
        yr[j] *= inv;
}
