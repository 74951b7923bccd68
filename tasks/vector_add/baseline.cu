// Baseline vector_add: one element per thread, scalar loads.
// Left for candidates: vector loads (float4), several elements per thread, grid-stride loops.

// kforge:param BLOCK in {128, 256, 512, 1024} = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

extern "C" __global__ void vector_add(const float* __restrict__ x, const float* __restrict__ y,
                                      float* __restrict__ z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)   // the last block overhangs N when N is not a multiple of BLOCK
        z[i] = x[i] + y[i];
}
