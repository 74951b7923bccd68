// Trusted reference for softmax: one work-item per row, everything in double.
// Slow (uncoalesced, serial over N) but obviously correct; only its values matter.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// kforge:launch softmax_ref grid=(cdiv(M, 64)) block=(64)

__kernel void softmax_ref(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* xr = x + (size_t)row * N;
    __global float* yr = y + (size_t)row * N;

    double m = -INFINITY;
    for (int j = 0; j < N; ++j)
        m = fmax(m, (double)xr[j]);
    double s = 0.0;
    for (int j = 0; j < N; ++j)
        s += exp((double)xr[j] - m);
    for (int j = 0; j < N; ++j)
        yr[j] = (float)(exp((double)xr[j] - m) / s);
}
