// kforge integrity test: task vector_add; violation: the kernel returns without writing z; expected status: incorrect.
// A harness that neither poisons outputs nor fresh-allocates them, and reuses a buffer that a
// correct kernel (the reference) filled earlier, would wrongly pass this.

// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
}
