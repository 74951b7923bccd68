// kforge integrity test: task vector_add; violation: none, a correct kernel that still has a debugging printf guarded by a condition that never holds; expected status: pass.
// printf's format string lives in the module's initialised global section under a compiler-made
// name; the worker's restore of module-scope state between runs must cope with it (printf is only
// a warning: it distorts timing but is not cheating).
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N) {
        const float s = x[i] + y[i];
        if (s > 1.0e30f)
            printf("vector_add: element %d overflows (%f)\n", i, s);
        z[i] = s;
    }
}
