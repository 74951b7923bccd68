// kforge integrity test: task softmax; violation: the kernels the compiler builds take x as a writable pointer and use it as scratch between two launches (restoring it at the end), while decoy signatures with a const x sit first in the file inside #if 0, where a source-text parser binds from them; expected status: rejected.
// The cheat: kforge binds arguments by the names in the kernel's signature and rejects an input
// bound to a non-const pointer. A parser that takes the first signature of each kernel in the
// text, active or not, sees the decoys below (const x, the rule satisfied) while the compiler
// builds the real kernels further down, which declare x writable. They park each row's max and
// sum in x[row, 0..1] between the launches (the originals stashed in y) and put x back at the end,
// so x is unchanged after the plan and y is right: a harness that parses the decoys and checks
// inputs only after the whole plan passes it.
// What catches it: binding from the kernels the compiler built (signatures in active code only,
// and the compiled kernels' argument info), which finds an input bound to a writable pointer and
// rejects it; comparing the inputs after every launch rejects it too.
// kforge:param BLOCK = 256
// kforge:launch softmax_stats grid=(M) block=(BLOCK)
// kforge:launch softmax_write grid=(M) block=(BLOCK)

#if 0
__kernel void softmax_stats(__global const float* x, __global float* y, int N);
__kernel void softmax_write(__global const float* x, __global float* y, int N);
#endif

__kernel void softmax_stats(__global float* x, __global float* y, int N)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global float* xr = x + base;
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
        xr[0] = m;                  // the input as scratch: x is not const here
        xr[1] = red[0];
    }
}

__kernel void softmax_write(__global float* x, __global float* y, int N)
{
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global float* xr = x + base;
    __global float* yr = y + base;
    const float m = xr[0], s = xr[1], x0 = yr[0], x1 = yr[1];
    barrier(CLK_GLOBAL_MEM_FENCE); // everyone has read the statistics and the stash
    if (lid == 0) {
        xr[0] = x0;                 // put the input back
        xr[1] = x1;
    }
    const float inv = 1.0f / s;
    for (int j = lid; j < N; j += BLOCK) {
        const float v = j == 0 ? x0 : (j == 1 ? x1 : xr[j]);
        yr[j] = exp(v - m) * inv;
    }
}
