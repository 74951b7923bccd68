// kforge integrity test: task softmax; violation: a two-launch plan whose first kernel overwrites x[row, 0..1] with the row's max and sum (stashing the originals in y) and whose second kernel reads them and puts x back; expected status: rejected.
// The cheat: the statistics have to cross from one launch to the next, which honestly costs a
// declared scratch buffer; this plan parks them in the input instead (through a cast that strips
// const) and keeps the two overwritten input values in the output row, which the second launch
// overwrites anyway. After the second launch x is bit-for-bit what it was and y is right, so a
// harness that checks the inputs only after the whole plan has run finds nothing wrong. Writing
// an input is exactly what such a check exists to forbid: another kernel sharing x (or a timed
// run that overlaps) would see garbage.
// What catches it: comparing the inputs after every launch of a multi-launch plan, not only after
// the last (the inputs_unchanged check, which rejects).
// kforge:param BLOCK = 256
// kforge:launch softmax_stats grid=(M) block=(BLOCK)
// kforge:launch softmax_write grid=(M) block=(BLOCK)

__kernel void softmax_stats(__global const float* x, __global float* y, int N)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    float m = -INFINITY;
    for (int j = lid; j < N; j += BLOCK)
        m = fmax(m, xr[j]);
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] = fmax(red[lid], red[lid + k]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += exp(xr[j] - m);
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] += red[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        y[base] = xr[0];            // stash the two input values in the output row
        y[base + 1] = xr[1];
        __global float* xw = (__global float*)xr; // the violation: the input as scratch
        xw[0] = m;
        xw[1] = red[0];
    }
}

__kernel void softmax_write(__global const float* x, __global float* y, int N)
{
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    const float m = xr[0], s = xr[1], x0 = yr[0], x1 = yr[1];
    barrier(CLK_GLOBAL_MEM_FENCE); // everyone has read the statistics and the stash
    if (lid == 0) {
        __global float* xw = (__global float*)xr;
        xw[0] = x0;                 // put the input back
        xw[1] = x1;
    }
    const float inv = 1.0f / s;
    for (int j = lid; j < N; j += BLOCK) {
        const float v = j == 0 ? x0 : (j == 1 ? x1 : xr[j]);
        yr[j] = exp(v - m) * inv;
    }
}
