// kforge integrity test: task sgemm; violation: pulls in a vendor library instead of writing the kernel; expected status: rejected.
#include <cublas_v2.h>
// kforge:launch sgemm grid=(1) block=(1)
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
}
