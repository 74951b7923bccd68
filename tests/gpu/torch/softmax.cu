// out = softmax(x, dim=1) for KernelBench level-1 problem 23 imported with `kforge import`: one
// block per row, max and sum reduced with warp shuffles and shared memory.
// kforge:launch softmax grid=(batch_size) block=(256)

__device__ __forceinline__ float block_reduce(float v, bool isMax)
{
    __shared__ float partial[8];
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = isMax ? fmaxf(v, other) : v + other;
    }
    if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = partial[0];
    for (int w = 1; w < 8; ++w)
        r = isMax ? fmaxf(r, partial[w]) : r + partial[w];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ out, int batch_size, int dim)
{
    const float* row = x + static_cast<long long>(blockIdx.x) * dim;
    float* y = out + static_cast<long long>(blockIdx.x) * dim;
    float m = -3.402823466e38f; // -FLT_MAX: NVRTC has no math.h
    for (int i = threadIdx.x; i < dim; i += 256)
        m = fmaxf(m, row[i]);
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int i = threadIdx.x; i < dim; i += 256)
        s += __expf(row[i] - m);
    s = block_reduce(s, false);
    const float inv = 1.0f / s;
    for (int i = threadIdx.x; i < dim; i += 256)
        y[i] = __expf(row[i] - m) * inv;
}
