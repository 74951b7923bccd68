// expert:name vector_rows
// expert:tasks row_sum
// expert:pattern vector loads into VW independent partial sums per work-item, several rows per work-group, one local-memory tree per row
//
// A row reduction is bound by memory bandwidth, so the loads must be wide and the adds must not
// form one long dependency chain. Each work-item reads vectors of VW contiguous floats (vector v
// of the row at v = lid, lid + BLOCK, ...: neighbouring work-items read neighbouring vectors,
// coalesced on a GPU, one SIMD register on a CPU) and adds them into a floatVW accumulator: VW
// independent partial sums, folded only at the end. Summing in VW * BLOCK interleaved partial
// sums is also more accurate than one running float.
//
// A work-group of BLOCK x ROWS work-items takes ROWS rows, so when N is small a group still has
// enough work, and a CPU gets fewer, larger groups (BLOCK = 1 is a row per work-item with no tree
// at all). The last N % VW elements of a row are added one by one. Rows past M (the last group,
// when ROWS does not divide M) still reach every barrier but read nothing.
//
// Tuning: BLOCK (a power of two for the tree), ROWS, VW the vector width.

// kforge:param BLOCK in {1, 4, 16, 64, 128} = 16
// kforge:param ROWS in {1, 2, 4, 8} = 2
// kforge:param VW in {4, 8, 16} = 16
// kforge:launch row_sum grid=(1, cdiv(M, ROWS)) block=(BLOCK, ROWS)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatVW CAT(float, VW)

// Element-wise unaligned vector loads: compilers merge them into one vector load, and they avoid
// vloadn, which PoCL 3.1 does not declare for __global pointers under CL3.0.
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define LOAD16(p) ((float16)(LOAD8(p), LOAD8((p) + 8)))
#define LOADVW CAT(LOAD, VW)

float hsum4(float4 v) { const float2 a = v.lo + v.hi; return a.x + a.y; }
float hsum8(float8 v) { return hsum4(v.lo + v.hi); }
float hsum16(float16 v) { return hsum8(v.lo + v.hi); }
#define hsumVW CAT(hsum, VW)

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    __local float partial[ROWS][BLOCK];
    const int lid = get_local_id(0);
    const int r = get_local_id(1);
    const int row = get_group_id(1) * ROWS + r;
    const int n = row < M ? N : 0;   // rows past M do no work but keep the barriers uniform
    __global const float* xr = x + (size_t)min(row, M - 1) * N;
    const int nvec = n / VW;

    floatVW acc = (floatVW)(0.0f);
    for (int v = lid; v < nvec; v += BLOCK)
        acc += LOADVW(xr + v * VW);
    float s = hsumVW(acc);
    for (int j = nvec * VW + lid; j < n; j += BLOCK)
        s += xr[j];

    partial[r][lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (lid < h)
            partial[r][lid] += partial[r][lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && row < M)
        y[row] = partial[r][0];
}
