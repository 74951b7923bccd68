// kforge integrity test: task vector_add; violation: none, a correct kernel with static shared memory beside exactly 48 KiB of dynamic shared memory (together past 48 KiB, so the worker must opt the kernel in before launch); expected status: pass.
// Without the opt-in the launch fails with "invalid argument": the default limit of 48 KiB
// counts static and dynamic shared memory together.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK) smem=49152

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    __shared__ float staged[BLOCK];
    extern __shared__ float spare[];   // 12288 floats; y is staged at their far end
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    float* last = spare + 49152 / 4 - BLOCK;
    staged[threadIdx.x] = i < N ? x[i] : 0.0f;
    last[threadIdx.x] = i < N ? y[i] : 0.0f;
    __syncthreads();
    if (i < N)
        z[i] = staged[threadIdx.x] + last[threadIdx.x];
}
