#include "ceilings.h"

#include "ceilingscache.h"
#include "cudabackend.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace kforge::cuda {

namespace {

// ---- the micro-kernels ------------------------------------------------------------------------------

// Compiled through the worker's NVRTC path (and its CUBIN cache). extern "C" keeps the names plain.
// Each kernel writes something that depends on all its work, so that nothing is optimised away.
constexpr const char* kSource = R"(
// Device-to-device copy: four 16-byte loads in flight per thread before their stores.
extern "C" __global__ void kf_copy(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

// L2 bandwidth: `passes` sweeps over a buffer that stays in L2. ld.global.cg skips L1, which would
// otherwise hold each SM's share of the buffer after the first sweep.
extern "C" __global__ void kf_l2_read(const float4* __restrict__ src, unsigned long long n, int passes, float* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        unsigned long long i = first;
        for (; i + 3 * stride < n; i += 4 * stride) {
            float4 v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                             : "=f"(v[k].x), "=f"(v[k].y), "=f"(v[k].z), "=f"(v[k].w)
                             : "l"(src + i + k * stride));
#pragma unroll
            for (int k = 0; k < 4; ++k)
                acc += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
        for (; i < n; i += stride) {
            float4 v;
            asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(src + i));
            acc += (v.x + v.y) + (v.z + v.w);
        }
    }
    if (acc == 1.0e-30f) // the buffer is zeros: never true, but the compiler cannot know
        out[first] = acc;
}

// DRAM read: one sweep, UNROLL float4 loads in flight per thread, read once (ld.global.cs: L1 and
// L2 evict first). CHUNK 0 strides over the grid, as kf_l2_read does; CHUNK 1 gives each block a
// contiguous share of the buffer, the way row-wise kernels (gemv, norms) stream theirs. Which
// reaches more of the hardware differs between GPUs, so the roof is the best of them.
#define KF_DRAM_READ(NAME, UNROLL, CHUNK)                                                                           \
extern "C" __global__ void NAME(const float4* __restrict__ src, unsigned long long n, float* out) {                 \
    unsigned long long i, end, stride;                                                                              \
    if (CHUNK) {                                                                                                    \
        const unsigned long long share = (n + gridDim.x - 1) / gridDim.x;                                           \
        i = blockIdx.x * share + threadIdx.x;                                                                       \
        end = min(n, (blockIdx.x + 1) * share);                                                                     \
        stride = blockDim.x;                                                                                        \
    } else {                                                                                                        \
        i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;                                              \
        end = n;                                                                                                    \
        stride = (unsigned long long)gridDim.x * blockDim.x;                                                        \
    }                                                                                                               \
    float acc = 0.0f;                                                                                               \
    for (; i + (UNROLL - 1) * stride < end; i += UNROLL * stride) {                                                 \
        float4 v[UNROLL];                                                                                           \
        _Pragma("unroll") for (int k = 0; k < UNROLL; ++k)                                                          \
            asm volatile("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];"                                              \
                         : "=f"(v[k].x), "=f"(v[k].y), "=f"(v[k].z), "=f"(v[k].w) : "l"(src + i + k * stride));     \
        _Pragma("unroll") for (int k = 0; k < UNROLL; ++k) acc += (v[k].x + v[k].y) + (v[k].z + v[k].w);            \
    }                                                                                                               \
    for (; i < end; i += stride) {                                                                                  \
        float4 v;                                                                                                   \
        asm volatile("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)     \
                     : "l"(src + i));                                                                               \
        acc += (v.x + v.y) + (v.z + v.w);                                                                           \
    }                                                                                                               \
    if (acc == 1.0e-30f) /* the buffer is zeros: never true, but the compiler cannot know */                        \
        out[threadIdx.x] = acc;                                                                                     \
}
KF_DRAM_READ(kf_dram_read_strided8, 8, 0)
KF_DRAM_READ(kf_dram_read_chunk4, 4, 1)
KF_DRAM_READ(kf_dram_read_chunk8, 8, 1)

// FP32: eight independent FFMA chains per thread hide the FMA latency at any occupancy.
extern "C" __global__ void kf_ffma(float* out, float a, float b, int iters) {
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        x[k] = (threadIdx.x + k) * 1.0e-3f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int r = 0; r < 16; ++r) {
#pragma unroll
            for (int k = 0; k < 8; ++k)
                x[k] = fmaf(x[k], a, b);
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        s += x[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Tensor cores: eight independent m16n8k16 accumulators per warp, operands held in registers.
#define KF_MMA_KERNEL(NAME, TYPE)                                                                                   \
extern "C" __global__ void NAME(float* out, unsigned a, unsigned b, int iters) {                                    \
    float d[8][4];                                                                                                  \
    _Pragma("unroll") for (int k = 0; k < 8; ++k) { d[k][0] = d[k][1] = d[k][2] = d[k][3] = 0.0f; }                 \
    for (int i = 0; i < iters; ++i) {                                                                               \
        _Pragma("unroll") for (int k = 0; k < 8; ++k)                                                               \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 "                            \
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                          \
                         : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])                               \
                         : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));                                         \
    }                                                                                                               \
    float s = 0.0f;                                                                                                 \
    _Pragma("unroll") for (int k = 0; k < 8; ++k) s += (d[k][0] + d[k][1]) + (d[k][2] + d[k][3]);                   \
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;                                                                 \
}
// TF32 (float32 inputs on the tensor cores): m16n8k8, four A and two B registers as above.
extern "C" __global__ void kf_mma_tf32(float* out, unsigned a, unsigned b, int iters) {
#if __CUDA_ARCH__ >= 800
    float d[8][4];
#pragma unroll
    for (int k = 0; k < 8; ++k) { d[k][0] = d[k][1] = d[k][2] = d[k][3] = 0.0f; }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])
                         : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += (d[k][0] + d[k][1]) + (d[k][2] + d[k][3]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
#endif
}
#if __CUDA_ARCH__ >= 800
KF_MMA_KERNEL(kf_mma_f16, "f16")
KF_MMA_KERNEL(kf_mma_bf16, "bf16")
#else
extern "C" __global__ void kf_mma_f16(float*, unsigned, unsigned, int) {}
extern "C" __global__ void kf_mma_bf16(float*, unsigned, unsigned, int) {}
#endif

// Hopper's warpgroup MMA (sm_90a): one warpgroup per block issues wgmma back to back, FP32
// accumulators in registers; one group stays in flight while the next is issued. The shared-memory
// operands are filled with one value, so their layout does not matter.
// KF_WGMMA_TILE(WORDS): the block's operand tile, filled with `bits` and made visible to the tensor
// cores; `base` is its shared-memory address.
#define KF_WGMMA_TILE(WORDS)                                                                                        \
    __shared__ __align__(1024) unsigned tile[WORDS];                                                                \
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) tile[i] = bits;                                          \
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");                                               \
    __syncthreads();                                                                                                \
    const unsigned base = (unsigned)__cvta_generic_to_shared(tile);
// KF_WGMMA_RUN(MMA): `iters` rounds of four MMA (a statement on the accumulators `d`), one commit
// group each; the accumulators' sum is stored, so that nothing is optimised away.
#define KF_WGMMA_RUN(MMA)                                                                                           \
    float d[128];                                                                                                   \
    _Pragma("unroll") for (int k = 0; k < 128; ++k) d[k] = 0.0f;                                                    \
    for (int i = 0; i < iters; ++i) {                                                                               \
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");                                                 \
        _Pragma("unroll") for (int k = 0; k < 4; ++k) MMA;                                                          \
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");                                          \
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");                                          \
    }                                                                                                               \
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");                                              \
    float s = 0.0f;                                                                                                 \
    _Pragma("unroll") for (int k = 0; k < 128; ++k) s += d[k];                                                      \
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
// 16-bit inputs, wgmma.m64n256k16 with both operands in shared memory. A: 64 rows x 128 B; B: 4
// boxes of 16 k rows x 128 B.
#define KF_WGMMA_KERNEL(NAME, TYPE)                                                                                 \
extern "C" __global__ void __launch_bounds__(128, 1) NAME(float* out, unsigned bits, int iters) {                   \
    KF_WGMMA_TILE(4096)                                                                                             \
    const unsigned long long da = (unsigned long long)((base & 0x3FFFF) >> 4) | (1ull << 16)                        \
                                  | (64ull << 32) | (1ull << 62);                                                   \
    const unsigned long long db = (unsigned long long)(((base + 8192) & 0x3FFFF) >> 4) | (128ull << 16)             \
                                  | (64ull << 32) | (1ull << 62);                                                   \
    KF_WGMMA_RUN(KF_WGMMA_256(TYPE, d, da, db))                                                                     \
}
// The 128 FP32 accumulators of a warpgroup's m64n256 tile, as asm operands %0-%127.
#define KF_WGMMA_D128(D) \
    "+f"(D[0]), "+f"(D[1]), "+f"(D[2]), "+f"(D[3]), "+f"(D[4]), "+f"(D[5]), "+f"(D[6]), "+f"(D[7]), "+f"(D[8]), "+f"(D[9]), "+f"(D[10]), "+f"(D[11]), "+f"(D[12]), "+f"(D[13]), "+f"(D[14]), "+f"(D[15]), \
    "+f"(D[16]), "+f"(D[17]), "+f"(D[18]), "+f"(D[19]), "+f"(D[20]), "+f"(D[21]), "+f"(D[22]), "+f"(D[23]), "+f"(D[24]), "+f"(D[25]), "+f"(D[26]), "+f"(D[27]), "+f"(D[28]), "+f"(D[29]), "+f"(D[30]), "+f"(D[31]), \
    "+f"(D[32]), "+f"(D[33]), "+f"(D[34]), "+f"(D[35]), "+f"(D[36]), "+f"(D[37]), "+f"(D[38]), "+f"(D[39]), "+f"(D[40]), "+f"(D[41]), "+f"(D[42]), "+f"(D[43]), "+f"(D[44]), "+f"(D[45]), "+f"(D[46]), "+f"(D[47]), \
    "+f"(D[48]), "+f"(D[49]), "+f"(D[50]), "+f"(D[51]), "+f"(D[52]), "+f"(D[53]), "+f"(D[54]), "+f"(D[55]), "+f"(D[56]), "+f"(D[57]), "+f"(D[58]), "+f"(D[59]), "+f"(D[60]), "+f"(D[61]), "+f"(D[62]), "+f"(D[63]), \
    "+f"(D[64]), "+f"(D[65]), "+f"(D[66]), "+f"(D[67]), "+f"(D[68]), "+f"(D[69]), "+f"(D[70]), "+f"(D[71]), "+f"(D[72]), "+f"(D[73]), "+f"(D[74]), "+f"(D[75]), "+f"(D[76]), "+f"(D[77]), "+f"(D[78]), "+f"(D[79]), \
    "+f"(D[80]), "+f"(D[81]), "+f"(D[82]), "+f"(D[83]), "+f"(D[84]), "+f"(D[85]), "+f"(D[86]), "+f"(D[87]), "+f"(D[88]), "+f"(D[89]), "+f"(D[90]), "+f"(D[91]), "+f"(D[92]), "+f"(D[93]), "+f"(D[94]), "+f"(D[95]), \
    "+f"(D[96]), "+f"(D[97]), "+f"(D[98]), "+f"(D[99]), "+f"(D[100]), "+f"(D[101]), "+f"(D[102]), "+f"(D[103]), "+f"(D[104]), "+f"(D[105]), "+f"(D[106]), "+f"(D[107]), "+f"(D[108]), "+f"(D[109]), "+f"(D[110]), "+f"(D[111]), \
    "+f"(D[112]), "+f"(D[113]), "+f"(D[114]), "+f"(D[115]), "+f"(D[116]), "+f"(D[117]), "+f"(D[118]), "+f"(D[119]), "+f"(D[120]), "+f"(D[121]), "+f"(D[122]), "+f"(D[123]), "+f"(D[124]), "+f"(D[125]), "+f"(D[126]), "+f"(D[127])
#define KF_WGMMA_D128_REGS \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// D (64 x 256, FP32) += A (64 x 16, K-major) * B (16 x 256, N-major), operands in shared memory.
#define KF_WGMMA_256(TYPE, D, DA, DB) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {" KF_WGMMA_D128_REGS \
                 "}, %128, %129, p, 1, 1, 0, 1;\n}\n" \
                 : KF_WGMMA_D128(D) \
                 : "l"(DA), "l"(DB), "n"(1))
// D (64 x 256, FP32) += A (64 x 8, TF32, in registers) * B (8 x 256, K-major, in shared memory):
// TF32 wgmma reads a shared-memory operand only K-major, and the float32 kernels keep one operand
// in registers (where they split it into TF32 parts), so the roof is measured in that form.
#define KF_WGMMA_TF32_256(D, A, DB) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" KF_WGMMA_D128_REGS \
                 "}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n" \
                 : KF_WGMMA_D128(D) \
                 : "r"(A), "r"(A), "r"(A), "r"(A), "l"(DB), "n"(1))
// The TF32 form: B is 256 k-rows of 128 bytes (32 KiB, 128-byte swizzle).
extern "C" __global__ void __launch_bounds__(128, 1) kf_wgmma_tf32(float* out, unsigned bits, int iters) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    KF_WGMMA_TILE(8192)
    const unsigned long long db = (unsigned long long)((base & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32)
                                  | (1ull << 62);
    KF_WGMMA_RUN(KF_WGMMA_TF32_256(d, bits, db))
#endif
}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
KF_WGMMA_KERNEL(kf_wgmma_f16, "f16")
KF_WGMMA_KERNEL(kf_wgmma_bf16, "bf16")
#else
extern "C" __global__ void kf_wgmma_f16(float*, unsigned, int) {}
extern "C" __global__ void kf_wgmma_bf16(float*, unsigned, int) {}
#endif
)";

const std::vector<std::string> kKernels{
    "kf_copy",       "kf_l2_read",   "kf_dram_read_strided8", "kf_dram_read_chunk4", "kf_dram_read_chunk8",
    "kf_ffma",       "kf_mma_f16",   "kf_mma_bf16",           "kf_mma_tf32",         "kf_wgmma_f16",
    "kf_wgmma_bf16", "kf_wgmma_tf32"};

// ---- driver objects -----------------------------------------------------------------------------------

// A CUDA call that failed: unwinds the measurement, the handles above freeing what it held.
struct CudaFailure : std::runtime_error {
    CudaFailure(const CudaDriver& driver, CUresult r, const std::string& what)
        : std::runtime_error(what + " failed with " + driver.describe(r)), code(r) {}
    CUresult code;
};

class Bench {
public:
    explicit Bench(const CeilingsDevice& dev) : m_dev(dev), m_d(dev.driver) {}

    void check(CUresult r, const std::string& what) const {
        if (r != CUDA_SUCCESS)
            throw CudaFailure(m_d, r, what);
    }

    MemoryHandle allocate(std::size_t bytes) const {
        CUdeviceptr p = 0;
        check(m_d.memAlloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes");
        MemoryHandle h(p);
        // Touched once, so that page mapping is no part of any timed run.
        check(m_d.memsetD8Async(p, 0, bytes, m_dev.stream), "cuMemsetD8Async");
        check(m_d.streamSynchronize(m_dev.stream), "cuStreamSynchronize");
        return h;
    }

    // Blocks of `block` threads that fill every SM once, as the occupancy calculator sees `f`.
    unsigned fullGrid(CUfunction f, unsigned block) const {
        int perSm = 0;
        check(m_d.occupancyMaxActiveBlocksPerMultiprocessor(&perSm, f, static_cast<int>(block), 0),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        return static_cast<unsigned>(std::max(1, perSm) * std::max(1, m_dev.multiprocessors));
    }

    // The shortest of `reps` back-to-back launches, in seconds. One launch ahead of the timed ones
    // keeps the GPU busy while they are queued, so no launch latency lands between an event and its
    // kernel (CUDA events on an idle GPU add microseconds of noise, CUPTI's tracing far more).
    double best(CUfunction f, unsigned grid, unsigned block, std::vector<void*> params, int reps) const {
        std::vector<EventHandle> events;
        for (int i = 0; i <= reps; ++i) {
            CUevent e = nullptr;
            check(m_d.eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
            events.emplace_back(e);
        }
        const auto launch = [&] {
            check(m_d.launchKernel(f, grid, 1, 1, block, 1, 1, 0, m_dev.stream, params.data(), nullptr),
                  "cuLaunchKernel");
        };
        launch();
        for (int i = 0; i < reps; ++i) {
            check(m_d.eventRecord(events[static_cast<std::size_t>(i)].get(), m_dev.stream), "cuEventRecord");
            launch();
        }
        check(m_d.eventRecord(events.back().get(), m_dev.stream), "cuEventRecord");
        check(m_d.eventSynchronize(events.back().get()), "the micro-kernel");
        double bestSeconds = 0.0;
        for (int i = 0; i < reps; ++i) {
            float ms = 0.0f;
            check(m_d.eventElapsed(&ms, events[static_cast<std::size_t>(i)].get(),
                                   events[static_cast<std::size_t>(i) + 1].get()),
                  "cuEventElapsedTime");
            const double s = static_cast<double>(ms) / 1000.0;
            if (s > 0.0 && (bestSeconds == 0.0 || s < bestSeconds))
                bestSeconds = s;
        }
        if (bestSeconds <= 0.0)
            throw std::runtime_error("the events measured no time");
        return bestSeconds;
    }

    // Runs `f` with an iteration count scaled until one launch takes about `target` seconds, then
    // times it; returns {seconds, iterations}. `params(iters)` gives the launch parameters.
    template <typename Params>
    std::pair<double, int> scaled(CUfunction f, unsigned grid, unsigned block, int iters, Params params, double target,
                                  int reps) const {
        for (int round = 0; round < 4; ++round) {
            const double t = best(f, grid, block, params(iters), 1);
            if (t >= target * 0.5 || iters >= (1 << 24))
                break;
            const double grow = std::clamp(target / t, 2.0, 64.0);
            iters = static_cast<int>(std::min<double>(iters * grow, 1 << 24));
        }
        return {best(f, grid, block, params(iters), reps), iters};
    }

private:
    const CeilingsDevice& m_dev;
    const CudaDriver& m_d;
};

std::string mib(std::size_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

} // namespace

// ---- measurement ---------------------------------------------------------------------------------------

CeilingsMeasurement measureCeilings(const CeilingsDevice& dev) {
    CeilingsMeasurement m;
    m.result.measuredAt = harness::utcNow();
    const CudaDriver& d = dev.driver;

    NvrtcOutput built = dev.compiler.compile(kSource, {}, "kforge_ceilings.cu", kKernels, dev.computeCapability);
    if (!built.ok) {
        m.result.message = "the ceiling micro-kernels did not compile: " + built.log;
        return m;
    }

    std::vector<std::string> how;
    std::vector<std::string> failed;
    Bench bench(dev);
    constexpr int kReps = 10;
    try {
        CUmodule raw = nullptr;
        bench.check(d.moduleLoadData(&raw, built.cubin.data()), "cuModuleLoadData of the ceiling micro-kernels");
        ModuleHandle module(raw);
        const auto function = [&](const std::string& name) {
            CUfunction f = nullptr;
            bench.check(d.moduleGetFunction(&f, module.get(), built.loweredNames.at(name).c_str()),
                        "cuModuleGetFunction(" + name + ")");
            return f;
        };
        // Each ceiling on its own: one that fails (no memory for the buffers, say) leaves the others.
        const auto attempt = [&](const char* what, const auto& body) {
            try {
                body();
            } catch (const CudaFailure& f) {
                if (isStickyError(f.code))
                    throw;
                failed.push_back(std::string(what) + ": " + f.what());
            } catch (const std::exception& e) {
                failed.push_back(std::string(what) + ": " + e.what());
            }
        };

        std::size_t freeBytes = 0, totalBytes = 0;
        d.memGetInfo(&freeBytes, &totalBytes);
        const std::size_t l2 = dev.l2Bytes > 0 ? dev.l2Bytes : std::size_t{64} << 20;

        attempt("dram_bytes_per_s", [&] {
            // 1 GiB each way, far beyond any L2, or a quarter of the free memory on a small card.
            std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, freeBytes / 4) & ~std::size_t{0xffff};
            if (bytes < 8 * l2)
                throw std::runtime_error("only " + mib(freeBytes) + " free, too little for buffers well beyond the "
                                         + mib(l2) + " L2");
            MemoryHandle src = bench.allocate(bytes);
            MemoryHandle dst = bench.allocate(bytes);
            CUfunction f = function("kf_copy");
            const unsigned block = 256;
            const unsigned grid = bench.fullGrid(f, block);
            CUdeviceptr s = src.get(), t = dst.get();
            unsigned long long n = bytes / 16;
            const double seconds = bench.best(f, grid, block, {&s, &t, &n}, kReps);
            m.result.ceilings["dram_copy_bytes_per_s"] = 2.0 * static_cast<double>(bytes) / seconds;
            how.push_back("DRAM: int4 copy of " + mib(bytes) + " into " + mib(bytes) + ", read + write bytes, best of "
                          + std::to_string(kReps));
        });

        attempt("dram_read_bytes_per_s", [&] {
            // Read-mostly kernels (reductions, norms, gemv, softmax) stream faster than a copy, which
            // pays for read/write turnarounds: one sweep over 2 GiB. No one access pattern reaches the
            // hardware's best on every GPU (on H100s the first form below, four loads in flight a
            // thread, read 1-3% slower than a gemv kernel streams its rows), so each form is timed and
            // the roof is the fastest: a roof that honest kernels pass sends them to review.
            std::size_t bytes = std::min<std::size_t>(std::size_t{2} << 30, freeBytes / 4) & ~std::size_t{0xffff};
            if (bytes < 8 * l2)
                throw std::runtime_error("only " + mib(freeBytes) + " free, too little for a buffer well beyond the "
                                         + mib(l2) + " L2");
            MemoryHandle buf = bench.allocate(bytes);
            MemoryHandle out = bench.allocate(std::size_t{4} << 20);
            CUdeviceptr s = buf.get(), o = out.get();
            unsigned long long n = bytes / 16;
            int passes = 1;
            // The sweep kernel also serves the L2 roof and takes a pass count; the streaming forms do not.
            const std::vector<void*> sweepArgs{&s, &n, &passes, &o}, streamArgs{&s, &n, &o};
            double bestSeconds = 0.0;
            std::string bestForm;
            const auto time = [&](const char* name, const std::string& form, unsigned block,
                                  const std::vector<void*>& args) {
                CUfunction f = function(name);
                const unsigned grid = bench.fullGrid(f, block);
                const double seconds = bench.best(f, grid, block, args, kReps);
                if (bestSeconds == 0.0 || seconds < bestSeconds) {
                    bestSeconds = seconds;
                    bestForm = form + ", " + std::to_string(grid) + " x " + std::to_string(block) + " threads";
                }
            };
            time("kf_l2_read", "ld.global.cg, grid-strided, 4 loads in flight", 256, sweepArgs);
            for (const unsigned block : {256u, 512u}) {
                time("kf_dram_read_strided8", "ld.global.cs, grid-strided, 8 loads in flight", block, streamArgs);
                time("kf_dram_read_chunk4", "ld.global.cs, a contiguous share per block, 4 loads in flight", block,
                     streamArgs);
                time("kf_dram_read_chunk8", "ld.global.cs, a contiguous share per block, 8 loads in flight", block,
                     streamArgs);
            }
            m.result.ceilings["dram_read_bytes_per_s"] = static_cast<double>(bytes) / bestSeconds;
            how.push_back("DRAM read: one sweep over " + mib(bytes) + ", the fastest of 7 forms (" + bestForm
                          + "), best of " + std::to_string(kReps));
        });
        // The roofline's DRAM roof is the faster of the two, so that no honest kernel sits above it.
        for (const char* key : {"dram_copy_bytes_per_s", "dram_read_bytes_per_s"}) {
            auto it = m.result.ceilings.find(key);
            if (it != m.result.ceilings.end())
                m.result.ceilings["dram_bytes_per_s"] = std::max(m.result.ceilings["dram_bytes_per_s"], it->second);
        }

        attempt("l2_bytes_per_s", [&] {
            // A quarter of the L2: H100-class L2s are split in two halves that may each keep a copy.
            const std::size_t bytes = (l2 / 4) & ~std::size_t{0xffff};
            MemoryHandle buf = bench.allocate(bytes);
            MemoryHandle out = bench.allocate(std::size_t{4} << 20);
            CUfunction f = function("kf_l2_read");
            const unsigned block = 256;
            const unsigned grid = bench.fullGrid(f, block);
            CUdeviceptr s = buf.get(), o = out.get();
            unsigned long long n = bytes / 16;
            int passes = 4;
            const auto [seconds, used] = bench.scaled(
                f, grid, block, passes,
                [&](int p) {
                    passes = p;
                    return std::vector<void*>{&s, &n, &passes, &o};
                },
                2e-3, kReps);
            m.result.ceilings["l2_bytes_per_s"] = static_cast<double>(bytes) * used / seconds;
            how.push_back("L2: " + std::to_string(used) + " sweeps over " + mib(bytes) + " with ld.global.cg");
        });

        attempt("fp32_flops_per_s", [&] {
            CUfunction f = function("kf_ffma");
            const unsigned block = 256;
            const unsigned grid = bench.fullGrid(f, block);
            MemoryHandle out = bench.allocate(std::size_t{grid} * block * sizeof(float));
            CUdeviceptr o = out.get();
            float a = 0.999f, b = 1.0e-6f;
            int iters = 64;
            const auto [seconds, used] = bench.scaled(
                f, grid, block, iters,
                [&](int it) {
                    iters = it;
                    return std::vector<void*>{&o, &a, &b, &iters};
                },
                5e-3, kReps);
            const double flops = 2.0 * 8 * 16 * static_cast<double>(used) * grid * block;
            m.result.ceilings["fp32_flops_per_s"] = flops / seconds;
            how.push_back("FP32: FFMA, 8 independent chains per thread, " + std::to_string(grid) + " blocks of "
                          + std::to_string(block));
        });

        // `k`: the MMA shape's depth (m16n8k16 for 16-bit inputs, m16n8k8 for TF32).
        const auto tensor = [&](const char* key, const char* kernel, const char* type, unsigned a, unsigned b, int k) {
            attempt(key, [&] {
                if (dev.computeCapability < 80)
                    throw std::runtime_error("mma.sync m16n8k" + std::to_string(k) + " needs compute capability 8.0");
                CUfunction f = function(kernel);
                const unsigned block = 128;
                const unsigned grid = bench.fullGrid(f, block);
                MemoryHandle out = bench.allocate(std::size_t{grid} * block * sizeof(float));
                CUdeviceptr o = out.get();
                unsigned aBits = a, bBits = b;
                int iters = 64;
                const auto [seconds, used] = bench.scaled(
                    f, grid, block, iters,
                    [&](int it) {
                        iters = it;
                        return std::vector<void*>{&o, &aBits, &bBits, &iters};
                    },
                    5e-3, kReps);
                const double warps = static_cast<double>(grid) * block / 32.0;
                const double flops = warps * used * 8 * (2.0 * 16 * 8 * k);
                m.result.ceilings[key] = flops / seconds;
                how.push_back(std::string(type) + " tensor: mma.sync.aligned.m16n8k" + std::to_string(k)
                              + " with FP32 accumulation");
            });
        };
        // Operands 1.0 and 1/256 (in both halves of each register for 16-bit types): finite sums, never zeros.
        tensor("fp16_tensor_flops_per_s", "kf_mma_f16", "FP16", 0x3c003c00u, 0x1c001c00u, 16);
        tensor("bf16_tensor_flops_per_s", "kf_mma_bf16", "BF16", 0x3f803f80u, 0x3b803b80u, 16);
        // The roof of kernels that put float32 data on the tensor cores as TF32 (1 to 3 MMAs per product).
        tensor("tf32_tensor_flops_per_s", "kf_mma_tf32", "TF32", 0x3f800000u, 0x3b800000u, 8);

        // Hopper's own tensor path, which mma.sync does not reach: the roof for kernels that use wgmma.
        // `k`: the MMA shape's depth (m64n256k16 for 16-bit inputs, m64n256k8 for TF32).
        const auto warpgroup = [&](const char* key, const char* kernel, const char* type, unsigned bits, int k,
                                   const char* form) {
            attempt(key, [&] {
                if (dev.computeCapability != 90)
                    throw std::runtime_error("wgmma is an sm_90a instruction (compute capability 9.0 only)");
                CUfunction f = function(kernel);
                const unsigned block = 128;
                const unsigned grid = bench.fullGrid(f, block);
                MemoryHandle out = bench.allocate(std::size_t{grid} * block * sizeof(float));
                CUdeviceptr o = out.get();
                unsigned operand = bits;
                int iters = 16;
                const auto [seconds, used] = bench.scaled(
                    f, grid, block, iters,
                    [&](int it) {
                        iters = it;
                        return std::vector<void*>{&o, &operand, &iters};
                    },
                    5e-3, kReps);
                const double flops = static_cast<double>(grid) * used * 4 * (2.0 * 64 * 256 * k);
                m.result.ceilings[key] = flops / seconds;
                how.push_back(std::string(type) + " tensor (wgmma): wgmma.mma_async m64n256k" + std::to_string(k) + ", "
                              + form + ", FP32 accumulation");
            });
        };
        warpgroup("fp16_wgmma_flops_per_s", "kf_wgmma_f16", "FP16", 0x3c003c00u, 16, "operands in shared memory");
        warpgroup("bf16_wgmma_flops_per_s", "kf_wgmma_bf16", "BF16", 0x3f803f80u, 16, "operands in shared memory");
        // The roof of float32 kernels on wgmma (3xTF32): they keep one operand in registers.
        warpgroup("tf32_wgmma_flops_per_s", "kf_wgmma_tf32", "TF32", 0x3f800000u, 8,
                  "A in registers, B in shared memory");
    } catch (const CudaFailure& f) {
        m.failure = f.code;
        failed.push_back(f.what());
    } catch (const std::exception& e) {
        failed.push_back(e.what());
    }

    m.result.ok = !m.result.ceilings.empty();
    // What fits in L2 can be read faster than DRAM allows, and up to L2's size of a kernel's stores
    // may still be in it when the kernel ends: the engine holds a kernel to the DRAM roof by it.
    if (m.result.ok && dev.l2Bytes > 0)
        m.result.ceilings["cache_bytes"] = static_cast<double>(dev.l2Bytes);
    std::string text =
        "measured on " + dev.name + " (" + std::to_string(dev.multiprocessors) + " SMs) by micro-kernels";
    for (const auto& h : how)
        text += "; " + h;
    const bool warpgroupRoofs = m.result.ceilings.count("fp16_wgmma_flops_per_s")
                                || m.result.ceilings.count("bf16_wgmma_flops_per_s")
                                || m.result.ceilings.count("tf32_wgmma_flops_per_s");
    if (m.result.ceilings.count("fp16_tensor_flops_per_s") || m.result.ceilings.count("bf16_tensor_flops_per_s")
        || m.result.ceilings.count("tf32_tensor_flops_per_s"))
        text += warpgroupRoofs ? " (the *_tensor roofs are for mma.sync/WMMA kernels, the *_wgmma roofs for kernels "
                                 "that use wgmma, which mma.sync cannot reach)"
                : dev.computeCapability >= 90
                    ? " (mma.sync only: wgmma, which this GPU has, is faster, so the tensor figures are ceilings "
                      "for mma.sync/WMMA kernels)"
                    : " (mma.sync)";
    m.result.message = text + harness::notMeasured(failed);
    return m;
}

} // namespace kforge::cuda
