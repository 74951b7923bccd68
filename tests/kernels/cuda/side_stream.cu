// kforge integrity test: task vector_add; violation: launches the real work as a child grid on a fire-and-forget stream (dynamic parallelism), so it may run outside the timed region; expected status: rejected.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(1) block=(1)
extern "C" __global__ void add_child(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    add_child<<<(N + BLOCK - 1) / BLOCK, BLOCK, 0, cudaStreamFireAndForget>>>(x, y, z, N);
}
