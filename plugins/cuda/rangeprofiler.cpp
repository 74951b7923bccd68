#include "rangeprofiler.h"

#include <cupti.h>

#if __has_include(<cupti_range_profiler.h>) && __has_include(<cupti_profiler_host.h>)
#define KFORGE_HAVE_RANGE_PROFILER 1
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#else
#define KFORGE_HAVE_RANGE_PROFILER 0
#endif

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace kforge::cuda {

bool RangeProfiler::available() {
    return KFORGE_HAVE_RANGE_PROFILER != 0;
}

#if !KFORGE_HAVE_RANGE_PROFILER

protocol::ProfileResult RangeProfiler::collect(CUcontext, CUdevice, int, std::size_t, const std::function<void()>&,
                                               const std::function<std::string()>&, bool) {
    return {
        "unsupported",
        "this worker was built against a CUPTI without the Range Profiler API (cupti_range_profiler.h, CUDA 12.6 or "
        "newer); rebuild it with a newer CUDA toolkit to collect hardware metrics",
        {}};
}

#else

namespace {

// What one "math op" of the sm__ops_path_tensor_* counters is worth in flops. The counters' own
// description says only "# of math ops executed in Tensor path"; on the H200 the WMMA GEMMs of
// gemm_fp16 and gemm_bf16 (4096^3) read 1.37439e11 = 2*M*N*K exactly, so an op is a flop and a
// multiply-add counts two (h200-profile-results.md).
constexpr double kTensorFlopsPerOp = 1.0;

std::string resultText(CUptiResult r) {
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "CUPTI error " + std::to_string(static_cast<int>(r));
}

// Thrown by check(): the RAII objects below unwind the profiler on the way out.
struct CuptiFailure : std::runtime_error {
    CuptiFailure(CUptiResult r, const std::string& function)
        : std::runtime_error(function + " failed with " + resultText(r)), code(r), call(function) {}
    CUptiResult code;
    std::string call;
};

void check(CUptiResult r, const char* call) {
    if (r != CUPTI_SUCCESS)
        throw CuptiFailure(r, call);
}

// A profiled run that failed: not CUPTI's fault, and reported as the run's own error.
struct RunFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

protocol::ProfileResult classify(const CuptiFailure& f) {
    switch (f.code) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return {
            "not_permitted",
            std::string(f.what())
                + ": GPU performance counters are restricted to administrators on this machine. Allow them for every "
                  "user by loading the nvidia kernel module with NVreg_RestrictProfilingToAdminUsers=0 (e.g. 'options "
                  "nvidia NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then rebuild the initramfs and "
                  "reboot), or run the worker as root",
            {}};
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_API_NOT_IMPLEMENTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
        return {"unsupported", std::string(f.what()) + ": CUPTI cannot read this GPU's counters", {}};
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_HARDWARE_BUSY:
        return {"error",
                std::string(f.what())
                    + ": another profiler (Nsight Compute, Nsight Systems, a sanitizer) holds the counters",
                {}};
    default:
        return {"error", f.what(), {}};
    }
}

std::string supportText(CUpti_Profiler_Support_Level level) {
    switch (level) {
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
        return "supported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
        return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
        return "unsupported";
    default:
        return "unknown";
    }
}

// CUPTI opens its metric libraries (libnvperf_host.so, libnvperf_target.so) by bare name, which works
// only where their directory is on the loader's path; the worker finds libcupti through its RUNPATH
// instead. Loaded first from libcupti's own directory, CUPTI's bare-name dlopen then finds them by
// soname. Never closed: CUPTI keeps using them until the process exits.
void preloadMetricLibraries() {
    static std::once_flag once;
    std::call_once(once, [] {
        // dlsym rather than &cuptiGetVersion, which may name a PLT stub in the executable.
        void* symbol = ::dlsym(RTLD_DEFAULT, "cuptiGetVersion");
        Dl_info info{};
        if (!symbol || !::dladdr(symbol, &info) || !info.dli_fname)
            return;
        const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
        for (const char* name : {"libnvperf_host.so", "libnvperf_target.so"}) {
            std::error_code ec;
            if (const auto path = dir / name; std::filesystem::exists(path, ec))
                ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        }
    });
}

// cuptiProfilerInitialize hooks CUPTI into the driver; undone at once so that the timed runs that
// follow run as unprofiled as before.
class ProfilerInit {
public:
    ProfilerInit() {
        CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
        check(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
    }
    ~ProfilerInit() {
        CUpti_Profiler_DeInitialize_Params p{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE, nullptr};
        cuptiProfilerDeInitialize(&p);
    }
    ProfilerInit(const ProfilerInit&) = delete;
    ProfilerInit& operator=(const ProfilerInit&) = delete;
};

// The host side: metric names to config image, counter data to values. Needs no device.
class HostObject {
public:
    HostObject(const std::string& chip, const std::vector<std::uint8_t>& availability) {
        CUpti_Profiler_Host_Initialize_Params p{};
        p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
        p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        p.pChipName = chip.c_str();
        p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
        check(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize");
        m_object = p.pHostObject;
    }
    ~HostObject() {
        CUpti_Profiler_Host_Deinitialize_Params p{};
        p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
        p.pHostObject = m_object;
        cuptiProfilerHostDeinitialize(&p);
    }
    HostObject(const HostObject&) = delete;
    HostObject& operator=(const HostObject&) = delete;

    bool knows(const std::string& metric) const {
        CUpti_Profiler_Host_GetMetricProperties_Params p{};
        p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
        p.pHostObject = m_object;
        p.pMetricName = metric.c_str();
        return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
    }

    std::vector<std::uint8_t> configImage(std::vector<const char*>& metrics) const {
        CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
        add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        add.pHostObject = m_object;
        add.ppMetricNames = metrics.data();
        add.numMetrics = metrics.size();
        check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");

        CUpti_Profiler_Host_GetConfigImageSize_Params size{};
        size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
        size.pHostObject = m_object;
        check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
        std::vector<std::uint8_t> image(size.configImageSize);

        CUpti_Profiler_Host_GetConfigImage_Params get{};
        get.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
        get.pHostObject = m_object;
        get.configImageSize = image.size();
        get.pConfigImage = image.data();
        check(cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
        return image;
    }

    std::vector<double> evaluate(const std::vector<std::uint8_t>& counterData, std::size_t range,
                                 std::vector<const char*>& metrics) const {
        std::vector<double> values(metrics.size(), 0.0);
        CUpti_Profiler_Host_EvaluateToGpuValues_Params p{};
        p.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
        p.pHostObject = m_object;
        p.pCounterDataImage = counterData.data();
        p.counterDataImageSize = counterData.size();
        p.rangeIndex = range;
        p.ppMetricNames = metrics.data();
        p.numMetrics = metrics.size();
        p.pMetricValues = values.data();
        check(cuptiProfilerHostEvaluateToGpuValues(&p), "cuptiProfilerHostEvaluateToGpuValues");
        return values;
    }

private:
    CUpti_Profiler_Host_Object* m_object = nullptr;
};

// The range profiler on one context, enabled for as long as this lives; a session still started
// when it dies (a failed run) is stopped first, so the context is left as it was found.
class RangeSession {
public:
    explicit RangeSession(CUcontext context) {
        CUpti_RangeProfiler_Enable_Params p{};
        p.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
        p.ctx = context;
        check(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
        m_object = p.pRangeProfilerObject;
    }
    ~RangeSession() {
        if (m_started) {
            bool all = false;
            stop(all, std::nothrow);
        }
        CUpti_RangeProfiler_Disable_Params p{};
        p.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = m_object;
        cuptiRangeProfilerDisable(&p);
    }
    RangeSession(const RangeSession&) = delete;
    RangeSession& operator=(const RangeSession&) = delete;

    std::vector<std::uint8_t> counterDataImage(std::vector<const char*>& metrics, std::size_t ranges) const {
        CUpti_RangeProfiler_GetCounterDataSize_Params size{};
        size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
        size.pRangeProfilerObject = m_object;
        size.pMetricNames = metrics.data();
        size.numMetrics = metrics.size();
        size.maxNumOfRanges = ranges;
        size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(ranges);
        check(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
        std::vector<std::uint8_t> image(size.counterDataSize, 0);

        CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
        init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
        init.pRangeProfilerObject = m_object;
        init.counterDataSize = image.size();
        init.pCounterData = image.data();
        check(cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");
        return image;
    }

    void setConfig(const std::vector<std::uint8_t>& config, std::vector<std::uint8_t>& counterData, std::size_t ranges,
                   CUpti_ProfilerReplayMode replay) {
        CUpti_RangeProfiler_SetConfig_Params p{};
        p.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = m_object;
        p.configSize = config.size();
        p.pConfig = config.data();
        p.counterDataImageSize = counterData.size();
        p.pCounterDataImage = counterData.data();
        // One range per kernel, whatever the replay.
        p.range = CUPTI_AutoRange;
        p.replayMode = replay;
        p.maxRangesPerPass = ranges;
        p.numNestingLevels = 1;
        p.minNestingLevel = 1;
        p.passIndex = 0;
        p.targetNestingLevel = 1;
        check(cuptiRangeProfilerSetConfig(&p), "cuptiRangeProfilerSetConfig");
    }

    void start() {
        CUpti_RangeProfiler_Start_Params p{};
        p.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = m_object;
        check(cuptiRangeProfilerStart(&p), "cuptiRangeProfilerStart");
        m_started = true;
    }

    void stop(bool& allPassesSubmitted) {
        const CUptiResult r = stop(allPassesSubmitted, std::nothrow);
        check(r, "cuptiRangeProfilerStop");
    }

    std::size_t decode() {
        CUpti_RangeProfiler_DecodeData_Params p{};
        p.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = m_object;
        check(cuptiRangeProfilerDecodeData(&p), "cuptiRangeProfilerDecodeData");
        return p.numOfRangeDropped;
    }

private:
    CUptiResult stop(bool& allPassesSubmitted, const std::nothrow_t&) {
        CUpti_RangeProfiler_Stop_Params p{};
        p.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = m_object;
        const CUptiResult r = cuptiRangeProfilerStop(&p);
        m_started = false;
        allPassesSubmitted = p.isAllPassSubmitted != 0;
        return r;
    }

    CUpti_RangeProfiler_Object* m_object = nullptr;
    bool m_started = false;
};

struct Collected {
    std::vector<std::uint8_t> counterData;
    std::size_t dropped = 0;
    int runs = 0;
};

// One profiling session: every pass the config needs, then the counter data decoded.
Collected runSession(CUcontext context, CUpti_ProfilerReplayMode replay, const std::vector<std::uint8_t>& config,
                     std::vector<const char*>& metrics, std::size_t kernels, std::size_t passes,
                     const std::function<void()>& prepare, const std::function<std::string()>& launch) {
    RangeSession session(context);
    Collected c;
    c.counterData = session.counterDataImage(metrics, kernels);
    session.setConfig(config, c.counterData, kernels, replay);
    // Kernel replay submits every pass in one run; user replay needs one run per pass.
    const int cap = replay == CUPTI_KernelReplay ? 4 : static_cast<int>(std::max<std::size_t>(64, 2 * passes));
    bool allSubmitted = false;
    while (!allSubmitted && c.runs < cap) {
        prepare();
        session.start();
        ++c.runs;
        if (const std::string failed = launch(); !failed.empty())
            throw RunFailure(failed);
        session.stop(allSubmitted);
    }
    if (!allSubmitted)
        throw std::runtime_error("CUPTI still wanted passes after " + std::to_string(c.runs) + " runs of the plan");
    c.dropped = session.decode();
    return c;
}

std::size_t rangesIn(const std::vector<std::uint8_t>& counterData) {
    CUpti_RangeProfiler_GetCounterDataInfo_Params p{};
    p.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    p.pCounterDataImage = counterData.data();
    p.counterDataImageSize = counterData.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&p), "cuptiRangeProfilerGetCounterDataInfo");
    return p.numTotalRanges;
}

// ---- what is reported, from which counters --------------------------------------------------------

enum class Combine {
    Sum,      // counts add up over the kernels
    Weighted, // ratios: the kernels' mean weighted by duration
};

// One addend of an output: the first alternative of which this GPU has any metric, with every metric
// of it that the GPU has (chips split the same counts differently: GH100 has one FP16 tensor counter,
// GA100 one per accumulator type).
struct Term {
    std::vector<std::vector<const char*>> alternatives;
    double factor = 1.0;
};

struct Output {
    const char* key;
    Combine combine;
    std::vector<Term> terms;
};

Term one(const char* metric, double factor = 1.0) {
    return Term{{{metric}}, factor};
}

const std::vector<Output>& outputs() {
    static const std::vector<Output> list{
        {"duration_ns", Combine::Sum, {one("gpu__time_duration.sum")}},
        {"dram_bytes", Combine::Sum, {one("dram__bytes.sum")}},
        {"dram_read_bytes", Combine::Sum, {one("dram__bytes_read.sum")}},
        {"dram_write_bytes", Combine::Sum, {one("dram__bytes_write.sum")}},
        {"l2_bytes", Combine::Sum, {one("lts__t_bytes.sum")}},
        {"fp32_flops",
         Combine::Sum,
         {one("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2.0),
          one("sm__sass_thread_inst_executed_op_fadd_pred_on.sum"),
          one("sm__sass_thread_inst_executed_op_fmul_pred_on.sum")}},
        {"fp64_flops",
         Combine::Sum,
         {one("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2.0),
          one("sm__sass_thread_inst_executed_op_dadd_pred_on.sum"),
          one("sm__sass_thread_inst_executed_op_dmul_pred_on.sum")}},
        {"fp16_flops",
         Combine::Sum,
         {one("sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 2.0),
          one("sm__sass_thread_inst_executed_op_hadd_pred_on.sum"),
          one("sm__sass_thread_inst_executed_op_hmul_pred_on.sum")}},
        {"tensor_flops",
         Combine::Sum,
         {Term{{{"sm__ops_path_tensor_src_fp16.sum"},
                {"sm__ops_path_tensor_src_fp16_dst_fp16.sum", "sm__ops_path_tensor_src_fp16_dst_fp32.sum"}},
               kTensorFlopsPerOp},
          Term{{{"sm__ops_path_tensor_src_bf16_dst_fp32.sum"}}, kTensorFlopsPerOp},
          Term{{{"sm__ops_path_tensor_src_tf32_dst_fp32.sum"}}, kTensorFlopsPerOp},
          Term{{{"sm__ops_path_tensor_src_fp64.sum"}}, kTensorFlopsPerOp},
          Term{{{"sm__ops_path_tensor_src_fp8.sum"},
                {"sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp16.sum",
                 "sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp32.sum"}},
               kTensorFlopsPerOp},
          // Turing counts FP16 with an FP32 accumulator in one counter with the formats it lacks.
          Term{{{"sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum"}}, kTensorFlopsPerOp}}},
        {"achieved_occupancy", Combine::Weighted, {one("sm__warps_active.avg.pct_of_peak_sustained_active", 0.01)}},
        {"sm_throughput", Combine::Weighted, {one("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0.01)}},
        {"dram_throughput", Combine::Weighted, {one("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 0.01)}},
    };
    return list;
}

// Collected only under KFORGE_CUDA_TRACE, to check the tensor formula against instruction counts.
const std::vector<const char*> kTraceOnly{
    "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_op_hgmma_src_fp16.sum"};

struct Plan {
    struct Resolved {
        const Output* output = nullptr;
        std::vector<std::pair<std::size_t, double>> metrics; // index into names, factor
    };
    std::vector<const char*> names; // every metric to collect, once
    std::vector<Resolved> outputs;
    std::vector<std::string> missing;
};

Plan resolve(const HostObject& host, bool trace) {
    Plan plan;
    std::map<std::string, std::size_t> index;
    const auto add = [&](const char* name) {
        auto it = index.find(name);
        if (it != index.end())
            return it->second;
        plan.names.push_back(name);
        return index[name] = plan.names.size() - 1;
    };
    for (const Output& out : outputs()) {
        Plan::Resolved r;
        r.output = &out;
        std::string lacking;
        for (const Term& term : out.terms) {
            bool found = false;
            for (const auto& alternative : term.alternatives) {
                for (const char* metric : alternative)
                    if (host.knows(metric)) {
                        r.metrics.emplace_back(add(metric), term.factor);
                        found = true;
                    }
                if (found)
                    break;
            }
            // Chips without a number format lack its counter; that is no gap in what is reported.
            const bool optional = out.combine == Combine::Sum && std::string(out.key) == "tensor_flops";
            if (!found && !optional)
                lacking += std::string(lacking.empty() ? "" : ", ") + term.alternatives.front().front();
        }
        if (r.metrics.empty())
            plan.missing.push_back(std::string(out.key) + " (" + (lacking.empty() ? "no tensor counters" : lacking)
                                   + ")");
        else if (!lacking.empty())
            plan.missing.push_back(std::string(out.key) + " is partial (" + lacking + " missing)");
        if (!r.metrics.empty())
            plan.outputs.push_back(std::move(r));
    }
    if (trace)
        for (const char* metric : kTraceOnly)
            if (host.knows(metric))
                add(metric);
    return plan;
}

std::string chipName(int ordinal) {
    CUpti_Device_GetChipName_Params p{};
    p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    p.deviceIndex = static_cast<std::size_t>(ordinal);
    check(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
    return p.pChipName ? p.pChipName : "";
}

std::vector<std::uint8_t> counterAvailability(CUcontext context) {
    CUpti_Profiler_GetCounterAvailability_Params p{};
    p.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    p.ctx = context;
    check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
    p.pCounterAvailabilityImage = image.data();
    check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    image.resize(p.counterAvailabilityImageSize);
    return image;
}

std::size_t passesFor(std::vector<std::uint8_t>& config) {
    CUpti_Profiler_Host_GetNumOfPasses_Params p{};
    p.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    p.configImageSize = config.size();
    p.pConfigImage = config.data();
    return cuptiProfilerHostGetNumOfPasses(&p) == CUPTI_SUCCESS ? p.numOfPasses : 0;
}

// Why the device cannot be profiled at all, or "" when it can.
protocol::ProfileResult deviceSupport(CUdevice device) {
    CUpti_Profiler_DeviceSupported_Params p{};
    p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    p.cuDevice = device;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    check(cuptiProfilerDeviceSupported(&p), "cuptiProfilerDeviceSupported");
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return {"ok", "", {}};
    std::string why;
    const auto note = [&](const char* what, CUpti_Profiler_Support_Level level) {
        if (level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
            why += std::string(why.empty() ? "" : ", ") + what + " " + supportText(level);
    };
    note("architecture (compute capability 7.0+ needed):", p.architecture);
    note("SLI:", p.sli);
    note("vGPU:", p.vGpu);
    note("confidential computing:", p.confidentialCompute);
    note("CMP:", p.cmp);
    note("WSL:", p.wsl);
    if (p.vGpu == CUPTI_PROFILER_CONFIGURATION_DISABLED)
        return {"not_permitted",
                "CUPTI's range profiler is disabled on this vGPU (" + why + "); the host must enable profiling for it",
                {}};
    return {"unsupported",
            "CUPTI's range profiler does not support this device (" + (why.empty() ? "no reason given" : why) + ")",
            {}};
}

} // namespace

protocol::ProfileResult RangeProfiler::collect(CUcontext context, CUdevice device, int ordinal, std::size_t kernels,
                                               const std::function<void()>& prepare,
                                               const std::function<std::string()>& launch, bool trace) {
    if (kernels == 0)
        return {"ok", "the launch plan launches no kernels", {}};
    try {
        preloadMetricLibraries();
        ProfilerInit init;
        if (auto support = deviceSupport(device); support.status != "ok")
            return support;
        const std::string chip = chipName(ordinal);
        // Asked before the session exists: CUPTI refuses it while a profiling session is open.
        const std::vector<std::uint8_t> availability = counterAvailability(context);
        HostObject host(chip, availability);
        Plan plan = resolve(host, trace);
        if (plan.outputs.empty())
            return {"unsupported", "none of the metrics kforge reports exists on " + chip, {}};
        std::vector<std::uint8_t> config = host.configImage(plan.names);
        const std::size_t passes = passesFor(config);

        Collected collected;
        std::string replay = "user replay, caches flushed before each pass as before a timed run";
        try {
            collected = runSession(context, CUPTI_UserReplay, config, plan.names, kernels, passes, prepare, launch);
        } catch (const CuptiFailure& f) {
            // Only a refusal of the combination falls back; anything else is the real problem.
            if (f.call != "cuptiRangeProfilerSetConfig")
                throw;
            collected = runSession(context, CUPTI_KernelReplay, config, plan.names, kernels, passes, prepare, launch);
            replay = "kernel replay (user replay refused: " + std::string(f.what())
                     + "), so passes after the first may see a warm L2";
        }
        std::vector<std::uint8_t>& counterData = collected.counterData;
        const std::size_t dropped = collected.dropped;
        const std::size_t ranges = rangesIn(counterData);

        std::map<std::string, double> sums;
        std::map<std::string, double> weights;
        for (std::size_t range = 0; range < ranges; ++range) {
            const std::vector<double> values = host.evaluate(counterData, range, plan.names);
            const auto valueOf = [&](std::size_t i) { return std::isfinite(values[i]) ? values[i] : 0.0; };
            double duration = 1.0;
            for (const auto& r : plan.outputs)
                if (std::string(r.output->key) == "duration_ns")
                    duration = valueOf(r.metrics.front().first);
            for (const auto& r : plan.outputs) {
                double v = 0.0;
                for (const auto& [i, factor] : r.metrics)
                    v += factor * valueOf(i);
                if (r.output->combine == Combine::Sum) {
                    sums[r.output->key] += v;
                } else {
                    sums[r.output->key] += v * duration;
                    weights[r.output->key] += duration;
                }
            }
            if (trace) {
                std::fprintf(stderr, "kforge-worker-cuda: profile range %zu of %zu on %s:\n", range + 1, ranges,
                             chip.c_str());
                for (std::size_t i = 0; i < plan.names.size(); ++i)
                    std::fprintf(stderr, "  %-60s %.6g\n", plan.names[i], values[i]);
            }
        }

        protocol::ProfileResult result;
        result.status = "ok";
        for (const auto& [key, v] : sums) {
            auto w = weights.find(key);
            result.metrics[key] = w == weights.end() ? v : (w->second > 0.0 ? v / w->second : 0.0);
        }
        result.metrics["kernels"] = static_cast<double>(ranges);
        result.message = "CUPTI range profiler on " + chip + ": " + std::to_string(ranges)
                         + " kernel(s), one range each, " + std::to_string(passes) + " passes, " + replay + " ("
                         + std::to_string(collected.runs) + " run(s) of the plan)";
        if (ranges != kernels)
            result.message += "; the plan launches " + std::to_string(kernels) + " kernels but "
                              + std::to_string(ranges) + " ranges were recorded";
        if (dropped > 0)
            result.message += "; CUPTI dropped " + std::to_string(dropped) + " ranges";
        if (!plan.missing.empty()) {
            std::string list;
            for (const auto& m : plan.missing)
                list += (list.empty() ? "" : "; ") + m;
            result.message += "; not available on this GPU: " + list;
        }
        return result;
    } catch (const CuptiFailure& f) {
        return classify(f);
    } catch (const RunFailure& f) {
        return {"error", std::string("the profiled run failed: ") + f.what(), {}};
    } catch (const std::exception& e) {
        return {"error", std::string("profiling failed: ") + e.what(), {}};
    }
}

#endif

} // namespace kforge::cuda
