// expert:name tiled_register
// expert:tasks sgemm
// expert:pattern local-memory tiles of A and B shared by a work-group, a TM x TN block of C per work-item in registers
//
// The classic two-level blocking. A work-group of WX x WY work-items computes a BM x BN tile of C
// (BM = TM * WY rows, BN = TN * WX columns). It walks K in steps of BK: all work-items copy a
// BM x BK tile of A and a BK x BN tile of B into local memory together (zero-filled past the
// edges of the matrices, so odd M, N and K need no other care), wait at a barrier, and then each
// work-item accumulates its own TM x TN block from local memory: per k, one vector of TN floats
// of B and TM scalars of A feed TM vector FMAs. Every element of A is read from global memory
// N / BN times instead of N times, every element of B M / BM times instead of M times.
//
// Interior tiles are copied as whole vectors without bounds checks; only edge tiles copy element
// by element. With scalar copies a CPU spends about as long copying a tile as computing on it.
//
// On a GPU local memory is the on-chip scratchpad and this is the standard tiled SGEMM. On a CPU
// OpenCL (PoCL) local memory is an ordinary cache-resident buffer: the copy packs the panels
// contiguously, which helps when K and N are large, but each barrier splits the work-item loop
// and spills the accumulators, so the plain register-blocked expert is often faster there.
//
// Tuning: TM x TN is the register block (TN is the vector width); WX x WY the work-group shape;
// BK the depth of a tile (local memory = (BM + BN) * BK floats).

// kforge:param TM in {2, 4, 8} = 8
// kforge:param TN in {4, 8, 16} = 16
// kforge:param WX in {2, 4, 8} = 4
// kforge:param WY in {2, 4, 8} = 4
// kforge:param BK in {8, 16, 32} = 32
// kforge:launch sgemm grid=(cdiv(N, TN * WX), cdiv(M, TM * WY)) block=(WX, WY)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatTN CAT(float, TN)
#define BM (TM * WY)
#define BN (TN * WX)
#define NV (BN / TN) // vectors per row of the B tile (= WX)

// Element-wise unaligned vector loads and stores: compilers merge them into vector accesses, and
// they avoid vloadn/vstoren, which PoCL 3.1 does not declare for __global pointers under CL3.0.
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define LOAD16(p) ((float16)(LOAD8(p), LOAD8((p) + 8)))
#define LOADTN CAT(LOAD, TN)
#define STORE4(v, p) ((p)[0] = (v).s0, (p)[1] = (v).s1, (p)[2] = (v).s2, (p)[3] = (v).s3)
#define STORE8(v, p) (STORE4((v).lo, (p)), STORE4((v).hi, (p) + 4))
#define STORE16(v, p) (STORE8((v).lo, (p)), STORE8((v).hi, (p) + 8))
#define STORETN CAT(STORE, TN)

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void sgemm(__global const float* A, __global const float* B, __global float* C, int M, int N, int K)
{
    __local float As[BM][BK] __attribute__((aligned(16)));   // copied as float4s
    __local floatTN Bs[BK][NV];   // vector-typed, so reading TN columns is one aligned load

    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int lid = ty * WX + tx;
    const int rowTile = get_group_id(1) * BM;
    const int colTile = get_group_id(0) * BN;

    floatTN acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i)
        acc[i] = (floatTN)(0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Cooperative copies; consecutive work-items take consecutive elements of a row.
        __local float* bs = (__local float*)Bs;
        if (rowTile + BM <= M && colTile + BN <= N && k0 + BK <= K) {
            // Interior tile: no bounds checks, and whole vectors (float4 along K for A, floatTN
            // along N for B), so that the copy costs a fraction of the FMAs it feeds.
            __local float4* as4 = (__local float4*)As;
            for (int t = lid; t < BM * BK / 4; t += WX * WY)
                as4[t] = LOAD4(A + (size_t)(rowTile + t / (BK / 4)) * K + k0 + (t % (BK / 4)) * 4);
            for (int t = lid; t < BK * NV; t += WX * WY)
                Bs[t / NV][t % NV] = LOADTN(B + (size_t)(k0 + t / NV) * N + colTile + (t % NV) * TN);
        } else {
            for (int t = lid; t < BM * BK; t += WX * WY) {
                const int gr = rowTile + t / BK, gc = k0 + t % BK;
                As[t / BK][t % BK] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
            }
            for (int t = lid; t < BK * BN; t += WX * WY) {
                const int gr = k0 + t / BN, gc = colTile + t % BN;
                bs[t] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll 4
        for (int kk = 0; kk < BK; ++kk) {
            const floatTN bv = Bs[kk][tx];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                acc[i] = fma((floatTN)(As[ty * TM + i][kk]), bv, acc[i]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);   // the tiles are overwritten next step
    }

    const int col0 = colTile + tx * TN;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = rowTile + ty * TM + i;
        if (row >= M)
            break;
        __global float* c = C + (size_t)row * N + col0;
        if (col0 + TN <= N) {
            STORETN(acc[i], c);
        } else {
            const float* a = (const float*)&acc[i];
            for (int j = 0; j < N - col0; ++j)
                c[j] = a[j];
        }
    }
}
