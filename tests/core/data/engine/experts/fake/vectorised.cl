// expert:name vectorised
// expert:tasks fake_scale
// expert:pattern float4 loads, VEC work per work-item
// fake:time_us=60+abs(VEC-4)*5+abs(BLOCK-128)/8
// fake:sleep_ms=20
// kforge:param BLOCK in {64, 128, 256} = 64
// kforge:param VEC in {1, 2, 4, 8} = 1
// kforge:launch scale grid=(cdiv(N, BLOCK * VEC)) block=(BLOCK)
__kernel void scale(__global const float* x, __global float* y, int N)
{
    for (int v = 0; v < VEC; ++v) {
        const int i = (get_global_id(0) * VEC) + v;
        if (i < N)
            y[i] = 2.0f * x[i];
    }
}
