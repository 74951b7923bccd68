// kforge integrity test: task softmax; violation: none, a numerically careful three-pass softmax (row max subtracted, sum at least 1); expected status: pass.
// Must be correct on every stress input a hardened harness adds for the softmax family: rows of
// identical values (every output exactly 1/N), values near exp overflow (x - max <= 0 keeps every
// exp finite), and large magnitudes (most exps underflow to 0, the maximum contributes 1).
// kforge:param BLOCK = 256
// kforge:launch softmax grid=(M) block=(BLOCK)

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

__kernel void softmax(__global const float* x, __global float* y, int N)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    float m = -INFINITY;
    for (int j = lid; j < N; j += BLOCK)
        m = fmax(m, xr[j]);
    m = block_max(red, m);
    // Every exponent is <= 0, so nothing overflows; the row's maximum contributes exactly 1, so
    // the sum is at least 1 and never underflows to zero, whatever the magnitudes.
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += exp(xr[j] - m);
    const float inv = 1.0f / block_sum(red, s);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = exp(xr[j] - m) * inv;
}
