// Seed kernel for KernelBench level1/19_ReLU imported with `kforge import`:
// out = relu(x) (torch.relu)
// on x of batch_size x dim float32 elements (contiguous, so treated as one flat array).
// Memory-bound: one read and one write of every element is the floor.
//  - Each thread handles VPT float4s spaced BLOCK float4s apart, so a warp's accesses stay
//    contiguous (512 bytes per instruction); all VPT loads are issued before any store.
//  - x and out are separate buffers, each 256-byte aligned, so float4 number i covers floats
//    4i .. 4i + 3 whatever the sizes; the last, partial float4 (n % 4 floats) is done element-wise
//    by the thread that owns float4 number n / 4.
//  - STREAM = 1 uses the evict-first cache hints (__ldcs / __stcs): nothing is re-read, and the
//    tensors (GBs at the default size) are far larger than L2.
//  - Sizes are bound as 64-bit integers and indices are 64-bit, so batch_size * dim may pass 2^31.
// NaN passes through as in torch.relu (a plain fmaxf would turn it into 0).

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:param VPT in {1, 2, 4, 8} = 4
// kforge:param STREAM in {0, 1} = 0
// kforge:launch relu grid=(cdiv(batch_size * dim, BLOCK * VPT * 4)) block=(BLOCK)

__device__ __forceinline__ float op(float x)
{
    return x < 0.0f ? 0.0f : x;
}

__device__ __forceinline__ float4 op4(float4 v)
{
    return make_float4(op(v.x), op(v.y), op(v.z), op(v.w));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
relu(const float* __restrict__ x, float* __restrict__ out, long long batch_size, long long dim)
{
    const long long n = batch_size * dim;
    const long long n4 = n >> 2;   // whole float4s
    const long long i0 = (long long)blockIdx.x * (BLOCK * VPT) + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);

    float4 v[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const long long i = i0 + (long long)k * BLOCK;
        v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (i < n4)
            v[k] = STREAM ? __ldcs(x4 + i) : __ldg(x4 + i);
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const long long i = i0 + (long long)k * BLOCK;
        if (i < n4) {
            const float4 r = op4(v[k]);
            if (STREAM)
                __stcs(o4 + i, r);
            else
                o4[i] = r;
        } else if (i == n4) {   // the partial float4 at the end, if n % 4 != 0
            for (long long j = 4 * n4; j < n; ++j)
                out[j] = op(x[j]);
        }
    }
}
