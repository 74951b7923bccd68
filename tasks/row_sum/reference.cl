// Trusted reference for row_sum: one work-item per row, sequential sum in double
// (exact enough that the summation order of a candidate is the only error left).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// kforge:launch row_sum_ref grid=(cdiv(M, 64)) block=(64)

__kernel void row_sum_ref(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* xr = x + (size_t)row * N;
    double s = 0.0;
    for (int j = 0; j < N; ++j)
        s += (double)xr[j];
    y[row] = (float)s;
}
