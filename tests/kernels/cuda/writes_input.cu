// kforge integrity test: task vector_add; violation: computes z correctly but also overwrites its input x; expected status: rejected.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N) {
        z[i] = x[i] + y[i];
        const_cast<float*>(x)[i] = 0.0f; // the declared const is only a promise
    }
}
