// kforge:launch scale_ref grid=(cdiv(N, 64)) block=(64)
__kernel void scale_ref(__global const float* x, __global float* y, int N)
{
    const int i = get_global_id(0);
    if (i < N)
        y[i] = 2.0f * x[i];
}
