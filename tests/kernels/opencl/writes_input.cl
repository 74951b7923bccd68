// kforge integrity test: task vector_add; violation: computes z correctly but also overwrites input x; expected status: rejected.
// x keeps its const qualifier (the cast strips it) so the static binding check passes: only
// comparing the inputs after the run can catch this. Writing a buffer the host allocated as
// CL_MEM_READ_ONLY is undefined behaviour, and most devices just perform the store, so the
// access flag is no protection.

// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i >= N)
        return;
    const float s = x[i] + y[i];
    z[i] = s;
    ((__global float*)x)[i] = s;   // the violation
}
