// Trusted reference for layernorm: one work-item per row, two-pass mean/variance in double.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// kforge:launch layernorm_ref grid=(cdiv(M, 64)) block=(64)

__kernel void layernorm_ref(__global const float* x, __global const float* gamma,
                            __global const float* beta, __global float* y,
                            int M, int N, float eps)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* xr = x + (size_t)row * N;
    __global float* yr = y + (size_t)row * N;

    double mean = 0.0;
    for (int j = 0; j < N; ++j)
        mean += (double)xr[j];
    mean /= N;

    double var = 0.0;
    for (int j = 0; j < N; ++j) {
        const double d = (double)xr[j] - mean;
        var += d * d;
    }
    var /= N;   // biased variance, as in the usual layer norm definition

    const double rstd = 1.0 / sqrt(var + (double)eps);
    for (int j = 0; j < N; ++j)
        yr[j] = (float)(((double)xr[j] - mean) * rstd * (double)gamma[j] + (double)beta[j]);
}
