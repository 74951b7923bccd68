// expert:name bias_gelu_float4_rows
// expert:tasks bias_gelu
// expert:pattern 2D launch (no integer division), float4 loads and stores, VEC float4 columns per thread strided by the block, the bias loaded once per thread and reused over ROWS rows, GELU through one __expf (v * sigmoid(2u))

// Bias + GELU (tanh form) at memory speed. A 2D grid: blockIdx.x picks BLOCK * 4 * VEC columns,
// blockIdx.y a group of ROWS rows, so no division or modulo is needed to find the bias column.
// Each thread takes VEC float4 columns, BLOCK float4s apart (a block's loads of one row are one
// contiguous stretch of BLOCK * VEC float4s), loads their bias once, then for each of its ROWS
// rows loads the float4s of x (all ROWS * VEC loads issued before any math), applies the GELU and
// stores float4s.
//  - GELU: 0.5 v (1 + tanh(u)) = v * sigmoid(2u) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v +
//    0.044715 v^3). One __expf (ex2.approx on a scaled argument, relative error ~1e-6 for the
//    arguments here) and one division, where tanhf costs a longer sequence. The rearrangement
//    has no cancellation: the error stays relative, well inside the 1e-5 tolerance. For large
//    |v| it tends to the right limits (exp overflows to inf, v / inf = -0; exp -> 0 gives v).
//  - float4 needs N % 4 == 0 (every row then starts 16-byte aligned); otherwise each thread
//    takes 4 * VEC columns strided by BLOCK, element-wise.
//  - OCC is the number of threads per SM the registers are limited for (__launch_bounds__):
//    2048 fits ROWS * VEC <= 2 in 32 registers, 1024 fits ROWS * VEC <= 8 in 64 (kforge:require;
//    beyond that the loads spill).
//  - Two kernels, chosen by the launch plan's `when`: bias_gelu_fit where every block's columns
//    and rows exist (N % (BLOCK * 4 * VEC) == 0, M % ROWS == 0), bias_gelu for every other size.
//    bias_gelu_fit has no bounds checks and no scalar path: its loads go out a few instructions
//    after the block starts.
// Tuning: at 4096 x 4096, BLOCK = 128 with VEC = 2 covers a row with 4 blocks. BLOCK 128, ROWS 1,
// VEC 2, OCC 2048 is torch.compile's pointwise form (1024 floats a block of four warps, 8 a
// thread, 2048 threads a multiprocessor). Measured on the H200 in PyTorch's process beside
// torch.compile: on 2026-12-04, with one kernel for all sizes, BLOCK 128, ROWS 2, VEC 1 took
// 30.56 us (torch.compile 30.43-30.45), torch.compile's form 30.78, BLOCK 256, ROWS 1, VEC 2
// 30.93. On 2026-12-05, side by side (tests/gpu/sidebyside.py, 40 rounds, twice): with
// bias_gelu_fit, torch.compile's form 1.002-1.003x torch.compile, ROWS 2, VEC 1 0.991-0.996x,
// ROWS 1, VEC 1 0.991x; the one-kernel form at ROWS 2, VEC 1 0.994-0.996x.
// Cache hints do not help here (2026-12-05, `kforge eval --pytorch`, twice each): x loaded
// evict-first (__ldcs) 31.97-32.19 us and y also stored streaming (__stcs) 32.22-32.35, against
// 30.66 with the default policy.

// kforge:param BLOCK in {64, 128, 256, 512} = 128
// kforge:param ROWS in {1, 2, 4, 8} = 1
// kforge:param VEC in {1, 2, 4} = 2
// kforge:param OCC in {1024, 2048} = 2048
// kforge:require ROWS * VEC <= 2 || (OCC == 1024 && ROWS * VEC <= 8)
// kforge:launch bias_gelu_fit grid=(cdiv(N, BLOCK * 4 * VEC), cdiv(M, ROWS)) block=(BLOCK, 1) when=mod(N, BLOCK * 4 * VEC) == 0 && mod(M, ROWS) == 0
// kforge:launch bias_gelu grid=(cdiv(N, BLOCK * 4 * VEC), cdiv(M, ROWS)) block=(BLOCK, 1) when=mod(N, BLOCK * 4 * VEC) != 0 || mod(M, ROWS) != 0

__device__ __forceinline__ float gelu(float v)
{
    const float u = 0.7978845608028654f * fmaf(0.044715f * v, v * v, v);   // sqrt(2/pi) (v + 0.044715 v^3)
    return v / (1.0f + __expf(-2.0f * u));
}

// GELU of v + b, element-wise.
__device__ __forceinline__ float4 bias_gelu4(float4 v, float4 b)
{
    return make_float4(gelu(v.x + b.x), gelu(v.y + b.y), gelu(v.z + b.z), gelu(v.w + b.w));
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
bias_gelu(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, int M, int N)
{
    const int row0 = blockIdx.y * ROWS;
    if ((N & 3) == 0) {
        const int n4 = N >> 2;
        const int c0 = blockIdx.x * BLOCK * VEC + threadIdx.x;   // float4 columns c0 + k * BLOCK, k < VEC
        const float4* b4 = reinterpret_cast<const float4*>(b);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        float4 bb[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            if (c0 + k * BLOCK < n4)
                bb[k] = b4[c0 + k * BLOCK];
        float4 v[ROWS][VEC];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)   // all loads first
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                if (row0 + r < M && c0 + k * BLOCK < n4)
                    v[r][k] = x4[(size_t)(row0 + r) * n4 + c0 + k * BLOCK];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                if (row0 + r < M && c0 + k * BLOCK < n4)
                    y4[(size_t)(row0 + r) * n4 + c0 + k * BLOCK] = bias_gelu4(v[r][k], bb[k]);
    } else {
        const int c0 = blockIdx.x * BLOCK * 4 * VEC + threadIdx.x;   // columns c0 + k * BLOCK, k < 4 * VEC
#pragma unroll
        for (int k = 0; k < 4 * VEC; ++k) {
            const int col = c0 + k * BLOCK;
            if (col >= N)
                continue;
            const float bc = b[col];
#pragma unroll
            for (int r = 0; r < ROWS; ++r)
                if (row0 + r < M) {
                    const size_t i = (size_t)(row0 + r) * N + col;
                    y[i] = gelu(x[i] + bc);
                }
        }
    }
}

// The whole-fit case, chosen by the launch plan: N is a multiple of BLOCK * 4 * VEC and M of
// ROWS, so every float4 a thread would touch exists. No bounds checks: the loads go out a few
// instructions after the block starts.
extern "C" __global__ void __launch_bounds__(BLOCK, OCC / BLOCK)
bias_gelu_fit(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, int M, int N)
{
    const unsigned n4 = (unsigned)N >> 2;
    const unsigned c0 = blockIdx.x * BLOCK * VEC + threadIdx.x;
    const size_t first = (size_t)(blockIdx.y * ROWS) * n4 + c0;
    const float4* x4 = reinterpret_cast<const float4*>(x) + first;
    float4* y4 = reinterpret_cast<float4*>(y) + first;
    const float4* b4 = reinterpret_cast<const float4*>(b) + c0;
    float4 v[ROWS][VEC], bb[VEC];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)   // all loads first
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            v[r][k] = x4[(size_t)r * n4 + k * BLOCK];
#pragma unroll
    for (int k = 0; k < VEC; ++k)
        bb[k] = b4[k * BLOCK];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            y4[(size_t)r * n4 + k * BLOCK] = bias_gelu4(v[r][k], bb[k]);
    (void)M;
}
