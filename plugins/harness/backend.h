#pragma once
// What a worker backend (OpenCL, CUDA) provides to the backend-independent evaluator: a device,
// compiled programs, buffers, and timed launches of a resolved launch plan. Everything that decides
// whether a candidate is correct lives in the evaluator, so every backend is held to the same rules.

#include "digest.h"
#include "launchplan.h"
#include "protocol.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kforge::harness {

// A program built from one kernel file; owned by the backend's caller.
class Program {
public:
    virtual ~Program() = default;
};

using BufferId = int;

struct CompileOutput {
    bool ok = false;
    std::string log;
    double seconds = 0.0;
    std::map<std::string, double> resources; // registers, shared_bytes, spill_bytes... when known
    std::unique_ptr<Program> program;
    // Set when the program built but must not run (e.g. too much module-scope state): the
    // evaluator rejects the kernel with this message.
    std::string rejection;
};

// Buffers bound to one run of a launch plan, indexed like the task's inputs/outputs and the plan's
// scratch list.
struct Bindings {
    std::vector<BufferId> inputs;
    std::vector<BufferId> outputs;
    std::vector<BufferId> scratch;
};

// What one run of a launch plan reports.
struct RunResult {
    double microseconds = 0.0;    // the kernels' own execution time, summed over the launches
    std::string integrityProblem; // e.g. "a kernel was still running after the synchronisation"
    // Host time the run spent in named steps of its own (e.g. "cupti": collecting the timer's
    // records), charged to those steps in the evaluation's phase breakdown instead of to the run.
    std::vector<std::pair<std::string, double>> stepSeconds;
};

// Called between the launches of a multi-launch plan, after launch `index` (0-based) has finished
// and before the next starts, so the evaluator can check what a launch left behind (inputs changed
// and restored later by another launch).
using AfterLaunch = std::function<void(std::size_t index)>;

// Module-scope state of a compiled program (CUDA `__device__` variables, OpenCL program-scope
// `global` variables) survives between launches. Programs with more than this are rejected;
// below it, the backend restores the state's initial contents before every run.
constexpr std::size_t kMaxModuleStateBytes = 64 * 1024;

// How runs are timed. Default: the backend's most precise kernel timer (CUPTI activity records,
// OpenCL profiling). KernelBench: CUDA events around the whole launch sequence, as KernelBench's
// published protocol does, so figures can be set beside published ones.
enum class TimingMode { Default, KernelBench };

inline bool isBufferBinding(const spec::ArgBinding& a) {
    using Kind = spec::ArgBinding::Kind;
    return a.kind == Kind::Input || a.kind == Kind::Output || a.kind == Kind::Scratch;
}

// The input or output a tensor map argument describes, as a buffer argument binding it would be
// (for boundBuffer).
inline spec::ArgBinding tensorMapBufferBinding(const spec::ResolvedTensorMap& m) {
    spec::ArgBinding b;
    b.kind = m.bufferKind;
    b.index = m.buffer;
    b.name = m.name;
    return b;
}

// "line 12: launch softmax: ", the start of every message about one launch of a plan.
inline std::string launchWhere(const spec::ResolvedLaunch& l) {
    return "line " + std::to_string(l.line) + ": launch " + l.kernel + ": ";
}

// "input", "output" or "scratch buffer", for messages.
inline const char* bufferKindName(const spec::ArgBinding& a) {
    using Kind = spec::ArgBinding::Kind;
    return a.kind == Kind::Input ? "input" : a.kind == Kind::Output ? "output" : "scratch buffer";
}

// The buffer a buffer argument binds to in `bindings`, or what is wrong.
inline spec::Expected<BufferId> boundBuffer(const Bindings& bindings, const spec::ArgBinding& a) {
    using Kind = spec::ArgBinding::Kind;
    if (!isBufferBinding(a))
        return spec::fail("'" + a.name + "' is a value, not a buffer");
    const std::vector<BufferId>& list = a.kind == Kind::Input    ? bindings.inputs
                                        : a.kind == Kind::Output ? bindings.outputs
                                                                 : bindings.scratch;
    if (a.index < 0 || static_cast<std::size_t>(a.index) >= list.size())
        return spec::fail(std::string("no buffer is bound for ") + bufferKindName(a) + " " + std::to_string(a.index));
    return list[static_cast<std::size_t>(a.index)];
}

// The entry of buffer `id` in a backend's buffer map (whose entries record their size in `bytes`),
// checked to hold `bytes` bytes in whole `unit`s from `offset`; `op` names the transfer in messages.
template <typename Map>
spec::Expected<typename Map::mapped_type*> transferTarget(Map& buffers, BufferId id, std::size_t bytes, const char* op,
                                                          std::size_t unit = 1, std::size_t offset = 0) {
    auto it = buffers.find(id);
    if (it == buffers.end())
        return spec::fail(std::string(op) + ": buffer " + std::to_string(id) + " does not exist");
    if (offset > it->second.bytes)
        return spec::fail(std::string(op) + " at byte " + std::to_string(offset) + " of buffer " + std::to_string(id)
                          + " of " + std::to_string(it->second.bytes) + " bytes");
    if (bytes > it->second.bytes - offset || unit == 0 || bytes % unit != 0)
        return spec::fail(std::string(op) + " of " + std::to_string(bytes) + " bytes"
                          + (unit > 1 ? " in " + std::to_string(unit) + "-byte units" : "") + " on buffer "
                          + std::to_string(id) + " of " + std::to_string(it->second.bytes) + " bytes");
    return &it->second;
}

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0; // "opencl", "cuda"
    virtual spec::Dialect dialect() const = 0;
    virtual protocol::ProbeResult probe() = 0;

    // Selects the device for the following calls. Cheap when it is already open.
    virtual spec::Status open(int device) = 0;
    // The open device: its name (empty while none is open) and limits.
    const std::string& deviceName() const { return m_deviceName; }
    // Tells the open device apart from every other on this host, for the workers that share it to
    // take turns at timing (DeviceLock); empty where there is nothing to share.
    virtual std::string deviceKey() const { return {}; }
    const spec::DeviceLimits& limits() const { return m_limits; }

    // Problems in the source that reject it before compiling (vendor libraries, host tricks...).
    virtual std::vector<protocol::Diagnostic> staticCheck(const std::string& source) const = 0;

    // Builds one kernel file. May be called from several threads at once (the evaluator compiles
    // reference, candidate and baseline together), so it must not depend on per-thread device state.
    virtual CompileOutput compile(const std::string& source, const std::vector<std::string>& defines,
                                  const std::string& role) = 0;

    // Facts about a compiled program under its launch plan, called on the evaluating thread before
    // the first run: per kernel registers, shared and local (spill) bytes, theoretical occupancy...
    // Keys read "<kernel>.<fact>", e.g. "row_max.registers", "row_max.occupancy".
    virtual std::map<std::string, double> launchResources(Program& program, const spec::LaunchPlan& plan) {
        (void)program;
        (void)plan;
        return {};
    }

    // What is wrong with binding the plan's arguments to the kernels the compiler built (argument
    // count, sizes, names, address spaces, as far as the backend can tell), checked before the
    // first run so that a signature the compiler never saw (a decoy in an inactive #if) cannot
    // decide the binding; empty when they agree.
    virtual std::string bindingProblem(Program& program, const spec::LaunchPlan& plan) {
        (void)program;
        (void)plan;
        return {};
    }

    // The plan's launches as a process of its own can repeat them with the driver alone (see
    // torchbridge.py's "kernel"): the compiled image in hex, and each launch's kernel symbol,
    // extents, thread block cluster, shared memory and arguments (buffers by task index, values as
    // their bytes in hex, tensor maps by index into "tensor_maps", which hold the encoding's
    // arguments for that process's tensors). An error names what such a process could not
    // reproduce (module state).
    virtual spec::Expected<nlohmann::json> portableLaunches(Program& program, const spec::LaunchPlan& plan) {
        (void)program;
        (void)plan;
        return spec::fail("the " + name() + " backend's kernels cannot be launched in another process");
    }

    virtual spec::Expected<BufferId> allocate(std::size_t bytes) = 0;
    // A buffer for `bytes` bytes of `parent` from `offset` (a multiple of 4096), usable wherever a
    // buffer is; the parent must outlive it. The evaluator puts guard regions around a candidate's
    // buffers this way.
    virtual spec::Expected<BufferId> view(BufferId parent, std::size_t offset, std::size_t bytes) = 0;
    virtual void release(BufferId id) = 0;
    virtual spec::Status upload(BufferId id, const void* data, std::size_t bytes) = 0;
    // Reads `bytes` bytes from `offset` into the buffer.
    virtual spec::Status download(BufferId id, void* data, std::size_t bytes, std::size_t offset = 0) = 0;
    // Fills `bytes` bytes of a buffer by repeating a 1-, 2-, 4- or 8-byte pattern. The default
    // uploads a host copy; backends with a device-side memset override it.
    virtual spec::Status fill(BufferId id, const void* pattern, std::size_t patternSize, std::size_t bytes) {
        std::vector<unsigned char> host(bytes);
        for (std::size_t i = 0; i + patternSize <= bytes; i += patternSize)
            std::memcpy(host.data() + i, pattern, patternSize);
        return upload(id, host.data(), bytes);
    }

    // The digest (digest.h) of the first `bytes` bytes of a buffer, with `key`. The default reads
    // the buffer back in chunks and digests it here; a backend that digests on the device, where
    // only the 8-byte result crosses the bus, overrides it and says so in digestsOnDevice().
    virtual spec::Expected<std::uint64_t> digest(BufferId id, std::size_t bytes, std::uint64_t key) {
        constexpr std::size_t kChunk = std::size_t{64} << 20;
        std::vector<unsigned char> host(std::min(bytes, kChunk));
        std::uint64_t sum = 0;
        for (std::size_t at = 0; at < bytes; at += kChunk) {
            const std::size_t n = std::min(kChunk, bytes - at);
            if (auto st = download(id, host.data(), n, at); !st)
                return spec::Error{st.error()};
            sum += digestSum(host.data(), n, key, at / 8);
        }
        return digestFinish(sum, bytes, key);
    }
    virtual bool digestsOnDevice() const { return false; }

    // Runs every launch of `plan` in order and waits for completion. Reports the kernels' own
    // execution time, and anything the backend saw that a fair kernel does not do (work on another
    // stream, kernels that are not the plan's, work still running after the synchronisation).
    // With `afterLaunch`, every launch but the last is waited for and followed by the call.
    virtual spec::Expected<RunResult> run(Program& program, const spec::LaunchPlan& plan, const Bindings& bindings,
                                          const AfterLaunch& afterLaunch = {}) = 0;
    virtual std::string timingMethod() const = 0;
    // Whether the following runs are of a candidate, whose execution the backend times and checks
    // (the default), or of the task's trusted reference, whose outputs alone are wanted: a backend
    // may then leave out its tracing.
    virtual void setWatched(bool watched) { (void)watched; }

    // Chooses the timer for the following runs; a backend without the mode says so.
    virtual spec::Status setTimingMode(TimingMode mode) {
        if (mode == TimingMode::Default)
            return spec::success();
        return spec::fail("the " + name() + " backend has no KernelBench timing mode");
    }
    // Called before a timed run takes the device alone (and before its flushCaches()): finishes the
    // device work queued so far and does the timer's bookkeeping that need not hold the device, so
    // that the exclusive turn holds only the cache flush and the run.
    virtual void prepareTimedRun() {}
    // Evicts the device caches (e.g. by writing a buffer larger than L2) so that the next timed run
    // starts cold, as it would inside a real workload. May be queued without waiting: the run
    // follows it on the device.
    virtual void flushCaches() {}

    // Hardware metrics of one run of the plan (an extra, untimed run). Backends without counters
    // say so in the status.
    virtual protocol::ProfileResult profile(Program& program, const spec::LaunchPlan& plan, const Bindings& bindings) {
        (void)program;
        (void)plan;
        (void)bindings;
        return {"unsupported", "the " + name() + " backend has no hardware counters", {}};
    }

    // The device's measured ceilings, from the backend's cache unless `refresh`.
    virtual protocol::CeilingsResult ceilings(bool refresh) {
        (void)refresh;
        protocol::CeilingsResult r;
        r.message = "the " + name() + " backend cannot measure device ceilings";
        return r;
    }

    // What the compiler makes of one kernel file with the plan's `defines`, for compute target
    // `arch` (a compute capability; 0: the open device's): the intermediate code and, where the
    // tools exist and `machineCode`, the machine code, with the source lines they came from.
    // Compiles only; nothing is launched. Called from the worker's request loop.
    virtual protocol::DisassembleResult disassemble(const std::string& source, const std::vector<std::string>& defines,
                                                    int arch, bool machineCode) {
        (void)source;
        (void)defines;
        (void)arch;
        (void)machineCode;
        protocol::DisassembleResult r;
        r.message = "the " + name() + " backend cannot show the code its compiler makes";
        return r;
    }

    // True once an error has left the device unusable for this process (e.g. a sticky CUDA error):
    // the worker answers the request and exits so that the pool starts a fresh one.
    virtual bool deviceLost() const { return false; }

    // Called by run() as soon as the device has finished the run's work, before the backend's own
    // bookkeeping on the host (reading timer records, checking launches): the evaluator lets go of
    // the device there (DeviceLock). Empty to call nothing.
    void setDeviceDone(std::function<void()> done) { m_deviceDone = std::move(done); }

protected:
    // Set by open(), cleared when the device is closed.
    std::string m_deviceName;
    spec::DeviceLimits m_limits;

    void deviceDone() const {
        if (m_deviceDone)
            m_deviceDone();
    }

private:
    std::function<void()> m_deviceDone;
};

} // namespace kforge::harness
