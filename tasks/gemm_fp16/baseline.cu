// Baseline gemm_fp16: a first tensor-core kernel with the WMMA API. Each block of 4 warps computes
// a 64 x 64 tile of C; each warp a 32 x 32 sub-tile as 2 x 2 fragments of 16 x 16, accumulated in
// float32. 64 x 32 tiles of A and 32 x 64 tiles of B are staged in shared memory with scalar,
// bounds-checked loads (zeros past the edges, so odd M, N and K work), one tile at a time. The
// accumulators go through shared memory for a bounds-checked float16 store.
// Left for candidates: vectorised / cp.async (or TMA) loads with a multi-stage pipeline, larger
// block and warp tiles, mma.sync or wgmma instead of WMMA, swizzled shared memory, a direct
// register-to-global epilogue.

#include <cuda_fp16.h>
#include <mma.h>

// kforge:launch gemm_fp16 grid=(cdiv(N, 64), cdiv(M, 64)) block=(128, 1)

#define BM 64
#define BN 64
#define BK 32
#define LDA (BK + 8)   // padded leading dimensions: multiples of 8 halves / 4 floats, as WMMA needs,
#define LDB (BN + 8)   // and 16-row fragment offsets stay 32-byte aligned
#define LDC (BN + 4)

using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(128)
gemm_fp16(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(32) __half As[BM][LDA];
    __shared__ __align__(32) __half Bs[BK][LDB];
    __shared__ __align__(32) float Cs[BM][LDC];

    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int wm = warp >> 1, wn = warp & 1;   // 2 x 2 warps, each owning 32 x 32 of the tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const __half zero = __float2half(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Consecutive threads load consecutive elements of a row: coalesced.
        for (int e = tid; e < BM * BK; e += 128) {
            const int r = e / BK, c = e % BK;
            const int gr = row0 + r, gc = k0 + c;
            As[r][c] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : zero;
        }
        for (int e = tid; e < BK * BN; e += 128) {
            const int r = e / BN, c = e % BN;
            const int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : zero;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; ++i)
                wmma::load_matrix_sync(a[i], &As[wm * 32 + i * 16][kk], LDA);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                wmma::load_matrix_sync(b[j], &Bs[kk][wn * 32 + j * 16], LDB);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();   // the tiles are overwritten by the next iteration
    }

#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < BM * BN; e += 128) {
        const int r = e / BN, c = e % BN;
        const int gr = row0 + r, gc = col0 + c;
        if (gr < M && gc < N)
            C[(size_t)gr * N + gc] = __float2half_rn(Cs[r][c]);
    }
}
