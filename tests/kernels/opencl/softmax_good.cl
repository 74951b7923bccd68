// kforge integrity test: task softmax; a correct alternative kernel (online softmax); expected status: pass.
// Differs from the baseline in summation order and in how the max is found, so it exercises the
// tolerance: one pass keeps a running (max, sum) per work-item, rescaling the sum when the max
// grows; the pairs are merged by a local-memory tree; a second pass writes the outputs.

// kforge:param BLOCK in {64, 128, 256} = 128
// kforge:launch softmax_online grid=(M) block=(BLOCK)

// Merge the partial (max, sum) pair (m2, s2) into (*m, *s). An empty partial is (-INF, 0).
void merge(float* m, float* s, float m2, float s2)
{
    const float mn = fmax(*m, m2);
    if (mn == -INFINITY)   // both empty: exp(-INF - -INF) would be NaN
        return;
    *s = *s * exp(*m - mn) + s2 * exp(m2 - mn);
    *m = mn;
}

// BLOCK must be a power of two (tree reduction).
__kernel void softmax_online(__global const float* x, __global float* y, int N)
{
    __local float red_m[BLOCK];
    __local float red_s[BLOCK];
    const int lid = get_local_id(0);
    const size_t base = (size_t)get_group_id(0) * N;
    __global const float* xr = x + base;
    __global float* yr = y + base;

    float m = -INFINITY, s = 0.0f;
    for (int j = lid; j < N; j += BLOCK) {
        const float v = xr[j];
        if (v > m) {
            s = s * exp(m - v) + 1.0f;   // exp(-INF) = 0 on the first element
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    red_m[lid] = m;
    red_s[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (lid < k) {
            float mm = red_m[lid], ss = red_s[lid];
            merge(&mm, &ss, red_m[lid + k], red_s[lid + k]);
            red_m[lid] = mm;
            red_s[lid] = ss;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float row_max = red_m[0];
    const float inv = 1.0f / red_s[0];

    for (int j = lid; j < N; j += BLOCK)
        yr[j] = exp(xr[j] - row_max) * inv;
}
