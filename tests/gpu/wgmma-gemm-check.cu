// The wgmma + TMA GEMM experts (resources/experts/gemm/gemm_*_wgmma_tma.cu) against cuBLAS in one
// process on the GPU host: the result compared element by element with cuBLAS's (same inputs,
// U(-0.25, 0.25)), then both timed with CUDA events, L2 flushed before each run, median of 30.
// Built and run by tests/gpu/wgmma-gemm-check.sh, which compiles the expert with nvcc.
// usage: wgmma-gemm-check CUBIN KERNEL bf16|fp16 M N K BN STAGES SMS
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s; cuGetErrorName(r_, &s); printf("FAIL %s: %s line %d\n", #x, s, __LINE__); exit(1);} } while (0)
#define RK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { printf("FAIL %s: %s\n", #x, cudaGetErrorString(r_)); exit(1);} } while (0)

static float bits2f(unsigned short h, bool bf) {
    if (bf) { unsigned u = (unsigned)h << 16; float f; memcpy(&f, &u, 4); return f; }
    __half x; memcpy(&x, &h, 2); return __half2float(x);
}

int main(int argc, char** argv) {
    if (argc < 9) { printf("usage\n"); return 2; }
    const char* cubin = argv[1]; const char* kname = argv[2]; bool bf = strcmp(argv[3], "bf16") == 0;
    int M = atoi(argv[4]), N = atoi(argv[5]), K = atoi(argv[6]), BN = atoi(argv[7]), STAGES = atoi(argv[8]);
    RK(cudaFree(0));
    CUmodule mod; CUfunction fn;
    std::ifstream f(cubin, std::ios::binary); std::vector<char> img((std::istreambuf_iterator<char>(f)), {});
    CK(cuModuleLoadData(&mod, img.data()));
    CK(cuModuleGetFunction(&fn, mod, kname));
    int smem = STAGES * (128 + BN) * 128 + 1024;
    CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    std::vector<unsigned short> hA((size_t)M * K), hB((size_t)K * N);
    std::mt19937 rng(7); std::uniform_real_distribution<float> U(-0.25f, 0.25f);
    auto enc = [&](float v) -> unsigned short { unsigned short h; if (bf) { __nv_bfloat16 b = __float2bfloat16(v); memcpy(&h, &b, 2);} else { __half x = __float2half(v); memcpy(&h, &x, 2);} return h; };
    for (auto& x : hA) x = enc(U(rng));
    for (auto& x : hB) x = enc(U(rng));
    void *dA, *dB, *dC, *dR, *flush;
    RK(cudaMalloc(&dA, hA.size() * 2)); RK(cudaMalloc(&dB, hB.size() * 2));
    RK(cudaMalloc(&dC, (size_t)M * N * 2)); RK(cudaMalloc(&dR, (size_t)M * N * 2)); RK(cudaMalloc(&flush, 256 << 20));
    RK(cudaMemcpy(dA, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
    RK(cudaMemcpy(dB, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
    RK(cudaMemset(dC, 0xFF, (size_t)M * N * 2));
    CUtensorMap tmA, tmB;
    CUtensorMapDataType dt = bf ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    { cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)M}; cuuint64_t strides[1] = {(cuuint64_t)K * 2};
      cuuint32_t box[2] = {64, 128}; cuuint32_t es[2] = {1, 1};
      CK(cuTensorMapEncodeTiled(&tmA, dt, 2, dA, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)); }
    { cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)K}; cuuint64_t strides[1] = {(cuuint64_t)N * 2};
      cuuint32_t box[2] = {64, 64}; cuuint32_t es[2] = {1, 1};
      CK(cuTensorMapEncodeTiled(&tmB, dt, 2, dB, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)); }
    void* params[] = {&tmA, &tmB, &dC, &M, &N, &K};
    unsigned gx = (N + BN - 1) / BN, gy = (M + 127) / 128;
    // The expert's launch directive: persistent blocks, as many as make the fewest equal waves.
    const unsigned sms = argc > 9 ? atoi(argv[9]) : 132;
    const unsigned tiles = gx * gy, waves = (tiles + sms - 1) / sms;
    gx = (tiles + waves - 1) / waves;
    gy = 1;
    auto launch = [&] { CK(cuLaunchKernel(fn, gx, gy, 1, 384, 1, 1, smem, 0, params, nullptr)); };
    launch(); RK(cudaDeviceSynchronize());
    cublasHandle_t h; cublasCreate(&h);
    float one = 1, zero = 0;
    cudaDataType ct = bf ? CUDA_R_16BF : CUDA_R_16F;
    auto ref = [&] { cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, dB, ct, N, dA, ct, K, &zero, dR, ct, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
    ref(); RK(cudaDeviceSynchronize());
    std::vector<unsigned short> hC((size_t)M * N), hR((size_t)M * N);
    RK(cudaMemcpy(hC.data(), dC, hC.size() * 2, cudaMemcpyDeviceToHost));
    RK(cudaMemcpy(hR.data(), dR, hR.size() * 2, cudaMemcpyDeviceToHost));
    double maxd = 0, num = 0, den = 0; size_t bad = 0, firstBad = (size_t)-1;
    for (size_t i = 0; i < hC.size(); ++i) {
        float c = bits2f(hC[i], bf), r = bits2f(hR[i], bf);
        double dd = std::fabs((double)c - r);
        if (!(dd <= 2e-2 + 2e-2 * std::fabs(r))) { if (!bad) firstBad = i; ++bad; }
        if (std::isfinite(dd)) maxd = std::max(maxd, dd);
        num += dd * dd; den += (double)r * r;
    }
    printf("check %s %s M=%d N=%d K=%d BN=%d ST=%d: bad %zu (first at row %zd col %zd), max abs %.4g, rel norm %.3g\n", kname, argv[3], M, N, K, BN, STAGES,
           bad, bad ? (ssize_t)(firstBad / N) : -1, bad ? (ssize_t)(firstBad % N) : -1, maxd, std::sqrt(num / std::max(den, 1e-30)));
    if (bad) {
        for (int r = 0; r < 2; ++r) { for (int c = 0; c < 8; ++c) printf("%7.3f/%7.3f ", bits2f(hC[(size_t)r*N+c], bf), bits2f(hR[(size_t)r*N+c], bf)); printf("\n"); }
    }
    // Timing: events, L2 flushed before each run; median of 30.
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    auto timeIt = [&](auto&& fnc) {
        std::vector<float> t;
        for (int i = 0; i < 35; ++i) {
            cudaMemsetAsync(flush, i, 256 << 20);
            cudaEventRecord(e0); fnc(); cudaEventRecord(e1); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 5) t.push_back(ms * 1000);
        }
        std::sort(t.begin(), t.end()); return t[t.size() / 2];
    };
    if (M * (double)N * K > 1e9) {
        float tk = timeIt(launch), tr = timeIt(ref), tk2 = timeIt(launch);
        double fl = 2.0 * M * N * K;
        printf("time %s BN=%d ST=%d: kernel %.1f us (%.0f TFLOP/s), again %.1f us; cuBLAS %.1f us (%.0f TFLOP/s); kernel/cuBLAS %.3f\n", kname, BN, STAGES,
               tk, fl / tk / 1e6, tk2, tr, fl / tr / 1e6, tr / std::min(tk, tk2));
    }
    return bad ? 1 : 0;
}
