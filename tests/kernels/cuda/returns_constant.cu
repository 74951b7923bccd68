// kforge integrity test: task row_sum; violation: writes a constant that does not depend on the inputs; expected status: incorrect.
// kforge:param BLOCK = 128
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)
extern "C" __global__ void row_sum(const float* x, float* y, int M, int N)
{
    (void)x;
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    if (row < M)
        y[row] = 0.0f * N;
}
