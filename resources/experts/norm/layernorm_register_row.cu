// expert:name layernorm_register_row
// expert:tasks layernorm
// expert:pattern one block per row, the row read once into registers with float4 loads, exact two-pass mean/variance over the registers, float4 stores

// Layer normalisation that reads x once. A block of BLOCK threads owns one row; each thread keeps
// VPT float4s (4 * VPT floats) of it in registers, so a row of up to BLOCK * VPT * 4 floats costs
// one read of x and one write of y (the baseline reads it three times). Because the row is in
// registers, the exact two-pass statistic is free: a block reduction of the sum gives the mean,
// a second one of the squared deviations (x - mean)^2 gives the variance (no cancellation, unlike
// sum / sum-of-squares), then y = (x - mean) * rsqrt(var + eps) * gamma + beta is written from
// the registers with float4 stores (gamma and beta are 16 KB each and stay in L2 / L1).
//  - Loads are float4 when N % 4 == 0 (every row then starts 16-byte aligned), element-wise and
//    strided by BLOCK otherwise; consecutive threads touch consecutive addresses. Slots past the
//    end of the row are excluded from both sums.
//  - Block reductions: warp shuffles, then one shared-memory slot per warp read by every warp.
//  - A row longer than BLOCK * VPT * 4 takes a streaming path: one pass of shifted sums (x - x0
//    and its square, x0 the row's first element, which keeps the cancellation small), then the
//    normalising pass: two reads.
// Tuning: at N = 4096, BLOCK * VPT = 1024 covers the row exactly (256 x 4, 512 x 2, 128 x 8).

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:param VPT in {1, 2, 4, 8} = 4
// kforge:launch layernorm grid=(M) block=(BLOCK)

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

extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
layernorm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
          float* __restrict__ y, int N, float eps)
{
    __shared__ float red[32];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    const float* xr = x + base;
    float* yr = y + base;
    const bool vec = (N & 3) == 0;
    const int n4 = N >> 2;

    if (N <= CAP) {
        // ---- The row in registers: one read, one write.
        float v[VPT * 4];
        if (vec) {
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

        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k)
            s += v[k];   // padding is 0
        const float mean = block_sum(s, red) / N;

        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k) {
            const bool in = vec ? tid + (k / 4) * BLOCK < n4 : tid + k * BLOCK < N;
            const float d = in ? v[k] - mean : 0.0f;
            q = fmaf(d, d, q);
        }
        const float rstd = rsqrtf(block_sum(q, red) / N + eps);

        if (vec) {
            const float4* g4 = reinterpret_cast<const float4*>(gamma);
            const float4* b4 = reinterpret_cast<const float4*>(beta);
            float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * BLOCK;
                if (i < n4) {
                    const float4 g = g4[i], b = b4[i];
                    y4[i] = make_float4((v[4 * k + 0] - mean) * rstd * g.x + b.x, (v[4 * k + 1] - mean) * rstd * g.y + b.y,
                                        (v[4 * k + 2] - mean) * rstd * g.z + b.z, (v[4 * k + 3] - mean) * rstd * g.w + b.w);
                }
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT * 4; ++k) {
                const int j = tid + k * BLOCK;
                if (j < N)
                    yr[j] = (v[k] - mean) * rstd * gamma[j] + beta[j];
            }
        }
        return;
    }

    // ---- Streaming path (row longer than CAP): shifted sums in one pass, then the normalising pass.
    const float x0 = xr[0];
    float s = 0.0f, q = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < n4; i += BLOCK) {
            const float4 t = x4[i];
            const float a = t.x - x0, b = t.y - x0, c = t.z - x0, d = t.w - x0;
            s += (a + b) + (c + d);
            q = fmaf(a, a, fmaf(b, b, fmaf(c, c, fmaf(d, d, q))));
        }
    } else {
        for (int j = tid; j < N; j += BLOCK) {
            const float a = xr[j] - x0;
            s += a;
            q = fmaf(a, a, q);
        }
    }
    s = block_sum(s, red) / N;   // mean of x - x0
    q = block_sum(q, red) / N;
    const float mean = x0 + s;
    const float rstd = rsqrtf(fmaxf(q - s * s, 0.0f) + eps);
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* g4 = reinterpret_cast<const float4*>(gamma);
        const float4* b4 = reinterpret_cast<const float4*>(beta);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < n4; i += BLOCK) {
            const float4 t = x4[i], g = g4[i], b = b4[i];
            y4[i] = make_float4((t.x - mean) * rstd * g.x + b.x, (t.y - mean) * rstd * g.y + b.y,
                                (t.z - mean) * rstd * g.z + b.z, (t.w - mean) * rstd * g.w + b.w);
        }
    } else {
        for (int j = tid; j < N; j += BLOCK)
            yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
}
