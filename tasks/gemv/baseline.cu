// Baseline gemv: one warp per row, BLOCK / 32 rows per block. The lanes read the row in coalesced
// strides of 32 floats, multiply by x (served from the caches), and a warp shuffle sums the lanes.
// Left for candidates: vector loads (float4) and more independent loads in flight per thread
// (unrolling), x staged in shared memory, the right number of rows per block for the machine.

// kforge:param BLOCK in {128, 256, 512} = 256
// kforge:launch gemv grid=(cdiv(M, BLOCK / 32)) block=(BLOCK)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void gemv(const float* __restrict__ A, const float* __restrict__ x,
                                float* __restrict__ y, int M, int N)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
    if (row >= M)
        return;   // the whole warp leaves together, so the shuffles below stay full-warp
    const float* a = A + (size_t)row * N;

    float acc = 0.0f;
    for (int j = lane; j < N; j += 32)
        acc += a[j] * x[j];
    acc = warp_sum(acc);
    if (lane == 0)
        y[row] = acc;
}
