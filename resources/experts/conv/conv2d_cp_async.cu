// expert:name conv2d_cp_async
// expert:tasks conv2d
// expert:pattern direct 3x3 convolution, register-blocked like conv2d_register_tiled (4 pixels x 8 output channels per thread), with the next CB input channels copied global -> shared by cp.async into a second buffer while the current ones are computed (one barrier per chunk)

// Direct 3 x 3 convolution (stride 1, padding 1, NCHW) with register blocking and an
// asynchronous two-stage copy pipeline. A block owns a TH x TW tile of output pixels of one image
// for KT output channels; each thread computes a strip of 4 neighbouring pixels of one row for 8
// output channels (32 accumulators): every input value it reads from shared memory feeds 8
// channels and every weight feeds 4 pixels.
//  - Input channels go CB at a time through two shared-memory stages. The copies of chunk i + 1
//    (the CB (TH + 2) x (TW + 2) input patches and the KT x CB x 9 weights) are issued with
//    4-byte cp.async right after the barrier that starts chunk i, so they travel while chunk i is
//    computed; the loading threads never wait for global memory (in conv2d_register_tiled every
//    chunk begins with a load phase during which the whole block waits).
//  - cp.async with src-size 0 writes zeros, which gives the image padding and zero weights and
//    inputs past C and K (so no garbage is ever multiplied). Weights are scattered transposed,
//    [channel][tap][output channel], so a thread's 8 weights per tap are two float4 loads
//    (broadcast within a warp).
//  - One barrier per chunk: after it, chunk i has landed for every thread and every thread is done
//    with chunk i - 1, whose stage is refilled with chunk i + 1.
//  - Rows of the staged patch are padded to a stride of 1 mod 4 floats so the strips of one warp
//    fall into different banks. Output strips are stored as float4 when W % 4 == 0.
// Tuning: KT = 64 reads each input patch once per image; shared memory is
// 2 * (CB * (TH + 2) * (TW + 5) + CB * 9 * KT) * 4 bytes (60 KB at 32 x 8 x 64 x 8).

// kforge:param TW in {16, 32} = 32
// kforge:param TH in {4, 8} = 8
// kforge:param KT in {16, 32, 64} = 64
// kforge:param CB in {4, 8} = 8
// kforge:launch conv2d grid=(cdiv(W, TW) * cdiv(H, TH), cdiv(K, KT), Nb) block=(TW / 4 * TH * (KT / 8), 1, 1) smem=8 * CB * ((TH + 2) * (TW + 5) + 9 * KT)

#define PW 4                        // pixels per thread (along W)
#define KB 8                        // output channels per thread
#define TXN (TW / PW)               // threads along W
#define NT (TXN * TH * (KT / KB))   // threads per block
#define XW (TW + 2)                 // staged patch width
#define XH (TH + 2)
#define SX (TW + 5)                 // padded row stride: 1 mod 4
#define XSZ (CB * XH * SX)          // floats per stage: input patches
#define WSZ (CB * 9 * KT)           //                   weights
#define STAGE (XSZ + WSZ)

// ---- PTX helpers
// 4-byte global -> shared copy; zero-fills the destination when !valid (nothing is read).
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src),
                 "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_group 0;\n" ::);
}
// ---- end of PTX helpers

extern "C" __global__ void __launch_bounds__(NT)
conv2d(const float* __restrict__ x, const float* __restrict__ weight, float* __restrict__ y,
       int C, int K, int H, int W)
{
    extern __shared__ __align__(16) float smem[];   // [2][STAGE]: Xs [CB][XH][SX], then Ws [CB][9][KT]

    const int tid = threadIdx.x;
    const int tx = tid % TXN, ty = (tid / TXN) % TH, kg = tid / (TXN * TH);
    const int tilesW = (W + TW - 1) / TW;
    const int w0 = (blockIdx.x % tilesW) * TW, h0 = (blockIdx.x / tilesW) * TH;
    const int k0 = blockIdx.y * KT;
    const int n = blockIdx.z;

    // Issues the copies of input channels c0 .. c0 + CB - 1 into stage s.
    auto load_chunk = [&](int s, int c0) {
        float* xs = smem + s * STAGE;
        float* ws = xs + XSZ;
        for (int e = tid; e < CB * XH * XW; e += NT) {   // coalesced along rows
            const int cc = e / (XH * XW), yy = (e / XW) % XH, xx = e % XW;
            const int c = c0 + cc, gh = h0 + yy - 1, gw = w0 + xx - 1;
            const bool in = c < C && gh >= 0 && gh < H && gw >= 0 && gw < W;
            cp_async4(xs + (cc * XH + yy) * SX + xx, in ? x + (((size_t)n * C + c) * H + gh) * W + gw : x, in);
        }
        for (int e = tid; e < KT * CB; e += NT) {   // one (k, c) pair: its 9 contiguous taps
            const int k = e % KT, cc = e / KT;
            const bool in = k0 + k < K && c0 + cc < C;
            const float* wp = in ? weight + ((size_t)(k0 + k) * C + (c0 + cc)) * 9 : weight;
#pragma unroll
            for (int t = 0; t < 9; ++t)
                cp_async4(ws + (cc * 9 + t) * KT + k, wp + (in ? t : 0), in);
        }
    };

    float acc[KB][PW];
#pragma unroll
    for (int k = 0; k < KB; ++k)
#pragma unroll
        for (int p = 0; p < PW; ++p)
            acc[k][p] = 0.0f;

    const int chunks = (C + CB - 1) / CB;
    load_chunk(0, 0);
    cp_async_commit();
    for (int i = 0; i < chunks; ++i) {
        cp_async_wait_all();   // this thread's copies of chunk i have landed
        __syncthreads();       // everyone's have; and everyone is done with chunk i - 1
        if (i + 1 < chunks)
            load_chunk((i + 1) & 1, (i + 1) * CB);   // into the stage chunk i - 1 used
        cp_async_commit();

        const float* xs = smem + (i & 1) * STAGE;
        const float* ws = xs + XSZ;
#pragma unroll 2
        for (int cc = 0; cc < CB; ++cc) {
#pragma unroll
            for (int r = 0; r < 3; ++r) {
                float in[PW + 2];
#pragma unroll
                for (int j = 0; j < PW + 2; ++j)
                    in[j] = xs[(cc * XH + ty + r) * SX + tx * PW + j];
#pragma unroll
                for (int s = 0; s < 3; ++s) {
                    const float4 wa = *reinterpret_cast<const float4*>(ws + (cc * 9 + r * 3 + s) * KT + kg * KB);
                    const float4 wb = *reinterpret_cast<const float4*>(ws + (cc * 9 + r * 3 + s) * KT + kg * KB + 4);
                    const float wk[KB] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
                    for (int k = 0; k < KB; ++k)
#pragma unroll
                        for (int p = 0; p < PW; ++p)
                            acc[k][p] = fmaf(in[p + s], wk[k], acc[k][p]);
                }
            }
        }
    }
    cp_async_wait_all();   // nothing in flight at exit (the last group is empty)

    const int h = h0 + ty, w = w0 + tx * PW;
    if (h >= H)
        return;
#pragma unroll
    for (int k = 0; k < KB; ++k) {
        const int kk = k0 + kg * KB + k;
        if (kk >= K)
            continue;
        float* yp = y + (((size_t)n * K + kk) * H + h) * W + w;
        if ((W & 3) == 0 && w < W) {   // W % 4 == 0 and w % 4 == 0: the strip is inside and aligned
            *reinterpret_cast<float4*>(yp) = make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
        } else {
#pragma unroll
            for (int p = 0; p < PW; ++p)
                if (w + p < W)
                    yp[p] = acc[k][p];
        }
    }
}
