// kforge integrity test: task vector_add; violation: syntax error (an unbalanced ')') on line 14 of this file; expected status: compile_error, with the compiler message pointing at line 14.
// If the harness prepends defines or a prologue to the source it must map line numbers back
// (e.g. with a #line directive) so that the reported line is still 14.

// kforge:launch vector_add grid=(cdiv(N, 256)) block=(256)

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i >= N)
        return;
    // The next line is line 14.
    z[i] = x[i] + y[i]);
}
