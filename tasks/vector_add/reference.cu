// Trusted reference for vector_add: one thread per element.
// A single float add is correctly rounded, so double precision would buy nothing here.

// kforge:launch vector_add_ref grid=(cdiv(N, 256)) block=(256)

extern "C" __global__ void vector_add_ref(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
