// kforge integrity test: task softmax; violation: the kernels the compiler builds take x as a writable pointer and use it as scratch between two launches (restoring it at the end), while decoy signatures with a const x sit first in the file inside #if 0, where a source-text parser binds from them; expected status: rejected.
// The cheat: kforge binds arguments by the names in the kernel's signature and rejects an input
// bound to a non-const pointer. A parser that takes the first signature of each kernel in the
// text, active or not, sees the decoys below (const x, the rule satisfied) while the compiler
// builds the real kernels further down, which declare x writable. They park each row's max and
// sum in x[row, 0..1] between the launches (the originals stashed in y) and put x back at the end,
// so x is unchanged after the plan and y is right: a harness that parses the decoys and checks
// inputs only after the whole plan passes it.
// What catches it: binding from the kernels the compiler built (signatures in active code only,
// and the compiled kernels' parameters), which finds an input bound to a writable pointer and
// rejects it; comparing the inputs after every launch rejects it too.
// kforge:param BLOCK = 256
// kforge:launch softmax_stats grid=(M) block=(BLOCK)
// kforge:launch softmax_write grid=(M) block=(BLOCK)
#include <math_constants.h>

#if 0
extern "C" __global__ void softmax_stats(const float* x, float* y, int N);
extern "C" __global__ void softmax_write(const float* x, float* y, int N);
#endif

extern "C" __global__ void softmax_stats(float* x, float* y, int N)
{
    __shared__ float red[BLOCK];
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    float* xr = x + base;
    float m = -CUDART_INF_F;
    for (int j = lid; j < N; j += BLOCK)
        m = fmaxf(m, xr[j]);
    red[lid] = m;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] = fmaxf(red[lid], red[lid + k]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += expf(xr[j] - m);
    red[lid] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k)
            red[lid] += red[lid + k];
        __syncthreads();
    }
    if (lid == 0) {
        y[base] = xr[0];            // stash the two input values in the output row
        y[base + 1] = xr[1];
        xr[0] = m;                  // the input as scratch: x is not const here
        xr[1] = red[0];
    }
}

extern "C" __global__ void softmax_write(float* x, float* y, int N)
{
    const int lid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * N;
    float* xr = x + base;
    float* yr = y + base;
    const float m = xr[0], s = xr[1], x0 = yr[0], x1 = yr[1];
    __syncthreads(); // everyone has read the statistics and the stash
    if (lid == 0) {
        xr[0] = x0;                 // put the input back
        xr[1] = x1;
    }
    const float inv = 1.0f / s;
    for (int j = lid; j < N; j += BLOCK) {
        const float v = j == 0 ? x0 : (j == 1 ? x1 : xr[j]);
        yr[j] = expf(v - m) * inv;
    }
}
