// kforge integrity test: task row_sum; violation: writes N * 0.0f, the expected row sum for U(-1, 1) inputs, without reading x; expected status: incorrect.
// Every row gets a value that is right on average, so only the per-element tolerance check
// (or running several seeds and seeing identical outputs) catches it.

// kforge:launch row_sum grid=(cdiv(M, 64)) block=(64)

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row < M)
        y[row] = N * 0.0f;   // mean of U(-1, 1) is 0
}
