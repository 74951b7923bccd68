// expert:name gemm_bf16_wgmma_tma
// expert:tasks gemm_bf16
// expert:pattern Hopper wgmma (m64 x BN x k16, both operands read by the tensor cores from 128-byte-swizzled shared memory) fed by TMA tile copies that complete on mbarriers, a STAGES-deep ring, one producer warpgroup and two consumer warpgroups (setmaxnreg), clusters of CM blocks along M sharing B's tiles by TMA multicast, persistent blocks over a banded tile order, an epilogue through 128-byte-swizzled shared memory and TMA stores; a plain tiled kernel for sizes TMA cannot describe

// bfloat16 GEMM with fp32 accumulation the way Hopper (sm_90a) does it:
//  - A block of 3 warpgroups computes a 128 x BN tile of C. Warpgroup 0 is the producer: one of
//    its threads issues TMA copies (cp.async.bulk.tensor) of A's 128 x 64 tile and B's 64 x BN tile
//    (in 64-column boxes) into the next free stage of a STAGES-deep ring; each copy completes
//    on the stage's "full" mbarrier, which counts the bytes. Warpgroups 1 and 2 are consumers: each
//    owns 64 rows of the tile and issues 4 wgmma.m64nBNk16 per stage (fp32 accumulators in
//    registers, BN / 2 per thread), keeps one group of them in flight and releases a stage on its
//    "empty" mbarrier once the products that read it are done.
//  - The tensor maps (kforge:tensormap) describe A and B with 128-byte swizzle: each 64-element
//    row segment is 128 bytes and 8 rows form a 1024-byte swizzle atom, the layout the wgmma
//    shared-memory descriptors name (swizzle mode 1). A is K-major (rows of A along K); B arrives
//    N-major (rows of B along N), so its descriptor is read transposed (imm-trans-b = 1): leading
//    byte offset 8192 between 64-column boxes, stride byte offset 1024 between groups of 8 k rows.
//  - Ragged M, N and K tiles cost nothing: TMA fills what lies outside the matrix with zeros, and
//    the epilogue skips rows and columns past M and N. TMA needs rows that are a multiple of 16
//    bytes apart (K and N multiples of 8), so other sizes run the plain kernel below instead.
//  - setmaxnreg moves registers from the producer (40 per thread) to the consumers (232), which
//    hold 128 accumulators each at BN = 256.
//  - Clusters (CM = 2): the two blocks of a cluster compute vertically adjacent tiles (rows tm and
//    tm + 1 of tiles, the same columns), so they need the same tile of B at every k step. Each
//    block loads half of B's 64-column boxes and multicasts them to both blocks' shared memory
//    (cp.async.bulk.tensor ... .multicast::cluster), so each block reads A's tile and half of B's
//    from L2: a third fewer bytes per stage. A stage's "full" barrier counts the bytes of both
//    halves; its "empty" barrier takes an arrival from the consumers of both blocks (remote
//    arrivals through mapa), since a block's multicast writes into its neighbour's stage too.
//    Both blocks run the same number of ring iterations (an odd last row of tiles computes a tile
//    of zeros past M, which TMA fills and the epilogue skips), and neither leaves before the other
//    is done with its barriers (a cluster barrier at the end).
//    Measured on the H200 at 4096^3 (2026-12-04): 194.3 us with CM = 2 and 194.0 us with CM = 1
//    through kforge with the epilogue of the time; 177.5 and 178.8 us with the one below, in a
//    program of its own. L2 bandwidth is not what holds this kernel back there, so CM = 1 is the
//    default and clusters are left to the tuner.
//  - The epilogue: each consumer warpgroup writes its 64 x BN accumulators, rounded, into shared
//    memory as 64 x 64 boxes laid out with the 128-byte swizzle (so the 8 rows one store
//    instruction writes fall in 8 different bank groups), two boxes at a time, and one thread
//    stores them with TMA (cp.async.bulk.tensor, tensor map tmC), which clips what lies past M
//    and N. The warpgroup waits for the copies to have read the boxes only before it writes them
//    again. Stores straight from registers (8 rows x 16 bytes an instruction) took 192.7 us of
//    which 28 us were the epilogue; through TMA 176.4 us (H200, 4096^3, against 172.9-174.5 us
//    for cuBLAS in the same process).
//  - Persistent blocks: as many as make the fewest equal waves of tiles on the device's SMS
//    multiprocessors (at 4096^3 with BN = 256, 512 tiles on 132 SMs: 128 blocks of 4 tiles each).
//    The ring runs on from one tile to the next, so the producer loads the next tile while the
//    consumers store the last, and tiles go in bands of GROUP_M tile rows for L2 reuse.
// Measured on an H200 (2026-12-04, kforge eval --pytorch, 4096^3, BN = 256, STAGES = 4, CM = 1):
// 176.3 us, 780 TFLOP/s, 1.002x torch.compile and 0.996x eager (both cuBLAS, 176.6 and 175.7 us
// in the same evaluation); 191 us (0.91x) with stores from registers, 198 us not persistent.
// Tuning: BN 256 gives the most reuse per byte of shared memory; BN 128 twice the tiles for small
// matrices. Shared memory: STAGES * (128 + BN) * 128 bytes + 1 KiB for aligning the ring to the
// swizzle atom + 32 KiB of epilogue staging, 225 KiB at BN = 256 and 4 stages (227 KiB is the
// most a block may have).
// Measured at 4096^3: BN 128 with 5 or 6 stages, which do fit, were no faster than BN 256 with 4.

#include <cuda_bf16.h>

// kforge:param BN in {128, 256} = 256
// kforge:param STAGES in {2, 3, 4} = 4
// kforge:param CM in {1, 2} = 1
// kforge:tensormap tmA A box=(128, 64) swizzle=128
// kforge:tensormap tmB B box=(64, 64) swizzle=128
// kforge:tensormap tmC C box=(64, 64) swizzle=128
// kforge:launch gemm_bf16 grid=(CM * cdiv(cdiv(cdiv(M, 128), CM) * cdiv(N, BN), cdiv(cdiv(cdiv(M, 128), CM) * cdiv(N, BN), floor(SMS / CM)))) block=(384) cluster=(CM) smem=STAGES * (128 + BN) * 128 + 1024 + 32768 when=(mod(K, 8) == 0 && mod(N, 8) == 0)
// kforge:launch gemm_bf16_unaligned grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) when=(mod(K, 8) != 0 || mod(N, 8) != 0)

typedef __nv_bfloat16 T;
// The driver's 128-byte tensor map, as cuda.h declares it (NVRTC cannot include cuda.h; this form
// also agrees with the forward declaration in <cuda/barrier>).
struct __align__(64) CUtensorMap_st {
    unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;

#define BM 128
#define BK 64
#define A_TILE (BM * BK * 2)    // bytes of A per stage
#define B_TILE (BK * BN * 2)    // bytes of B per stage
#define STAGE_BYTES (A_TILE + B_TILE)
#define B_BOX (BK * 128)        // one 64 x 64 box of B
#define B_LBO 8192              // B: bytes between 64-column boxes (leading, along N)
#define B_SBO 1024              // B: bytes between groups of 8 k rows (stride, along K)
#define OUT_BOX 8192            // one 64 x 64 box of C in the epilogue's staging
#define OUT_BOXES 2             // boxes of C per consumer warpgroup staged at a time
#define GROUP_M 8               // tile rows per band of the tile order
#define GROUP_P (GROUP_M / CM)  // rows of cluster tiles (CM tiles each) per band

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    }
}

// An arrival on the barrier at the same shared-memory offset in block `cta` of the cluster.
// Released at the block's scope, not the cluster's: what it announces is that this block's
// wgmmas no longer read the stage, and they completed (wgmma.wait_group) before the arrival. A
// cluster-scope release costs a fence that holds up the warpgroup's next wgmma: measured on the
// H200 at 4096^3, 303 us against 193 us with this form.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta)
{
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                 "}\n" ::"r"(bar), "r"(cta)
                 : "memory");
}

__device__ __forceinline__ unsigned cluster_special(int which)
{
    unsigned v = 0;
    if (which == 0)
        asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(v));
    else if (which == 1)
        asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(v));
    else
        asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(v));
    return v;
}

// Every thread of every block of the cluster; what each did to shared memory before is seen after.
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;\n" ::: "memory");
}

// TMA: the box of `map` at (c0 innermost, c1) into shared memory at dst of every block in `mask`
// (bit i: block i of the cluster), completing on the barrier at bar's offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1,
                                                      unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}

// TMA: the box of `map` at (c0 innermost, c1) into shared memory at dst, completing on bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

// TMA: the box of `map` at (c0 innermost, c1) from shared memory at src to global memory; parts
// past the tensor's bounds are not written. Completes in this thread's bulk async-group.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, unsigned src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}

// The 128 threads of one warpgroup, at named barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void named_sync(int id)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

__device__ __forceinline__ void st_shared_pair(unsigned addr, __nv_bfloat162 v)
{
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(*reinterpret_cast<unsigned*>(&v)) : "memory");
}

// wgmma shared-memory descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
           | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// d (64 x BN, fp32, BN / 2 per thread) += A (64 x 16, K-major) * B (16 x BN, N-major: transposed).
#if BN == 128
__device__ __forceinline__ void wgmma_n128(float* d, unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "n"(1));
}
#endif

#if BN == 256
__device__ __forceinline__ void wgmma_n256(float* d, unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, "
                 "%72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, "
                 "%88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, "
                 "%104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, "
                 "%120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p, 1, 1, 0, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "n"(1));
}
#endif
// ---- end of PTX helpers

#define WGMMA_CAT(a, b) a##b
#define WGMMA_N(n) WGMMA_CAT(wgmma_n, n)

// The tile a block works on next. A cluster works on CM vertically adjacent tiles at a time (a
// cluster tile); cluster tiles run in bands of GROUP_P rows, so that the clusters running at one
// time share A's rows and B's columns in the L2.
__device__ __forceinline__ void tile_coords(int t, int rowsP, int tilesN, unsigned rank, int& tm, int& tn)
{
    const int band = t / (GROUP_P * tilesN);
    const int first = band * GROUP_P;
    const int rows = min(rowsP - first, GROUP_P);
    const int in = t - band * GROUP_P * tilesN;
    tm = (first + in % rows) * CM + (int)rank;
    tn = in / rows;
}

extern "C" __global__ void __launch_bounds__(384, 1)
gemm_bf16(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
          const __grid_constant__ CUtensorMap tmC, __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // The ring starts on a 1024-byte boundary, where a 128-byte swizzle atom must start.
    const unsigned raw = smem_u32(smem_raw);
    const unsigned ring = (raw + 1023u) & ~1023u;

    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int tilesN = (N + BN - 1) / BN;
    const int rowsP = ((M + BM - 1) / BM + CM - 1) / CM;   // rows of cluster tiles
    const int tiles = rowsP * tilesN;                      // cluster tiles
    const int ktiles = (K + BK - 1) / BK;
#if CM > 1
    const unsigned rank = cluster_special(0);
    const int first = (int)cluster_special(1), step = (int)cluster_special(2);
#else
    const unsigned rank = 0;
    const int first = blockIdx.x, step = gridDim.x;
#endif

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), 2 * CM);   // one arrival per consumer warpgroup of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
#if CM > 1
    cluster_sync();   // the neighbour's barriers are ready before anything is multicast to them
#else
    __syncthreads();
#endif

    // Persistent: each cluster takes cluster tiles first, first + step, ...; the ring runs on
    // across tiles, so the producer loads the next tile while the consumers store this one.
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            int it = 0;
            for (int t = first; t < tiles; t += step) {
                int tm, tn;
                tile_coords(t, rowsP, tilesN, rank, tm, tn);
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)   // every consumer of the cluster is done with what this stage held before
                        mbar_wait(smem_u32(&empty[s]), ((it / STAGES) + 1) & 1);
                    const unsigned a = ring + s * STAGE_BYTES;
                    const unsigned bar = smem_u32(&full[s]);
                    mbar_expect_tx(bar, STAGE_BYTES);   // A's tile, and B's from this block and its neighbour
                    tma_load_2d(a, &tmA, bar, kt * BK, tm * BM);
#pragma unroll
                    for (int j = 0; j < BN / 64; ++j) {
#if CM > 1
                        if (j % CM == (int)rank)
                            tma_load_2d_multicast(a + A_TILE + j * B_BOX, &tmB, bar, tn * BN + 64 * j, kt * BK,
                                                  (unsigned short)((1u << CM) - 1));
#else
                        tma_load_2d(a + A_TILE + j * B_BOX, &tmB, bar, tn * BN + 64 * j, kt * BK);
#endif
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int c = wg - 1;   // rows 64 c .. 64 c + 63 of each tile
        // A stage is free again once every block it was loaded into is done with it.
        const auto release = [](unsigned bar) {
#if CM > 1
#pragma unroll
            for (unsigned b = 0; b < CM; ++b)
                mbar_arrive_cluster(bar, b);
#else
            mbar_arrive(bar);
#endif
        };
        const int warp = tid / 32, lane = tid % 32;
        float d[BN / 2];
        int it = 0;
        for (int t = first; t < tiles; t += step) {
            int tm, tn;
            tile_coords(t, rowsP, tilesN, rank, tm, tn);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(smem_u32(&full[s]), (it / STAGES) & 1);
                const unsigned a = ring + s * STAGE_BYTES + c * 64 * 128;
                const unsigned b = ring + s * STAGE_BYTES + A_TILE;
                wgmma_fence();
#pragma unroll
                for (int k = 0; k < BK / 16; ++k)
                    WGMMA_N(BN)(d, smem_desc(a + 32 * k, 16, 1024), smem_desc(b + 2048 * k, B_LBO, B_SBO));
                wgmma_commit();
                wgmma_wait<1>();   // the previous stage's products are done: hand its buffers back
                if (kt > 0 && tid == 0)
                    release(smem_u32(&empty[(it - 1) % STAGES]));
            }
            wgmma_wait<0>();
            if (tid == 0)
                release(smem_u32(&empty[(it - 1) % STAGES]));

            // Accumulator i of a thread: row 16 warp + lane / 4 (+ 8 when i % 4 >= 2), column 8 (i / 4) + 2 (lane % 4) + i % 2.
            // Staged two 64-column boxes at a time; in a box, row r's 16-byte chunk k sits at chunk k ^ (r % 8).
            const unsigned staging = ring + STAGES * STAGE_BYTES + c * OUT_BOXES * OUT_BOX;
            const int r = warp * 16 + (lane >> 2);   // and r + 8
#pragma unroll
            for (int round = 0; round < BN / (64 * OUT_BOXES); ++round) {
                if (tid == 0)   // the previous stores have read the staging boxes
                    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
                named_sync(1 + c);
#pragma unroll
                for (int b = 0; b < OUT_BOXES; ++b)
#pragma unroll
                    for (int k = 0; k < 8; ++k) {
                        const int j = (round * OUT_BOXES + b) * 8 + k;   // 8-column group of the tile
                        const unsigned box = staging + b * OUT_BOX + 4 * (lane & 3);
                        st_shared_pair(box + r * 128 + ((k ^ (r & 7)) * 16), __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]));
                        st_shared_pair(box + (r + 8) * 128 + ((k ^ ((r + 8) & 7)) * 16), __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]));
                    }
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // visible to the TMA unit
                named_sync(1 + c);
                if (tid == 0) {
#pragma unroll
                    for (int b = 0; b < OUT_BOXES; ++b)
                        tma_store_2d(&tmC, staging + b * OUT_BOX, tn * BN + (round * OUT_BOXES + b) * 64, tm * BM + c * 64);
                    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
                }
            }
        }
        if (tid == 0)   // the last stores are done before the block (and its shared memory) ends
            asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
#if CM > 1
    cluster_sync();   // no block leaves while its neighbour may still multicast to it or arrive on its barriers
#endif
}

// Sizes whose rows TMA cannot address (K or N not a multiple of 8): 16 x 16 tiles through shared
// memory, fp32 accumulation, rounded once.
extern "C" __global__ void gemm_bf16_unaligned(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    __shared__ float as[16][17], bs[16][17];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        as[ty][tx] = row < M && k0 + tx < K ? static_cast<float>(A[(size_t)row * K + k0 + tx]) : 0.0f;
        bs[ty][tx] = k0 + ty < K && col < N ? static_cast<float>(B[(size_t)(k0 + ty) * N + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k)
            acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = __float2bfloat16_rn(acc);
}
