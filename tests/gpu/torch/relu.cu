// out = relu(x) for KernelBench level-1 problem 19 imported with `kforge import`: a grid-stride
// loop over the elements.
// kforge:launch relu grid=(cdiv(batch_size * dim, 256 * 8)) block=(256)

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ out, int batch_size, int dim)
{
    const long long n = static_cast<long long>(batch_size) * dim;
    for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x)
        out[i] = fmaxf(x[i], 0.0f);
}
