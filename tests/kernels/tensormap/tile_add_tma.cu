// tile_add through the tensor memory accelerator, for kforge-gpucheck. Where a row of x is a
// multiple of 16 bytes (N a multiple of 4), each block loads a BM x BN tile of x with
// cp.async.bulk.tensor through the tensor map tmX (completing on an mbarrier), adds the column
// index in shared memory, and stores the tile through tmY; elsewhere a plain kernel runs.
// Out-of-bounds parts of edge tiles load as zeros and are not stored.

// kforge:param BM = 16
// kforge:param BN = 32
// kforge:tensormap tmX x box=(BM, BN)
// kforge:tensormap tmY y box=(BM, BN)
// kforge:launch tile_add_tma grid=(cdiv(N, BN), cdiv(M, BM)) block=(128, 1) when=mod(N, 4) == 0
// kforge:launch tile_add_plain grid=(cdiv(N, 256), M) block=(256, 1) when=mod(N, 4) != 0

// The driver's 128-byte descriptor; NVRTC cannot include cuda.h. Declared as cuda.h names it, so
// that <cuda/barrier>, which declares CUtensorMap too, can be included beside it.
struct __align__(64) CUtensorMap_st {
    unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;

extern "C" __global__ void __launch_bounds__(128)
    tile_add_tma(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmY)
{
    __shared__ __align__(128) float tile[BM * BN];
    __shared__ __align__(8) unsigned long long full;
    const int col0 = blockIdx.x * BN;
    const int row0 = blockIdx.y * BM;
    const unsigned tileAddr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    const unsigned fullAddr = static_cast<unsigned>(__cvta_generic_to_shared(&full));

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(fullAddr) : "memory");
        // The initialised barrier, visible to the TMA unit (the async proxy).
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fullAddr),
                     "r"(BM * BN * (int)sizeof(float))
                     : "memory");
        // Coordinates innermost first: column, then row.
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
                tileAddr),
            "l"(reinterpret_cast<unsigned long long>(&tmX)), "r"(col0), "r"(row0), "r"(fullAddr)
            : "memory");
    }
    unsigned done = 0;
    while (!done)
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}"
                     : "=r"(done)
                     : "r"(fullAddr), "r"(0u)
                     : "memory");

    for (int k = threadIdx.x; k < BM * BN; k += blockDim.x)
        tile[k] += (float)(col0 + k % BN);

    // The threads' writes, visible to the TMA unit before it reads the tile.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                         reinterpret_cast<unsigned long long>(&tmY)),
                     "r"(col0), "r"(row0), "r"(tileAddr)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

extern "C" __global__ void tile_add_plain(const float* __restrict__ x, float* __restrict__ y, int N)
{
    const int j = blockIdx.x * 256 + threadIdx.x;
    const size_t row = (size_t)blockIdx.y * N;
    if (j < N)
        y[row + j] = x[row + j] + (float)j;
}
