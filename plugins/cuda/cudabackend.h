#pragma once
// The CUDA backend of the evaluation worker: one device's primary context and one non-blocking
// stream of its own, kernel files compiled by NVRTC to CUBINs (through a disk cache), buffers, and
// launches of a resolved launch plan timed by CUPTI's activity records (or by CUDA events, for the
// KernelBench protocol and where CUPTI cannot be used). The driver is loaded at run time, so the
// worker starts, compiles and explains itself on machines without one.

#include "backend.h"
#include "cudadriver.h"
#include "nvrtccompiler.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kforge::cuda {

// An owned driver object (stream, event, device memory), destroyed once through the driver table.
template <typename T, typename Traits> class DriverHandle {
public:
    DriverHandle() = default;
    explicit DriverHandle(T h) : m_h(h) {}
    ~DriverHandle() { reset(); }
    DriverHandle(const DriverHandle&) = delete;
    DriverHandle& operator=(const DriverHandle&) = delete;
    DriverHandle(DriverHandle&& o) noexcept : m_h(o.release()) {}
    DriverHandle& operator=(DriverHandle&& o) noexcept {
        if (this != &o)
            reset(o.release());
        return *this;
    }

    T get() const { return m_h; }
    explicit operator bool() const { return m_h != T{}; }
    // Gives the object up without destroying it (a lost context is never touched again).
    T release() {
        T h = m_h;
        m_h = T{};
        return h;
    }
    void reset(T h = T{}) {
        if (m_h != T{})
            Traits::destroy(m_h);
        m_h = h;
    }

private:
    T m_h{};
};

namespace detail {
struct StreamTraits {
    static void destroy(CUstream s);
};
struct EventTraits {
    static void destroy(CUevent e);
};
struct MemoryTraits {
    static void destroy(CUdeviceptr p);
};
struct ModuleTraits {
    static void destroy(CUmodule m);
};
} // namespace detail

using StreamHandle = DriverHandle<CUstream, detail::StreamTraits>;
using EventHandle = DriverHandle<CUevent, detail::EventTraits>;
using MemoryHandle = DriverHandle<CUdeviceptr, detail::MemoryTraits>;
using ModuleHandle = DriverHandle<CUmodule, detail::ModuleTraits>;

// The device's context while the backend holds it. Programs keep a weak reference, so that a module
// is unloaded only while the context it was loaded into is still alive and usable.
struct ContextState {
    CUcontext context = nullptr;
    bool lost = false;
};

// A section of a CUBIN's module-scope memory (".nv.global", ".nv.global.init") and the object
// symbols in it, at their offsets.
struct GlobalSection {
    struct Symbol {
        std::string name;
        std::size_t offset = 0;
        std::size_t bytes = 0;
    };
    std::string name;
    std::size_t bytes = 0;
    std::vector<Symbol> symbols;
};

// The module-scope memory sections of a CUBIN image; what a malformed image lets be read.
std::vector<GlobalSection> cubinGlobalSections(const std::string& image);

// A kernel file compiled to a CUBIN, with the lowered names of its launched kernels. NVRTC builds it
// on any thread; the module is loaded into the device's context later, on the evaluating thread.
class CudaProgram final : public harness::Program {
public:
    CudaProgram(std::string role, std::string arch, std::string cubin, std::map<std::string, std::string> loweredNames);
    ~CudaProgram() override;
    CudaProgram(const CudaProgram&) = delete;
    CudaProgram& operator=(const CudaProgram&) = delete;

    const std::string& role() const { return m_role; }
    const std::string& arch() const { return m_arch; }
    const std::string& cubin() const { return m_cubin; }
    // The symbol NVRTC gave `kernel` ("" when the launch plan did not name it at compile time).
    std::string loweredName(const std::string& kernel) const;

private:
    friend class CudaBackend;

    // A module-scope variable (`__device__`), with its contents when the module was loaded: they
    // are written back before every run so that no run sees what an earlier one left there.
    struct Global {
        std::string name;
        CUdeviceptr address = 0;
        std::vector<unsigned char> initial;
    };

    struct Kernel {
        CUfunction function = nullptr;
        int staticSmemBytes = 0;             // its own __shared__ variables
        int dynamicSmemLimit = 48 * 1024;    // dynamic bytes it may take as it stands (less its static ones)
        std::vector<std::size_t> paramSizes; // from cuFuncGetParamInfo, when the driver has it
        bool paramsKnown = false;
    };

    std::string m_role;
    std::string m_arch;
    std::string m_cubin;
    std::map<std::string, std::string> m_lowered;

    std::vector<GlobalSection> m_globalSections; // from the CUBIN's section headers and symbol table
    std::vector<Global> m_globals;               // located in the loaded module
    std::string m_stateProblem;                  // why module-scope memory cannot be restored: a rejection

    CUmodule m_module = nullptr;
    std::weak_ptr<ContextState> m_loadedIn;
    std::map<std::string, Kernel> m_kernels;
};

// What a kernel that failed on the device with `r` may have done wrong that the error does not say,
// for a launch plan with `tensorMaps` TMA tensor maps: "" when there is nothing to add, else text
// that starts with "; ".
std::string deviceFaultHint(CUresult r, std::size_t tensorMaps);

class CudaBackend final : public harness::Backend {
public:
    CudaBackend();
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string name() const override { return "cuda"; }
    spec::Dialect dialect() const override { return spec::Dialect::Cuda; }
    protocol::ProbeResult probe() override;

    spec::Status open(int device) override;

    std::vector<protocol::Diagnostic> staticCheck(const std::string& source) const override;

    harness::CompileOutput compile(const std::string& source, const std::vector<std::string>& defines,
                                   const std::string& role) override;
    std::map<std::string, double> launchResources(harness::Program& program, const spec::LaunchPlan& plan) override;

    spec::Expected<harness::BufferId> allocate(std::size_t bytes) override;
    void release(harness::BufferId id) override;
    spec::Status upload(harness::BufferId id, const void* data, std::size_t bytes) override;
    spec::Expected<harness::BufferId> view(harness::BufferId parent, std::size_t offset, std::size_t bytes) override;
    spec::Status download(harness::BufferId id, void* data, std::size_t bytes, std::size_t offset = 0) override;
    std::string bindingProblem(harness::Program& program, const spec::LaunchPlan& plan) override;
    spec::Expected<nlohmann::json> portableLaunches(harness::Program& program, const spec::LaunchPlan& plan) override;
    spec::Status fill(harness::BufferId id, const void* pattern, std::size_t patternSize, std::size_t bytes) override;
    // harness::digest computed on the device by a small trusted kernel: 8 bytes come back.
    spec::Expected<std::uint64_t> digest(harness::BufferId id, std::size_t bytes, std::uint64_t key) override;
    bool digestsOnDevice() const override { return m_digestsOnDevice; }

    spec::Expected<harness::RunResult> run(harness::Program& program, const spec::LaunchPlan& plan,
                                           const harness::Bindings& bindings,
                                           const harness::AfterLaunch& afterLaunch = {}) override;
    std::string timingMethod() const override;
    void setWatched(bool watched) override { m_watched = watched; }
    spec::Status setTimingMode(harness::TimingMode mode) override;
    // Before a timed run's turn: waits for the queued fills, discards CUPTI's older records and
    // pays CUPTI's first-launch cost with an empty flush, all while the device is shared.
    void prepareTimedRun() override;
    // Evicts every cache line a previous run left (a read of twice the L2 by the worker's own
    // kernel, queued before the run's launches), so that the next run starts from cold, clean caches.
    void flushCaches() override;

    // One extra run of the plan under CUPTI's range profiler (rangeprofiler.h); activity tracing is
    // paused around it and resumed for the timed runs that follow.
    protocol::ProfileResult profile(harness::Program& program, const spec::LaunchPlan& plan,
                                    const harness::Bindings& bindings) override;
    // Micro-kernel ceilings of the open device (ceilings.h), cached per device name, UUID and driver.
    protocol::CeilingsResult ceilings(bool refresh) override;
    // PTX and, where the toolkit's disassembler is installed, SASS (cudalisting.h); for the open
    // device's architecture when `arch` is 0.
    protocol::DisassembleResult disassemble(const std::string& source, const std::vector<std::string>& defines,
                                            int arch, bool machineCode) override;

    std::string deviceKey() const override { return m_deviceName.empty() ? std::string() : ceilingsKey(); }
    bool deviceLost() const override { return m_state && m_state->lost; }

    const NvrtcCompiler& compiler() const { return m_compiler; }
    // Compute capability of the open device as major * 10 + minor; 0 when none is open.
    int computeCapability() const { return m_cc.load(); }

private:
    // Compiles and loads the digest and flush kernels once; the problem, or empty when they are there.
    const std::string& loadHelpers();
    // Queues the worker's flush kernel, reading `count` 16-byte words of the flush buffer.
    CUresult launchFlushKernel(unsigned blocks, unsigned threads, unsigned long long count);
    // Whether the next run is timed by CUPTI's activity records: a watched run (a candidate's or the
    // baseline's) in the default timing mode, with tracing on.
    bool timesWithCupti() const { return m_watched && m_timingMode == harness::TimingMode::Default && m_cuptiActive; }

    struct Buffer {
        MemoryHandle memory;    // empty for a view
        std::size_t bytes = 0;  // as requested, for bounds checks on upload/download
        CUdeviceptr viewOf = 0; // a view's address inside its parent
        CUdeviceptr ptr() const { return viewOf ? viewOf : memory.get(); }
    };
    spec::Status resetGlobals(CudaProgram& program);

    void close();
    spec::Status ready(const char* what);
    spec::Status load(CudaProgram& program);
    spec::Expected<CudaProgram::Kernel*> kernel(CudaProgram& program, const std::string& name, std::uint64_t smemBytes);
    spec::Expected<CUdeviceptr> bufferFor(harness::BufferId id) const;
    // A TMA descriptor for a tensor map of the plan over the buffer `bindings` gives its input or
    // output; encoded for every run, as the buffers change between input sets.
    spec::Expected<std::unique_ptr<CUtensorMap>> encodeTensorMap(const spec::ResolvedTensorMap& map,
                                                                 const harness::Bindings& bindings) const;
    // Marks the context lost when `r` (or the context's state after it) says it cannot be used
    // again; returns the text to append to an error message.
    std::string noteError(CUresult r);
    void startCupti();
    // A guard that stops CUPTI's activity tracing while it lives (the range profiler and the ceiling
    // micro-kernels run without it) and resumes it afterwards if it was on.
    class TracingPause;
    // "NVIDIA H200|GPU-8c1d...|580.159.04": what a cached ceiling is valid for.
    std::string ceilingsKey() const;
    int defaultComputeCapability() const;
    std::string launchHint(CUresult r, CudaProgram::Kernel& k, const spec::ResolvedLaunch& launch) const;

    const CudaDriver& m_driver;
    NvrtcCompiler m_compiler;

    int m_deviceIndex = -1;
    CUdevice m_device = 0;
    std::shared_ptr<ContextState> m_state; // set while a device is open
    StreamHandle m_stream;
    EventHandle m_start;
    EventHandle m_stop;
    std::atomic<int> m_cc{0}; // read by compile() on other threads
    int m_maxThreadsPerSm = 2048;
    int m_registersPerBlock = 65536;
    std::size_t m_l2Bytes = 0;
    MemoryHandle m_flushBuffer;
    std::size_t m_flushBytes = 0;
    unsigned char m_flushValue = 0;
    int m_helpersQueued = 0;       // the worker's kernels on the stream since CUPTI's last discard
    bool m_cuptiDiscarded = false; // prepareTimedRun() discarded CUPTI's older records already
    // The worker's digest and flush kernels, compiled and loaded at first use on a context.
    ModuleHandle m_helperModule;
    CUfunction m_digestFunction = nullptr;
    CUfunction m_flushFunction = nullptr;
    std::string m_flushKernelName;
    MemoryHandle m_digestSum; // where the digest adds up its 8-byte sum
    std::string m_helperProblem;
    bool m_digestsOnDevice = harness::deviceDigestsWanted(true);
    int m_multiprocessors = 1;

    harness::TimingMode m_timingMode = harness::TimingMode::Default;
    bool m_watched = true; // runs of a candidate are timed and checked through CUPTI
    bool m_cuptiActive = false;
    bool m_cuptiSeenKernel = false;
    std::string m_cuptiProblem; // why CUPTI is not used, once that is known
    std::uint32_t m_cuptiContext = 0;
    std::uint32_t m_cuptiStream = 0;
    bool m_trace = false;                      // KFORGE_CUDA_TRACE=1: each run's kernel records on stderr
    std::set<std::string> m_loadedKernelNames; // lowered names of every kernel loaded by this worker

    std::map<harness::BufferId, Buffer> m_buffers;
    harness::BufferId m_nextBuffer = 1;
};

} // namespace kforge::cuda
