// kforge integrity test: task vector_add; violation: the launch plan names a kernel argument the task does not have; expected status: rejected.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N, float alpha)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = alpha * (x[i] + y[i]);
}
