// Seed kernel for KernelBench level2/14_Gemm_Divide_Sum_Scaling imported with `kforge import`:
//   out = sum(x @ weight^T / 2, dim=1, keepdim=True) * scaling_factor
// with x batch_size x input_size, weight hidden_size x input_size and out batch_size x 1, all
// float32 row-major. The sum over the GEMM's output columns is linear, so
//   out[i] = (scaling_factor / 2) * sum_k x[i, k] * wsum[k],   wsum[k] = sum_j weight[j, k]:
// the 2 * batch_size * input_size * hidden_size FLOP GEMM becomes a column sum of weight (one
// read of its 256 MB at the default size) and a matrix-vector product with x (32 MB). Both are
// memory-bound, and both accumulate in double precision: the GEMM outputs (|.| ~ 50 for the
// task's inputs) cancel in the sum over 8192 columns, so a float32 sum would carry an absolute
// error near the task's atol for rows whose result is close to 0; in double the result is the
// exactly rounded value of the real sum, up to the one final rounding to float32.
//  - colsum: a block of 32 x 8 threads owns 128 columns of weight and a chunk of RCHUNK rows;
//    a warp reads 512 contiguous bytes per row (a float4 per lane when input_size % 4 == 0,
//    otherwise four scalar columns per lane spread 32 apart), each thread issues UNROLL row
//    loads back to back, the 8 thread rows are combined in shared memory and one double
//    atomicAdd per column and chunk goes to the scratch wsum (zeroed before every run).
//  - rowdot: one block of BLOCK threads per row of x; float4 loads of x (when input_size % 4
//    == 0) against double2 pairs of wsum (64 KB, from L1 / L2), a double warp shuffle and a
//    shared-memory combine, then out[i] = (float)(dot * 0.5 * scaling_factor).
// Tuning: at hidden_size = 8192, RCHUNK = 256 gives 64 x 32 colsum blocks and 32 atomics per
// column; BLOCK for rowdot sets the loads in flight per row (8192 floats = 2048 float4s).

// kforge:param RCHUNK in {128, 256, 512, 1024} = 256
// kforge:param UNROLL in {1, 2, 4, 8} = 4
// kforge:param BLOCK in {128, 256, 512} = 256
// kforge:scratch wsum float64 [input_size]
// kforge:launch colsum grid=(cdiv(input_size, 128), cdiv(hidden_size, RCHUNK)) block=(32, 8)
// kforge:launch rowdot grid=(batch_size) block=(BLOCK)

#define CS_ROWS 8   // blockDim.y of colsum

extern "C" __global__ void __launch_bounds__(32 * CS_ROWS)
colsum(const float* __restrict__ weight, double* __restrict__ wsum, int hidden_size, int input_size)
{
    __shared__ double part[CS_ROWS][128];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c0 = blockIdx.x * 128;
    const int r0 = blockIdx.y * RCHUNK;
    const int r1 = min(r0 + RCHUNK, hidden_size);
    const bool vec = (input_size & 3) == 0;

    // This thread's four columns, as offsets q in 0..127 of the block's 128: 4 * tx + j when
    // vec (one float4), tx + 32 * j otherwise (coalesced scalars).
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    if (vec) {
        const int c = c0 + 4 * tx;
        if (c < input_size) {   // input_size % 4 == 0: all four columns are inside
            int r = r0 + ty;
#pragma unroll 1
            for (; r + (UNROLL - 1) * CS_ROWS < r1; r += UNROLL * CS_ROWS) {
                float4 v[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)   // all loads first
                    v[u] = __ldcs(reinterpret_cast<const float4*>(weight + (size_t)(r + u * CS_ROWS) * input_size + c));
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    acc[0] += (double)v[u].x;
                    acc[1] += (double)v[u].y;
                    acc[2] += (double)v[u].z;
                    acc[3] += (double)v[u].w;
                }
            }
            for (; r < r1; r += CS_ROWS) {
                const float4 v = __ldcs(reinterpret_cast<const float4*>(weight + (size_t)r * input_size + c));
                acc[0] += (double)v.x;
                acc[1] += (double)v.y;
                acc[2] += (double)v.z;
                acc[3] += (double)v.w;
            }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j)
            part[ty][4 * tx + j] = acc[j];
    } else {
        for (int r = r0 + ty; r < r1; r += CS_ROWS) {
            const float* wr = weight + (size_t)r * input_size;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = c0 + tx + 32 * j;
                if (c < input_size)
                    acc[j] += (double)__ldcs(wr + c);
            }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j)
            part[ty][tx + 32 * j] = acc[j];
    }
    __syncthreads();

    // 256 threads, 128 columns: the first 128 threads each finish one column.
    const int t = ty * 32 + tx;
    if (t < 128 && c0 + t < input_size) {
        double s = 0.0;
#pragma unroll
        for (int y = 0; y < CS_ROWS; ++y)
            s += part[y][t];
        atomicAdd(wsum + c0 + t, s);
    }
}

__device__ __forceinline__ double warp_sum(double v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rowdot(const float* __restrict__ x, const double* __restrict__ wsum, float* __restrict__ out, int input_size,
       float scaling_factor)
{
    __shared__ double red[BLOCK / 32];
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)blockIdx.x * input_size;

    double acc0 = 0.0, acc1 = 0.0;
    if ((input_size & 3) == 0) {
        const int n4 = input_size >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const double2* w2 = reinterpret_cast<const double2*>(wsum);   // scratch is 256-byte aligned
        for (int i = tid; i < n4; i += BLOCK) {
            const float4 a = __ldcs(x4 + i);
            const double2 b0 = w2[2 * i], b1 = w2[2 * i + 1];
            acc0 = fma((double)a.x, b0.x, acc0);
            acc1 = fma((double)a.y, b0.y, acc1);
            acc0 = fma((double)a.z, b1.x, acc0);
            acc1 = fma((double)a.w, b1.y, acc1);
        }
    } else {
        for (int k = tid; k < input_size; k += BLOCK)
            acc0 = fma((double)__ldcs(xr + k), wsum[k], acc0);
    }
    double acc = warp_sum(acc0 + acc1);
    if ((tid & 31) == 0)
        red[tid >> 5] = acc;
    __syncthreads();
    if (tid == 0) {
        double s = 0.0;
#pragma unroll
        for (int w = 0; w < BLOCK / 32; ++w)
            s += red[w];
        // sum(g / 2) * scaling_factor: the division by 2 is exact, so this is the same value.
        out[blockIdx.x] = (float)(s * 0.5 * (double)scaling_factor);
    }
}
