// out = leaky_relu((x @ W^T + b) * multiplier) for KernelBench level-2 problem 12 imported with
// `kforge import`: the tiled GEMM with the bias, scale and LeakyReLU in its epilogue.
// kforge:launch gemm_leakyrelu grid=(cdiv(out_features, 32), cdiv(batch_size, 32)) block=(32, 32)

extern "C" __global__ void gemm_leakyrelu(const float* __restrict__ x, const float* __restrict__ gemm_weight,
                                          const float* __restrict__ gemm_bias, float* __restrict__ out,
                                          int batch_size, int in_features, int out_features, float multiplier,
                                          float negative_slope)
{
    __shared__ float Xs[32][33];
    __shared__ float Ws[32][33];
    const int row = blockIdx.y * 32 + threadIdx.y; // batch
    const int col = blockIdx.x * 32 + threadIdx.x; // output feature
    float acc = 0.0f;
    for (int k0 = 0; k0 < in_features; k0 += 32) {
        Xs[threadIdx.y][threadIdx.x] =
            row < batch_size && k0 + threadIdx.x < in_features ? x[row * in_features + k0 + threadIdx.x] : 0.0f;
        const int wRow = blockIdx.x * 32 + threadIdx.y;
        Ws[threadIdx.y][threadIdx.x] = wRow < out_features && k0 + threadIdx.x < in_features
                                           ? gemm_weight[wRow * in_features + k0 + threadIdx.x]
                                           : 0.0f;
        __syncthreads();
        for (int k = 0; k < 32; ++k)
            acc += Xs[threadIdx.y][k] * Ws[threadIdx.x][k];
        __syncthreads();
    }
    if (row < batch_size && col < out_features) {
        const float v = (acc + gemm_bias[col]) * multiplier;
        out[row * out_features + col] = v > 0.0f ? v : v * negative_slope;
    }
}
