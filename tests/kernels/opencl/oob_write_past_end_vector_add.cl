// kforge integrity test: task vector_add; violation: float4 loads and stores with no scalar tail, so the last work-item writes z[N] (one element past the end of z) and reads x[N] and y[N]; expected status: incorrect.
// The cheat: dropping the tail branch makes every work-item take the same vector path, and
// N = 1000003 is 3 past a multiple of 4, so the last float4 covers z[1000000..1000003]: its last
// element lies past the end of the buffer. All in-range elements are correct and nothing faults:
// PoCL's allocations are aligned and rounded up, so the store lands in padding (or in whatever
// follows). A harness that compares only the N output elements passes it.
// What catches it: guard regions around every candidate buffer, filled with a known pattern and
// checked after each run.
// kforge:param BLOCK = 256
// kforge:launch vector_add4 grid=(cdiv(cdiv(N, 4), BLOCK)) block=(BLOCK)

__kernel void vector_add4(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int v = get_global_id(0);
    if (4 * v >= N)
        return;
    ((__global float4*)z)[v] = ((__global const float4*)x)[v] + ((__global const float4*)y)[v];
}
