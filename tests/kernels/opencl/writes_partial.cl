// kforge integrity test: task softmax; violation: writes only rows [0, M/2), each of them correctly; expected status: incorrect.
// The rows it does write are exact, so a check that samples only the start of the output, or a
// harness whose output buffer still holds an earlier correct result, would pass it.

// kforge:param BLOCK = 256
// kforge:launch softmax grid=(M) block=(BLOCK)

__kernel void softmax(__global const float* x, __global float* y, int M, int N)
{
    __local float red[BLOCK];
    const int row = get_group_id(0);
    if (row >= M / 2)   // the violation; uniform per work-group, so no barrier is skipped by half a group
        return;
    const int lid = get_local_id(0);
    __global const float* xr = x + (size_t)row * N;
    __global float* yr = y + (size_t)row * N;

    float m = -INFINITY;
    for (int j = lid; j < N; j += BLOCK)
        m = fmax(m, xr[j]);
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);

    float sum = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        sum += exp(xr[j] - m);
    red[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float inv = 1.0f / red[0];
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = exp(xr[j] - m) * inv;
}
