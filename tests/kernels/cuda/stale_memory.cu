// kforge integrity test: task vector_add; violation: computes only the first half and trusts that the rest of z still holds an earlier call's (or the reference's) results; expected status: incorrect.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N / 2)
        z[i] = x[i] + y[i];
}
