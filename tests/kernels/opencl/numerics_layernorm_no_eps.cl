// kforge integrity test: task layernorm; violation: divides by sqrt(var) without eps, which only works because random rows have a variance near 1.33; expected status: incorrect.
// The cheat: dropping eps (and the scalar argument) is a rounding error away from the reference
// on U(-1, 3) rows: eps / var is below 1e-5, inside the 1e-4 tolerance. A harness that only draws
// inputs from the init distribution never sees a row with no spread.
// What catches it: stress inputs for the norm family: rows of zeros or of one repeated value have
// var = 0 (or a rounding residue), so the kernel computes 0 * inf = NaN or huge outputs where the
// reference gives beta.
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
                        __global float* y, int N)
{
    __local float red[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;
    float s = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        s += xr[j];
    const float mean = block_sum(red, s) / N;
    float d = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        d += (xr[j] - mean) * (xr[j] - mean);
    const float var = block_sum(red, d) / N;
    const float r = rsqrt(var);        // eps dropped: var is about 1.33 for U(-1, 3), eps is 1e-5
    for (int j = lid; j < N; j += BLOCK)
        yr[j] = (xr[j] - mean) * r * gamma[j] + beta[j];
}
