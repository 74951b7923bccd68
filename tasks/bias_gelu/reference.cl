// Trusted reference for bias_gelu: one work-item per element, evaluated in double.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// kforge:launch bias_gelu_ref grid=(cdiv(N, 64), M) block=(64, 1)

__kernel void bias_gelu_ref(__global const float* x, __global const float* b, __global float* y,
                            int M, int N)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    if (col >= N || row >= M)
        return;
    const size_t i = (size_t)row * N + col;
    const double v = (double)x[i] + (double)b[col];
    const double k = 0.79788456080286535588;   // sqrt(2 / pi)
    y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
}
