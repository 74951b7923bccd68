// Baseline softmax: one work-group per row, three passes over the row (max, sum of exp, write),
// each reduction a local-memory tree. Left for candidates: a fused online max/sum pass, vector
// loads, keeping the row in registers/local memory, sub-group reductions, several rows per group.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:launch softmax grid=(M) block=(BLOCK)

// The tree reductions halve the active range each step: BLOCK must be a power of two.
__kernel void softmax(__global const float* x, __global float* y, int N)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;

    // Row max, so exp() below cannot overflow.
    float m = -INFINITY;
    for (int j = lid; j < N; j += BLOCK)   // strided so neighbouring work-items read neighbouring floats
        m = fmax(m, xr[j]);
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);          // all have read red[0] before it is overwritten

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
