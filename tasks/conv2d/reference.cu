// Trusted reference for conv2d: one thread per output element, the C x 3 x 3 taps accumulated in
// double straight from global memory, padding by skipping taps outside the image.

// kforge:launch conv2d_ref grid=(cdiv(W, 16), cdiv(H, 16), Nb * K) block=(16, 16, 1)

extern "C" __global__ void conv2d_ref(const float* x, const float* weight, float* y,
                                      int Nb, int C, int K, int H, int W)
{
    const int ow = blockIdx.x * 16 + threadIdx.x;
    const int oh = blockIdx.y * 16 + threadIdx.y;
    const int n = blockIdx.z / K;
    const int k = blockIdx.z % K;
    if (ow >= W || oh >= H || n >= Nb)
        return;

    double acc = 0.0;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        const float* wc = weight + ((size_t)k * C + c) * 9;
        for (int r = 0; r < 3; ++r) {
            const int ih = oh + r - 1;
            if (ih < 0 || ih >= H)
                continue;
            for (int s = 0; s < 3; ++s) {
                const int iw = ow + s - 1;
                if (iw < 0 || iw >= W)
                    continue;
                acc += (double)xc[(size_t)ih * W + iw] * (double)wc[r * 3 + s];
            }
        }
    }
    y[(((size_t)n * K + k) * H + oh) * W + ow] = (float)acc;
}
