// Baseline bias_gelu: one element per work-item over the flattened M x N array, bias column by
// modulo. Left for candidates: a 2D launch (no integer division), vector loads, several elements
// per work-item, a cheaper tanh (e.g. via exp) that stays within tolerance.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:launch bias_gelu grid=(cdiv(M * N, BLOCK)) block=(BLOCK)

__kernel void bias_gelu(__global const float* x, __global const float* b, __global float* y,
                        int M, int N)
{
    const int i = get_global_id(0);
    if (i >= M * N)
        return;
    const float v = x[i] + b[i % N];
    const float u = 0.7978845608f * (v + 0.044715f * v * v * v);   // sqrt(2 / pi) * (...)
    y[i] = 0.5f * v * (1.0f + tanh(u));
}
