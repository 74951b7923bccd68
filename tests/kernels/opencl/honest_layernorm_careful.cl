// kforge integrity test: task layernorm; violation: none, a numerically careful layer norm (shifted two-pass variance, eps honoured); expected status: pass.
// Must be correct on the norm family's stress inputs: all-zero rows and rows of one repeated
// value (every output exactly beta: the shift by the row's first element makes the centred values
// exactly zero), large magnitudes and large common offsets (the shift removes them before squaring).
// kforge:param BLOCK = 256
// kforge:launch layernorm grid=(M) block=(BLOCK)

// Tree reductions over one work-group of BLOCK (a power of two) work-items.
float block_sum(__local float* red, float v)
{
    const int lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] += red[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
float block_max(__local float* red, float v)
{
    const int lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] = fmax(red[lid], red[lid + k]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

__kernel void layernorm(__global const float* x, __global const float* gamma, __global const float* beta,
                        __global float* y, int N, float eps)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    // Work on d = x - x[row, 0]: a row of identical values gives d = 0 exactly (a plain float mean
    // of 777 copies of 1e4 is off by about 1e-3, which eps cannot hide), and a large common offset
    // cancels before anything is squared.
    const float pivot = xr[0];
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += xr[j] - pivot;
    const float mean = block_sum(red, s) / N;
    float q = 0.0f;
    for (int j = lid; j < N; j += BLOCK) {
        const float c = (xr[j] - pivot) - mean;
        q += c * c;                    // two-pass variance: never negative, no E[x^2] - E[x]^2
    }
    const float r = rsqrt(block_sum(red, q) / N + eps);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = ((xr[j] - pivot) - mean) * r * gamma[j] + beta[j];
}
