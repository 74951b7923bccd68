// expert:name rmsnorm_register_row
// expert:tasks rmsnorm
// expert:pattern one block per row, the row read once into registers with float4 loads, one block reduction of the squares, float4 scaled stores

// RMS normalisation that reads x once. A block of BLOCK threads owns one row; each thread keeps
// VPT float4s (4 * VPT floats) of it in registers, so a row of up to BLOCK * VPT * 4 floats costs
// one read of x and one write of y (the baseline reads the row twice): the sum of squares is a
// register sum plus one block reduction (warp shuffles, then a shared-memory slot per warp), and
// y = x * rsqrt(mean + eps) * w is written from the registers with float4 stores (w is read with
// float4 loads too; it is 16 KB and stays in L2 / L1 across rows).
//  - Loads are float4 when N % 4 == 0 (every row then starts 16-byte aligned), element-wise and
//    strided by BLOCK otherwise; either way consecutive threads touch consecutive addresses.
//    Slots past the end of the row hold 0, which adds nothing to the sum of squares.
//  - A row longer than BLOCK * VPT * 4 takes a streaming path (sum of squares, then a scaling
//    pass: two reads), so every N is handled.
//  - OCC is the number of threads per SM the registers are limited for (__launch_bounds__):
//    2048 keeps twice the rows in flight, at 32 registers a thread.
// Tuning: at N = 4096, BLOCK * VPT = 1024 covers the row exactly (256 x 4, 512 x 2, 128 x 8).
// Measured on the H200 (8192 x 4096, 2026-12-04): BLOCK 512, VPT 2, OCC 2048 took 61.0-61.9 us
// in four evaluations (0.972-0.987x torch.compile, 60.2 us, in the same ones); BLOCK 256, VPT 4,
// OCC 1024 61.3-62.0 us in nine. Nsight Compute: torch.compile's kernel runs 2048 threads per SM
// at 24 registers, this one at OCC 1024 ran 1024 at 64.

// kforge:param BLOCK in {128, 256, 512, 1024} = 512
// kforge:param VPT in {1, 2, 4, 8} = 2
// kforge:param OCC in {1024, 2048} = 2048
// kforge:launch rmsnorm grid=(M) block=(BLOCK)

#define NWARPS (BLOCK / 32)
#define CAP (BLOCK * VPT * 4)   // longest row kept in registers

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Every thread gets the result; `red` holds one slot per warp and is free again on return.
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

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, float eps)
{
    __shared__ float red[32];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
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
                const float4 t = i < n4 ? x4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT * 4; ++k) {
                const int j = tid + k * BLOCK;
                v[k] = j < N ? xr[j] : 0.0f;
            }
        }

        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k)
            ss = fmaf(v[k], v[k], ss);
        const float rstd = rsqrtf(block_sum(ss, red) / N + eps);

        if (vec) {
            const int n4 = N >> 2;
            const float4* w4 = reinterpret_cast<const float4*>(w);
            float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * BLOCK;
                if (i < n4) {
                    const float4 g = w4[i];
                    y4[i] = make_float4(v[4 * k + 0] * rstd * g.x, v[4 * k + 1] * rstd * g.y,
                                        v[4 * k + 2] * rstd * g.z, v[4 * k + 3] * rstd * g.w);
                }
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT * 4; ++k) {
                const int j = tid + k * BLOCK;
                if (j < N)
                    yr[j] = v[k] * rstd * w[j];
            }
        }
        return;
    }

    // ---- Streaming path (row longer than CAP): sum of squares, then the scaling pass.
    float ss = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < (N >> 2); i += BLOCK) {
            const float4 t = x4[i];
            ss = fmaf(t.x, t.x, ss);
            ss = fmaf(t.y, t.y, ss);
            ss = fmaf(t.z, t.z, ss);
            ss = fmaf(t.w, t.w, ss);
        }
    } else {
        for (int j = tid; j < N; j += BLOCK)
            ss = fmaf(xr[j], xr[j], ss);
    }
    const float rstd = rsqrtf(block_sum(ss, red) / N + eps);
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < (N >> 2); i += BLOCK) {
            const float4 t = x4[i], g = w4[i];
            y4[i] = make_float4(t.x * rstd * g.x, t.y * rstd * g.y, t.z * rstd * g.z, t.w * rstd * g.w);
        }
    } else {
        for (int j = tid; j < N; j += BLOCK)
            yr[j] = xr[j] * rstd * w[j];
    }
}
