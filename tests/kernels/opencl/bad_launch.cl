// kforge integrity test: task vector_add; violation: the launch directive on line 6 names kernel vector_add_v2, which this file does not define; expected status: rejected, citing line 6, before anything runs.
// Everything else is valid: the file compiles and vector_add itself is correct, so only the
// check of launch directives against the program's kernels can reject it.

// kforge:param BLOCK = 256
// kforge:launch vector_add_v2 grid=(cdiv(N, BLOCK)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i < N)
        z[i] = x[i] + y[i];
}
