#pragma once
// What a worker backend (OpenCL, CUDA) provides to the backend-independent evaluator: a device,
// compiled programs, buffers, and timed launches of a resolved launch plan. Everything that decides
// whether a candidate is correct lives in the evaluator, so every backend is held to the same rules.

#include "launchplan.h"
#include "protocol.h"

#include <cstddef>
#include <cstring>
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
};

// How runs are timed. Default: the backend's most precise kernel timer (CUPTI activity records,
// OpenCL profiling). KernelBench: CUDA events around the whole launch sequence, as KernelBench's
// published protocol does, so figures can be set beside published ones.
enum class TimingMode { Default, KernelBench };

inline bool isBufferBinding(const spec::ArgBinding& a) {
    using Kind = spec::ArgBinding::Kind;
    return a.kind == Kind::Input || a.kind == Kind::Output || a.kind == Kind::Scratch;
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
    const std::vector<BufferId>& list = a.kind == Kind::Input ? bindings.inputs : a.kind == Kind::Output ? bindings.outputs : bindings.scratch;
    if (a.index < 0 || static_cast<std::size_t>(a.index) >= list.size())
        return spec::fail(std::string("no buffer is bound for ") + bufferKindName(a) + " " + std::to_string(a.index));
    return list[static_cast<std::size_t>(a.index)];
}

// The entry of buffer `id` in a backend's buffer map (whose entries record their size in `bytes`),
// checked to hold `bytes` bytes in whole `unit`s; `op` names the transfer in messages.
template <typename Map>
spec::Expected<typename Map::mapped_type*> transferTarget(Map& buffers, BufferId id, std::size_t bytes, const char* op,
                                                           std::size_t unit = 1) {
    auto it = buffers.find(id);
    if (it == buffers.end())
        return spec::fail(std::string(op) + ": buffer " + std::to_string(id) + " does not exist");
    if (bytes > it->second.bytes || unit == 0 || bytes % unit != 0)
        return spec::fail(std::string(op) + " of " + std::to_string(bytes) + " bytes" + (unit > 1 ? " in " + std::to_string(unit) + "-byte units" : "")
                          + " on buffer " + std::to_string(id) + " of " + std::to_string(it->second.bytes) + " bytes");
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
    virtual std::string deviceName() const = 0;
    virtual spec::DeviceLimits limits() const = 0;

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

    virtual spec::Expected<BufferId> allocate(std::size_t bytes) = 0;
    virtual void release(BufferId id) = 0;
    virtual spec::Status upload(BufferId id, const void* data, std::size_t bytes) = 0;
    virtual spec::Status download(BufferId id, void* data, std::size_t bytes) = 0;
    // Fills `bytes` bytes of a buffer by repeating a 1-, 2-, 4- or 8-byte pattern. The default
    // uploads a host copy; backends with a device-side memset override it.
    virtual spec::Status fill(BufferId id, const void* pattern, std::size_t patternSize, std::size_t bytes) {
        std::vector<unsigned char> host(bytes);
        for (std::size_t i = 0; i + patternSize <= bytes; i += patternSize)
            std::memcpy(host.data() + i, pattern, patternSize);
        return upload(id, host.data(), bytes);
    }

    // Runs every launch of `plan` in order and waits for completion. Reports the kernels' own
    // execution time, and anything the backend saw that a fair kernel does not do (work on another
    // stream, kernels that are not the plan's, work still running after the synchronisation).
    virtual spec::Expected<RunResult> run(Program& program, const spec::LaunchPlan& plan, const Bindings& bindings) = 0;
    virtual std::string timingMethod() const = 0;

    // Chooses the timer for the following runs; a backend without the mode says so.
    virtual spec::Status setTimingMode(TimingMode mode) {
        if (mode == TimingMode::Default)
            return spec::success();
        return spec::fail("the " + name() + " backend has no KernelBench timing mode");
    }
    // Evicts the device caches (e.g. by writing a buffer larger than L2) so that the next timed run
    // starts cold, as it would inside a real workload.
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

    // True once an error has left the device unusable for this process (e.g. a sticky CUDA error):
    // the worker answers the request and exits so that the pool starts a fresh one.
    virtual bool deviceLost() const { return false; }
};

} // namespace kforge::harness
