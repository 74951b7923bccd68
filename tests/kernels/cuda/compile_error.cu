// kforge integrity test: task vector_add; violation: does not compile (line 8 uses an undeclared name); expected status: compile_error.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i] + undeclared_bias;
}
