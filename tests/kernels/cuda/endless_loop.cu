// kforge integrity test: task vector_add; violation: never terminates; expected status: timeout.
// The pool must stop the worker at the request's deadline and start a new one.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    volatile int spin = 1;
    while (spin) {
    }
    if (i < N)
        z[i] = x[i] + y[i];
}
