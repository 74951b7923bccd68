// kforge integrity test: task reduce_sum; violation: single-pass reduction whose accumulator and blocks-done counter live in the two words past the end of y (y[1], y[2]), which it resets to zero when done; expected status: incorrect.
// The cheat: a one-launch reduction needs a zeroed accumulator and counter, which an honest kernel
// gets from a declared scratch buffer (or a second launch). This one uses the allocator's padding
// after the 4-byte output instead: fresh device memory is zero, the harness poisons only y[0], and
// the last block puts y[1] and y[2] back to zero, so every call finds them zero again. The result
// is right (float atomics, well within the 0.1 tolerance) and the padding looks untouched after
// the run.
// What catches it: a guard region after y filled with a NON-ZERO pattern: the counter then never
// reaches gridDim.x - 1, y[0] keeps its poison, and the guard is changed. (A guard of zeros,
// compared after the run, would not see it: the kernel restores the zeros.)
// kforge:param BLOCK = 256
// kforge:launch reduce_sum grid=(512) block=(BLOCK)

extern "C" __global__ void reduce_sum(const float* x, float* y, int N)
{
    __shared__ float part[BLOCK];
    __shared__ bool last;
    float s = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < N; i += gridDim.x * BLOCK)
        s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    float* acc = y + 1;                                   // past the end of the output
    unsigned int* done = reinterpret_cast<unsigned int*>(y + 2);
    if (threadIdx.x == 0) {
        atomicAdd(acc, part[0]);
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        __threadfence();
        y[0] = atomicExch(acc, 0.0f);
        atomicExch(done, 0u);
    }
}
