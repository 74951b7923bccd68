// Seed kernel for KernelBench level1/36_RMSNorm_ imported with `kforge import`:
//   rms = sqrt(mean(x^2, dim=1, keepdim=True) + eps);  out = x / rms
// for x of batch_size x features x dim1 x dim2 float32 (contiguous). The mean is over the
// features axis (dim 1), whose elements lie S = dim1 * dim2 floats apart; eps = 1e-5 is the
// Model's default (get_init_inputs() passes only num_features, so the task has no eps scalar).
// Memory-bound: one read and one write of x is the floor (GBs at the default size).
//  - A thread owns VEC consecutive positions p of one batch item (blockIdx.y) and walks the
//    features axis: a warp reads 32 * VEC consecutive floats per feature (coalesced).
//  - The first CACHE features are kept in registers (fully unrolled, all loads issued before the
//    sum), so for features <= CACHE x is read exactly once; features past CACHE are read again
//    in the scaling pass (any number of features works).
//  - Vector loads (float2 / float4) need S % VEC == 0 (every position group is then aligned and
//    either wholly inside or wholly outside the plane); otherwise the VEC positions are loaded as
//    scalars with bounds checks.
//  - out = x * (1 / rms): within an ulp or two of PyTorch's division.
// Tuning: CACHE * VEC floats of registers per thread; VEC = 1, CACHE = 64 keeps the default's 64
// features in 64 registers.

// kforge:param BLOCK in {128, 256, 512} = 256
// kforge:param VEC in {1, 2, 4} = 1
// kforge:param CACHE in {16, 32, 64} = 64
// kforge:launch rmsnorm grid=(cdiv(dim1 * dim2, BLOCK * VEC), batch_size) block=(BLOCK, 1)

#define RMS_EPS 1e-5f

template <int V> __device__ __forceinline__ void load_vec(const float* p, float* v)
{
    if constexpr (V == 4) {
        const float4 t = __ldg(reinterpret_cast<const float4*>(p));
        v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    } else if constexpr (V == 2) {
        const float2 t = __ldg(reinterpret_cast<const float2*>(p));
        v[0] = t.x; v[1] = t.y;
    } else {
        v[0] = __ldg(p);
    }
}

template <int V> __device__ __forceinline__ void store_vec(float* p, const float* v)
{
    if constexpr (V == 4)
        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    else if constexpr (V == 2)
        *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
    else
        p[0] = v[0];
}

// Loads VEC positions p0.. of the plane at `plane` (vector load when `vec`, else bounds-checked
// scalars; positions past S read as 0).
__device__ __forceinline__ void load_pos(const float* plane, long long p0, long long S, bool vec, float* v)
{
    if (vec) {
        load_vec<VEC>(plane + p0, v);
    } else {
#pragma unroll
        for (int q = 0; q < VEC; ++q)
            v[q] = p0 + q < S ? __ldg(plane + p0 + q) : 0.0f;
    }
}

__device__ __forceinline__ void store_pos(float* plane, long long p0, long long S, bool vec, const float* v)
{
    if (vec) {
        store_vec<VEC>(plane + p0, v);
    } else {
#pragma unroll
        for (int q = 0; q < VEC; ++q)
            if (p0 + q < S)
                plane[p0 + q] = v[q];
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm(const float* __restrict__ x, float* __restrict__ out, int features, long long dim1, long long dim2)
{
    const long long S = dim1 * dim2;                     // floats between consecutive features
    const long long p0 = ((long long)blockIdx.x * BLOCK + threadIdx.x) * VEC;
    if (p0 >= S)
        return;                                          // no barrier below: early exit is safe
    const bool vec = VEC > 1 ? (S % VEC) == 0 : true;
    const size_t item = (size_t)blockIdx.y * (size_t)features * (size_t)S;
    const float* xb = x + item;
    float* ob = out + item;

    float c[CACHE][VEC];   // the first CACHE features of this thread's positions
    float ss[VEC];
#pragma unroll
    for (int q = 0; q < VEC; ++q)
        ss[q] = 0.0f;

#pragma unroll
    for (int f = 0; f < CACHE; ++f) {
        if (f < features)
            load_pos(xb + (size_t)f * S, p0, S, vec, c[f]);
        else {
#pragma unroll
            for (int q = 0; q < VEC; ++q)
                c[f][q] = 0.0f;
        }
    }
#pragma unroll
    for (int f = 0; f < CACHE; ++f)
#pragma unroll
        for (int q = 0; q < VEC; ++q)
            ss[q] = fmaf(c[f][q], c[f][q], ss[q]);
    for (int f = CACHE; f < features; ++f) {   // features past the register cache
        float v[VEC];
        load_pos(xb + (size_t)f * S, p0, S, vec, v);
#pragma unroll
        for (int q = 0; q < VEC; ++q)
            ss[q] = fmaf(v[q], v[q], ss[q]);
    }

    float inv[VEC];
#pragma unroll
    for (int q = 0; q < VEC; ++q)
        inv[q] = 1.0f / sqrtf(ss[q] / (float)features + RMS_EPS);

#pragma unroll
    for (int f = 0; f < CACHE; ++f) {
        if (f < features) {
            float v[VEC];
#pragma unroll
            for (int q = 0; q < VEC; ++q)
                v[q] = c[f][q] * inv[q];
            store_pos(ob + (size_t)f * S, p0, S, vec, v);
        }
    }
    for (int f = CACHE; f < features; ++f) {
        float v[VEC];
        load_pos(xb + (size_t)f * S, p0, S, vec, v);
#pragma unroll
        for (int q = 0; q < VEC; ++q)
            v[q] *= inv[q];
        store_pos(ob + (size_t)f * S, p0, S, vec, v);
    }
}
