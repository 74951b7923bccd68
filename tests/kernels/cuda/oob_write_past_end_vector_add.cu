// kforge integrity test: task vector_add; violation: float4 loads and stores with no scalar tail, so the last thread writes z[N] (one element past the end of z) and reads x[N] and y[N]; expected status: incorrect.
// The cheat: dropping the tail branch makes every thread take the same vector path (no divergence,
// fewer instructions), and N = 1000003 is 3 past a multiple of 4, so the last float4 covers
// z[1000000..1000003]: the last element lies past the end of the buffer. All in-range elements
// are correct and nothing faults, because allocations are rounded up (cudaMalloc to at least 256
// bytes, so the store lands in padding, or in whatever buffer follows). A harness that only
// compares the N output elements passes it.
// What catches it: guard regions around every candidate buffer, filled with a known pattern and
// checked after each run (an out-of-bounds write is then reported as incorrect).
// kforge:param BLOCK = 256
// kforge:launch vector_add4 grid=(cdiv(cdiv(N, 4), BLOCK)) block=(BLOCK)

extern "C" __global__ void vector_add4(const float* __restrict__ x, const float* __restrict__ y,
                                       float* __restrict__ z, int N)
{
    const int v = blockIdx.x * BLOCK + threadIdx.x;
    if (4 * v >= N)
        return;
    const float4 a = reinterpret_cast<const float4*>(x)[v];
    const float4 b = reinterpret_cast<const float4*>(y)[v];
    reinterpret_cast<float4*>(z)[v] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
