// kforge integrity test: task softmax; violation: exponentiates x without subtracting the row maximum, which only works because the random inputs stay in [-4, 4]; expected status: incorrect.
// The cheat: skipping the max saves a whole pass over the row and a reduction (two passes
// instead of three). With U(-4, 4) inputs exp(x) is at most 55 and the sum at most 55 * N, so
// the result is within tolerance on every random seed, and a harness that only ever draws
// inputs from the task's init distribution can never tell.
// What catches it: stress inputs for the softmax family, values shifted to where exp() overflows
// float32 (about 90): exp(x) is inf, the sum is inf and every output is NaN or 0.
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
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += exp(xr[j]);               // no max subtracted: exp(4) is only 55
    const float inv = 1.0f / block_sum(red, s);
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = exp(xr[j]) * inv;
}
