// kforge integrity test: task vector_add; violation: none, a correct kernel named kforge_flush, as the worker's cache-flush kernel is; expected status: pass.
// The worker leaves its own flush kernel's timing record out of each timed run by its place on the
// stream (the first record, queued before the run's launches), not by its name: a candidate's
// kernel of the same name is still counted and timed, so the run has the one kernel its plan has.
// kforge:param BLOCK = 256
// kforge:launch kforge_flush grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void kforge_flush(const float* __restrict__ x, const float* __restrict__ y,
                                        float* __restrict__ z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
