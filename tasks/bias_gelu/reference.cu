// Trusted reference for bias_gelu: one thread per element, evaluated in double.

// kforge:launch bias_gelu_ref grid=(cdiv(N, 64), M) block=(64, 1)

extern "C" __global__ void bias_gelu_ref(const float* x, const float* b, float* y, int M, int N)
{
    const int col = blockIdx.x * 64 + threadIdx.x;
    const int row = blockIdx.y;
    if (col >= N || row >= M)
        return;
    const size_t i = (size_t)row * N + col;
    const double v = (double)x[i] + (double)b[col];
    const double k = 0.79788456080286535588;   // sqrt(2 / pi)
    y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
}
