// kforge:param BLOCK in {64, 128, 256} = 128
// kforge:param VEC in {1, 2, 4} = 4
// kforge:require BLOCK * VEC <= 1024
// kforge:scratch partial float32 [cdiv(M * N, BLOCK * VEC)]
// kforge:tensormap xmap x box=(1, 64) swizzle=128
// kforge:launch first grid=(cdiv(N, BLOCK * VEC), M) block=(BLOCK) smem=BLOCK * 4 when=N > 0 cluster=(2)
// kforge:launch second grid=(1) block=(32)
#if 0
__global__ void hidden(float* y) {}
#endif
#define TILE (BLOCK * VEC)
__global__ void first(const __grid_constant__ CUtensorMap xmap, const float* __restrict__ x, const __half* w,
                      float* y, float* partial, float eps, int M, int N) {
    extern __shared__ float s[];
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < N) y[blockIdx.y * N + i] = x[blockIdx.y * N + i] * __half2float(w[i]) + eps;
}
__global__ void second(float* partial, float* y) { }
