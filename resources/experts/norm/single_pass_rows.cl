// expert:name single_pass_rows
// expert:tasks layernorm
// expert:pattern one read pass for mean and variance (shifted sum and sum of squares in vector accumulators), one pass to normalise; several rows per work-group
//
// The baseline reads each row three times (mean, variance of centred values, output). Here the
// mean and the variance come from one pass that accumulates sum(d) and sum(d * d) with d = x - K,
// then var = sum(d * d) / N - (sum(d) / N)^2 and mean = K + sum(d) / N. The plain sum/sum-of-squares
// formula loses precision when the mean is large against the spread (catastrophic cancellation);
// shifting every value by K, any value of the row (its first element), makes the shifted mean
// small, so float accumulation stays well inside the tolerance. Each work-item accumulates in
// floatVW vectors (VW independent partial sums, wide loads), so the pass runs at memory speed.
// The second pass reads x, gamma and beta as vectors and writes y.
//
// A work-group of BLOCK x ROWS work-items takes ROWS rows, BLOCK work-items per row (BLOCK = 1 is
// a row per work-item with no tree at all, often best on a CPU). The last N % VW elements of a row
// are done one by one; rows past M (the last group, when ROWS does not divide M) still reach every
// barrier but touch no memory.
//
// Tuning: BLOCK (a power of two for the tree), ROWS, VW the vector width.

// kforge:param BLOCK in {1, 4, 16, 64, 128} = 16
// kforge:param ROWS in {1, 2, 4, 8} = 2
// kforge:param VW in {4, 8, 16} = 16
// kforge:launch layernorm grid=(1, cdiv(M, ROWS)) block=(BLOCK, ROWS)

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

float hsum4(float4 v) { const float2 a = v.lo + v.hi; return a.x + a.y; }
float hsum8(float8 v) { return hsum4(v.lo + v.hi); }
float hsum16(float16 v) { return hsum8(v.lo + v.hi); }
#define hsumVW CAT(hsum, VW)

__kernel void layernorm(__global const float* x, __global const float* gamma,
                        __global const float* beta, __global float* y, int M, int N, float eps)
{
    __local float redS[ROWS][BLOCK];
    __local float redQ[ROWS][BLOCK];
    const int lid = get_local_id(0);
    const int r = get_local_id(1);
    const int row = get_group_id(1) * ROWS + r;
    const int n = row < M ? N : 0;   // rows past M do no work but keep the barriers uniform
    const size_t base = (size_t)min(row, M - 1) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    const int nvec = n / VW;
    const float shift = xr[0];

    floatVW s = (floatVW)(0.0f), q = (floatVW)(0.0f);
    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW d = LOADVW(xr + v * VW) - shift;
        s += d;
        q = fma(d, d, q);
    }
    float ss = hsumVW(s), qq = hsumVW(q);
    for (int j = nvec * VW + lid; j < n; j += BLOCK) {
        const float d = xr[j] - shift;
        ss += d;
        qq = fma(d, d, qq);
    }

    redS[r][lid] = ss;
    redQ[r][lid] = qq;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (lid < h) {
            redS[r][lid] += redS[r][lid + h];
            redQ[r][lid] += redQ[r][lid + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float dmean = redS[r][0] / N;
    const float var = fmax(redQ[r][0] / N - dmean * dmean, 0.0f);
    const float mean = shift + dmean;
    const float rstd = rsqrt(var + eps);

    for (int v = lid; v < nvec; v += BLOCK) {
        const floatVW out = (LOADVW(xr + v * VW) - mean) * rstd * LOADVW(gamma + v * VW) + LOADVW(beta + v * VW);
        STOREVW(out, yr + v * VW);
    }
    for (int j = nvec * VW + lid; j < n; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
