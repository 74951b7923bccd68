// kforge integrity test: task vector_add; violation: writes far outside its buffer (an illegal address error poisons the CUDA context); expected status: runtime_error.
// The worker must answer, exit, and be replaced by the pool; the next evaluation must work.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[(size_t)i + ((size_t)1 << 40)] = x[i] + y[i];
}
