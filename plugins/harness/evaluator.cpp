#include "evaluator.h"

#include "torchbridge.h"

#include "compilelog.h"
#include "inputs.h"
#include "stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <unistd.h>

namespace kforge::harness {

using protocol::Diagnostic;
using protocol::EvaluateRequest;
using protocol::EvaluateResult;
using protocol::Status;
using spec::Expected;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string formatNumber(double v, int precision = 3) {
    std::ostringstream s;
    if (std::fabs(v) >= 1000.0 && std::fabs(v) < 1e12) {
        s.setf(std::ios::fixed);
        s.precision(0);
    } else {
        s.precision(precision);
    }
    s << v;
    return s.str();
}

// The least a candidate's time in PyTorch's process may be, as a fraction of its time in the
// worker, for that figure to be used (processes differ by a few percent; see timeBesidePyTorch).
constexpr double kBesideAgreement = 0.75;

std::string formatBytes(double bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return formatNumber(bytes, u == 0 ? 6 : 3) + " " + units[u];
}

// How much host memory an evaluation's input sets may hold at once: $KFORGE_WORKER_HOST_MEMORY
// (bytes, or with a K, M, G or T suffix) where it is set, else half of what the system has
// available. `problem` names a setting that could not be read (the default is used then).
struct MemoryBudget {
    std::uint64_t bytes = 0;
    std::string source;
    std::string problem;
};

MemoryBudget hostMemoryBudget() {
    MemoryBudget b;
    if (const char* env = std::getenv("KFORGE_WORKER_HOST_MEMORY"); env && *env) {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(env, &end);
        double scale = 1.0;
        const std::string unit = end ? std::string(end) : std::string();
        if (unit == "K" || unit == "KiB")
            scale = 1024.0;
        else if (unit == "M" || unit == "MiB")
            scale = 1024.0 * 1024.0;
        else if (unit == "G" || unit == "GiB")
            scale = 1024.0 * 1024.0 * 1024.0;
        else if (unit == "T" || unit == "TiB")
            scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
        else if (!unit.empty())
            scale = 0.0;
        if (end != env && errno == 0 && scale > 0.0 && v > 0.0 && v * scale < 1.8e19) {
            b.bytes = static_cast<std::uint64_t>(v * scale);
            b.source = "KFORGE_WORKER_HOST_MEMORY";
            return b;
        }
        b.problem = "KFORGE_WORKER_HOST_MEMORY='" + std::string(env)
                    + "' is not a positive size (e.g. 64G, 512M or a number of bytes); using half the available memory";
    }
    std::uint64_t available = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        std::uint64_t kib = 0;
        std::string unit;
        meminfo >> kib >> unit;
        if (key == "MemAvailable:") {
            available = kib * 1024;
            break;
        }
    }
    if (available == 0) {
        const long pages = ::sysconf(_SC_AVPHYS_PAGES);
        const long pageSize = ::sysconf(_SC_PAGESIZE);
        if (pages > 0 && pageSize > 0)
            available = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(pageSize);
    }
    b.bytes = available / 2;
    b.source = "half of the available host memory";
    return b;
}

// "line 12: ..." errors from the spec library carry the directive's line.
Diagnostic diagnosticFrom(const std::string& error, const std::string& kind, const std::string& role) {
    Diagnostic d{kind, "error", error, role, 0, 0};
    static const std::regex linePrefix(R"(^line (\d+): (.*)$)");
    std::smatch m;
    if (std::regex_match(error, m, linePrefix)) {
        d.line = std::stoi(m[1]);
        d.message = m[2];
    }
    return d;
}

// Device buffers released on scope exit.
class BufferSet {
public:
    explicit BufferSet(Backend& b) : m_backend(b) {}
    ~BufferSet() {
        // Views go before the buffers they are part of.
        for (auto it = m_ids.rbegin(); it != m_ids.rend(); ++it)
            m_backend.release(*it);
    }
    BufferSet(const BufferSet&) = delete;
    BufferSet& operator=(const BufferSet&) = delete;

    Expected<BufferId> allocate(std::size_t bytes) {
        auto id = m_backend.allocate(bytes);
        if (id)
            m_ids.push_back(*id);
        return id;
    }
    Expected<BufferId> view(BufferId parent, std::size_t offset, std::size_t bytes) {
        auto id = m_backend.view(parent, offset, bytes);
        if (id)
            m_ids.push_back(*id);
        return id;
    }

private:
    Backend& m_backend;
    std::vector<BufferId> m_ids;
};

// One kernel file (reference, candidate or baseline) compiled and bound to its own buffers.
struct Prepared {
    explicit Prepared(Backend& b) : buffers(b) {}
    std::string role;
    std::string source;
    spec::LaunchPlan plan;
    std::unique_ptr<Program> program;
    BufferSet buffers;
    // The candidate gets one set of buffers per input set, so timed iterations rotate through fresh
    // memory rather than reusing what the previous call left behind.
    std::vector<Bindings> bindingSets;
    std::vector<std::size_t> scratchBytes; // zeroed before every run
    // The candidate's buffers are views into larger ones, with a guard region of poison on either
    // side that no run may change.
    struct Guard {
        BufferId parent = 0;
        std::size_t bytes = 0;        // of the view, which starts kGuardBytes into the parent
        std::string what;             // "output 'z'"
        std::size_t elementBytes = 1; // messages name the element a stray write hit
    };
    std::vector<Guard> guards;
};

// Guard regions before and after each of a candidate's buffers; a multiple of every OpenCL
// device's sub-buffer alignment, and of any vector type's size.
constexpr std::size_t kGuardBytes = 4096;

class Evaluation {
public:
    Evaluation(Backend& backend, SeedCache& cache, DeviceLocks& locks, const EvaluateRequest& request,
               TorchBridge* torch)
        : m_backend(backend), m_cache(cache), m_locks(locks), m_req(request), m_torch(torch) {
        m_result.id = request.id;
    }

    EvaluateResult run();

private:
    // Each step returns false once the result is final.
    // Parses, checks and binds a kernel file; compiling comes after, for all kernel files at once.
    bool bind(Prepared& p, const protocol::KernelInput& input, bool trusted);
    bool build(Prepared& p, CompileOutput c);
    bool allocate(Prepared& p, int sets);
    // Whether every input set fits in host memory at once; when not, sets are made one at a time,
    // just before they are used, and timing rotates through as many as fit.
    void planMemory();
    bool chooseSeeds();    // draws (or takes) the seeds and records them in the result
    bool generateInputs(); // the chosen seeds' inputs (and reference data where a task has it)
    // Makes a set's inputs if it does not hold them yet (sets made one at a time), or gives them
    // back once it has been used.
    bool materialise(SeedData& s);
    void release(SeedData& s);
    // Inputs (and, with reference data, expected outputs) for one seed; `stress` names a stress set.
    bool makeSeed(std::uint64_t seed, const spec::StressSpec* stress, bool cacheable, SeedData& out);
    bool computeExpected(SeedData& s);
    bool computeExpectedWithTorch(SeedData& s); // the task's PyTorch form is its reference
    // Empty while the guard regions around the candidate's buffers hold their poison, else where
    // the candidate wrote into one.
    Expected<std::string> checkGuards(const Prepared& p);
    bool verifyCandidate();
    void timeCandidate();
    // Puts a suspicion of kept results to further input sets made now, which nothing has seen: each
    // gets one verified first run of the candidate, and the first of them that `slow` does not find
    // suspiciously slow clears it. The first runs' times, in order; nullopt when the evaluation
    // finished on the way (a wrong result, a failing reference).
    std::optional<std::vector<double>> recheckFirstRuns(const std::function<bool(double)>& slow);
    // PyTorch eager and torch.compile on the first timed input set, when asked (options.pytorch), in
    // two rounds: half the calls before the kernel's timed runs, half after.
    void timePyTorchBefore();
    void timePyTorch();
    // The verified candidate timed beside PyTorch in a PyTorch process of its own (see
    // EvaluateResult::besideTiming); where it cannot be, the speedups stay those of timePyTorch().
    void timeBesidePyTorch(const SeedData& set);
    // The speedups over PyTorch eager and torch.compile (those in m_result) of a kernel that took `kernel`.
    void setPyTorchSpeedups(const protocol::TimingStats& kernel);

    // Uploads inputs, poisons outputs, zeroes scratch, runs, reads outputs back. Reports whether the
    // candidate modified its inputs through `inputsChanged`.
    // Without `downloadOutputs`, `outputs` are sized but not read back (the caller digests them).
    // `flushCaches` evicts the caches after the poison and scratch fills, just before the run: a
    // timed run starts cold, with nothing of the fills left to write back.
    Expected<RunResult> runOnce(Prepared& p, std::size_t set, const SeedData& s, int poison,
                                std::vector<HostTensor>& outputs, std::string* inputsChanged, bool uploadInputs = true,
                                bool downloadOutputs = true, bool flushCaches = false);
    spec::Status download(const Bindings& bindings, std::vector<HostTensor>& outputs);
    // Empty when the set's input buffers still hold the seed's inputs, else what changed. Between
    // the launches of a run (`withinRun`) the inputs are read back: a digest kernel launched there
    // would be one more kernel in the run the backend watches.
    Expected<std::string> checkInputs(const Bindings& bindings, const SeedData& s, bool withinRun = false);
    // Records the digest of an input buffer just uploaded (where the backend digests on the device).
    void noteUploaded(BufferId id, std::size_t bytes);
    // Compares outputs with a seed's expectations, accumulating into m_result.outputs. Returns the
    // number of wrong elements.
    std::uint64_t compare(const std::vector<HostTensor>& outputs, const SeedData& s, int poison, bool record);

    void finish(Status status, std::string message) {
        m_result.status = status;
        m_result.message = std::move(message);
    }
    void addCheck(const std::string& name, bool passed, const std::string& detail) {
        m_result.checks.push_back({name, passed, detail});
    }
    std::string outputSummary() const;

    std::string cacheKey(std::uint64_t seed) const;

public:
    const std::map<std::string, double>& phaseSeconds() const { return m_result.phaseSeconds; }
    // Charges the time since the last switch to the current phase and makes `name` current;
    // returns the phase it left, so that a nested one can hand back. "" stops the clock.
    std::string enterPhase(const std::string& name) {
        const auto now = Clock::now();
        if (!m_phase.empty())
            m_result.phaseSeconds[m_phase] += std::chrono::duration<double>(now - m_phaseStart).count();
        m_phaseStart = now;
        return std::exchange(m_phase, name);
    }

    // A step within the current phase, charged as "phase/step" (e.g. "timing/download") until it
    // goes out of scope; a step inside a step is charged to the outer phase's step of its name.
    class Step {
    public:
        Step(Evaluation& e, const char* name) : m_e(e), m_previous(e.enterPhase(stepName(e.m_phase, name))) {}
        ~Step() { m_e.enterPhase(m_previous); }
        Step(const Step&) = delete;
        Step& operator=(const Step&) = delete;

    private:
        Evaluation& m_e;
        std::string m_previous;
    };
    static std::string stepName(const std::string& phase, const std::string& step) {
        return phase.substr(0, phase.find('/')) + "/" + step;
    }
    // Moves time a backend reported for its own steps within a run from `phase/run` to `phase/step`.
    void chargeBackendSteps(const RunResult& r) {
        const std::string phase = m_phase.substr(0, m_phase.find('/'));
        for (const auto& [step, seconds] : r.stepSeconds) {
            m_result.phaseSeconds[stepName(phase, "run")] -= seconds;
            m_result.phaseSeconds[stepName(phase, step)] += seconds;
        }
    }

private:
    Backend& m_backend;
    SeedCache& m_cache;
    DeviceLocks& m_locks;
    DeviceLock* m_lock = nullptr;  // the open device's
    bool m_deviceNotAlone = false; // a wait for the device ran out

    // Holds the device for kernel work: shared with other workers' device work, or alone for a
    // timed run. The wait is the step "wait for device" of the current phase. A wait that runs out
    // (another worker's kernel that never finishes holds the device) leaves this evaluation to
    // time without waiting again, and its result says so.
    DeviceLock::Hold holdDevice(bool alone) {
        if (m_deviceNotAlone)
            return {};
        const Step step(*this, "wait for device");
        DeviceLock::Hold hold = alone ? m_lock->exclusive() : m_lock->shared();
        if (!hold.granted()) {
            m_deviceNotAlone = true;
            m_result.diagnostics.push_back(
                {"timing", "warning",
                 "another worker on this device held it for longer than the wait allows (a kernel that does not "
                 "finish?), so this evaluation ran and was timed beside other workers' kernels",
                 "", 0, 0});
        }
        return hold;
    }
    const EvaluateRequest& m_req;
    EvaluateResult m_result;
    spec::Sizes m_sizes;
    std::vector<std::uint64_t> m_inputCounts;
    std::vector<std::uint64_t> m_outputCounts;
    std::vector<SeedData> m_seeds;                            // verification: random seeds, then the stress sets
    std::vector<SeedData> m_timing;                           // the timed runs' inputs, never shown during verification
    std::set<std::uint64_t> m_cacheable;                      // seeds the request gave: worth remembering for the next
    bool m_oneAtATime = false;                                // sets too large to hold at once (planMemory)
    std::size_t m_timingSets = 0;                             // how many timed input sets (0: as the request says)
    std::vector<unsigned char> m_readBack;                    // inputs read back from the device (checkInputs)
    std::map<std::size_t, std::string> m_firstMismatchInputs; // output -> the inputs of its first mismatch
    unsigned char m_guardByte = 0xA5;
    // Digests (digest.h) with a key drawn for this evaluation, where the backend computes them on
    // the device: an input buffer's, taken right after its upload, so that checking it is intact
    // needs no read-back.
    std::uint64_t m_digestKey = 0;
    std::map<BufferId, std::uint64_t> m_inputDigests;
    std::string m_phase; // where the time goes now (phaseSeconds)
    Clock::time_point m_phaseStart;
    std::unique_ptr<Prepared> m_reference;             // a reference kernel (none when PyTorch is the reference)
    TorchBridge* m_torch = nullptr;                    // when PyTorch is the reference, or is timed beside the kernel
    bool m_torchNoted = false;                         // its note (where, in which precision) is in the diagnostics
    std::optional<TorchBridge::Timings> m_torchBefore; // PyTorch's first round (timePyTorchBefore)
    std::string m_torchBeforeError;
    std::unique_ptr<Prepared> m_candidate;
    std::unique_ptr<Prepared> m_baseline;
};

bool Evaluation::bind(Prepared& p, const protocol::KernelInput& input, bool trusted) {
    p.role = input.role;
    p.source = input.source;
    auto reportBroken = [&](const Diagnostic& d) {
        m_result.diagnostics.push_back(d);
        if (p.role == "candidate")
            finish(Status::Rejected,
                   "candidate rejected: " + (d.line ? "line " + std::to_string(d.line) + ": " : "") + d.message);
        else if (p.role == "reference")
            finish(Status::RuntimeError, "the task's reference kernel is broken: " + d.message);
        return false;
    };

    auto kf = spec::KernelFile::parse(input.source, m_backend.dialect());
    if (!kf)
        return reportBroken(diagnosticFrom(kf.error(), "launch_plan", p.role));

    if (!trusted) {
        std::string firstError;
        for (auto d : m_backend.staticCheck(input.source)) {
            d.role = p.role;
            if (d.severity == "error" && firstError.empty())
                firstError = (d.line ? "line " + std::to_string(d.line) + ": " : "") + d.message;
            m_result.diagnostics.push_back(d);
        }
        addCheck("static_checks", firstError.empty(), firstError);
        if (!firstError.empty()) {
            finish(Status::Rejected, "candidate rejected: " + firstError);
            return false;
        }
    }

    auto plan = spec::LaunchPlan::resolve(*kf, m_req.task, m_sizes, input.params, m_backend.limits());
    if (!plan)
        return reportBroken(diagnosticFrom(plan.error(), "launch_plan", p.role));
    p.plan = std::move(*plan);
    return true;
}

bool Evaluation::build(Prepared& p, CompileOutput c) {
    const bool isCandidate = p.role == "candidate";
    m_result.compile.push_back({p.role, c.ok, c.seconds, c.log, c.resources});
    if (!c.ok) {
        auto diags = parseCompileLog(c.log, p.role);
        std::string first = diags.empty() ? "see the compile log" : diags.front().message;
        if (!diags.empty() && diags.front().line)
            first = "line " + std::to_string(diags.front().line) + ": " + first;
        for (auto& d : diags)
            m_result.diagnostics.push_back(d);
        if (diags.empty())
            m_result.diagnostics.push_back(
                {"compile", "error", "compilation failed: " + c.log.substr(0, 2000), p.role, 0, 0});
        if (isCandidate)
            finish(Status::CompileError, "candidate does not compile: " + first);
        else if (p.role == "reference")
            finish(Status::RuntimeError, "the task's reference kernel does not compile: " + first);
        return false;
    }
    for (auto& d : parseCompileLog(c.log, p.role))
        if (d.severity == "warning")
            m_result.diagnostics.push_back(d);
    p.program = std::move(c.program);
    if (isCandidate && !c.rejection.empty()) {
        m_result.diagnostics.push_back({"integrity", "error", c.rejection, p.role, 0, 0});
        addCheck("no_module_state", false, c.rejection);
        finish(Status::Rejected, "candidate rejected: " + c.rejection);
        return false;
    }
    if (isCandidate) {
        if (auto problem = m_backend.bindingProblem(*p.program, p.plan); !problem.empty()) {
            m_result.diagnostics.push_back({"launch_plan", "error", problem, p.role, 0, 0});
            finish(Status::Rejected, "candidate rejected: " + problem);
            return false;
        }
    }
    for (const auto& [key, value] : m_backend.launchResources(*p.program, p.plan))
        m_result.compile.back().resources[key] = value;
    // Timed kernels get one set of buffers per input set; the reference needs one.
    const int sets = m_oneAtATime ? static_cast<int>(std::max<std::size_t>(1, m_result.timingSeeds.size()))
                                  : std::max(1, m_req.options.inputSets);
    return allocate(p, p.role == "reference" ? 1 : sets);
}

bool Evaluation::allocate(Prepared& p, int sets) {
    auto fail = [&](const std::string& what, const std::string& error) {
        m_result.diagnostics.push_back({"runtime", "error", what + ": " + error, p.role, 0, 0});
        if (p.role != "baseline")
            finish(Status::RuntimeError, "cannot allocate " + what + " on the device: " + error);
        return false;
    };
    const auto& task = m_req.task;
    for (const auto& s : p.plan.scratch)
        p.scratchBytes.push_back(s.count * spec::dtypeSize(s.dtype));
    const bool guarded = p.role == "candidate";
    // A buffer of exactly `bytes`; the candidate's sit between two guard regions of poison.
    auto buffer = [&](std::size_t bytes, const std::string& what, std::size_t elementBytes) -> Expected<BufferId> {
        if (!guarded)
            return p.buffers.allocate(bytes);
        auto parent = p.buffers.allocate(bytes + 2 * kGuardBytes);
        if (!parent)
            return parent;
        if (auto st = m_backend.fill(*parent, &m_guardByte, 1, bytes + 2 * kGuardBytes); !st)
            return spec::Error{st.error()};
        auto id = p.buffers.view(*parent, kGuardBytes, bytes);
        if (id)
            p.guards.push_back({*parent, bytes, what, std::max<std::size_t>(1, elementBytes)});
        return id;
    };
    for (int set = 0; set < sets; ++set) {
        Bindings b;
        for (std::size_t i = 0; i < task.inputs.size(); ++i) {
            auto id = buffer(m_inputCounts[i] * spec::dtypeSize(task.inputs[i].dtype),
                             "input '" + task.inputs[i].name + "'", spec::dtypeSize(task.inputs[i].dtype));
            if (!id)
                return fail("input " + task.inputs[i].name, id.error());
            b.inputs.push_back(*id);
        }
        for (std::size_t i = 0; i < task.outputs.size(); ++i) {
            auto id = buffer(m_outputCounts[i] * spec::dtypeSize(task.outputs[i].dtype),
                             "output '" + task.outputs[i].name + "'", spec::dtypeSize(task.outputs[i].dtype));
            if (!id)
                return fail("output " + task.outputs[i].name, id.error());
            b.outputs.push_back(*id);
        }
        for (std::size_t i = 0; i < p.plan.scratch.size(); ++i) {
            auto id = buffer(p.scratchBytes[i], "scratch buffer '" + p.plan.scratch[i].name + "'",
                             spec::dtypeSize(p.plan.scratch[i].dtype));
            if (!id)
                return fail("scratch " + p.plan.scratch[i].name, id.error());
            b.scratch.push_back(*id);
        }
        p.bindingSets.push_back(std::move(b));
    }
    return true;
}

spec::Status Evaluation::download(const Bindings& bindings, std::vector<HostTensor>& outputs) {
    const Step step(*this, "download");
    for (std::size_t i = 0; i < outputs.size(); ++i)
        if (auto st = m_backend.download(bindings.outputs[i], outputs[i].bytes.data(), outputs[i].byteSize()); !st)
            return st;
    return spec::success();
}

Expected<RunResult> Evaluation::runOnce(Prepared& p, std::size_t set, const SeedData& s, int poison,
                                        std::vector<HostTensor>& outputs, std::string* inputsChanged, bool uploadInputs,
                                        bool downloadOutputs, bool flushCaches) {
    const auto& task = m_req.task;
    const Bindings& bindings = p.bindingSets[set % p.bindingSets.size()];
    if (uploadInputs) {
        const Step step(*this, "upload");
        for (std::size_t i = 0; i < s.inputs.size(); ++i) {
            if (auto st = m_backend.upload(bindings.inputs[i], s.inputs[i].bytes.data(), s.inputs[i].byteSize()); !st)
                return spec::Error{st.error()};
            if (inputsChanged) // to be checked after the run
                noteUploaded(bindings.inputs[i], s.inputs[i].byteSize());
        }
    }
    // The fills beside other workers' device work; a timed run then holds the device alone from
    // its cache flush to the end of its kernels, and lets go before the timer's records are read.
    DeviceLock::Hold hold = holdDevice(false);
    std::optional<Step> poisoning(std::in_place, *this, "poison");
    outputs.resize(task.outputs.size());
    for (std::size_t i = 0; i < task.outputs.size(); ++i) {
        const spec::DType dtype = task.outputs[i].dtype;
        if (outputs[i].count != m_outputCounts[i] || outputs[i].dtype != dtype)
            outputs[i] = makeTensor(dtype, m_outputCounts[i]);
        const std::uint64_t bits = spec::poisonPattern(dtype, poison);
        if (auto st = m_backend.fill(bindings.outputs[i], &bits, spec::dtypeSize(dtype), outputs[i].byteSize()); !st)
            return spec::Error{st.error()};
    }
    for (std::size_t i = 0; i < p.scratchBytes.size(); ++i) {
        const std::uint8_t zero = 0;
        if (auto st = m_backend.fill(bindings.scratch[i], &zero, 1, p.scratchBytes[i]); !st)
            return spec::Error{st.error()};
    }
    poisoning.reset();
    if (flushCaches) {
        {
            // The fills end and the timer's older records go while other workers may use the device.
            const Step step(*this, "prepare");
            m_backend.prepareTimedRun();
        }
        hold.release();
        hold = holdDevice(true);
        const Step step(*this, "flush caches");
        m_backend.flushCaches();
    }

    // In verification runs, inputs are checked after every launch of a multi-launch plan: a launch
    // may use an input as scratch space and a later one restore it.
    std::string betweenLaunches;
    AfterLaunch afterLaunch;
    if (inputsChanged && inputsChanged->empty() && p.plan.launches.size() > 1)
        afterLaunch = [&](std::size_t index) {
            if (!betweenLaunches.empty())
                return;
            auto changed = checkInputs(bindings, s, true);
            const auto& l = p.plan.launches[index];
            if (!changed)
                betweenLaunches =
                    "reading back inputs after launch " + std::to_string(index + 1) + " failed: " + changed.error();
            else if (!changed->empty())
                betweenLaunches = *changed + " after launch " + std::to_string(index + 1) + " of "
                                  + std::to_string(p.plan.launches.size()) + " (" + l.kernel + ", line "
                                  + std::to_string(l.line) + ")";
        };
    std::optional<Step> running(std::in_place, *this, "run");
    struct LetGo { // the backend never keeps a callback into this frame
        Backend& backend;
        ~LetGo() { backend.setDeviceDone({}); }
    } letGo{m_backend};
    m_backend.setDeviceDone([&hold] { hold.release(); });
    auto time = m_backend.run(*p.program, p.plan, bindings, afterLaunch);
    running.reset();
    hold.release();
    if (!time)
        return time;
    chargeBackendSteps(*time);
    if (!betweenLaunches.empty())
        *inputsChanged = betweenLaunches;

    if (downloadOutputs)
        if (auto st = download(bindings, outputs); !st)
            return spec::Error{st.error()};
    if (inputsChanged && inputsChanged->empty()) {
        const Step step(*this, "check inputs");
        auto changed = checkInputs(bindings, s);
        if (!changed)
            return spec::Error{changed.error()};
        *inputsChanged = *changed;
    }
    return time;
}

Expected<std::string> Evaluation::checkGuards(const Prepared& p) {
    std::vector<unsigned char> front(kGuardBytes), back(kGuardBytes);
    for (const auto& g : p.guards) {
        if (auto st = m_backend.download(g.parent, front.data(), kGuardBytes, 0); !st)
            return spec::Error{st.error()};
        if (auto st = m_backend.download(g.parent, back.data(), kGuardBytes, kGuardBytes + g.bytes); !st)
            return spec::Error{st.error()};
        // The changed byte nearest the buffer: an off-by-one shows as -1 or +0.
        std::size_t changed = 0;
        std::optional<std::size_t> nearestFront, nearestBack;
        for (std::size_t i = 0; i < kGuardBytes; ++i) {
            if (front[i] != m_guardByte) {
                ++changed;
                nearestFront = kGuardBytes - i;
            }
            if (back[i] != m_guardByte) {
                ++changed;
                if (!nearestBack)
                    nearestBack = i;
            }
        }
        if (!changed)
            continue;
        // Named by element, as the kernel indexes it: which bytes of a stray element differ from
        // the (random) guard byte varies, the element does not. z[-1] is element -1, z[N] element N.
        const std::size_t e = g.elementBytes;
        std::string where;
        if (nearestFront)
            where = "before its start (the nearest at element -" + std::to_string((*nearestFront + e - 1) / e)
                    + ", byte -" + std::to_string(*nearestFront) + ")";
        if (nearestBack)
            where += (where.empty() ? "" : " and ") + std::string("after its end (the first at element ")
                     + std::to_string((g.bytes + *nearestBack) / e) + " of a buffer of " + std::to_string(g.bytes / e)
                     + ")";
        return g.what + ": the candidate wrote outside the buffer, " + where + "; " + std::to_string(changed)
               + " of the " + std::to_string(2 * kGuardBytes) + " guard bytes around it changed";
    }
    return std::string();
}

void Evaluation::noteUploaded(BufferId id, std::size_t bytes) {
    if (!m_backend.digestsOnDevice())
        return;
    const auto hold = holdDevice(false);
    if (auto d = m_backend.digest(id, bytes, m_digestKey))
        m_inputDigests[id] = *d;
    else
        m_inputDigests.erase(id); // checked by reading it back instead
}

Expected<std::string> Evaluation::checkInputs(const Bindings& bindings, const SeedData& s, bool withinRun) {
    const auto& task = m_req.task;
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
        const HostTensor& before = s.inputs[i];
        // The digest taken after the upload, where there is one: equal digests are equal bytes
        // (a kernel cannot aim at the key, drawn for this evaluation); a differing one is read
        // back to say what changed.
        if (auto known = m_inputDigests.find(bindings.inputs[i]); known != m_inputDigests.end() && !withinRun) {
            const auto hold = holdDevice(false);
            auto now = m_backend.digest(bindings.inputs[i], before.byteSize(), m_digestKey);
            if (now && *now == known->second)
                continue;
        }
        // One buffer for every read-back: inputs run to gigabytes, and a fresh one each time would
        // be allocated and cleared for every run.
        if (m_readBack.size() < before.byteSize())
            m_readBack.resize(before.byteSize());
        if (auto st = m_backend.download(bindings.inputs[i], m_readBack.data(), before.byteSize()); !st)
            return spec::Error{st.error()};
        if (std::memcmp(m_readBack.data(), before.bytes.data(), before.byteSize()) == 0)
            continue;
        const std::size_t size = spec::dtypeSize(before.dtype);
        std::uint64_t first = 0;
        while (first < before.count
               && std::memcmp(m_readBack.data() + first * size, before.bytes.data() + first * size, size) == 0)
            ++first;
        return "input '" + task.inputs[i].name + "' was modified by the candidate (first changed element "
               + std::to_string(first) + ", " + s.label() + ")";
    }
    return std::string();
}

std::uint64_t Evaluation::compare(const std::vector<HostTensor>& outputs, const SeedData& s, int poison, bool record) {
    std::uint64_t wrongTotal = 0;
    for (std::size_t o = 0; o < outputs.size(); ++o) {
        const spec::TensorSpec& spec = m_req.task.outputs[o];
        const HostTensor& got = outputs[o];
        const HostTensor& exp = s.expected[o];
        const std::size_t size = spec::dtypeSize(got.dtype);
        // float32 is by far the commonest output; read it directly rather than through the
        // dtype switch, which dominates the cost of checking large outputs.
        const bool f32 = got.dtype == spec::DType::Float32;
        const auto* gotF = reinterpret_cast<const float*>(got.bytes.data());
        const auto* expF = reinterpret_cast<const float*>(exp.bytes.data());
        // One range of elements into its own tally; large outputs (gigabytes at KernelBench's
        // sizes) are split over threads and the tallies merged, the first mismatch by index.
        const double atol = spec.atol;
        const double rtol = spec.rtol;
        const auto tally = [&](std::uint64_t begin, std::uint64_t end, protocol::OutputCheck& check) {
            std::uint64_t wrong = 0;
            double maxAbs = 0.0, maxRel = 0.0; // of the elements within tolerance (the fast path)
            for (std::uint64_t i = begin; i < end; ++i) {
                const double g = f32 ? static_cast<double>(gotF[i]) : got.at(i);
                const double e = f32 ? static_cast<double>(expF[i]) : exp.at(i);
                // The common case first, without tests for special values: a finite difference
                // within tolerance (a NaN or an infinity on either side makes it NaN or infinite).
                const double d = std::fabs(g - e);
                const double scale = std::fabs(e);
                if (d <= atol + rtol * scale && d < std::numeric_limits<double>::infinity()) {
                    if (record) {
                        maxAbs = std::max(maxAbs, d);
                        if (e != 0.0 && d > maxRel * scale)
                            maxRel = std::max(maxRel, d / scale);
                    }
                    continue;
                }
                bool ok;
                double absErr = 0.0;
                if (std::isnan(e))
                    ok = std::isnan(g);
                else if (std::isinf(e))
                    ok = g == e;
                else if (!std::isfinite(g))
                    ok = false;
                else {
                    absErr = std::fabs(g - e);
                    ok = absErr <= spec.atol + spec.rtol * std::fabs(e);
                }
                if (!record) {
                    wrong += !ok;
                    continue;
                }
                if (std::isfinite(g) && std::isfinite(e)) {
                    check.maxAbsError = std::max(check.maxAbsError, absErr);
                    if (e != 0.0)
                        check.maxRelError = std::max(check.maxRelError, absErr / std::fabs(e));
                }
                if (ok)
                    continue;
                ++wrong;
                ++check.mismatches;
                if (spec::isPoison(got.dtype, poison, got.bytes.data() + i * size))
                    ++check.unwritten;
                else if (!std::isfinite(g) && std::isfinite(e))
                    ++check.nonFinite;
                if (!check.firstMismatch) {
                    check.firstMismatch = i;
                    check.firstGot = g;
                    check.firstExpected = e;
                }
            }
            check.maxAbsError = std::max(check.maxAbsError, maxAbs);
            check.maxRelError = std::max(check.maxRelError, maxRel);
            return wrong;
        };
        // A quarter of a million elements a thread: the check is bound by memory bandwidth, which
        // one core of a server does not exhaust.
        constexpr std::uint64_t kPerThread = std::uint64_t{1} << 18;
        const std::uint64_t threads = std::clamp<std::uint64_t>(
            got.count / kPerThread, 1, std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
        std::vector<protocol::OutputCheck> parts(threads);
        std::vector<std::uint64_t> wrong(threads, 0);
        const std::uint64_t step = (got.count + threads - 1) / threads;
        if (threads == 1) {
            wrong[0] = tally(0, got.count, parts[0]);
        } else {
            std::vector<std::thread> pool;
            for (std::uint64_t t = 0; t < threads; ++t)
                pool.emplace_back([&, t] {
                    wrong[t] = tally(std::min(got.count, t * step), std::min(got.count, (t + 1) * step), parts[t]);
                });
            for (auto& th : pool)
                th.join();
        }
        protocol::OutputCheck& check = m_result.outputs[o];
        for (std::uint64_t t = 0; t < threads; ++t) {
            const auto& part = parts[t];
            wrongTotal += wrong[t];
            if (!record)
                continue;
            check.maxAbsError = std::max(check.maxAbsError, part.maxAbsError);
            check.maxRelError = std::max(check.maxRelError, part.maxRelError);
            check.mismatches += part.mismatches;
            check.unwritten += part.unwritten;
            check.nonFinite += part.nonFinite;
            if (part.firstMismatch && !check.firstMismatch) { // ranges in order: the first part's first
                check.firstMismatch = part.firstMismatch;
                check.firstGot = part.firstGot;
                check.firstExpected = part.firstExpected;
                check.firstSeed = s.seed;
                m_firstMismatchInputs[o] = s.label();
            }
        }
        if (record)
            check.checked += got.count;
    }
    return wrongTotal;
}

std::string Evaluation::cacheKey(std::uint64_t seed) const {
    // Everything that decides a seed's inputs and expected outputs, verbatim: a hash collision
    // here would silently verify against the wrong answers.
    return m_req.task.toJson().dump() + '\n' + m_req.variant + '\n' + std::to_string(seed) + '\n'
           + m_req.reference.source;
}

bool Evaluation::makeSeed(std::uint64_t seed, const spec::StressSpec* stress, bool cacheable, SeedData& out) {
    const auto& task = m_req.task;
    const std::string stressName = stress ? stress->set : std::string();
    if (cacheable && !stress)
        if (const SeedData* cached = m_cache.find(cacheKey(seed))) {
            out = *cached;
            return true;
        }
    out = SeedData{};
    out.seed = seed;
    out.stress = stressName;
    const spec::ReferenceData* data = stress ? nullptr : task.findReferenceData(m_req.variant, seed);
    for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        HostTensor t = makeTensor(task.inputs[i].dtype, m_inputCounts[i]);
        if (data) {
            if (auto st = readRaw(t, data->inputs.at(task.inputs[i].name)); !st) {
                finish(Status::RuntimeError, "reference data: " + st.error());
                return false;
            }
        } else {
            initialise(t, task.inputs[i].init, seed, task.inputs[i].name);
        }
        if (stress
            && (stress->inputs.empty()
                || std::find(stress->inputs.begin(), stress->inputs.end(), task.inputs[i].name)
                       != stress->inputs.end())) {
            std::uint64_t row = m_inputCounts[i];
            if (!task.inputs[i].shape.empty())
                if (auto last = spec::Expression::evaluateInteger(task.inputs[i].shape.back(), task.variables(m_sizes));
                    last && *last > 0)
                    row = static_cast<std::uint64_t>(*last);
            applyStress(t, stress->set, row);
        }
        out.inputs.push_back(std::move(t));
    }
    if (data) {
        for (std::size_t i = 0; i < task.outputs.size(); ++i) {
            HostTensor t = makeTensor(task.outputs[i].dtype, m_outputCounts[i]);
            if (auto st = readRaw(t, data->outputs.at(task.outputs[i].name)); !st) {
                finish(Status::RuntimeError, "reference data: " + st.error());
                return false;
            }
            out.expected.push_back(std::move(t));
        }
    }
    return true;
}

bool Evaluation::chooseSeeds() {
    const auto& o = m_req.options;
    // Seeds the request does not give are drawn fresh, so that no candidate can know its inputs:
    // three for verification, and one per timed input set, distinct from those.
    std::vector<std::uint64_t> verification = o.seeds.empty() ? secureSeeds(3) : o.seeds;
    std::vector<std::uint64_t> timing = o.timingSeeds;
    const std::size_t timedSets = m_timingSets ? m_timingSets : static_cast<std::size_t>(std::max(0, o.inputSets));
    if (timing.empty() && o.timing) {
        const std::set<std::uint64_t> used(verification.begin(), verification.end());
        for (std::uint64_t seed : secureSeeds(timedSets + verification.size()))
            if (!used.count(seed) && timing.size() < timedSets)
                timing.push_back(seed);
    }
    if (m_timingSets && timing.size() > m_timingSets)
        timing.resize(m_timingSets);
    for (std::uint64_t seed : timing)
        if (std::find(verification.begin(), verification.end(), seed) != verification.end()) {
            finish(Status::RuntimeError,
                   "timing seed " + std::to_string(seed)
                       + " is also a verification seed: timed runs must see inputs that verification did not show");
            return false;
        }
    if (!o.seeds.empty())
        m_cacheable.insert(o.seeds.begin(), o.seeds.end());
    if (!o.timingSeeds.empty())
        m_cacheable.insert(o.timingSeeds.begin(), o.timingSeeds.end());
    m_result.seeds = verification;
    m_result.timingSeeds = timing;
    return true;
}

void Evaluation::planMemory() {
    const auto& task = m_req.task;
    const auto& o = m_req.options;
    std::uint64_t setBytes = 0;
    for (std::size_t i = 0; i < task.inputs.size(); ++i)
        setBytes += m_inputCounts[i] * spec::dtypeSize(task.inputs[i].dtype);
    for (std::size_t i = 0; i < task.outputs.size(); ++i)
        setBytes += m_outputCounts[i] * spec::dtypeSize(task.outputs[i].dtype);
    const std::size_t verification = o.seeds.empty() ? 3 : o.seeds.size();
    const std::size_t stress = o.stress ? task.stress.size() : 0;
    const std::size_t timing =
        !o.timing ? 0
                  : (o.timingSeeds.empty() ? static_cast<std::size_t>(std::max(0, o.inputSets)) : o.timingSeeds.size());
    // Below a few hundred MiB a set, nothing to plan: the budget is only read where it can matter.
    const std::uint64_t all = (verification + stress + timing) * setBytes;
    if (all < (std::uint64_t{256} << 20) && !std::getenv("KFORGE_WORKER_HOST_MEMORY"))
        return;
    const MemoryBudget budget = hostMemoryBudget();
    if (!budget.problem.empty())
        m_result.diagnostics.push_back({"runtime", "warning", budget.problem, "", 0, 0});
    // Each set in use holds its inputs and expected outputs, with a copy of the outputs beside them
    // (the kernel's, read back): twice the set's bytes, counted for every set held at once.
    if (2 * all <= budget.bytes)
        return;
    m_oneAtATime = true;
    const std::uint64_t fit = setBytes ? budget.bytes / (2 * setBytes) : timing;
    m_timingSets = std::max<std::size_t>(1, std::min<std::size_t>(timing, static_cast<std::size_t>(fit)));
    std::string note = "each input set holds " + formatBytes(static_cast<double>(setBytes))
                       + " (inputs and expected outputs) and " + formatBytes(static_cast<double>(budget.bytes))
                       + " of host memory is there to use (" + budget.source
                       + "): the sets are made one at a time, just before they are used";
    if (timing > m_timingSets)
        note += ", and timing rotates through " + std::to_string(m_timingSets) + " input set(s) instead of "
                + std::to_string(timing);
    if (fit == 0)
        note += "; even one set is more than that, so this evaluation may run out of memory";
    m_result.diagnostics.push_back({"verification", "info", note, "", 0, 0});
}

bool Evaluation::materialise(SeedData& s) {
    if (s.inputs.size() == m_req.task.inputs.size())
        return true;
    const std::string previous = enterPhase("inputs");
    const spec::StressSpec* stress = nullptr;
    for (const auto& st : m_req.task.stress)
        if (st.set == s.stress)
            stress = &st;
    SeedData made;
    const bool ok = makeSeed(s.seed, stress, s.stress.empty() && m_cacheable.count(s.seed) > 0, made);
    if (ok)
        s = std::move(made);
    enterPhase(previous);
    return ok;
}

void Evaluation::release(SeedData& s) {
    if (!m_oneAtATime)
        return;
    s.inputs = {};
    s.expected = {};
}

bool Evaluation::generateInputs() {
    const auto& o = m_req.options;
    const std::vector<std::uint64_t>& verification = m_result.seeds;
    if (m_oneAtATime) {
        // Only the seeds are known now; each set is made when its turn comes (materialise).
        for (std::uint64_t seed : verification)
            m_seeds.push_back(SeedData{seed, {}, {}, {}});
        if (o.stress)
            for (const auto& stress : m_req.task.stress) {
                m_seeds.push_back(SeedData{verification.front(), stress.set, {}, {}});
                m_result.stressSets.push_back(stress.set);
            }
        for (std::uint64_t seed : m_result.timingSeeds)
            m_timing.push_back(SeedData{seed, {}, {}, {}});
        return true;
    }
    // Every input set, in order: the verification seeds, the stress sets (which start from the
    // first verification seed's inputs; no extra seed to record), the timing seeds.
    struct Job {
        std::uint64_t seed;
        const spec::StressSpec* stress;
        bool cacheable;
        bool timing;
        SeedData data;
    };
    std::vector<Job> jobs;
    jobs.reserve(verification.size() + m_req.task.stress.size() + m_result.timingSeeds.size());
    for (std::uint64_t seed : verification)
        jobs.push_back({seed, nullptr, m_cacheable.count(seed) > 0, false, {}});
    if (o.stress)
        for (const auto& stress : m_req.task.stress)
            jobs.push_back({verification.front(), &stress, false, false, {}});
    for (std::uint64_t seed : m_result.timingSeeds)
        jobs.push_back({seed, nullptr, m_cacheable.count(seed) > 0, true, {}});
    // Fresh seeds only compute (no cache, no reference data files, nothing shared): those sets are
    // generated side by side, the others one after the other.
    const auto pure = [&](const Job& j) {
        return !j.cacheable && (j.stress || !m_req.task.findReferenceData(m_req.variant, j.seed));
    };
    std::vector<std::future<bool>> running;
    for (Job& j : jobs)
        if (pure(j))
            running.push_back(
                std::async(std::launch::async, [this, &j] { return makeSeed(j.seed, j.stress, false, j.data); }));
    bool ok = true;
    for (Job& j : jobs)
        if (!pure(j) && ok)
            ok = makeSeed(j.seed, j.stress, j.cacheable, j.data);
    for (auto& r : running)
        ok = r.get() && ok;
    if (!ok)
        return false;
    for (Job& j : jobs) {
        if (j.stress)
            m_result.stressSets.push_back(j.stress->set);
        (j.timing ? m_timing : m_seeds).push_back(std::move(j.data));
    }
    return true;
}

bool Evaluation::computeExpected(SeedData& s) {
    if (!s.expected.empty())
        return true; // given as reference data, or remembered from an earlier evaluation
    struct Phase {
        Evaluation& e;
        std::string previous;
        ~Phase() {
            e.m_backend.setWatched(true);
            e.enterPhase(previous);
        }
    } phase{*this, enterPhase("reference")};
    if (m_req.reference.form == "torch")
        return computeExpectedWithTorch(s);
    m_backend.setWatched(false); // trusted code: only its outputs are wanted
    auto run = runOnce(*m_reference, 0, s, 0, s.expected, nullptr);
    if (!run) {
        m_result.diagnostics.push_back({"runtime", "error", run.error(), "reference", 0, 0});
        finish(Status::RuntimeError, "the task's reference kernel failed: " + run.error());
        return false;
    }
    for (std::size_t i = 0; i < s.expected.size(); ++i) {
        const HostTensor& t = s.expected[i];
        const std::uint64_t unwritten = spec::countPoison(t.dtype, 0, t.bytes.data(), t.count);
        if (unwritten) {
            finish(Status::RuntimeError, "the task's reference kernel left " + std::to_string(unwritten)
                                             + " elements of '" + m_req.task.outputs[i].name + "' unwritten");
            return false;
        }
    }
    if (s.stress.empty() && m_cacheable.count(s.seed))
        m_cache.insert(cacheKey(s.seed), s);
    return true;
}

bool Evaluation::computeExpectedWithTorch(SeedData& s) {
    for (std::size_t i = 0; i < m_req.task.outputs.size(); ++i)
        s.expected.push_back(makeTensor(m_req.task.outputs[i].dtype, m_outputCounts[i]));
    auto computed = [&] {
        // PyTorch's kernels on a GPU are device work like the reference kernel's.
        const auto hold = holdDevice(false);
        return m_torch->compute(m_req.reference, m_req.task, m_sizes, s.inputs, s.expected);
    }();
    if (!computed) {
        s.expected.clear();
        m_result.diagnostics.push_back({"runtime", "error", computed.error(), "reference", 0, 0});
        finish(Status::RuntimeError, "the task's PyTorch reference failed (" + s.label() + "): " + computed.error());
        return false;
    }
    if (!computed->empty() && !m_torchNoted) {
        m_torchNoted = true;
        m_result.diagnostics.push_back({"verification", "info", *computed, "reference", 0, 0});
    }
    if (s.stress.empty() && m_cacheable.count(s.seed))
        m_cache.insert(cacheKey(s.seed), s);
    return true;
}

void Evaluation::timePyTorchBefore() {
    if (!m_req.yardstick || !m_torch || m_timing.empty())
        return;
    const std::string previous = enterPhase("pytorch");
    if (materialise(m_timing.front())) {
        const auto hold = holdDevice(true); // PyTorch is timed alone, as kernels are
        auto timed = m_torch->time(*m_req.yardstick, m_req.task, m_sizes, m_timing.front().inputs,
                                   m_req.options.pytorchRounds / 2, m_req.options.pytorchCompile);
        if (timed)
            m_torchBefore = std::move(*timed);
        else
            m_torchBeforeError = timed.error();
    }
    enterPhase(previous);
}

void Evaluation::timePyTorch() {
    if (m_result.status != Status::Ok || !m_result.candidateTiming)
        return;
    if (!m_req.yardstick || !m_torch) {
        m_result.pytorchNote = "the task has no PyTorch form: no speedup over PyTorch";
        return;
    }
    enterPhase("pytorch");
    SeedData& set = m_timing.empty() ? m_seeds.front() : m_timing.front();
    if (!materialise(set)) { // made again where sets are made one at a time and it was let go
        m_result.pytorchNote = "PyTorch could not be timed: its input set could not be made again";
        return;
    }
    // The second half of the calls, after the kernel's timed runs; with the first half, from
    // before them, the figures bracket the kernel's.
    const int rounds = m_req.options.pytorchRounds;
    const int calls = m_torchBefore ? rounds - rounds / 2 : rounds;
    auto timed = [&] {
        const auto hold = holdDevice(true); // PyTorch is timed alone, as kernels are
        return m_torch->time(*m_req.yardstick, m_req.task, m_sizes, set.inputs, calls, m_req.options.pytorchCompile);
    }();
    if (!timed) {
        m_result.pytorchNote = "PyTorch could not be timed: " + timed.error();
        m_result.diagnostics.push_back({"timing", "warning", m_result.pytorchNote, "yardstick", 0, 0});
        return;
    }
    const auto both = [&](const std::optional<protocol::TimingStats>& after, const std::vector<double>& afterSamples,
                          const std::vector<double>& beforeSamples) -> std::optional<protocol::TimingStats> {
        if (!after || beforeSamples.empty() || afterSamples.empty())
            return after;
        std::vector<double> all = beforeSamples;
        all.insert(all.end(), afterSamples.begin(), afterSamples.end());
        return summarise(all, after->method + ", half the calls before the kernel's timed runs and half after");
    };
    if (m_torchBefore) {
        m_result.eagerTiming = both(timed->eager, timed->eagerSamples, m_torchBefore->eagerSamples);
        m_result.compileTiming = both(timed->compile, timed->compileSamples, m_torchBefore->compileSamples);
    } else {
        m_result.eagerTiming = timed->eager;
        m_result.compileTiming = timed->compile;
        if (!m_torchBeforeError.empty())
            m_result.diagnostics.push_back({"timing", "info",
                                            "PyTorch timed after the kernel only: before it, " + m_torchBeforeError,
                                            "yardstick", 0, 0});
    }
    m_result.pytorchNote = timed->note;
    setPyTorchSpeedups(*m_result.candidateTiming);
    if (m_req.options.timingMode != "kernelbench" && m_req.options.pytorchBeside && m_backend.name() == "cuda")
        timeBesidePyTorch(set);
    // A task without a baseline kernel is measured against PyTorch eager, timed here.
    if (!m_req.baseline && m_result.speedupVsEager) {
        m_result.speedup = m_result.speedupVsEager;
        m_result.speedupBase = "pytorch eager";
    }
}

void Evaluation::setPyTorchSpeedups(const protocol::TimingStats& kernel) {
    // The same statistic as the speedup over the baseline: means in KernelBench's mode.
    const bool means = m_req.options.timingMode == "kernelbench";
    const auto of = [&](const protocol::TimingStats& t) { return means ? t.meanUs : t.medianUs; };
    const double mine = of(kernel);
    m_result.speedupVsEager.reset();
    m_result.speedupVsCompile.reset();
    m_result.speedupVsEagerInterval.reset();
    m_result.speedupVsCompileInterval.reset();
    if (mine > 0.0 && m_result.eagerTiming && of(*m_result.eagerTiming) > 0.0)
        m_result.speedupVsEager = of(*m_result.eagerTiming) / mine;
    if (mine > 0.0 && m_result.compileTiming && of(*m_result.compileTiming) > 0.0)
        m_result.speedupVsCompile = of(*m_result.compileTiming) / mine;
}

void Evaluation::timeBesidePyTorch(const SeedData& set) {
    // Two processes can run one kernel at different speeds (on an H200, the same memory-bound
    // kernel binary 2-4% apart between a C++ process and a Python one, with the same launch, data
    // and timer): a speedup over PyTorch is fair only when both are timed in one process. The
    // candidate, verified, goes to a PyTorch process of its own, which ends with this evaluation:
    // its device code never runs where references are computed later.
    // A plan that cannot travel is a limit of the format (info); a kernel that went there and
    // failed, or ran far faster there than in its verified runs here, is worth a look (warning).
    const auto skipped = [&](const std::string& why, const char* severity = "warning") {
        m_result.diagnostics.push_back({"timing", severity,
                                        "the candidate was not timed in PyTorch's process (" + why
                                            + "): the speedups over PyTorch compare two processes' times",
                                        "yardstick", 0, 0});
    };
    auto launches = m_backend.portableLaunches(*m_candidate->program, m_candidate->plan);
    if (!launches)
        return skipped(launches.error(), "info");
    const auto timed = [&] {
        TorchBridge own(m_torch->device());
        const auto hold = holdDevice(true);
        return own.time(*m_req.yardstick, m_req.task, m_sizes, set.inputs, m_req.options.pytorchRounds,
                        m_req.options.pytorchCompile, &*launches);
    }();
    if (!timed)
        return skipped(timed.error());
    if (!timed->kernel || !timed->eager || timed->kernel->medianUs <= 0.0 || timed->eager->medianUs <= 0.0)
        return skipped("no time came back for it: " + timed->note);
    // There every run is poisoned and checked too, but against eager's outputs with twice the
    // tolerances, and one process's figure must not stand in for the other's when they disagree
    // by more than processes do (a few percent): a kernel much faster there than in its verified
    // runs here is doing something else there.
    if (m_result.candidateTiming && timed->kernel->medianUs < kBesideAgreement * m_result.candidateTiming->medianUs)
        return skipped("there it took " + formatNumber(timed->kernel->medianUs, 4) + " us, against "
                       + formatNumber(m_result.candidateTiming->medianUs, 4)
                       + " us in its verified runs here; a gap that large is not the process's");
    const auto us = [](const std::optional<protocol::TimingStats>& t) {
        return t ? formatNumber(t->medianUs, 4) + " us" : std::string("not timed");
    };
    m_result.diagnostics.push_back({"timing", "info",
                                    "timed in separate processes: the candidate " + us(m_result.candidateTiming)
                                        + " (the worker's), PyTorch eager " + us(m_result.eagerTiming)
                                        + ", torch.compile " + us(m_result.compileTiming)
                                        + " (PyTorch's); the speedups over PyTorch are from one process",
                                    "yardstick", 0, 0});
    m_result.besideTiming = timed->kernel;
    m_result.eagerTiming = timed->eager;
    m_result.compileTiming = timed->compile;
    setPyTorchSpeedups(*timed->kernel);
    // Timed in the same rounds: each round's ratio, and how much they vary, say whether a
    // speedup near 1 is one. The speedup shown is a ratio of medians, not the median of the
    // ratios; the interval is widened to hold it where it falls outside, so that "faster" never
    // stands beside a figure below 1 (nor "slower" beside one above).
    const auto sure = [](double speedup, const std::vector<double>& theirs, const std::vector<double>& mine) {
        auto interval = pairedRatioInterval(theirs, mine);
        if (interval) {
            interval->low = std::min(interval->low, speedup);
            interval->high = std::max(interval->high, speedup);
        }
        return interval;
    };
    if (m_result.speedupVsEager)
        m_result.speedupVsEagerInterval = sure(*m_result.speedupVsEager, timed->eagerSamples, timed->kernelSamples);
    if (m_result.speedupVsCompile)
        m_result.speedupVsCompileInterval =
            sure(*m_result.speedupVsCompile, timed->compileSamples, timed->kernelSamples);
    m_result.pytorchNote = timed->note;
}

bool Evaluation::verifyCandidate() {
    const auto& task = m_req.task;
    for (const auto& o : task.outputs) {
        protocol::OutputCheck c;
        c.name = o.name;
        c.atol = o.atol;
        c.rtol = o.rtol;
        m_result.outputs.push_back(c);
    }
    std::string inputsChanged;
    std::string sideEffects;
    std::vector<std::vector<std::uint64_t>> candidateHashes(task.outputs.size());
    std::vector<std::vector<std::uint64_t>> expectedHashes(task.outputs.size());
    std::vector<HostTensor> outputs;
    int run = 0;
    auto runCandidate = [&](std::size_t k, int poison) {
        auto r = runOnce(*m_candidate, k, m_seeds[k], poison, outputs, &inputsChanged);
        if (!r) {
            m_result.diagnostics.push_back({"runtime", "error", r.error(), "candidate", 0, 0});
            finish(Status::RuntimeError, "candidate failed at run time: " + r.error());
            return false;
        }
        if (sideEffects.empty())
            sideEffects = r->integrityProblem;
        // A write next to a buffer is wrong whatever the outputs say.
        std::optional<Step> guarding(std::in_place, *this, "guards");
        auto outside = checkGuards(*m_candidate);
        guarding.reset();
        if (!outside) {
            const std::string problem = "reading the guard regions failed: " + outside.error();
            addCheck("guards_intact", false, problem + " (" + m_seeds[k].label() + ")");
            m_result.diagnostics.push_back({"runtime", "error", problem, "candidate", 0, 0});
            finish(Status::RuntimeError, "cannot check the candidate's buffers: " + problem);
            return false;
        }
        if (!outside->empty()) {
            addCheck("guards_intact", false, *outside + " (" + m_seeds[k].label() + ")");
            m_result.diagnostics.push_back({"integrity", "error", *outside, "candidate", 0, 0});
            finish(Status::Incorrect, "candidate is incorrect: " + *outside);
            return false;
        }
        return true;
    };
    for (std::size_t k = 0; k < m_seeds.size(); ++k) {
        // The first seed runs the candidate twice, with each poison pattern, so an unwritten
        // element is caught whatever value it should hold; the first of those runs comes before the
        // reference has run at all, so no result can be picked up from memory the reference used.
        std::vector<std::vector<HostTensor>> early;
        if (!materialise(m_seeds[k]))
            return false;
        if (k == 0) {
            if (!runCandidate(k, run++ % 2))
                return false;
            early.push_back(outputs);
        }
        if (!computeExpected(m_seeds[k]))
            return false;
        {
            const Step step(*this, "compare");
            for (const auto& e : early)
                compare(e, m_seeds[k], 0, true);
        }
        if (!runCandidate(k, run++ % 2))
            return false;
        {
            const Step step(*this, "compare");
            compare(outputs, m_seeds[k], (run - 1) % 2, true);
        }
        // The outputs' digests, for telling results of different inputs apart: the candidate's
        // where it left them, when the device can digest them there.
        const Step step(*this, "digest");
        const Bindings& bindings = m_candidate->bindingSets[k % m_candidate->bindingSets.size()];
        for (std::size_t o = 0; o < outputs.size(); ++o) {
            std::optional<std::uint64_t> got;
            if (m_backend.digestsOnDevice()) {
                const auto hold = holdDevice(false);
                if (auto d = m_backend.digest(bindings.outputs[o], outputs[o].byteSize(), m_digestKey))
                    got = *d;
            }
            candidateHashes[o].push_back(got ? *got
                                             : digest(outputs[o].bytes.data(), outputs[o].byteSize(), m_digestKey));
            const auto& e = m_seeds[k].expected[o];
            expectedHashes[o].push_back(digest(e.bytes.data(), e.byteSize(), m_digestKey));
        }
        release(m_seeds[k]);
    }

    addCheck("guards_intact", true, "");
    addCheck("inputs_unchanged", inputsChanged.empty(), inputsChanged);
    addCheck("no_side_effects", sideEffects.empty(), sideEffects);
    std::uint64_t unwritten = 0, mismatches = 0;
    for (const auto& c : m_result.outputs) {
        unwritten += c.unwritten;
        mismatches += c.mismatches;
    }
    addCheck("all_written", unwritten == 0,
             unwritten ? std::to_string(unwritten) + " output elements kept the poison written before the run" : "");

    // A result that does not change when the reference's does is not computed from the inputs.
    std::string constant;
    for (std::size_t o = 0; o < task.outputs.size() && constant.empty(); ++o)
        for (std::size_t a = 0; a + 1 < m_seeds.size() && constant.empty(); ++a)
            for (std::size_t b = a + 1; b < m_seeds.size() && constant.empty(); ++b)
                if (candidateHashes[o][a] == candidateHashes[o][b] && expectedHashes[o][a] != expectedHashes[o][b])
                    constant = "output '" + task.outputs[o].name + "' is identical for " + m_seeds[a].label() + " and "
                               + m_seeds[b].label()
                               + " although the reference's differs: it does not depend on the inputs";
    if (m_seeds.size() > 1)
        addCheck("depends_on_inputs", constant.empty(), constant);

    for (const std::string* problem : {&inputsChanged, &sideEffects}) {
        if (problem->empty())
            continue;
        m_result.diagnostics.push_back({"integrity", "error", *problem, "candidate", 0, 0});
        finish(Status::Rejected, "candidate rejected: " + *problem);
        return false;
    }
    if (!constant.empty())
        m_result.diagnostics.push_back({"integrity", "error", constant, "candidate", 0, 0});
    if (mismatches || !constant.empty()) {
        for (std::size_t o = 0; o < m_result.outputs.size(); ++o) {
            const auto& c = m_result.outputs[o];
            if (!c.mismatches)
                continue;
            std::string msg = "output '" + c.name + "': " + std::to_string(c.mismatches) + " of "
                              + std::to_string(c.checked) + " elements wrong";
            if (c.unwritten)
                msg += " (" + std::to_string(c.unwritten) + " never written)";
            if (c.firstMismatch)
                msg += "; first at index " + std::to_string(*c.firstMismatch) + ": got " + formatNumber(c.firstGot, 7)
                       + ", expected " + formatNumber(c.firstExpected, 7) + " (" + m_firstMismatchInputs[o] + ")";
            m_result.diagnostics.push_back({"verification", "error", msg, "candidate", 0, 0});
        }
        finish(Status::Incorrect,
               mismatches ? "candidate is incorrect: " + outputSummary() : "candidate is incorrect: " + constant);
        return false;
    }
    return true;
}

std::string Evaluation::outputSummary() const {
    std::string s;
    for (const auto& c : m_result.outputs) {
        if (!c.mismatches)
            continue;
        if (!s.empty())
            s += "; ";
        s += c.name + ": " + std::to_string(c.mismatches) + " of " + std::to_string(c.checked) + " elements wrong";
        if (c.unwritten)
            s += ", " + std::to_string(c.unwritten) + " never written";
        else
            s += ", max abs error " + formatNumber(c.maxAbsError);
    }
    return s;
}

void Evaluation::timeCandidate() {
    const auto& o = m_req.options;
    const bool kernelBench = o.timingMode == "kernelbench";
    // The timed inputs are seeds that verification never showed: their expected outputs come from
    // the reference now, before the candidate sees them.
    for (auto& s : m_timing)
        if (!materialise(s) || !computeExpected(s))
            return;
    if (m_timing.empty()) {
        finish(Status::RuntimeError, "no input sets to time with (evaluate.options.timing_seeds is empty)");
        return;
    }
    if (auto st = m_backend.setTimingMode(kernelBench ? TimingMode::KernelBench : TimingMode::Default); !st) {
        m_result.diagnostics.push_back({"timing", "error", st.error(), "", 0, 0});
        finish(Status::RuntimeError, "cannot time as asked: " + st.error());
        return;
    }
    // KernelBench's protocol: a fixed 100 trials, caches flushed before each, the mean reported.
    const int minReps = kernelBench ? 100 : o.minRepetitions;
    const int maxReps = kernelBench ? 100 : o.maxRepetitions;
    const std::size_t sets = m_timing.size();
    std::vector<double> candidateUs, baselineUs;
    std::vector<HostTensor> outputs;
    // Each set's buffers get their inputs once; timed runs leave them in place (they are checked
    // unchanged at the end). A timed run's outputs are verified byte for byte against the set's
    // first verified timed output, with a full comparison whenever the bytes differ: by their
    // digests where the backend digests on the device (nothing read back), else read back.
    struct Verified {
        std::vector<HostTensor> outputs;
        std::vector<std::uint64_t> digests;
        bool empty() const { return outputs.empty() && digests.empty(); }
    };
    const bool digests = m_backend.digestsOnDevice();
    std::map<const Prepared*, std::vector<Verified>> verified;
    for (Prepared* p : {m_candidate.get(), m_baseline.get()}) {
        if (!p)
            continue;
        verified[p].resize(sets);
        for (std::size_t set = 0; set < sets; ++set) {
            const Bindings& b = p->bindingSets[set % p->bindingSets.size()];
            for (std::size_t i = 0; i < m_timing[set].inputs.size(); ++i)
                if (auto st = m_backend.upload(b.inputs[i], m_timing[set].inputs[i].bytes.data(),
                                               m_timing[set].inputs[i].byteSize());
                    !st) {
                    finish(Status::RuntimeError, "cannot upload inputs for timing: " + st.error());
                    return;
                }
            for (std::size_t i = 0; i < m_timing[set].inputs.size(); ++i)
                noteUploaded(b.inputs[i], m_timing[set].inputs[i].byteSize());
        }
    }
    std::string timedFailure;
    bool baselineOk = m_baseline != nullptr;
    std::string baselineProblem;
    const int kernels = m_baseline ? 2 : 1;
    if (o.pytorch)
        timePyTorchBefore();
    const auto t0 = Clock::now();
    int run = 0;
    // The first run of each kernel on each input set sees inputs it has never seen; later runs see
    // them again. A kernel that is much faster the second time has kept something from the first.
    std::map<const Prepared*, std::set<std::size_t>> seen;
    std::map<const Prepared*, std::vector<double>> freshUs;

    // Each timed run gets inputs from a rotating set in its own buffers, fresh poison, cold caches,
    // and is verified: a kernel that remembers results between calls fails here.
    auto timed = [&](Prepared& p, int index, std::vector<double>* samples, std::string& failure) {
        const std::size_t set = static_cast<std::size_t>(index) % sets;
        const SeedData& s = m_timing[set];
        const int poison = run++ % 2;
        auto& known = verified[&p][set];
        const bool byDigest = !known.digests.empty();
        auto r = runOnce(p, set, s, poison, outputs, nullptr, false, !byDigest, true);
        if (!r) {
            failure = "timed run " + std::to_string(index) + " failed: " + r.error();
            return false;
        }
        if (!r->integrityProblem.empty()) {
            failure = "timed run " + std::to_string(index) + ": " + r->integrityProblem;
            return false;
        }
        const Bindings& bindings = p.bindingSets[set % p.bindingSets.size()];
        const auto outputDigests = [&]() -> std::optional<std::vector<std::uint64_t>> {
            const Step step(*this, "digest");
            const auto hold = holdDevice(false);
            std::vector<std::uint64_t> d;
            for (std::size_t i = 0; i < outputs.size(); ++i) {
                auto one = m_backend.digest(bindings.outputs[i], outputs[i].byteSize(), m_digestKey);
                if (!one)
                    return std::nullopt;
                d.push_back(*one);
            }
            return d;
        };
        bool same = false;
        if (byDigest) {
            same = outputDigests() == known.digests;
            if (!same)
                if (auto st = download(bindings, outputs); !st) {
                    failure = "timed run " + std::to_string(index) + ": reading its outputs back failed: " + st.error();
                    return false;
                }
        } else {
            same = !known.outputs.empty()
                   && std::equal(outputs.begin(), outputs.end(), known.outputs.begin(),
                                 [](const HostTensor& a, const HostTensor& b) { return a.bytes == b.bytes; });
        }
        const Step step(*this, "compare");
        if (!same) {
            if (const auto wrong = compare(outputs, s, poison, false)) {
                failure = "timed run " + std::to_string(index) + " (timing " + s.label() + ") gave "
                          + std::to_string(wrong) + " wrong elements: results must be computed afresh on every call";
                return false;
            }
            if (known.empty()) {
                // Where digests cannot be had, the bytes are kept instead.
                if (auto d = digests ? outputDigests() : std::nullopt)
                    known.digests = std::move(*d);
                else
                    known.outputs = outputs;
            }
        }
        if (seen[&p].insert(set).second)
            freshUs[&p].push_back(r->microseconds);
        else if (samples)
            samples->push_back(r->microseconds);
        return true;
    };

    for (int w = 0; w < o.warmup && timedFailure.empty(); ++w) {
        timed(*m_candidate, w, nullptr, timedFailure);
        if (baselineOk && !timed(*m_baseline, w, nullptr, baselineProblem))
            baselineOk = false;
    }
    // Candidate and baseline alternate, so drifts in clock or temperature affect both alike.
    for (int rep = 0; rep < maxReps && timedFailure.empty(); ++rep) {
        if (!timed(*m_candidate, rep, &candidateUs, timedFailure))
            break;
        if (baselineOk && !timed(*m_baseline, rep, &baselineUs, baselineProblem))
            baselineOk = false;
        if (static_cast<int>(candidateUs.size()) < minReps)
            continue;
        // Precise enough once the median's standard error, estimated from the interquartile
        // range (about 0.93 * IQR / sqrt(n) for well-behaved timings), is below the target.
        auto precise = [&](const std::vector<double>& v) {
            return 0.93 * summarise(v, "").spread / std::sqrt(static_cast<double>(v.size())) <= o.targetPrecision;
        };
        const bool stable = precise(candidateUs) && (!baselineOk || precise(baselineUs));
        if (!kernelBench && (stable || secondsSince(t0) > o.timeCapSeconds * kernels))
            break;
    }

    // The inputs stayed in place through the timed runs: they must still be the sets' inputs, and
    // the guard regions must still hold their poison.
    for (std::size_t set = 0; set < sets && timedFailure.empty(); ++set) {
        auto changed = checkInputs(m_candidate->bindingSets[set % m_candidate->bindingSets.size()], m_timing[set]);
        if (!changed)
            timedFailure = "reading back inputs after timing failed: " + changed.error();
        else if (!changed->empty())
            timedFailure = *changed + " during the timed runs";
    }
    if (timedFailure.empty()) {
        auto outside = checkGuards(*m_candidate);
        if (!outside)
            timedFailure = "reading the guard regions after timing failed: " + outside.error();
        else if (!outside->empty())
            timedFailure = *outside + " during the timed runs";
    }
    addCheck("timed_runs_verified", timedFailure.empty(), timedFailure);
    if (!timedFailure.empty()) {
        m_result.diagnostics.push_back({"integrity", "error", timedFailure, "candidate", 0, 0});
        finish(Status::Incorrect, "candidate is incorrect: " + timedFailure);
        return;
    }
    const std::string method = m_backend.timingMethod() + (kernelBench ? " (kernelbench protocol)" : "");
    if (candidateUs.empty()) // fewer repetitions than input sets: the first runs are all there is
        candidateUs = freshUs[m_candidate.get()];
    m_result.candidateTiming = summarise(candidateUs, method);
    auto headline = [&](const protocol::TimingStats& t) { return kernelBench ? t.meanUs : t.medianUs; };

    // Fresh against repeated inputs: the fastest first run against the median of the repeats, for
    // the candidate and, as the control for what first runs cost on this device, the baseline.
    const auto repeatRatio = [&](const Prepared* p,
                                 const std::vector<double>& repeats) -> std::optional<std::pair<double, double>> {
        const auto& fresh = freshUs[p];
        if (fresh.empty() || repeats.empty())
            return std::nullopt;
        const double first = *std::min_element(fresh.begin(), fresh.end());
        const double again = summarise(repeats, "").medianUs;
        if (again <= 0.0)
            return std::nullopt;
        return std::make_pair(first, again);
    };
    if (auto c = repeatRatio(m_candidate.get(), candidateUs)) {
        const double ratio = c->first / c->second;
        std::optional<double> control;
        if (m_baseline && baselineOk)
            if (auto b = repeatRatio(m_baseline.get(), baselineUs))
                control = b->first / b->second;
        // Twice as fast on repeats, by more than timer noise, and clearly more than the baseline
        // gains from a second look at its inputs.
        const auto slow = [&](double firstUs) {
            const double r = firstUs / c->second;
            return r > 2.0 && firstUs - c->second > 5.0 && (!control || r > 1.5 * *control);
        };
        bool suspicious = slow(c->first);
        std::string detail = "first runs on unseen inputs " + formatNumber(c->first) + " us (fastest), repeats "
                             + formatNumber(c->second) + " us (median): " + formatNumber(ratio) + "x";
        if (control)
            detail += "; the baseline " + formatNumber(*control) + "x";
        if (suspicious) {
            // A few first runs are thin evidence: one run can take twice the median on a busy or
            // noisy device (runs on a CPU device spread threefold) as well as for a kernel that
            // keeps results. Further unseen inputs settle it.
            const auto again = recheckFirstRuns(slow);
            if (!again)
                return;
            std::string times;
            for (double t : *again)
                times += (times.empty() ? "" : ", ") + formatNumber(t);
            suspicious = !again->empty() && slow(again->back());
            if (suspicious) {
                detail = "much faster on inputs it has seen before: " + detail + "; first runs on "
                         + std::to_string(again->size()) + " further unseen input sets were as slow (" + times
                         + " us). It may keep results between calls";
                m_result.diagnostics.push_back({"integrity", "warning", detail, "candidate", 0, 0});
            } else {
                detail += ", but a first run on a further unseen input set took " + formatNumber(again->back())
                          + " us (" + std::to_string(again->size())
                          + " tried): the slow first runs were the device's, not results kept";
            }
        }
        addCheck("fresh_inputs_speed", !suspicious, detail);
    }

    if (m_baseline && baselineOk && baselineUs.empty())
        baselineUs = freshUs[m_baseline.get()];
    if (m_baseline) {
        if (baselineOk && !baselineUs.empty()) {
            m_result.baselineTiming = summarise(baselineUs, method);
            if (headline(*m_result.candidateTiming) > 0) {
                m_result.speedup = headline(*m_result.baselineTiming) / headline(*m_result.candidateTiming);
                m_result.speedupBase = "baseline";
            }
        } else {
            m_result.diagnostics.push_back(
                {"timing", "warning", "baseline not timed, so no speedup: " + baselineProblem, "baseline", 0, 0});
        }
    }
    const auto& t = *m_result.candidateTiming;
    std::string msg = "correct on " + std::to_string(m_seeds.size()) + " input set(s); " + formatNumber(headline(t))
                      + " us " + (kernelBench ? "mean" : "median") + " over " + std::to_string(t.count)
                      + " runs (spread " + formatNumber(100.0 * t.spread, 2) + "%)";
    if (m_result.speedup)
        msg += ", " + formatNumber(*m_result.speedup) + "x the baseline's speed";
    finish(Status::Ok, msg);
}

std::optional<std::vector<double>> Evaluation::recheckFirstRuns(const std::function<bool(double)>& slow) {
    // Four sets: an honest kernel whose first run was merely unlucky is cleared by the first one
    // almost always, and four unlucky runs in a row are rarer than one in a thousand even where a
    // quarter of all runs take twice the median.
    constexpr int kSets = 4;
    if (m_req.reference.form != "torch" && !m_reference) {
        // Every set so far came with expected outputs (reference data or the seed cache): the
        // reference kernel is prepared now, for the new sets.
        m_reference = std::make_unique<Prepared>(m_backend);
        if (!bind(*m_reference, m_req.reference, true)
            || !build(*m_reference, m_backend.compile(m_reference->source, m_reference->plan.defines, "reference")))
            return std::nullopt;
    }
    // Where sets are made one at a time, the timed sets (checked and done with) make room for the
    // new ones; PyTorch's timing, later, makes its set again.
    for (SeedData& s : m_timing)
        release(s);
    std::set<std::uint64_t> used(m_result.seeds.begin(), m_result.seeds.end());
    used.insert(m_result.timingSeeds.begin(), m_result.timingSeeds.end());
    std::vector<double> firstUs;
    std::vector<HostTensor> outputs;
    for (int k = 0; k < kSets; ++k) {
        std::uint64_t seed = 0;
        do
            seed = secureSeeds(1).front();
        while (used.count(seed));
        used.insert(seed);
        SeedData set{seed, {}, {}, {}};
        if (!materialise(set) || !computeExpected(set))
            return std::nullopt;
        // Into the first timing set's buffers, which the candidate has run on before: a kernel that
        // keys what it keeps on its buffers rather than their contents gives stale results here.
        auto r = runOnce(*m_candidate, 0, set, k % 2, outputs, nullptr, true, true, true);
        std::string failure;
        if (!r)
            failure = "failed: " + r.error();
        else if (!r->integrityProblem.empty())
            failure = r->integrityProblem;
        else if (const auto wrong = compare(outputs, set, k % 2, false))
            failure =
                "gave " + std::to_string(wrong) + " wrong elements: results must be computed afresh on every call";
        if (!failure.empty()) {
            failure.insert(0, "a run on a further unseen input set (seed " + std::to_string(seed) + ") ");
            for (auto& check : m_result.checks)
                if (check.name == "timed_runs_verified")
                    check = {check.name, false, failure};
            m_result.diagnostics.push_back({"integrity", "error", failure, "candidate", 0, 0});
            finish(Status::Incorrect, "candidate is incorrect: " + failure);
            return std::nullopt;
        }
        firstUs.push_back(r->microseconds);
        if (!slow(r->microseconds))
            break;
    }
    return firstUs;
}

EvaluateResult Evaluation::run() {
    const auto& task = m_req.task;
    try {
        if (auto st = m_backend.open(m_req.options.device); !st) {
            finish(Status::RuntimeError, "no device: " + st.error());
            m_result.diagnostics.push_back({"runtime", "error", st.error(), "", 0, 0});
            return m_result;
        }
        m_result.device = m_backend.deviceName();
        m_lock = &m_locks.forKey(m_backend.deviceKey());
        // Verification always runs under the default timer, whose records carry the integrity
        // checks; a KernelBench request switches only for its timed runs.
        if (auto st = m_backend.setTimingMode(TimingMode::Default); !st) {
            finish(Status::RuntimeError, st.error());
            return m_result;
        }
        auto sizes = task.sizesFor(m_req.variant);
        if (!sizes) {
            finish(Status::RuntimeError, sizes.error());
            return m_result;
        }
        m_sizes = *sizes;
        for (const auto& t : task.inputs)
            m_inputCounts.push_back(static_cast<std::uint64_t>(*task.elementCount(t, m_sizes)));
        for (const auto& t : task.outputs)
            m_outputCounts.push_back(static_cast<std::uint64_t>(*task.elementCount(t, m_sizes)));

        enterPhase("prepare");
        secureRandomBytes(&m_guardByte, 1);
        secureRandomBytes(&m_digestKey, sizeof m_digestKey);
        m_guardByte =
            m_guardByte == 0 || m_guardByte == 0xff ? 0xa5 : m_guardByte; // not a value kernels write by habit
        planMemory();
        if (!chooseSeeds())
            return m_result;
        // The reference is needed unless the task's reference data or the seed cache (seeds a
        // request named before) covers every input set.
        const auto hasData = [&](std::uint64_t seed) {
            return task.findReferenceData(m_req.variant, seed) != nullptr
                   || (m_cacheable.count(seed) > 0 && m_cache.find(cacheKey(seed)) != nullptr);
        };
        const bool referenceNeeded = (m_req.options.stress && !task.stress.empty())
                                     || !std::all_of(m_result.seeds.begin(), m_result.seeds.end(), hasData)
                                     || !std::all_of(m_result.timingSeeds.begin(), m_result.timingSeeds.end(), hasData);
        m_candidate = std::make_unique<Prepared>(m_backend);
        if (referenceNeeded && m_req.reference.form == "torch") {
            if (!m_torch) {
                finish(Status::RuntimeError, "this worker cannot compute a PyTorch reference");
                return m_result;
            }
        } else if (referenceNeeded) {
            m_reference = std::make_unique<Prepared>(m_backend);
            if (!bind(*m_reference, m_req.reference, true))
                return m_result;
        }
        if (!bind(*m_candidate, m_req.candidate, false))
            return m_result;
        if (m_req.baseline && m_req.options.timing) {
            m_baseline = std::make_unique<Prepared>(m_backend);
            if (!bind(*m_baseline, *m_req.baseline, true)) {
                m_result.diagnostics.push_back({"timing", "warning",
                                                "the baseline could not be prepared, so no speedup is reported",
                                                "baseline", 0, 0});
                m_baseline.reset();
            }
        }
        enterPhase("compile");
        // Compile every kernel file at once: compilers are slow and the device is idle meanwhile.
        std::vector<Prepared*> all;
        for (Prepared* p : {m_reference.get(), m_candidate.get(), m_baseline.get()})
            if (p)
                all.push_back(p);
        std::vector<std::future<CompileOutput>> compiles;
        compiles.reserve(all.size());
        for (Prepared* p : all)
            compiles.push_back(std::async(
                std::launch::async, [this, p] { return m_backend.compile(p->source, p->plan.defines, p->role); }));
        // The inputs are generated while the compilers work.
        enterPhase("inputs");
        const bool generated = generateInputs();
        enterPhase("compile");
        std::vector<CompileOutput> outputs;
        outputs.reserve(compiles.size());
        for (auto& f : compiles)
            outputs.push_back(f.get());
        if (!generated)
            return m_result;
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (build(*all[i], std::move(outputs[i])))
                continue;
            if (all[i] != m_baseline.get())
                return m_result;
            m_result.diagnostics.push_back({"timing", "warning",
                                            "the baseline could not be prepared, so no speedup is reported", "baseline",
                                            0, 0});
            m_baseline.reset();
        }
        enterPhase("verification");
        if (!verifyCandidate())
            return m_result;
        enterPhase("timing");
        m_result.timingMode = m_req.options.timingMode;
        if (m_req.options.profile) {
            // One extra run under the counters; its outputs are not needed, the verified runs stand.
            const auto hold = holdDevice(true); // the counters see this kernel alone
            m_result.profile =
                m_backend.profile(*m_candidate->program, m_candidate->plan, m_candidate->bindingSets.front());
        }
        if (m_req.options.timing) {
            timeCandidate();
            if (m_req.options.pytorch)
                timePyTorch();
        } else {
            addCheck("timed_runs_verified", true, "timing not requested");
            finish(Status::Ok, "correct on " + std::to_string(m_seeds.size()) + " input set(s)");
        }
    } catch (const std::bad_alloc&) {
        finish(Status::RuntimeError, "out of host memory for these sizes");
    } catch (const std::exception& e) {
        finish(Status::RuntimeError, std::string("internal error in the worker: ") + e.what());
    }
    return m_result;
}

} // namespace

const SeedData* SeedCache::find(const std::string& key) {
    auto it = m_entries.find(key);
    if (it == m_entries.end())
        return nullptr;
    it->second.lastUse = ++m_clock;
    return &it->second.data;
}

void SeedCache::insert(const std::string& key, const SeedData& data) {
    std::size_t bytes = key.size();
    for (const auto* list : {&data.inputs, &data.expected})
        for (const auto& t : *list)
            bytes += t.byteSize();
    if (bytes > m_capacity || m_entries.count(key))
        return;
    while (m_bytes + bytes > m_capacity && !m_entries.empty()) {
        auto oldest = std::min_element(m_entries.begin(), m_entries.end(), [](const auto& a, const auto& b) {
            return a.second.lastUse < b.second.lastUse;
        });
        m_bytes -= oldest->second.bytes;
        m_entries.erase(oldest);
    }
    m_entries.emplace(key, Entry{data, bytes, ++m_clock});
    m_bytes += bytes;
}

Evaluator::Evaluator(Backend& backend, std::size_t cacheBytes) : m_backend(backend), m_seeds(cacheBytes) {}
Evaluator::~Evaluator() = default;

EvaluateResult Evaluator::evaluate(const EvaluateRequest& request) {
    const auto t0 = Clock::now();
    TorchBridge* torch = nullptr;
    if (request.reference.form == "torch" || (request.options.pytorch && request.yardstick)) {
        // One PyTorch process per worker and device, started on first use and kept.
        const std::string device =
            m_backend.name() == "cuda" ? "cuda:" + std::to_string(request.options.device) : std::string("cpu");
        if (!m_torch || m_torchDevice != device) {
            m_torch = std::make_unique<TorchBridge>(device);
            m_torchDevice = device;
        }
        torch = m_torch.get();
    }
    Evaluation evaluation(m_backend, m_seeds, m_locks, request, torch);
    EvaluateResult r = evaluation.run();
    evaluation.enterPhase("");
    r.phaseSeconds = evaluation.phaseSeconds();
    r.wallSeconds = secondsSince(t0);
    return r;
}

} // namespace kforge::harness
