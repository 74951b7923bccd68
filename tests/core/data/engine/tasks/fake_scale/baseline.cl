// The fake worker times this as 100 + |BLOCK - 256| / 4 + 20 * |UNROLL - 4| us (the baseline itself,
// BLOCK 64 and UNROLL 1, is 208 us against the fake baseline's fixed 200).
// fake:time_us=100+abs(BLOCK-256)/4+20*abs(UNROLL-4)
// fake:sleep_ms=20
// kforge:param BLOCK in {32, 64, 128, 256, 512} = 64
// kforge:param UNROLL in {1, 2, 4, 8} = 1
// kforge:launch scale grid=(cdiv(N, BLOCK * UNROLL)) block=(BLOCK)
__kernel void scale(__global const float* x, __global float* y, int N)
{
    for (int u = 0; u < UNROLL; ++u) {
        const int i = (get_group_id(0) * UNROLL + u) * BLOCK + get_local_id(0);
        if (i < N)
            y[i] = 2.0f * x[i];
    }
}
