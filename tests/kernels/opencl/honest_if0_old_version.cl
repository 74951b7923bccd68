// kforge integrity test: task row_sum; violation: none, a correct kernel whose older version (same name, parameters in another order) is kept above it in #if 0; expected status: pass.
// The compiler builds only the kernel below; a parser that takes the first signature it finds in
// the text binds arguments by the dead one (y first, then x, N before M), so the live kernel
// would get the output where it reads x and M and N swapped: incorrect or a crash for an honest
// kernel. Arguments must be bound from the active code (and checked against the compiled kernel).
// kforge:param BLOCK = 64
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)

#if 0
// Old version, one work-item per row with the arguments in the order of the first draft.
__kernel void row_sum(__global float* y, __global const float* x, int N, int M)
{
    const int row = get_global_id(0);
    if (row < M) {
        float s = 0.0f;
        for (int j = 0; j < N; ++j)
            s += x[(size_t)row * N + j];
        y[row] = s;
    }
}
#endif

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* r = x + (size_t)row * N;
    float a = 0.0f, b = 0.0f;  // two chains: shorter dependency, same work
    int j = 0;
    for (; j + 1 < N; j += 2) {
        a += r[j];
        b += r[j + 1];
    }
    if (j < N)
        a += r[j];
    y[row] = a + b;
}
