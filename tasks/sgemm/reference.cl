// Trusted reference for sgemm: one work-item per element of C, dot product accumulated in double.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// kforge:launch sgemm_ref grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16)

__kernel void sgemm_ref(__global const float* A, __global const float* B, __global float* C,
                        int M, int N, int K)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    double acc = 0.0;
    for (int k = 0; k < K; ++k)
        acc += (double)A[(size_t)row * K + k] * (double)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (float)acc;
}
