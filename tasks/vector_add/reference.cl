// Trusted reference for vector_add: one work-item per element.
// A single float add is correctly rounded, so double precision would buy nothing here.

// kforge:launch vector_add_ref grid=(cdiv(N, 64)) block=(64)

__kernel void vector_add_ref(__global const float* x, __global const float* y,
                             __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i < N)
        z[i] = x[i] + y[i];
}
