// Baseline row_sum: one work-group per row; each work-item sums a strided slice, then a
// local-memory tree combines the partial sums. Left for candidates: vector loads, several rows
// per work-group when N is small, sub-group reductions, fewer barriers.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:launch row_sum grid=(M) block=(BLOCK)

// The tree reduction halves the active range each step: BLOCK must be a power of two.
__kernel void row_sum(__global const float* x, __global float* y, int N)
{
    __local float partial[BLOCK];
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    __global const float* xr = x + (size_t)row * N;

    float acc = 0.0f;
    for (int j = lid; j < N; j += BLOCK)   // strided so neighbouring work-items read neighbouring floats
        acc += xr[j];
    partial[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (lid < s)
            partial[lid] += partial[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        y[row] = partial[0];
}
