// expert:name vector_add_float4
// expert:tasks vector_add
// expert:pattern float4 loads and stores, VPT float4s per thread with all loads issued before any store, scalar tail for N % 4

// Vector add at memory speed. Each thread handles VPT float4s (4 * VPT floats), spaced BLOCK
// float4s apart so that a warp's accesses stay contiguous (512 bytes per instruction instead of
// the baseline's 128); all 2 * VPT loads are issued before the first add, so more bytes are in
// flight per thread, and the grid shrinks by 4 * VPT. torch.compile's Triton kernel lays its
// floats out the same way (XBLOCK 1024 over 128 threads: four floats a thread, repeated every
// 512). Neighbouring float4s a thread instead were 5-6% slower (H100, 2026-12-06).
//  - x, y and z are separate buffers, each 256-byte aligned, so float4 number i covers floats
//    4i .. 4i + 3 whatever N is; the last, partial float4 (N % 4 floats) is done element-wise.
//  - Stores use the default write-back policy; nothing is re-read.
//  - LOAD picks the loads' cache policy: 0 the default; 1 ld.global.L1::evict_first (x and y are
//    read once, L1 keeps nothing of them); 2 also asks L2 to evict them first
//    (createpolicy.fractional.L2::evict_first and an L2::cache_hint load), the load torch.compile's
//    Triton kernels use for data read once (though not for this add, whose loads carry no
//    policy). On an H100 both were 1.5-2% slower than LOAD 0, so 0 is the default.
// Tuning: N = 16M floats is 4M float4s; BLOCK = 256 and VPT = 2 give 8192 blocks.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:param VPT in {1, 2, 4} = 2
// kforge:param LOAD in {0, 1, 2} = 0
// kforge:launch vector_add grid=(cdiv(N, BLOCK * VPT * 4)) block=(BLOCK)

// LOAD 2's L2 policy: the inputs' lines are the first L2 evicts (made once a thread).
__device__ __forceinline__ unsigned long long l2_evict_first()
{
    unsigned long long policy = 0;
#if LOAD == 2
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

__device__ __forceinline__ float4 load4(const float4* p, unsigned long long policy)
{
    float4 v;
#if LOAD == 2
    asm("ld.global.L1::evict_first.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(p), "l"(policy));
#elif LOAD == 1
    (void)policy;
    asm("ld.global.L1::evict_first.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(p));
#else
    (void)policy;
    v = *p;
#endif
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
vector_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, int N)
{
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    float4* z4 = reinterpret_cast<float4*>(z);
    const int n4 = N >> 2;   // whole float4s
    const int i0 = blockIdx.x * (BLOCK * VPT) + threadIdx.x;

    const unsigned long long policy = l2_evict_first();
    float4 a[VPT], b[VPT];
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
        const int i = i0 + v * BLOCK;
        if (i < n4) {
            a[v] = load4(x4 + i, policy);
            b[v] = load4(y4 + i, policy);
        }
    }
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
        const int i = i0 + v * BLOCK;
        if (i < n4) {
            z4[i] = make_float4(a[v].x + b[v].x, a[v].y + b[v].y, a[v].z + b[v].z, a[v].w + b[v].w);
        } else if (i == n4) {   // the partial float4 at the end, if N % 4 != 0
            for (int j = 4 * n4; j < N; ++j)
                z[j] = x[j] + y[j];
        }
    }
}
