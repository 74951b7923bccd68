// expert:name softmax_register_row
// expert:tasks softmax
// expert:pattern one block per row, the row read once into registers with float4 loads (max, exp and sum from registers, one write pass); online max/sum when the row does not fit

// Row softmax that reads x once. A block of BLOCK threads owns one row; each thread keeps VPT
// float4s (4 * VPT floats) of it in registers, so a row of up to BLOCK * VPT * 4 floats is read
// from memory exactly once: the row max is a register max plus one block reduction, the
// exponentials are computed once (exp2 with log2(e) folded in: well inside the 1e-4 relative
// tolerance) and kept in the same registers, the sum is a second block reduction, and the
// normalised values are written with float4 stores. The baseline reads the row three times and
// evaluates expf twice per element.
//  - Loads are float4 when N % 4 == 0 (every row then starts 16-byte aligned), element-wise and
//    strided by BLOCK otherwise; either way consecutive threads touch consecutive addresses.
//    Slots past the end of the row hold -inf, whose exponential is 0.
//  - A row longer than BLOCK * VPT * 4 takes a streaming path instead: one pass keeps a running
//    (max, sum) per thread (online softmax: the sum is rescaled when the max grows), the pairs
//    are combined across the block, and a second pass writes exp(x - max) / sum.
//  - Block reductions: warp shuffles, then one shared-memory slot per warp read by every warp.
// Tuning: at N = 4096, BLOCK * VPT = 1024 covers the row exactly (256 x 4, 512 x 2, 128 x 8);
// fewer, fatter threads give more loads in flight per thread, more threads more blocks per SM.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:param VPT in {1, 2, 4, 8} = 4
// kforge:launch softmax grid=(M) block=(BLOCK)

#define NWARPS (BLOCK / 32)
#define CAP (BLOCK * VPT * 4)   // longest row kept in registers
#define L2E 1.4426950408889634f

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Every thread gets the result; `red` holds one slot per warp and is free again on return.
__device__ __forceinline__ float block_max(float v, float* red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = warp_max(lane < NWARPS ? red[lane] : __int_as_float(0xff800000));
    __syncthreads();
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = warp_sum(lane < NWARPS ? red[lane] : 0.0f);
    __syncthreads();
    return v;
}

// Online-softmax state: running max m and sum s of exp(x - m).
__device__ __forceinline__ void online_add(float& m, float& s, float xv)
{
    if (xv > m) {
        s = s * exp2f((m - xv) * L2E) + 1.0f;   // exp2(-inf) = 0 on the first element
        m = xv;
    } else {
        s += exp2f((xv - m) * L2E);
    }
}

// Merges (m2, s2) into (m, s); a state that has seen nothing (m = -inf) contributes nothing.
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2)
{
    const float ninf = __int_as_float(0xff800000);
    const float mn = fmaxf(m, m2);
    const float a = m == ninf ? 0.0f : s * exp2f((m - mn) * L2E);
    const float b = m2 == ninf ? 0.0f : s2 * exp2f((m2 - mn) * L2E);
    m = mn;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
softmax(const float* __restrict__ x, float* __restrict__ y, int N)
{
    __shared__ float red[32];
    __shared__ float redm[32];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    const float ninf = __int_as_float(0xff800000);
    const bool vec = (N & 3) == 0;

    if (N <= CAP) {
        // ---- The row in registers: one read, one write.
        float v[VPT * 4];
        if (vec) {
            const int n4 = N >> 2;
            const float4* x4 = reinterpret_cast<const float4*>(xr);
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * BLOCK;
                const float4 t = i < n4 ? x4[i] : make_float4(ninf, ninf, ninf, ninf);
                v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT * 4; ++k) {
                const int j = tid + k * BLOCK;
                v[k] = j < N ? xr[j] : ninf;
            }
        }

        float m = ninf;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k)
            m = fmaxf(m, v[k]);
        m = block_max(m, red);   // finite: the row has at least one element

        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k) {
            v[k] = exp2f((v[k] - m) * L2E);   // padding: exp2(-inf) = 0
            s += v[k];
        }
        const float inv = 1.0f / block_sum(s, red);

        if (vec) {
            const int n4 = N >> 2;
            float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * BLOCK;
                if (i < n4)
                    y4[i] = make_float4(v[4 * k + 0] * inv, v[4 * k + 1] * inv, v[4 * k + 2] * inv, v[4 * k + 3] * inv);
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT * 4; ++k) {
                const int j = tid + k * BLOCK;
                if (j < N)
                    yr[j] = v[k] * inv;
            }
        }
        return;
    }

    // ---- Streaming path (row longer than CAP): online max/sum pass, then a write pass.
    float m = ninf, s = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < (N >> 2); i += BLOCK) {
            const float4 t = x4[i];
            online_add(m, s, t.x);
            online_add(m, s, t.y);
            online_add(m, s, t.z);
            online_add(m, s, t.w);
        }
    } else {
        for (int j = tid; j < N; j += BLOCK)
            online_add(m, s, xr[j]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        online_merge(m, s, m2, s2);
    }
    if ((tid & 31) == 0) {
        redm[tid >> 5] = m;
        red[tid >> 5] = s;
    }
    __syncthreads();
    m = redm[0];
    s = red[0];
    for (int w = 1; w < NWARPS; ++w)
        online_merge(m, s, redm[w], red[w]);
    const float inv = 1.0f / s;

    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < (N >> 2); i += BLOCK) {
            const float4 t = x4[i];
            y4[i] = make_float4(exp2f((t.x - m) * L2E) * inv, exp2f((t.y - m) * L2E) * inv,
                                exp2f((t.z - m) * L2E) * inv, exp2f((t.w - m) * L2E) * inv);
        }
    } else {
        for (int j = tid; j < N; j += BLOCK)
            yr[j] = exp2f((xr[j] - m) * L2E) * inv;
    }
}
