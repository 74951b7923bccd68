// Seed kernel for KernelBench level1/23_Softmax imported with `kforge import`:
// out = torch.softmax(x, dim=1) for x of batch_size x dim float32 (row-major), i.e. a softmax
// over each row of dim floats. At the default size a row is 393216 floats (1.5 MB), far too long
// to keep in registers or shared memory, so each row is streamed twice:
//  - One block per row. Pass 1 reads the row once and keeps a running (max m, sum s of
//    exp(x - m)) per thread (online softmax): UNROLL float4 loads are issued together, their
//    maximum is taken first, s is rescaled once if the maximum grew, then the exponentials are
//    added. The (m, s) pairs are merged across the warp with shuffles and across the block
//    through shared memory.
//  - Pass 2 reads the row again and writes exp(x - m) / s. BACKWARD = 1 walks the row from its
//    end, so the part read last in pass 1 (the most likely to be still in L2) is read first.
//  - exp is exp2f((x - m) * log2(e)); float4 loads need dim % 4 == 0 (every row then starts
//    16-byte aligned), otherwise the same loops run on scalars. Every dim >= 1 is handled.
// Left for candidates: a thread-block cluster per row holding the row in distributed shared
// memory (one read of x instead of two), several rows per block when dim is small.

// kforge:param BLOCK in {256, 512, 1024} = 1024
// kforge:param UNROLL in {1, 2, 4, 8} = 4
// kforge:param BACKWARD in {0, 1} = 1
// kforge:launch softmax grid=(batch_size) block=(BLOCK)

#define NWARPS (BLOCK / 32)
#define L2E 1.4426950408889634f

// Online-softmax state (m, s): merges (m2, s2) into it; a state that has seen nothing
// (m = -inf, s = 0) contributes nothing.
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2)
{
    const float ninf = __int_as_float(0xff800000);
    const float mn = fmaxf(m, m2);
    if (mn == ninf)
        return;   // both empty
    const float a = m == ninf ? 0.0f : s * exp2f((m - mn) * L2E);
    const float b = m2 == ninf ? 0.0f : s2 * exp2f((m2 - mn) * L2E);
    m = mn;
    s = a + b;
}

// Raises the state's max to gm (the max of the next group of values) if it is larger, rescaling
// the sum; the caller then adds the group's exponentials.
__device__ __forceinline__ void online_rescale(float& m, float& s, float gm)
{
    if (gm > m) {   // m = -inf on the first group: s = 0 * 0 = 0
        s *= exp2f((m - gm) * L2E);
        m = gm;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax(const float* __restrict__ x, float* __restrict__ out, int dim)
{
    __shared__ float redm[32];
    __shared__ float reds[32];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * (size_t)dim;
    const float* xr = x + base;
    float* yr = out + base;
    const float ninf = __int_as_float(0xff800000);
    const bool vec = (dim & 3) == 0;

    float m = ninf, s = 0.0f;

    // ---- Pass 1: running max and sum.
    if (vec) {
        const int n4 = dim >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int g = 0; g < n4; g += BLOCK * UNROLL) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int i = g + u * BLOCK + tid;
                v[u] = i < n4 ? x4[i] : make_float4(ninf, ninf, ninf, ninf);
            }
            float gm = ninf;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                gm = fmaxf(gm, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
            online_rescale(m, s, gm);
            if (m != ninf) {   // padding (-inf) adds exp2(-inf) = 0
                float acc = 0.0f;
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    acc += exp2f((v[u].x - m) * L2E);
                    acc += exp2f((v[u].y - m) * L2E);
                    acc += exp2f((v[u].z - m) * L2E);
                    acc += exp2f((v[u].w - m) * L2E);
                }
                s += acc;
            }
        }
    } else {
        for (int g = 0; g < dim; g += BLOCK * UNROLL * 4) {
            float v[UNROLL * 4];
#pragma unroll
            for (int u = 0; u < UNROLL * 4; ++u) {
                const int j = g + u * BLOCK + tid;
                v[u] = j < dim ? xr[j] : ninf;
            }
            float gm = ninf;
#pragma unroll
            for (int u = 0; u < UNROLL * 4; ++u)
                gm = fmaxf(gm, v[u]);
            online_rescale(m, s, gm);
            if (m != ninf) {
                float acc = 0.0f;
#pragma unroll
                for (int u = 0; u < UNROLL * 4; ++u)
                    acc += exp2f((v[u] - m) * L2E);
                s += acc;
            }
        }
    }

    // ---- Merge the per-thread states: warp shuffles, then one slot per warp.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        online_merge(m, s, m2, s2);
    }
    if ((tid & 31) == 0) {
        redm[tid >> 5] = m;
        reds[tid >> 5] = s;
    }
    __syncthreads();
    m = redm[0];
    s = reds[0];
#pragma unroll
    for (int w = 1; w < NWARPS; ++w)
        online_merge(m, s, redm[w], reds[w]);
    const float inv = 1.0f / s;

    // ---- Pass 2: write exp(x - m) / s.
    if (vec) {
        const int n4 = dim >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        const int groups = (n4 + BLOCK * UNROLL - 1) / (BLOCK * UNROLL);
        for (int gg = 0; gg < groups; ++gg) {
            const int g = (BACKWARD ? groups - 1 - gg : gg) * (BLOCK * UNROLL);
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int i = g + u * BLOCK + tid;
                v[u] = i < n4 ? x4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int i = g + u * BLOCK + tid;
                if (i < n4)
                    y4[i] = make_float4(exp2f((v[u].x - m) * L2E) * inv, exp2f((v[u].y - m) * L2E) * inv,
                                        exp2f((v[u].z - m) * L2E) * inv, exp2f((v[u].w - m) * L2E) * inv);
            }
        }
    } else {
        const int groups = (dim + BLOCK * UNROLL * 4 - 1) / (BLOCK * UNROLL * 4);
        for (int gg = 0; gg < groups; ++gg) {
            const int g = (BACKWARD ? groups - 1 - gg : gg) * (BLOCK * UNROLL * 4);
            float v[UNROLL * 4];
#pragma unroll
            for (int u = 0; u < UNROLL * 4; ++u) {
                const int j = g + u * BLOCK + tid;
                v[u] = j < dim ? xr[j] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < UNROLL * 4; ++u) {
                const int j = g + u * BLOCK + tid;
                if (j < dim)
                    yr[j] = exp2f((v[u] - m) * L2E) * inv;
            }
        }
    }
}
