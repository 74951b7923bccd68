// expert:name bias_gelu_float4_rows
// expert:tasks bias_gelu
// expert:pattern 2D launch (no integer division), float4 loads and stores, the bias loaded once per thread and reused over ROWS rows, GELU through one __expf (v * sigmoid(2u))

// Bias + GELU (tanh form) at memory speed. A 2D grid: blockIdx.x picks BLOCK * 4 columns,
// blockIdx.y a group of ROWS rows, so no division or modulo is needed to find the bias column.
// Each thread loads the bias of its 4 columns once (a float4), then for each of its ROWS rows
// loads a float4 of x (all ROWS loads issued before any math), applies the GELU and stores a
// float4.
//  - GELU: 0.5 v (1 + tanh(u)) = v * sigmoid(2u) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v +
//    0.044715 v^3). One __expf (ex2.approx on a scaled argument, relative error ~1e-6 for the
//    arguments here) and one division, where tanhf costs a longer sequence. The rearrangement
//    has no cancellation: the error stays relative, well inside the 1e-5 tolerance. For large
//    |v| it tends to the right limits (exp overflows to inf, v / inf = -0; exp -> 0 gives v).
//  - float4 needs N % 4 == 0 (every row then starts 16-byte aligned); otherwise each thread
//    takes 4 columns strided by BLOCK, element-wise.
// Tuning: at 4096 x 4096, BLOCK = 256 covers a row with 4 blocks; ROWS = 4 gives 4096 blocks.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:param ROWS in {1, 2, 4, 8} = 4
// kforge:launch bias_gelu grid=(cdiv(N, BLOCK * 4), cdiv(M, ROWS)) block=(BLOCK, 1)

__device__ __forceinline__ float gelu(float v)
{
    const float u = 0.7978845608028654f * fmaf(0.044715f * v, v * v, v);   // sqrt(2/pi) (v + 0.044715 v^3)
    return v / (1.0f + __expf(-2.0f * u));
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
bias_gelu(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, int M, int N)
{
    const int row0 = blockIdx.y * ROWS;
    if ((N & 3) == 0) {
        const int n4 = N >> 2;
        const int c4 = blockIdx.x * BLOCK + threadIdx.x;   // float4 column
        if (c4 >= n4)
            return;
        const float4 bb = reinterpret_cast<const float4*>(b)[c4];
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        float4 v[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)   // all loads first
            if (row0 + r < M)
                v[r] = x4[(size_t)(row0 + r) * n4 + c4];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
            if (row0 + r < M)
                y4[(size_t)(row0 + r) * n4 + c4] = make_float4(gelu(v[r].x + bb.x), gelu(v[r].y + bb.y),
                                                               gelu(v[r].z + bb.z), gelu(v[r].w + bb.w));
    } else {
        const int c0 = blockIdx.x * BLOCK * 4 + threadIdx.x;   // columns c0 + k * BLOCK, k < 4
#pragma unroll
        for (int k = 0; k < 4; ++k) {
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
