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
#if __CUDA_ARCH__ >= 800
KF_MMA_KERNEL(kf_mma_f16, "f16")
KF_MMA_KERNEL(kf_mma_bf16, "bf16")
#else
extern "C" __global__ void kf_mma_f16(float*, unsigned, unsigned, int) {}
extern "C" __global__ void kf_mma_bf16(float*, unsigned, unsigned, int) {}
#endif
)";

const std::vector<std::string> kKernels{"kf_copy", "kf_l2_read", "kf_ffma", "kf_mma_f16", "kf_mma_bf16"};

// ---- driver objects -----------------------------------------------------------------------------------

struct ModuleTraits {
    static void destroy(CUmodule m) { CudaDriver::instance().moduleUnload(m); }
};
using ModuleHandle = DriverHandle<CUmodule, ModuleTraits>;

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
            // Read-mostly kernels (reductions, norms, softmax) stream faster than a copy, which pays
            // for read/write turnarounds: one sweep of ld.global.cg over 2 GiB.
            std::size_t bytes = std::min<std::size_t>(std::size_t{2} << 30, freeBytes / 4) & ~std::size_t{0xffff};
            if (bytes < 8 * l2)
                throw std::runtime_error("only " + mib(freeBytes) + " free, too little for a buffer well beyond the "
                                         + mib(l2) + " L2");
            MemoryHandle buf = bench.allocate(bytes);
            MemoryHandle out = bench.allocate(std::size_t{4} << 20);
            CUfunction f = function("kf_l2_read");
            const unsigned block = 256;
            const unsigned grid = bench.fullGrid(f, block);
            CUdeviceptr s = buf.get(), o = out.get();
            unsigned long long n = bytes / 16;
            int passes = 1;
            const double seconds = bench.best(f, grid, block, {&s, &n, &passes, &o}, kReps);
            m.result.ceilings["dram_read_bytes_per_s"] = static_cast<double>(bytes) / seconds;
            how.push_back("DRAM read: one ld.global.cg sweep over " + mib(bytes) + ", best of "
                          + std::to_string(kReps));
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

        const auto tensor = [&](const char* key, const char* kernel, const char* type, unsigned a, unsigned b) {
            attempt(key, [&] {
                if (dev.computeCapability < 80)
                    throw std::runtime_error("mma.sync m16n8k16 needs compute capability 8.0");
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
                const double flops = warps * used * 8 * (2.0 * 16 * 8 * 16);
                m.result.ceilings[key] = flops / seconds;
                how.push_back(std::string(type) + " tensor: mma.sync.aligned.m16n8k16 with FP32 accumulation");
            });
        };
        // Operands 1.0 and 1/256 in both halves of each register: finite sums, never zeros.
        tensor("fp16_tensor_flops_per_s", "kf_mma_f16", "FP16", 0x3c003c00u, 0x1c001c00u);
        tensor("bf16_tensor_flops_per_s", "kf_mma_bf16", "BF16", 0x3f803f80u, 0x3b803b80u);
    } catch (const CudaFailure& f) {
        m.failure = f.code;
        failed.push_back(f.what());
    } catch (const std::exception& e) {
        failed.push_back(e.what());
    }

    m.result.ok = !m.result.ceilings.empty();
    std::string text =
        "measured on " + dev.name + " (" + std::to_string(dev.multiprocessors) + " SMs) by micro-kernels";
    for (const auto& h : how)
        text += "; " + h;
    if (m.result.ceilings.count("fp16_tensor_flops_per_s") || m.result.ceilings.count("bf16_tensor_flops_per_s"))
        text += dev.computeCapability >= 90
                    ? " (mma.sync, not wgmma: wgmma, which sm_90 has, is faster, so the tensor figures "
                      "are ceilings for mma.sync/WMMA kernels, below the datasheet's dense peak)"
                    : " (mma.sync)";
    m.result.message = text + harness::notMeasured(failed);
    return m;
}

} // namespace kforge::cuda
