// kforge integrity test: task vector_add; violation: none, a correct vectorised kernel; expected status: pass.
// kforge:param BLOCK in {128, 256, 512} = 256
// kforge:launch vector_add4 grid=(cdiv(cdiv(N, 4), BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add4(const float* __restrict__ x, const float* __restrict__ y,
                                       float* __restrict__ z, int N)
{
    const int v = blockIdx.x * BLOCK + threadIdx.x; // one float4 per thread
    const int i = 4 * v;
    if (i + 3 < N) {
        const float4 a = reinterpret_cast<const float4*>(x)[v];
        const float4 b = reinterpret_cast<const float4*>(y)[v];
        reinterpret_cast<float4*>(z)[v] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    } else {
        for (int k = i; k < N; ++k) // the ragged tail when N is not a multiple of 4
            z[k] = x[k] + y[k];
    }
}
