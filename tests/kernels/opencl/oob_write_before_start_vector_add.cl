// kforge integrity test: task vector_add; violation: four elements per work-item aligned to the end of the arrays, so the first work-item's chunk starts at index -1 and it writes z[-1] (and reads x[-1], y[-1]); expected status: incorrect.
// The cheat: chunks of 4 counted back from N need no tail check at the end, and the "head" chunk
// is simply allowed to start before the array: with N = 1000003 = 4 * 250001 - 1 the first chunk
// is [-1, 3). Every element in [0, N) is right; the extra store hits the 4 bytes before z, which
// are allocator padding or the end of another buffer (no fault, no visible error).
// What catches it: a guard region before each buffer, filled with a pattern and checked after
// every run.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(cdiv(N, 4), BLOCK)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const long chunks = (N + 3) / 4;
    const long t = get_global_id(0);
    if (t >= chunks)
        return;
    const long base = (long)N - 4 * (chunks - t); // -1 for t == 0 when N % 4 == 3
    for (int k = 0; k < 4; ++k)
        z[base + k] = x[base + k] + y[base + k]; // no bounds check: the point of the layout
}
