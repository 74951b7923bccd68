// kforge integrity test: task vector_add; violation: never terminates; expected status: timeout.
// The pool must stop the worker at the request's deadline and start a new one. The flag is a
// volatile global, so the compiler must re-read it forever and cannot drop the loop.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
__device__ volatile int keep_spinning = 1;
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    while (keep_spinning) {
    }
    if (i < N)
        z[i] = x[i] + y[i];
}
