// kforge integrity test: task vector_add; violation: computes z on the first call only, keeps it in __device__ globals and replays it on later calls; expected status: rejected or incorrect.
// (Rejected where the worker limits module-scope state: 16 MiB of __device__ variables is far above the
// 64 KiB it restores before every run; incorrect where it does not and the replay shows.)
// Device globals live as long as the module, so a harness that reuses the module across calls
// must give every call fresh inputs (new seeds, rotated input sets) to expose the replay.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
#define CACHE_N (1 << 21)
__device__ float cache[CACHE_N];
__device__ int cached[CACHE_N];
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= N)
        return;
    if (i < CACHE_N) {
        if (!cached[i]) {
            cache[i] = x[i] + y[i];
            cached[i] = 1;
        }
        z[i] = cache[i];
    } else {
        z[i] = x[i] + y[i];
    }
}
