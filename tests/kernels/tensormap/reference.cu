// Trusted reference for tile_add: one thread per element.

// kforge:launch tile_add_ref grid=(cdiv(M * N, 256)) block=(256)

extern "C" __global__ void tile_add_ref(const float* x, float* y, int M, int N)
{
    const long long k = (long long)blockIdx.x * 256 + threadIdx.x;
    if (k < (long long)M * N)
        y[k] = x[k] + (float)(int)(k % N);
}
