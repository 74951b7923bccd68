// Baseline conv2d: direct convolution with a shared-memory halo tile. A block of 16 x 16 threads
// computes a 16 x 16 patch of one output channel k of one image n (one output per thread); for each
// input channel it stages the 18 x 18 input patch (zeros outside the image) and the channel's nine
// weights in shared memory. Left for candidates: several output channels (and pixels) per thread so
// each staged input is reused, several input channels per barrier, the weights in registers or
// constant memory, or an implicit-GEMM formulation.

// kforge:launch conv2d grid=(cdiv(W, 16), cdiv(H, 16), Nb * K) block=(16, 16, 1)

#define TS 16
#define HALO (TS + 2)

extern "C" __global__ void conv2d(const float* __restrict__ x, const float* __restrict__ weight,
                                  float* __restrict__ y, int C, int K, int H, int W)
{
    __shared__ float tile[HALO][HALO];
    __shared__ float wk[9];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TS + tx;
    const int w0 = blockIdx.x * TS, h0 = blockIdx.y * TS;
    const int n = blockIdx.z / K;
    const int k = blockIdx.z % K;

    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        for (int e = tid; e < HALO * HALO; e += TS * TS) {
            const int ih = h0 + e / HALO - 1, iw = w0 + e % HALO - 1;
            tile[e / HALO][e % HALO] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[(size_t)ih * W + iw] : 0.0f;
        }
        if (tid < 9)
            wk[tid] = weight[((size_t)k * C + c) * 9 + tid];
        __syncthreads();
        // Threads past the image's edge compute on the zero padding too; only the store is guarded.
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
            for (int s = 0; s < 3; ++s)
                acc += tile[ty + r][tx + s] * wk[r * 3 + s];
        __syncthreads();   // tile and wk are overwritten for the next channel
    }
    const int oh = h0 + ty, ow = w0 + tx;
    if (oh < H && ow < W)
        y[(((size_t)n * K + k) * H + oh) * W + ow] = acc;
}
