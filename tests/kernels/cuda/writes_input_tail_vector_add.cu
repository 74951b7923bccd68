// kforge integrity test: task vector_add; violation: computes z correctly but flips the lowest bit of the input's last element; expected status: rejected.
// The change is as small as a change can be, and where a digest is weakest: at the small
// variant's N = 1000003 the last float is the first half of a partial 8-byte word. The inputs
// check (a device-side digest where the backend has one, else a read-back) must see it.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
    if (i == N - 1) {
        unsigned int* last = (unsigned int*)(x + i); // the violation, through a cast
        *last ^= 1u;
    }
}
