// Seed kernel for KernelBench level1/1_Square_matrix_multiplication_ imported with `kforge import`:
// out = torch.matmul(A, B) with A, B and out N x N float32 row-major (N = 4096 by default).
// FP32 on the CUDA cores (no TF32: PyTorch's float32 matmul default is full precision, and the
// reference runs in float64). This is kforge's register-blocked SGEMM expert
// (resources/experts/gemm/sgemm_tiled_register.cu) with M = N = K = N:
//  - A block of (BM / TM) x (BN / TN) threads computes a BM x BN tile of out; each thread owns a
//    TM x TN block of accumulators in registers, so every shared-memory value feeds TM or TN FMAs.
//  - A's BM x BK tile is stored transposed (As[k][m], rows padded by 4 floats) so a thread reads
//    its TM values of column k as float4s; B's BK x BN tile is stored as is.
//  - A thread's rows and columns come in groups of 4 spread BM / (TM / 4) and BN / (TN / 4) apart,
//    so float4 shared-memory reads are conflict-free and a warp's stores are contiguous.
//  - Register-prefetch double buffering: the next K tile's global loads are issued before the
//    math on the current one and stored to the other shared buffer afterwards; one barrier per tile.
//  - float4 global loads and stores when N % 4 == 0 (buffers are 256-byte aligned), bounds-checked
//    element-wise ones otherwise and on ragged edges (zeros past the edges), so any N works.
// Tuning: at N = 4096, 128 x 128 tiles give 1024 blocks; 64-wide tiles give more, smaller blocks.
// MINB = 2 asks the compiler for two resident blocks per SM (at most 128 registers a thread at
// 256 threads; TM = TN = 8 then may spill).
// Left for candidates: cp.async / TMA pipelines, warp tiling, 3xTF32 tensor-core splitting.

// kforge:param BM in {64, 128} = 128
// kforge:param BN in {64, 128} = 128
// kforge:param BK in {8, 16} = 16
// kforge:param TM in {4, 8} = 8
// kforge:param TN in {4, 8} = 8
// kforge:param MINB in {1, 2} = 1
// kforge:launch matmul grid=(cdiv(N, BN), cdiv(N, BM)) block=(BM / TM * (BN / TN), 1)

#define WM (BM / TM)            // threads along M
#define WN (BN / TN)            // threads along N
#define NT (WM * WN)            // threads per block
#define LDAS (BM + 4)           // padded row of the transposed A tile
#define A_VECS (BM * BK / 4)    // float4s per A tile
#define B_VECS (BK * BN / 4)    // float4s per B tile
#define A_PER ((A_VECS + NT - 1) / NT)
#define B_PER ((B_VECS + NT - 1) / NT)

extern "C" __global__ void __launch_bounds__(NT, MINB)
matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out, int N)
{
    const int M = N, K = N;   // square: A, B and out are all N x N
    float* __restrict__ C = out;
    __shared__ __align__(16) float As[2][BK][LDAS];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % WN, ty = tid / WN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vecA = (K & 3) == 0;   // every A row starts 16-byte aligned
    const bool vecB = (N & 3) == 0;   // every B and C row starts 16-byte aligned

    float4 ra[A_PER], rb[B_PER];

    // Global -> registers for the K tile starting at k0 (zeros outside the matrices).
    auto loadTiles = [&](int k0) {
#pragma unroll
        for (int i = 0; i < A_PER; ++i) {
            const int e = tid + i * NT;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (A_VECS % NT == 0 || e < A_VECS) {
                const int r = e / (BK / 4), c = (e % (BK / 4)) * 4;
                const int gr = row0 + r, gc = k0 + c;
                if (gr < M) {
                    const float* p = A + (size_t)gr * K + gc;
                    if (vecA && gc < K) {   // K % 4 == 0 and gc % 4 == 0: all four are inside
                        v = *reinterpret_cast<const float4*>(p);
                    } else {
                        if (gc < K) v.x = p[0];
                        if (gc + 1 < K) v.y = p[1];
                        if (gc + 2 < K) v.z = p[2];
                        if (gc + 3 < K) v.w = p[3];
                    }
                }
            }
            ra[i] = v;
        }
#pragma unroll
        for (int i = 0; i < B_PER; ++i) {
            const int e = tid + i * NT;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (B_VECS % NT == 0 || e < B_VECS) {
                const int r = e / (BN / 4), c = (e % (BN / 4)) * 4;
                const int gr = k0 + r, gc = col0 + c;
                if (gr < K) {
                    const float* p = B + (size_t)gr * N + gc;
                    if (vecB && gc < N) {
                        v = *reinterpret_cast<const float4*>(p);
                    } else {
                        if (gc < N) v.x = p[0];
                        if (gc + 1 < N) v.y = p[1];
                        if (gc + 2 < N) v.z = p[2];
                        if (gc + 3 < N) v.w = p[3];
                    }
                }
            }
            rb[i] = v;
        }
    };
    // Registers -> shared buffer `buf` (A transposed).
    auto storeTiles = [&](int buf) {
#pragma unroll
        for (int i = 0; i < A_PER; ++i) {
            const int e = tid + i * NT;
            if (A_VECS % NT == 0 || e < A_VECS) {
                const int r = e / (BK / 4), c = (e % (BK / 4)) * 4;
                As[buf][c + 0][r] = ra[i].x;
                As[buf][c + 1][r] = ra[i].y;
                As[buf][c + 2][r] = ra[i].z;
                As[buf][c + 3][r] = ra[i].w;
            }
        }
#pragma unroll
        for (int i = 0; i < B_PER; ++i) {
            const int e = tid + i * NT;
            if (B_VECS % NT == 0 || e < B_VECS) {
                const int r = e / (BN / 4), c = (e % (BN / 4)) * 4;
                *reinterpret_cast<float4*>(&Bs[buf][r][c]) = rb[i];
            }
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n)
            acc[m][n] = 0.0f;

    const int tiles = (K + BK - 1) / BK;
    loadTiles(0);
    storeTiles(0);
    __syncthreads();

    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < tiles;
        if (more)
            loadTiles((t + 1) * BK);   // in flight during the math below

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM / 4; ++i) {
                const float4 v = *reinterpret_cast<const float4*>(&As[cur][k][i * WM * 4 + ty * 4]);
                a[i * 4 + 0] = v.x; a[i * 4 + 1] = v.y; a[i * 4 + 2] = v.z; a[i * 4 + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][g * WN * 4 + tx * 4]);
                b[g * 4 + 0] = v.x; b[g * 4 + 1] = v.y; b[g * 4 + 2] = v.z; b[g * 4 + 3] = v.w;
            }
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n)
                    acc[m][n] = fmaf(a[m], b[n], acc[m][n]);
        }

        if (more)
            storeTiles(cur ^ 1);   // nobody reads cur ^ 1 now: the last barrier ended its use
        __syncthreads();
    }

    // Epilogue: float4 stores where the row pitch and the edge allow, element-wise otherwise.
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = row0 + i * WM * 4 + ty * 4 + r;
            if (row >= M)
                continue;
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const int col = col0 + g * WN * 4 + tx * 4;
                const float4 v = make_float4(acc[i * 4 + r][g * 4 + 0], acc[i * 4 + r][g * 4 + 1],
                                             acc[i * 4 + r][g * 4 + 2], acc[i * 4 + r][g * 4 + 3]);
                float* p = C + (size_t)row * N + col;
                if (vecB && col < N) {   // N % 4 == 0 and col % 4 == 0: all four are inside
                    *reinterpret_cast<float4*>(p) = v;
                } else {
                    if (col < N) p[0] = v.x;
                    if (col + 1 < N) p[1] = v.y;
                    if (col + 2 < N) p[2] = v.z;
                    if (col + 3 < N) p[3] = v.w;
                }
            }
        }
    }
}
