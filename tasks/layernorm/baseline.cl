// Baseline layernorm: one work-group per row; a local-memory tree reduction for the mean, a
// second one for the variance of the centred values (two-pass: no cancellation), then a
// normalising pass. The row is read three times. Left for candidates: a single-pass
// (Welford or sum/sum-of-squares) reduction, keeping the row on chip, vector loads.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:launch layernorm grid=(M) block=(BLOCK)

// Sum of v over the work-group, returned to every work-item. BLOCK must be a power of two.
float block_sum(float v, __local float* buf)
{
    const int lid = get_local_id(0);
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (lid < s)
            buf[lid] += buf[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);   // buf is reused by the next call
    return r;
}

__kernel void layernorm(__global const float* x, __global const float* gamma,
                        __global const float* beta, __global float* y, int N, float eps)
{
    __local float buf[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;

    float acc = 0.0f;
    for (int j = lid; j < N; j += BLOCK)
        acc += xr[j];
    const float mean = block_sum(acc, buf) / N;

    acc = 0.0f;
    for (int j = lid; j < N; j += BLOCK) {
        const float d = xr[j] - mean;
        acc += d * d;
    }
    const float rstd = rsqrt(block_sum(acc, buf) / N + eps);

    for (int j = lid; j < N; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
