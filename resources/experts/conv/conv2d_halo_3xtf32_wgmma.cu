// expert:name conv2d_halo_3xtf32_wgmma
// expert:tasks conv2d
// expert:pattern implicit GEMM (pixels x output channels, taps x input channels deep) at float32 accuracy on Hopper's TF32 wgmma (3xTF32), the input read by TMA as zero-padded halo tiles of R + 2 rows x 32 channels, the weights split once into TF32 parts laid out as the swizzled shared-memory operand and streamed in by bulk copies; register operands gathered from the halo tile; a direct kernel for sizes TMA cannot describe

// 3 x 3 convolution (stride 1, padding 1, NCHW) as an implicit GEMM on Hopper's tensor cores:
// y[n, k, p] = sum over (r, s, c) of X[p, (r, s, c)] * Wt[(r, s, c), k] with p a pixel of image
// n, X[p, (r, s, c)] = x[n, c, h + r - 1, w + s - 1] (zero outside the image) and
// Wt[(r, s, c), k] = weight[k, c, r, s]. The reduction runs tap by tap over blocks of 32 input
// channels: K step j is channel block j / 9 and tap j % 9, 32 deep.
//  - Accuracy ("3xTF32"): TF32 keeps 10 of float32's 23 mantissa bits, which misses the task's
//    tolerance; x = big + small with big = x with its low 13 mantissa bits cleared and small =
//    x - big (both exact) keeps about 21, and a b ~ small_a big_b + big_a small_b + big_a big_b
//    (the dropped small x small term is 2^-21 relative). Three wgmma.m64n64k8 TF32 per product.
//  - wgmma's M dimension is 64 pixels (a chunk), its N the block's 64 output channels, its K 8
//    input channels of one tap. TF32 wgmma takes its shared-memory operand only K-major, which
//    the weights can be made and the pixels cannot, so the weights are the shared-memory operand
//    and the pixels the register operand.
//  - The weights are split once per run by a first kernel (conv2d_split_weights) into a scratch
//    buffer holding, for every K step, the 16 KiB image of a pipeline stage: the TF32 parts and
//    the rests of 64 output channels x 32 input channels, laid out with the 128-byte swizzle the
//    wgmma descriptors name. A stage is then one 16 KiB bulk copy (cp.async.bulk), STAGES deep.
//  - A block computes R whole rows of one image for 64 output channels. For each block of 32
//    input channels TMA loads the zero-padded halo those rows read (32 channels x R + 2 rows x
//    W + 4 columns: the box starts at column -4, since TMA wants a box's first column on 16
//    bytes, and column W of the padding is the next row's column -4, also zero) into one of two
//    buffers, each followed by 128 bytes of zeros. Nothing is gathered element by element: a
//    thread reads its fragment values straight from the halo (pixel rows g and g + 8 of its
//    warp, channels t and t + 4 of the k8 step, shifted by the tap), splits them in registers
//    and issues the wgmmas. A channel plane of the halo is (R + 2) (W + 4) floats, 600 at the
//    task's sizes: 24 banks apart, so the 4 channels x 8 pixels of a warp's loads hit 32 banks.
//  - The R x W pixels make cdiv(R W, 64) chunks, dealt to the CW consumer warpgroups in turn (at
//    most 4 each: 4 x 32 accumulators per thread; at the task's sizes 4 and 3, the second
//    warpgroup computing a fourth, empty chunk rather than branching around its wgmmas); one
//    producer thread issues the copies.
//    Each consumer warpgroup keeps one k8 step's wgmmas in flight while it loads the next step's
//    fragments (two register buffers, the loop unrolled by 2), and releases a weight stage, and
//    after the last tap of a channel block its halo buffer, on "empty" mbarriers.
//  - Sizes the fast path cannot take (W not a multiple of 4, more chunks than the warpgroups
//    hold, shared memory over the limit) run conv2d_direct instead.
// Tuning: at 16 x 64 x 56 x 56, R 8 makes 448 pixels (7 chunks) a block and 112 blocks, one per
// SM; R 4 makes 224 (3.5 chunks, half of the last one wasted) and was 1.8x slower.
// Shared memory: STAGES x 16 KiB of weights, two halo tiles of 32 (R + 2) (W + 4) floats (and 128
// bytes each), 1 KiB to align the ring: 199 KiB at the task's sizes with 3 stages.
// Measured on an H200 (2026-12-04, kforge eval, 16 x 64 x 56 x 56): 45.1 us (with the weight
// split) at R 8, CW 2, 3 stages; 44.7 with 2 stages, 45.3 with 4; 81.7 at R 4. The
// conv2d_implicit_3xtf32 expert (mma.sync, inputs gathered by 4-byte cp.async): 95.5 us. A form
// of this kernel with wgmma but that gather took 108 us: the gather, not the MMAs, held both back.

// kforge:param R in {4, 8} = 8
// kforge:param CW in {1, 2} = 2
// kforge:param STAGES in {2, 3, 4} = 3
// kforge:scratch wsplit float32 [cdiv(K, 64) * cdiv(C, 32) * 9 * 4096]
// kforge:tensormap tmX x box=(1, 32, R + 2, W + 4) swizzle=none
// kforge:launch conv2d_split_weights grid=(cdiv(cdiv(K, 64) * cdiv(C, 32) * 9 * 4096, 256), 1, 1) block=(256, 1, 1) when=(mod(W, 4) == 0 && cdiv(R * W, 64) <= 4 * CW && STAGES * 16384 + 2 * (32 * (R + 2) * (W + 4) * 4 + 128) + 1024 <= 232448)
// kforge:launch conv2d grid=(cdiv(H, R), cdiv(K, 64), Nb) block=(128 * (1 + CW), 1, 1) smem=STAGES * 16384 + 2 * (32 * (R + 2) * (W + 4) * 4 + 128) + 1024 when=(mod(W, 4) == 0 && cdiv(R * W, 64) <= 4 * CW && STAGES * 16384 + 2 * (32 * (R + 2) * (W + 4) * 4 + 128) + 1024 <= 232448)
// kforge:launch conv2d_direct grid=(cdiv(H * W, 256), K, Nb) block=(256, 1, 1) when=((mod(W, 4) == 0 && cdiv(R * W, 64) <= 4 * CW && STAGES * 16384 + 2 * (32 * (R + 2) * (W + 4) * 4 + 128) + 1024 <= 232448) == 0)

// The driver's 128-byte tensor map, as cuda.h declares it (NVRTC cannot include cuda.h).
struct __align__(64) CUtensorMap_st {
    unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;

#define CPW 4                          // 64-pixel chunks per consumer warpgroup, at most
#define W_STAGE 16384                  // bytes of one stage of weights: both parts of 64 x 32
#define W_PART 8192
#define TF32_MASK 0xffffe000u

// ---- PTX helpers
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// TMA: the box of `map` at (c0 innermost, c1, c2, c3) into shared memory at dst, completing on bar.
// Coordinates may be negative or past the end: what lies outside the tensor reads as zeros.
__device__ __forceinline__ void tma_load_4d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}

// Bulk copy of `bytes` (a multiple of 16) from global memory to shared memory, completing on bar.
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
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

__device__ __forceinline__ float ld_shared_f32(unsigned addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
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

// d (64 x 64, fp32, 32 per thread) += a (64 x 8 TF32 in registers, 4 per thread) * b (8 x 64 in
// shared memory, K-major).
__device__ __forceinline__ void wgmma_tf32(float* d, const unsigned* a, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

// ---- end of PTX helpers

// Weights, once per run: for each block of 64 output channels, each block of 32 input channels
// and each of the 9 taps, a 16 KiB image of the stage's shared memory: the TF32 part, then the
// rest, each 64 rows (output channels) of 32 input channels, 16-byte chunk j of row r at chunk
// j ^ (r % 8) (the 128-byte swizzle the wgmma descriptors name). Zeros past K and C.
extern "C" __global__ void conv2d_split_weights(const float* __restrict__ weight, float* __restrict__ wsplit, int C,
                                                int K)
{
    const int cbs = (C + 31) / 32;
    const int total = (K + 63) / 64 * cbs * 9 * 4096;
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= total)
        return;
    const int stage = o / 4096, part = (o / 2048) % 2, row = (o / 32) % 64, pos = o % 32;
    const int kb = stage / (cbs * 9), cb = stage % (cbs * 9) / 9, rs = stage % 9;
    const int cl = 4 * ((pos / 4) ^ (row & 7)) + pos % 4;
    const int k = kb * 64 + row, c = cb * 32 + cl;
    const float v = k < K && c < C ? weight[((size_t)k * C + c) * 9 + rs] : 0.0f;
    const float big = __uint_as_float(__float_as_uint(v) & TF32_MASK);
    wsplit[o] = part == 0 ? big : v - big;
}

extern "C" __global__ void __launch_bounds__(128 * (1 + CW), 1)
conv2d(const __grid_constant__ CUtensorMap tmX, const float* __restrict__ wsplit, float* __restrict__ y, int C, int K,
       int H, int W)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long wfull[STAGES], wempty[STAGES], xfull[2], xempty[2];
    // Weight stages first, on 1024-byte boundaries (the swizzle atom); then two halo tiles.
    const unsigned ring = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int WB = W + 4;                      // halo columns: w = -4 .. W - 1
    const int RB = R + 2;                      // halo rows: h = h0 - 1 .. h0 + R
    const unsigned xbytes = 32 * RB * WB * 4;  // one halo tile: 32 input channels
    const unsigned xstride = xbytes + 128;     // and 128 bytes of zeros after it
    const unsigned halo0 = ring + STAGES * W_STAGE;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int h0 = blockIdx.x * R, kb = blockIdx.y, n = blockIdx.z;
    const int cbs = (C + 31) / 32, chunks = cbs * 9;   // K steps of 32: (input channel block, tap)
    const float* wbase = wsplit + (size_t)kb * chunks * 4096;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&wfull[s]), 1);
            mbar_init(smem_u32(&wempty[s]), CW);
        }
        for (int b = 0; b < 2; ++b) {
            mbar_init(smem_u32(&xfull[b]), 1);
            mbar_init(smem_u32(&xempty[b]), CW);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (threadIdx.x < 64) {   // the zeros after each halo tile
        const unsigned at = halo0 + (threadIdx.x / 32) * xstride + xbytes + (threadIdx.x % 32) * 4;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at), "r"(0u) : "memory");
    }
    __syncthreads();

    if (wg == 0) {
#if CW == 2
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
#endif
        if (tid == 0) {
            // The halo of channel block cb: 32 channels x RB rows x WB columns, zeros outside the image.
            const auto halo = [&](int cb) {
                const int b = cb % 2;
                if (cb >= 2)   // the consumers are done with channel block cb - 2
                    mbar_wait(smem_u32(&xempty[b]), ((cb / 2) + 1) & 1);
                mbar_expect_tx(smem_u32(&xfull[b]), xbytes);
                tma_load_4d(halo0 + b * xstride, &tmX, smem_u32(&xfull[b]), -4, h0 - 1, 32 * cb, n);
            };
            halo(0);
            if (cbs > 1)
                halo(1);
            for (int j = 0; j < chunks; ++j) {
                const int s = j % STAGES;
                if (j >= STAGES)
                    mbar_wait(smem_u32(&wempty[s]), ((j / STAGES) + 1) & 1);
                mbar_expect_tx(smem_u32(&wfull[s]), W_STAGE);
                bulk_load(ring + s * W_STAGE, wbase + (size_t)j * 4096, W_STAGE, smem_u32(&wfull[s]));
                if (j % 9 == 8 && j / 9 + 2 < cbs)   // the next halo but one, once its buffer is free
                    halo(j / 9 + 2);
            }
        }
    } else {
#if CW == 2
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
#endif
        const int c = wg - 1, warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
        const int pixels = R * W;
        // This thread's two pixels (rows g and g + 8 of its warp) in each of its chunks, as offsets
        // into a halo channel plane (tap (0, 0)); pixels past the block's rows read pixel 0.
        int off[CPW][2];
#pragma unroll
        for (int ch = 0; ch < CPW; ++ch)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int p = (c + CW * ch) * 64 + 16 * warp + g + 8 * e;
                off[ch][e] = p < pixels ? (p / W) * WB + p % W : 0;
            }
        float d[CPW][32];
#pragma unroll
        for (int ch = 0; ch < CPW; ++ch)
#pragma unroll
            for (int i = 0; i < 32; ++i)
                d[ch][i] = 0.0f;

        // Step u = 4 j + kk: K step j (channel block j / 9, tap j % 9), channels 8 kk .. 8 kk + 7 of it.
        const int steps = chunks * 4;
        unsigned fa[2][CPW][4], fb[2][CPW][4];   // big and small parts, two buffers
        const auto load = [&](unsigned (&big)[CPW][4], unsigned (&small)[CPW][4], int u) {
            const int j = u / 4, kk = u % 4, cb = j / 9, rs = j % 9;
            if (kk == 0) {
                if (rs == 0)
                    mbar_wait(smem_u32(&xfull[cb % 2]), (cb / 2) & 1);
                mbar_wait(smem_u32(&wfull[j % STAGES]), (j / STAGES) & 1);
            }
            const unsigned plane = halo0 + (cb % 2) * xstride + ((8 * kk + t) * RB * WB + (rs / 3) * WB + rs % 3 + 3) * 4;
#pragma unroll
            for (int ch = 0; ch < CPW; ++ch)
#pragma unroll
                for (int v = 0; v < 4; ++v) {
                    const float x = ld_shared_f32(plane + (off[ch][v & 1] + (v >= 2 ? 4 * RB * WB : 0)) * 4);
                    const unsigned b = __float_as_uint(x) & TF32_MASK;
                    big[ch][v] = b;
                    small[ch][v] = __float_as_uint(x - __uint_as_float(b));
                }
        };
        const auto step = [&](unsigned (&big)[CPW][4], unsigned (&small)[CPW][4], unsigned (&nbig)[CPW][4],
                              unsigned (&nsmall)[CPW][4], int u) {
            const int j = u / 4, kk = u % 4;
            const unsigned w = ring + (j % STAGES) * W_STAGE + 32 * kk;
            const unsigned long long wb = smem_desc(w, 16, 1024), ws = smem_desc(w + W_PART, 16, 1024);
            wgmma_fence();
#pragma unroll
            // Every slot, even one past the warpgroup's chunks (its products are never stored): a
            // branch around these wgmmas made them wait for each other, 68.8 us against 45.1.
            for (int ch = 0; ch < CPW; ++ch) {
                wgmma_tf32(d[ch], small[ch], wb);
                wgmma_tf32(d[ch], big[ch], ws);
                wgmma_tf32(d[ch], big[ch], wb);
            }
            wgmma_commit();
            wgmma_wait<1>();   // step u - 1's wgmmas are done: its registers and buffers are free
            if (u >= 1 && (u - 1) % 4 == 3 && tid == 0) {
                const int pj = (u - 1) / 4;
                mbar_arrive(smem_u32(&wempty[pj % STAGES]));
                if (pj % 9 == 8)
                    mbar_arrive(smem_u32(&xempty[(pj / 9) % 2]));
            }
            if (u + 1 < steps)
                load(nbig, nsmall, u + 1);
        };
        load(fa[0], fb[0], 0);
        for (int u = 0; u < steps; u += 2) {
            step(fa[0], fb[0], fa[1], fb[1], u);
            if (u + 1 < steps)
                step(fa[1], fb[1], fa[0], fb[0], u + 1);
        }
        wgmma_wait<0>();

        // Accumulator i of chunk ch: pixel row g (+ 8 when i % 4 >= 2) of the warp's 16, output
        // channel 8 (i / 4) + 2 t + i % 2 of the block's 64.
        float* yn = y + (size_t)n * K * H * W + (size_t)h0 * W;
        const int valid = min(pixels, (H - h0) * W);
#pragma unroll
        for (int ch = 0; ch < CPW; ++ch)
#pragma unroll
            for (int i = 0; i < 32; ++i) {
                const int p = (c + CW * ch) * 64 + 16 * warp + g + ((i & 2) ? 8 : 0);
                const int k = kb * 64 + 8 * (i / 4) + 2 * t + (i & 1);
                if (p < valid && k < K)   // a chunk past the block's pixels has p >= R W
                    yn[(size_t)k * H * W + p] = d[ch][i];
            }
    }
}

// Sizes the fast path does not take (a row pitch TMA cannot describe, images too wide): one
// output per thread, float32 FMAs over the taps.
extern "C" __global__ void conv2d_direct(const float* __restrict__ x, const float* __restrict__ weight,
                                         float* __restrict__ y, int C, int K, int H, int W)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, n = blockIdx.z;
    if (p >= H * W)
        return;
    const int h = p / W, w = p % W;
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        const float* wk = weight + ((size_t)k * C + c) * 9;
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
            for (int s = 0; s < 3; ++s) {
                const int hh = h + r - 1, ww = w + s - 1;
                if (hh >= 0 && hh < H && ww >= 0 && ww < W)
                    acc += xc[hh * W + ww] * wk[r * 3 + s];
            }
    }
    y[((size_t)n * K + k) * H * W + p] = acc;
}
