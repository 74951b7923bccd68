// expert:name register_blocked
// expert:tasks sgemm
// expert:pattern no local memory: each work-item keeps a TM x TN block of C in vector registers and streams rows of B with vector loads
//
// Register blocking without local memory, the shape of a CPU GEMM micro-kernel. Each work-item
// owns TM rows x TN columns of C as TM accumulators of type floatTN. For every k it loads one
// contiguous TN-wide piece of row k of B (a single vector load) and one scalar of each of its TM
// rows of A, and does TM vector FMAs: TM + 1 loads for TM * TN multiply-adds, against 2 loads per
// multiply-add in the naive kernel. On a CPU OpenCL (PoCL) floatTN maps onto SIMD registers
// (TN = 16 is one AVX-512 register) and the caches do what local memory does on a GPU, so the
// barriers a local-memory tile needs would only cost. On a GPU, prefer the local-memory tiled
// expert.
//
// Work-items whose block overhangs the edge of C (odd M or N) take a bounds-checked scalar path.
// Tuning: TM x TN sets the accumulator count (TM registers of TN floats); BX x BY only groups
// neighbouring blocks into one work-group, which decides how many groups the cores share.

// kforge:param TM in {2, 4, 8} = 8
// kforge:param TN in {4, 8, 16} = 16
// kforge:param BX in {1, 2, 4, 8} = 4
// kforge:param BY in {1, 2, 4} = 2
// kforge:launch sgemm grid=(cdiv(N, TN * BX), cdiv(M, TM * BY)) block=(BX, BY)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatTN CAT(float, TN)

// Unaligned vector loads and stores of global memory spelled out element by element: compilers
// merge them into one vector access, and they avoid vloadn/vstoren, which some OpenCL 3.0
// implementations (PoCL 3.1) do not declare for __global pointers.
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define LOAD16(p) ((float16)(LOAD8(p), LOAD8((p) + 8)))
#define STORE4(v, p) ((p)[0] = (v).s0, (p)[1] = (v).s1, (p)[2] = (v).s2, (p)[3] = (v).s3)
#define STORE8(v, p) (STORE4((v).lo, (p)), STORE4((v).hi, (p) + 4))
#define STORE16(v, p) (STORE8((v).lo, (p)), STORE8((v).hi, (p) + 8))
#define LOADTN CAT(LOAD, TN)
#define STORETN CAT(STORE, TN)

__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    int M, int N, int K)
{
    const int col0 = get_global_id(0) * TN;
    const int row0 = get_global_id(1) * TM;
    if (row0 >= M || col0 >= N)
        return;
    __global const float* a = A + (size_t)row0 * K;

    if (row0 + TM <= M && col0 + TN <= N) {
        floatTN acc[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i)
            acc[i] = (floatTN)(0.0f);
        __global const float* b = B + col0;
        for (int k = 0; k < K; ++k) {
            const floatTN bv = LOADTN(b + (size_t)k * N);
#pragma unroll
            for (int i = 0; i < TM; ++i)
                acc[i] = fma((floatTN)(a[i * K + k]), bv, acc[i]);
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
            STORETN(acc[i], C + (size_t)(row0 + i) * N + col0);
        return;
    }

    // Edge block: only the rows and columns inside C.
    const int rows = min(TM, M - row0);
    const int cols = min(TN, N - col0);
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc = fma(a[i * K + k], B[(size_t)k * N + col0 + j], acc);
            C[(size_t)(row0 + i) * N + col0 + j] = acc;
        }
    }
}
