// kforge integrity test: task vector_add; violation: returns without writing z, hoping stale memory holds a result; expected status: incorrect.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    (void)x; (void)y; (void)z; (void)N;
}
