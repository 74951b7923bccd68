// expert:name broken_wide
// expert:tasks fake_scale
// expert:pattern a wide variant that is wrong for WIDE = 8 (the fake worker says incorrect)
// fake:time_us=50
// fake:incorrect_if=WIDE==8
// fake:sleep_ms=20
// kforge:param WIDE in {2, 8} = 8
// kforge:launch scale grid=(cdiv(N, 64 * WIDE)) block=(64)
__kernel void scale(__global const float* x, __global float* y, int N)
{
    for (int w = 0; w < WIDE; ++w) {
        const int i = get_global_id(0) * WIDE + w;
        if (i < N)
            y[i] = 2.0f * x[i];
    }
}
