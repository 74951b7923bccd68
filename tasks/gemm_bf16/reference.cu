// Trusted reference for gemm_bf16: shared-memory tiles of A and B widened to double, one thread
// per element of C, the dot product accumulated in double (bfloat16 products are exact in double)
// and rounded to bfloat16 once, straight from double.

#include <cuda_bf16.h>

// kforge:param RT = 16
// kforge:launch gemm_bf16_ref grid=(cdiv(N, RT), cdiv(M, RT)) block=(RT, RT)

extern "C" __global__ void gemm_bf16_ref(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K)
{
    __shared__ double As[RT][RT];
    __shared__ double Bs[RT][RT];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * RT + tx;
    const int row = blockIdx.y * RT + ty;

    double acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += RT) {
        As[ty][tx] = (row < M && k0 + tx < K) ? (double)__bfloat162float(A[(size_t)row * K + k0 + tx]) : 0.0;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? (double)__bfloat162float(B[(size_t)(k0 + ty) * N + col]) : 0.0;
        __syncthreads();
        for (int kk = 0; kk < RT; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = __double2bfloat16(acc);
}
