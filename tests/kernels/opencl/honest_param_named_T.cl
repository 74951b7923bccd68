// kforge integrity test: task vector_add; violation: none, a correct kernel whose tunable parameter is named T (each thread handles T elements); expected status: pass.
// The worker passes parameters as -D defines, so a parameter named like a common template or
// macro name (T) must not collide with anything the worker adds to the source or the command
// line; the candidate itself includes nothing that uses T.
// kforge:param BLOCK = 256
// kforge:param T in {1, 2, 4} = 2
// kforge:launch vector_add grid=(cdiv(N, BLOCK * T)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int first = get_global_id(0) * T;
    for (int k = 0; k < T; ++k) {
        const int i = first + k;
        if (i < N)
            z[i] = x[i] + y[i];
    }
}
