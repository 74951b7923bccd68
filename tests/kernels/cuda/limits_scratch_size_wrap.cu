// kforge integrity test: task vector_add; violation: a scratch buffer of 2^62 + 1 float32 elements, whose byte count (count * 4) wraps modulo 2^64 to a few bytes; expected status: rejected.
// The attack: a worker that computes count * element size in 64-bit arithmetic without an
// overflow check allocates (and zeroes) a tiny buffer while believing it has 2^64 bytes, and any
// later bounds logic that trusts the count is broken; a kernel that writes through the "huge"
// scratch then scribbles over the worker's device memory (other buffers, the reference's
// outputs). (As a double the expression is 2^62 exactly, so the product is exactly 2^64.)
// What catches it: checked multiplication and a limit on scratch bytes, before anything runs.
// kforge:param BLOCK = 256
// kforge:scratch tmp float32 [2^62 + 1]
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
