#include "openclceilings.h"

#include "ceilingscache.h"
#include "openclbackend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace kforge::opencl {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// The copy's buffers: several times the global-memory cache so that every sweep comes from memory,
// at least this much even where the driver reports no cache, and at most this much each, so that a
// CPU device that reports a large shared L3 (hundreds of MiB on servers) is not swept for seconds.
// Best-of runs, short each, since CPU devices share their cores with everything else.
constexpr std::size_t kMinCopyBytes = 64 * kMiB;
constexpr std::size_t kMaxCopyBytes = 512 * kMiB;
constexpr cl_ulong kCacheMultiple = 8;
constexpr int kCopyRuns = 5;
// FMA launches are sized by a first launch to about this long each.
constexpr double kFmaSeconds = 0.03;
constexpr int kFmaRuns = 5;

// OpenCL C 1.2, so that every device builds it. Each kernel writes something that depends on all its
// work, so that nothing is optimised away.
constexpr const char* kSource = R"(
// One float4 per work-item: consecutive work-items read consecutive addresses, which GPUs coalesce
// and CPU drivers turn into vector loads across work-items.
kernel void kf_copy(global const float4* restrict src, global float4* restrict dst) {
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}

// Eight independent float8 chains per work-item: enough independent FMAs to hide their latency
// whether the driver maps a float8 to one wide register or vectorises across work-items.
#define KF_STEP(x) x = fma(x, va, vb)
#define KF_ROUND KF_STEP(x0); KF_STEP(x1); KF_STEP(x2); KF_STEP(x3); KF_STEP(x4); KF_STEP(x5); KF_STEP(x6); KF_STEP(x7)
kernel void kf_fma(global float* out, float a, float b, int iters) {
    const float8 va = (float8)(a), vb = (float8)(b);
    const float s = (float)get_global_id(0) * 1.0e-6f;
    float8 x0 = (float8)(s, s + 0.01f, s + 0.02f, s + 0.03f, s + 0.04f, s + 0.05f, s + 0.06f, s + 0.07f);
    float8 x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f, x4 = x0 + 0.4f, x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f;
    for (int i = 0; i < iters; ++i) {
        KF_ROUND; KF_ROUND; KF_ROUND; KF_ROUND;
    }
    const float8 t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    out[get_global_id(0)] = ((t.s0 + t.s1) + (t.s2 + t.s3)) + ((t.s4 + t.s5) + (t.s6 + t.s7));
}
)";
// Per work-item and iteration of kf_fma: 4 rounds of 8 chains of float8 FMAs, 2 FLOP per lane.
constexpr double kFlopsPerIteration = 4.0 * 8 * 8 * 2;

// An OpenCL call that failed: unwinds the measurement, the handles freeing what it held.
struct ClFailure : std::runtime_error {
    ClFailure(cl_int err, const std::string& what)
        : std::runtime_error(what + " failed with " + clErrorName(err)), code(err) {}
    cl_int code;
};

void check(cl_int err, const std::string& what) {
    if (err != CL_SUCCESS)
        throw ClFailure(err, what);
}

template <typename T> T deviceValue(cl_device_id d, cl_device_info param, T fallback = T{}) {
    T v{};
    return clGetDeviceInfo(d, param, sizeof v, &v, nullptr) == CL_SUCCESS ? v : fallback;
}

std::string sizeText(std::size_t bytes) {
    if (bytes >= kMiB && bytes % kMiB == 0)
        return std::to_string(bytes / kMiB) + " MiB";
    return std::to_string(bytes) + " bytes";
}

std::string rateText(double v, const char* unit) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f G%s", v / 1e9, unit);
    return buf;
}

class Bench {
public:
    explicit Bench(const CeilingsDevice& device) : m_dev(device) {}

    KernelHandle kernel(cl_program program, const char* name) const {
        cl_int err = CL_SUCCESS;
        KernelHandle k(clCreateKernel(program, name, &err));
        check(err, std::string("clCreateKernel(") + name + ")");
        return k;
    }

    // One launch, in seconds of device time (or of host time around it, where the queue cannot
    // profile).
    double time(cl_kernel kernel, std::size_t global, const std::size_t* local, const char* what) const {
        if (!m_dev.profiling)
            check(clFinish(m_dev.queue), std::string("clFinish before ") + what);
        const auto start = std::chrono::steady_clock::now();
        cl_event raw = nullptr;
        check(clEnqueueNDRangeKernel(m_dev.queue, kernel, 1, nullptr, &global, local, 0, nullptr, &raw),
              std::string("clEnqueueNDRangeKernel(") + what + ")");
        const EventHandle event(raw);
        check(clWaitForEvents(1, &raw), std::string("waiting for ") + what);
        const auto end = std::chrono::steady_clock::now();
        if (m_dev.profiling)
            if (auto seconds = profiledSeconds(raw))
                return *seconds;
        return std::chrono::duration<double>(end - start).count();
    }

    const CeilingsDevice& device() const { return m_dev; }

private:
    const CeilingsDevice& m_dev;
};

MemHandle createBuffer(cl_context context, cl_mem_flags flags, std::size_t bytes, cl_int& err) {
    return MemHandle(clCreateBuffer(context, flags, bytes, nullptr, &err));
}

// Best of several copies from one buffer to another: bytes read plus bytes written per second.
double measureCopy(const Bench& bench, cl_program program, std::string& how) {
    const CeilingsDevice& dev = bench.device();
    const cl_ulong cache = deviceValue<cl_ulong>(dev.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
    const cl_ulong maxAlloc = deviceValue<cl_ulong>(dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    const cl_ulong global = deviceValue<cl_ulong>(dev.device, CL_DEVICE_GLOBAL_MEM_SIZE);

    std::uint64_t bytes = std::max<std::uint64_t>(kMinCopyBytes, kCacheMultiple * cache);
    bytes = std::min<std::uint64_t>(bytes, kMaxCopyBytes);
    if (maxAlloc > 0)
        bytes = std::min<std::uint64_t>(bytes, maxAlloc);
    if (global > 0)
        bytes = std::min<std::uint64_t>(bytes, global / 4); // both buffers in at most half the memory
    bytes -= bytes % kMiB; // a whole number of 1024-work-item blocks, so the driver can pick a group size
    if (bytes < kMiB)
        throw std::runtime_error("DRAM: the device allows buffers of only " + std::to_string(maxAlloc) + " bytes");

    // Halved while the driver cannot allocate that much (other processes may hold device memory).
    MemHandle src, dst;
    for (;;) {
        cl_int err = CL_SUCCESS;
        src = createBuffer(dev.context, CL_MEM_READ_ONLY, static_cast<std::size_t>(bytes), err);
        if (err == CL_SUCCESS)
            dst = createBuffer(dev.context, CL_MEM_WRITE_ONLY, static_cast<std::size_t>(bytes), err);
        if (err == CL_SUCCESS)
            break;
        if ((err != CL_MEM_OBJECT_ALLOCATION_FAILURE && err != CL_OUT_OF_RESOURCES && err != CL_OUT_OF_HOST_MEMORY
             && err != CL_INVALID_BUFFER_SIZE)
            || bytes / 2 < kMiB)
            throw ClFailure(err, "clCreateBuffer of " + sizeText(static_cast<std::size_t>(bytes)));
        bytes /= 2;
        bytes -= bytes % kMiB;
    }
    // Written once, so that the copies read memory the driver has really backed (untouched pages
    // may all map to one zero page on CPU devices).
    const cl_float zero = 0.0f;
    check(clEnqueueFillBuffer(dev.queue, src.get(), &zero, sizeof zero, 0, static_cast<std::size_t>(bytes), 0, nullptr,
                              nullptr),
          "clEnqueueFillBuffer");

    KernelHandle copy = bench.kernel(program, "kf_copy");
    cl_mem s = src.get(), d = dst.get();
    // NOLINTNEXTLINE(bugprone-sizeof-expression): cl_mem is a handle, its size is meant
    check(clSetKernelArg(copy.get(), 0, sizeof s, &s), "clSetKernelArg(kf_copy)");
    // NOLINTNEXTLINE(bugprone-sizeof-expression): cl_mem is a handle, its size is meant
    check(clSetKernelArg(copy.get(), 1, sizeof d, &d), "clSetKernelArg(kf_copy)");
    const std::size_t items = static_cast<std::size_t>(bytes / 16);
    bench.time(copy.get(), items, nullptr, "kf_copy"); // warm-up: first touch of the destination
    double best = 0.0;
    for (int r = 0; r < kCopyRuns; ++r) {
        const double seconds = bench.time(copy.get(), items, nullptr, "kf_copy");
        if (seconds > 0.0)
            best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds);
    }
    if (best <= 0.0)
        throw std::runtime_error("DRAM: the copies reported no time");
    how = "DRAM: best of " + std::to_string(kCopyRuns) + " copies of " + sizeText(static_cast<std::size_t>(bytes))
          + " (float4 per work-item; global-memory cache " + sizeText(static_cast<std::size_t>(cache))
          + (bytes < kCacheMultiple * cache ? ", so the buffer is less than " + std::to_string(kCacheMultiple)
                                                  + " times the cache and part of a sweep may hit it"
                                            : std::string())
          + "), read + write bytes";
    return best;
}

// Best of several launches of the FMA chains, sized by a first launch.
double measureFma(const Bench& bench, cl_program program, std::string& how) {
    const CeilingsDevice& dev = bench.device();
    const std::size_t units = std::max<cl_uint>(deviceValue<cl_uint>(dev.device, CL_DEVICE_MAX_COMPUTE_UNITS, 1), 1);
    KernelHandle fma = bench.kernel(program, "kf_fma");
    std::size_t kernelMax = 0;
    clGetKernelWorkGroupInfo(fma.get(), dev.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernelMax, &kernelMax, nullptr);
    const std::size_t local = std::clamp<std::size_t>(kernelMax, 1, 64);
    // Sixteen groups per compute unit: every unit busy, and enough groups in flight on GPUs to hide
    // the FMA latency across warps.
    const std::size_t items = units * 16 * local;

    cl_int err = CL_SUCCESS;
    MemHandle out(clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, items * sizeof(cl_float), nullptr, &err));
    check(err, "clCreateBuffer for kf_fma");
    cl_mem o = out.get();
    // x -> 0.999 x + 0.001 stays near 1: no overflow, no denormals.
    const cl_float a = 0.999f, b = 0.001f;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): cl_mem is a handle, its size is meant
    check(clSetKernelArg(fma.get(), 0, sizeof o, &o), "clSetKernelArg(kf_fma)");
    check(clSetKernelArg(fma.get(), 1, sizeof a, &a), "clSetKernelArg(kf_fma)");
    check(clSetKernelArg(fma.get(), 2, sizeof b, &b), "clSetKernelArg(kf_fma)");
    const auto launch = [&](cl_int iters) {
        check(clSetKernelArg(fma.get(), 3, sizeof iters, &iters), "clSetKernelArg(kf_fma)");
        return bench.time(fma.get(), items, &local, "kf_fma");
    };

    cl_int iters = 16;
    launch(iters); // warm-up: some drivers (PoCL) compile the kernel for its group size at the first launch
    const double first = launch(iters);
    if (first > 0.0)
        iters = static_cast<cl_int>(std::clamp(static_cast<double>(iters) * kFmaSeconds / first, 1.0, double{1 << 20}));
    double best = 0.0;
    for (int r = 0; r < kFmaRuns; ++r) {
        const double seconds = launch(iters);
        if (seconds > 0.0)
            best = std::max(best, static_cast<double>(items) * iters * kFlopsPerIteration / seconds);
    }
    if (best <= 0.0)
        throw std::runtime_error("FP32: the FMA launches reported no time");
    how = "FP32: best of " + std::to_string(kFmaRuns) + " launches of " + std::to_string(items) + " work-items x "
          + std::to_string(iters) + " iterations of 32 float8 fma, 2 FLOP per lane";
    return best;
}

} // namespace

CeilingsMeasurement measureCeilings(const CeilingsDevice& dev) {
    CeilingsMeasurement m;
    m.result.measuredAt = harness::utcNow();
    std::vector<std::string> how, failed;
    const auto start = std::chrono::steady_clock::now();

    ProgramHandle program;
    try {
        cl_int err = CL_SUCCESS;
        const char* source = kSource;
        program.reset(clCreateProgramWithSource(dev.context, 1, &source, nullptr, &err));
        check(err, "clCreateProgramWithSource");
        err = clBuildProgram(program.get(), 1, &dev.device, "", nullptr, nullptr);
        if (err != CL_SUCCESS) {
            std::size_t size = 0;
            std::string log;
            if (clGetProgramBuildInfo(program.get(), dev.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) == CL_SUCCESS
                && size > 1) {
                log.resize(size);
                clGetProgramBuildInfo(program.get(), dev.device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
                log.resize(std::strlen(log.c_str()));
            }
            throw ClFailure(err, "building the micro-kernels" + (log.empty() ? std::string() : " (" + log + ")"));
        }
    } catch (const ClFailure& f) {
        m.failure = f.code;
        m.result.message = "cannot measure ceilings on " + dev.name + ": " + f.what();
        return m;
    }

    const Bench bench(dev);
    const auto measure = [&](const char* key, double (*what)(const Bench&, cl_program, std::string&)) {
        if (m.failure != CL_SUCCESS) // a failed command may have left the queue unusable
            return;
        try {
            std::string text;
            m.result.ceilings[key] = what(bench, program.get(), text);
            how.push_back(std::move(text));
        } catch (const ClFailure& f) {
            m.failure = f.code;
            failed.push_back(f.what());
        } catch (const std::exception& e) {
            failed.push_back(e.what());
        }
    };
    measure("dram_bytes_per_s", measureCopy);
    measure("fp32_flops_per_s", measureFma);
    // What fits in the cache can be read faster than DRAM allows: the engine only holds a kernel
    // to the DRAM ceiling when the task's bytes exceed it.
    if (const auto cache = deviceValue<cl_ulong>(dev.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
        cache > 0 && !m.result.ceilings.empty())
        m.result.ceilings["cache_bytes"] = static_cast<double>(cache);
    if (m.failure != CL_SUCCESS)
        clFinish(dev.queue); // nothing of the measurement may still write into freed buffers

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.result.ok = !m.result.ceilings.empty();
    const std::size_t units = deviceValue<cl_uint>(dev.device, CL_DEVICE_MAX_COMPUTE_UNITS);
    std::string text = "measured on " + dev.name + " (" + std::to_string(units) + " compute units) by micro-kernels";
    if (auto it = m.result.ceilings.find("dram_bytes_per_s"); it != m.result.ceilings.end())
        text += ": " + rateText(it->second, "B/s");
    if (auto it = m.result.ceilings.find("fp32_flops_per_s"); it != m.result.ceilings.end())
        text += (m.result.ceilings.size() > 1 ? ", " : ": ") + rateText(it->second, "FLOP/s");
    for (const auto& h : how)
        text += "; " + h;
    text +=
        dev.profiling ? "; timed by OpenCL profiling events" : "; timed by the host clock (the queue cannot profile)";
    char took[48];
    std::snprintf(took, sizeof took, "; took %.2f s", seconds);
    text += took;
    m.result.message = text + harness::notMeasured(failed);
    return m;
}

} // namespace kforge::opencl
