// Baseline vector_add: one element per work-item, scalar loads.
// Left for candidates: vector loads (float4), several elements per work-item, grid-stride loops.

// kforge:param BLOCK in {64, 128, 256, 512} = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i < N)   // the last work-group overhangs N when N is not a multiple of BLOCK
        z[i] = x[i] + y[i];
}
