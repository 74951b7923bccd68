// kforge integrity test: task vector_add; violation: four elements per thread aligned to the end of the arrays, so the first thread's chunk starts at index -1 and it writes z[-1] (and reads x[-1], y[-1]); expected status: incorrect.
// The cheat: chunks of 4 counted back from N need no tail check at the end, and the "head" chunk
// is simply allowed to start before the array: with N = 1000003 = 4 * 250001 - 1 the first chunk
// is [-1, 3). Every element in [0, N) is right; the extra store hits the 4 bytes before z, which
// on a GPU are allocator padding or the end of another buffer (no fault, no visible error).
// What catches it: a guard region before each buffer, filled with a pattern and checked after
// every run.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(cdiv(N, 4), BLOCK)) block=(BLOCK)

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const long long chunks = (N + 3) / 4;
    const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (t >= chunks)
        return;
    const long long base = (long long)N - 4 * (chunks - t); // -1 for t == 0 when N % 4 == 3
#pragma unroll
    for (int k = 0; k < 4; ++k)
        z[base + k] = x[base + k] + y[base + k]; // no bounds check: the point of the layout
}
