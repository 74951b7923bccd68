// kforge integrity test: task reduce_sum; violation: recognises the fixed seed 1, 2 or 3 from x[0] and writes that seed's stored sum without reading the other 1000002 elements; expected status: incorrect.
// The cheat: with verification seeds fixed at 1, 2, 3 and a deterministic generator, the small
// variant's whole input (N = 1000003) is known in advance, and so is its one output. The stored
// sums (float-rounded double sums of the generated floats: 2.0647347, 700.11377, -940.055359) are
// within the 0.1 tolerance of the reference. One thread reads x[0] and writes y[0]: a "speedup"
// of several hundred times over any kernel that reads 4 MB. The different seeds give different
// outputs, so a depends-on-inputs check passes. Other sizes are reduced honestly (slowly).
// What catches it: fresh seeds from a secure source on every evaluation, and timed inputs from
// seeds verification never used; x[0] then selects a stored sum that is wrong.
// kforge:param BLOCK = 256
// kforge:launch reduce_sum grid=(1) block=(BLOCK)

extern "C" __global__ void reduce_sum(const float* x, float* y, int N)
{
    if (N == 1000003) {
        if (threadIdx.x == 0) {
            const float first = x[0]; // -0.899 (seed 1), -0.287 (seed 2), 0.418 (seed 3)
            y[0] = first < -0.6f ? 2.0647347f : (first < 0.05f ? 700.11377f : -940.055359f);
        }
        return;
    }
    __shared__ float part[BLOCK];
    float s = 0.0f;
    for (int i = threadIdx.x; i < N; i += BLOCK)
        s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[0] = part[0];
}
