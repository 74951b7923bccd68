// expert:name conv2d_register_tiled
// expert:tasks conv2d
// expert:pattern direct 3x3 convolution, a TH x TW pixel tile and KT output channels per block, CB input channels staged per barrier, each thread a 4-pixel x 8-channel register block (inputs reused across channels, weights across pixels)

// Direct 3 x 3 convolution (stride 1, padding 1, NCHW) with register blocking. A block owns a
// TH x TW tile of output pixels of one image for KT output channels; each thread computes a strip
// of 4 neighbouring pixels of one row for 8 output channels (32 accumulators), so every input
// value it reads from shared memory feeds 8 channels and every weight feeds 4 pixels (the
// baseline does one multiply-add per shared load and one channel per block).
//  - Input channels go CB at a time: the block stages the CB (TH + 2) x (TW + 2) input patches
//    (zeros outside the image: the padding) and the KT x CB x 9 weights in shared memory, one
//    barrier, then every thread runs CB x 3 x 3 taps out of registers: per (channel, kernel row)
//    it reads the 6 input values its 4 pixels need and, per tap, the 8 weights of its channels as
//    two float4s (weights are stored [channel][tap][output channel], broadcast within a warp).
//  - Weights are gathered with each thread reading the 9 contiguous taps of one (k, c) pair and
//    scattering them channel-fastest into shared memory (conflict-free stores).
//  - Rows of the staged patch are padded to a stride of 1 mod 4 floats so the strips of one warp
//    fall into different banks.
//  - Edges: pixels past H or W, channels past C and output channels past K are zero-filled in
//    shared memory (so no garbage is ever multiplied) and not stored; output strips are stored
//    as float4 when W % 4 == 0, element-wise otherwise.
// Tuning: at 16 x 64 x 56 x 56, TW = 32 wastes 12% of the columns (56 = 32 + 24), TW = 16 wastes
// 12% too (64 computed) but gives more blocks; KT = 64 reads each input patch once per image.

// kforge:param TW in {16, 32} = 32
// kforge:param TH in {4, 8} = 8
// kforge:param KT in {16, 32, 64} = 32
// kforge:param CB in {4, 8} = 8
// kforge:launch conv2d grid=(cdiv(W, TW) * cdiv(H, TH), cdiv(K, KT), Nb) block=(TW / 4 * TH * (KT / 8), 1, 1)

#define PW 4                        // pixels per thread (along W)
#define KB 8                        // output channels per thread
#define TXN (TW / PW)               // threads along W
#define NT (TXN * TH * (KT / KB))   // threads per block
#define XW (TW + 2)                 // staged patch width
#define XH (TH + 2)
#define SX (TW + 5)                 // padded row stride: 1 mod 4

extern "C" __global__ void __launch_bounds__(NT)
conv2d(const float* __restrict__ x, const float* __restrict__ weight, float* __restrict__ y,
       int C, int K, int H, int W)
{
    __shared__ float Xs[CB][XH][SX];
    __shared__ __align__(16) float Ws[CB][9][KT];

    const int tid = threadIdx.x;
    const int tx = tid % TXN, ty = (tid / TXN) % TH, kg = tid / (TXN * TH);
    const int tilesW = (W + TW - 1) / TW;
    const int w0 = (blockIdx.x % tilesW) * TW, h0 = (blockIdx.x / tilesW) * TH;
    const int k0 = blockIdx.y * KT;
    const int n = blockIdx.z;

    float acc[KB][PW];
#pragma unroll
    for (int k = 0; k < KB; ++k)
#pragma unroll
        for (int p = 0; p < PW; ++p)
            acc[k][p] = 0.0f;

    for (int c0 = 0; c0 < C; c0 += CB) {
        // Input patches: CB x XH x XW, coalesced along rows, zeros outside the image and past C.
        for (int e = tid; e < CB * XH * XW; e += NT) {
            const int cc = e / (XH * XW), yy = (e / XW) % XH, xx = e % XW;
            const int c = c0 + cc, gh = h0 + yy - 1, gw = w0 + xx - 1;
            float v = 0.0f;
            if (c < C && gh >= 0 && gh < H && gw >= 0 && gw < W)
                v = x[(((size_t)n * C + c) * H + gh) * W + gw];
            Xs[cc][yy][xx] = v;
        }
        // Weights: one (k, c) pair per step, its 9 contiguous taps, stored channel-fastest.
        for (int e = tid; e < KT * CB; e += NT) {
            const int k = e % KT, cc = e / KT;
            const bool in = k0 + k < K && c0 + cc < C;
            const float* wp = weight + ((size_t)(k0 + k) * C + (c0 + cc)) * 9;
#pragma unroll
            for (int t = 0; t < 9; ++t)
                Ws[cc][t][k] = in ? wp[t] : 0.0f;
        }
        __syncthreads();

#pragma unroll 2
        for (int cc = 0; cc < CB; ++cc) {
#pragma unroll
            for (int r = 0; r < 3; ++r) {
                float in[PW + 2];
#pragma unroll
                for (int j = 0; j < PW + 2; ++j)
                    in[j] = Xs[cc][ty + r][tx * PW + j];
#pragma unroll
                for (int s = 0; s < 3; ++s) {
                    const float4 wa = *reinterpret_cast<const float4*>(&Ws[cc][r * 3 + s][kg * KB]);
                    const float4 wb = *reinterpret_cast<const float4*>(&Ws[cc][r * 3 + s][kg * KB + 4]);
                    const float wk[KB] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
                    for (int k = 0; k < KB; ++k)
#pragma unroll
                        for (int p = 0; p < PW; ++p)
                            acc[k][p] = fmaf(in[p + s], wk[k], acc[k][p]);
                }
            }
        }
        __syncthreads();   // Xs and Ws are refilled next
    }

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
