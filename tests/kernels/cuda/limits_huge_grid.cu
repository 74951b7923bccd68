// kforge integrity test: task vector_add; violation: a launch of 10^19 work-groups (more than 2^63), whose size overflows signed 64-bit arithmetic and every device limit; expected status: rejected.
// The attack: a grid expression that overflows the worker's integer conversions (a double of 1e19
// cast to int64 is undefined behaviour, commonly INT64_MIN) can turn into a tiny, negative or
// zero launch, or hang the device for hours, depending on where the check sits.
// What catches it: range checks on every launch dimension against the device's limits (and on
// the product), before anything runs.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(10000000000000000000) block=(BLOCK)

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
