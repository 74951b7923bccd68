// expert:name rmsnorm_register_row
// expert:tasks rmsnorm
// expert:pattern one block per row, the row read once into registers with float4 loads, one block reduction of the squares, float4 scaled stores

// RMS normalisation that reads x once. A block of BLOCK threads owns one row; each thread keeps
// VPT float4s (4 * VPT floats) of it in registers, so a row of up to BLOCK * VPT * 4 floats costs
// one read of x and one write of y (the baseline reads the row twice): the sum of squares is a
// register sum plus one block reduction (warp shuffles, then a shared-memory slot per warp), and
// y = x * rsqrt(mean + eps) * w is written from the registers with float4 stores (w is read with
// float4 loads too; it is 16 KB and stays in L2 / L1 across rows).
//  - Two kernels: `rmsnorm` reads and writes float4s (N % 4 == 0: every row then starts 16-byte
//    aligned), `rmsnorm_any` single floats strided by BLOCK (any N); either way consecutive
//    threads touch consecutive addresses. Slots past the end of the row hold 0, which adds nothing
//    to the sum of squares. Kept apart, the float4 kernel needs 26 registers at the defaults; in
//    one kernel with the scalar path it spilled at OCC 2048.
//  - A row longer than BLOCK * VPT * 4 takes a streaming path (sum of squares, then a scaling
//    pass: two reads), so every N is handled.
//  - OCC is the number of threads per SM the registers are limited for (__launch_bounds__):
//    2048 keeps twice the rows in flight, at 32 registers a thread.
// Tuning: at N = 4096, BLOCK * VPT = 1024 covers the row exactly (256 x 4, 512 x 2, 128 x 8).
// Measured on the H200 (8192 x 4096, 2026-12-04): through kforge, 61.1-61.9 us against
// torch.compile's 60.2-60.4 in the same evaluations (0.975x); timed side by side with
// torch.compile's kernel in one process on the same buffers (tests/gpu/OFFLINE-SEARCH.md), the
// two take the same time (0.993-1.015x in eleven runs of interleaved comparisons).

// kforge:param BLOCK in {128, 256, 512, 1024} = 512
// kforge:param VPT in {1, 2, 4, 8} = 2
// kforge:param OCC in {1024, 2048} = 2048
// kforge:launch rmsnorm grid=(M) block=(BLOCK) when=(mod(N, 4) == 0)
// kforge:launch rmsnorm_any grid=(M) block=(BLOCK) when=(mod(N, 4) != 0)

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

__device__ __forceinline__ float sum_sq(float4 t, float s)
{
    return fmaf(t.x, t.x, fmaf(t.y, t.y, fmaf(t.z, t.z, fmaf(t.w, t.w, s))));
}

__device__ __forceinline__ float4 scale(float4 t, float r, float4 g)
{
    return make_float4(t.x * r * g.x, t.y * r * g.y, t.z * r * g.z, t.w * r * g.w);
}

// N % 4 == 0: every row starts 16-byte aligned, so the row is read and written as float4s.
extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, float eps)
{
    __shared__ float red[32];
    const int n4 = N >> 2;
    const int tid = threadIdx.x;
    // This thread's first float4 of the row, of y's row and of w; `left` counts the row's float4s
    // from there on, so slot k (k * BLOCK float4s further) is in the row when k * BLOCK < left.
    const float4* xr = reinterpret_cast<const float4*>(x) + (size_t)blockIdx.x * n4 + tid;
    float4* yr = reinterpret_cast<float4*>(y) + (size_t)blockIdx.x * n4 + tid;
    const float4* wr = reinterpret_cast<const float4*>(w) + tid;
    const int left = n4 - tid;

    if (N <= CAP) {
        // ---- The row in registers: one read, one write.
        float4 v[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k)
            v[k] = k * BLOCK < left ? xr[k * BLOCK] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k)
            ss = sum_sq(v[k], ss);
        const float rstd = rsqrtf(block_sum(ss, red) / N + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k)
            if (k * BLOCK < left)
                yr[k * BLOCK] = scale(v[k], rstd, wr[k * BLOCK]);
        return;
    }

    // ---- Streaming path (row longer than CAP): sum of squares, then the scaling pass. Not
    // unrolled: unrolled, these loops would raise the register count of the whole kernel past
    // what OCC allows and make it spill.
    float ss = 0.0f;
#pragma unroll 1
    for (int i = 0; i < left; i += BLOCK)
        ss = sum_sq(xr[i], ss);
    const float rstd = rsqrtf(block_sum(ss, red) / N + eps);
#pragma unroll 1
    for (int i = 0; i < left; i += BLOCK)
        yr[i] = scale(xr[i], rstd, wr[i]);
}

// Any N: the same, element by element, consecutive threads on consecutive floats. Slots past the
// end of the row hold 0, which adds nothing to the sum of squares.
extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
rmsnorm_any(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, float eps)
{
    __shared__ float red[32];
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;

    if (N <= CAP) {
        float v[VPT * 4];
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k) {
            const int j = tid + k * BLOCK;
            v[k] = j < N ? xr[j] : 0.0f;
        }
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k)
            ss = fmaf(v[k], v[k], ss);
        const float rstd = rsqrtf(block_sum(ss, red) / N + eps);
#pragma unroll
        for (int k = 0; k < VPT * 4; ++k) {
            const int j = tid + k * BLOCK;
            if (j < N)
                yr[j] = v[k] * rstd * w[j];
        }
        return;
    }

    float ss = 0.0f;
#pragma unroll 1
    for (int j = tid; j < N; j += BLOCK)
        ss = fmaf(xr[j], xr[j], ss);
    const float rstd = rsqrtf(block_sum(ss, red) / N + eps);
#pragma unroll 1
    for (int j = tid; j < N; j += BLOCK)
        yr[j] = xr[j] * rstd * w[j];
}
