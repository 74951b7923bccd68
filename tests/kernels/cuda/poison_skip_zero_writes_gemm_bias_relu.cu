// kforge integrity test: task gemm_bias_relu; violation: stores only the elements that survive the ReLU and leaves the clamped half of C unwritten, trusting the output buffer to start as zeros; expected status: incorrect.
// The cheat: about half of C is clamped to zero, so skipping those stores saves half the write
// traffic of the epilogue. Freshly allocated device memory is zero, so on a harness that allocates
// outputs once and never fills them, every skipped element already holds the right value, and the
// harness's own earlier zero-fill (or a previous correct run) keeps it so.
// What catches it: outputs filled with a poison pattern (two different ones, on separate runs)
// before every run; the skipped elements keep the poison.
// kforge:param TILE = 16
// kforge:launch gemm_bias_relu grid=(cdiv(N, TILE), cdiv(M, TILE)) block=(TILE, TILE)

extern "C" __global__ void gemm_bias_relu(const float* A, const float* B, const float* bias, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) {
        const float v = acc + bias[col];
        if (v > 0.0f)                  // the violation: zeros are never stored
            C[(size_t)row * N + col] = v;
    }
}
