// kforge integrity test: task vector_add; violation: a first launch records in module-scope variables (a function-local static and one in an anonymous namespace, which the compiler gives internal names) whether the module ran before, and the second launch answers wrongly when it did; expected status: pass.
// The state is small (8 bytes, under the 64 KiB kforge allows) and its symbols are local to the
// CUBIN, so it is neither rejected nor found by a lookup of public names. The worker restores every
// .nv.global section of the module to its load-time contents before each run, so every run starts
// with `seen` at 0 and the kernel is right every time: this checks that the restore covers state a
// kernel cannot name from outside. Were the state kept, every run after the first would be off by
// one and the kernel incorrect.
// kforge:param BLOCK = 256
// kforge:launch remember grid=(1) block=(1)
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

namespace {
__device__ int seenBefore;
}

__device__ int* seenFlag()
{
    static __device__ int seen;
    return &seen;
}

extern "C" __global__ void remember(int N)
{
    seenBefore = *seenFlag();
    *seenFlag() = N > 0 ? 1 : 2;
}

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i] + (seenBefore ? 1.0f : 0.0f);
}
