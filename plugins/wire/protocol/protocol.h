#pragma once
// The worker protocol: JSON lines over a worker's stdin/stdout. A worker first prints a hello line
// ({"kforge": "kforge-worker", "protocol": 1, ...}); then each probe or evaluate request line gets
// exactly one response line with the same id; shutdown is not answered, the worker exits. A request that cannot be
// read gets an "error" response naming what is wrong; the worker carries on.

#include "taskspec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kforge::protocol {

inline constexpr const char* kMagic = "kforge-worker";
inline constexpr int kVersion = 1;

// Worker exit codes. A shutdown request is not answered: the worker exits with ExitOk.
enum WorkerExit : int {
    ExitOk = 0,
    ExitUsage = 2,
    ExitDeviceLost = 3, // a request left the device unusable; the answer was sent, start a new worker
};

enum class Status { Ok, CompileError, RuntimeError, Timeout, Incorrect, Rejected };
std::string_view statusName(Status s);
std::optional<Status> parseStatus(std::string_view name);

struct Diagnostic {
    std::string kind;     // compile, launch_plan, integrity, verification, runtime, timing, worker
    std::string severity; // error, warning, info
    std::string message;
    std::string role; // candidate, reference, baseline ("" if none)
    int line = 0;
    int column = 0;
};

struct Hello {
    std::string backend;
    std::string workerVersion;
    int protocol = kVersion;
    std::int64_t pid = 0;
    // Where the worker runs, for workers started elsewhere (over SSH, by Slurm): the host's name
    // and, under Slurm, the job it runs in (SLURM_JOB_ID). Empty where unknown; older workers
    // send neither.
    std::string host;
    std::string job;
};

// Fills in `host` and `job` for this process: its host name and the Slurm job it runs in.
void sayWhere(Hello& hello);

struct KernelInput {
    std::string role; // candidate, reference, baseline
    std::string file; // for messages only
    std::string source;
    std::map<std::string, std::int64_t> params; // overrides of declared parameter defaults
    // "kernel": device code with a launch plan; "torch" (references only): a Python file whose
    // reference() computes the outputs with PyTorch (see the worker's torchbridge.py).
    std::string form = "kernel";
};

struct EvalOptions {
    // Verification seeds. Empty (the default): the worker draws fresh ones from the operating
    // system's secure random source for every evaluation, so a candidate cannot know its inputs in
    // advance; the seeds used are reported in the result, and giving them here reproduces it.
    std::vector<std::uint64_t> seeds;
    // Seeds of the timed runs' inputs, never the verification seeds (every timed run sees inputs
    // that were not shown during verification). Empty: drawn like `seeds`, one per input set.
    std::vector<std::uint64_t> timingSeeds;
    // Adds the task's stress inputs (rows of identical values, large magnitudes...) as extra
    // verification runs where the task names stress sets.
    bool stress = true;
    bool timing = true;
    int warmup = 2;
    int minRepetitions = 10;
    int maxRepetitions = 200;
    double timeCapSeconds = 1.0;   // per timed kernel
    double targetPrecision = 0.01; // stop once the median's relative standard error is below this
    int inputSets = 2;             // rotated during timing; each timed run is verified
    int device = 0;
    std::string timingMode = "default"; // or "kernelbench": CUDA events, 100 trials, L2 flushed, mean
    bool profile = false;               // collect hardware metrics of the candidate (one extra run)
    // Also time the task's PyTorch form, eager and under torch.compile, on the first timed input
    // set (the request carries the form as `yardstick`): speedups over PyTorch beside the one over
    // the baseline. A task without a baseline kernel always has PyTorch eager timed: it is then the
    // yardstick of `speedup` (see EvaluateResult::speedupBase).
    bool pytorch = false;
    bool pytorchCompile = true; // with `pytorch`: torch.compile too (eager alone is much cheaper)
    // With `pytorch`, on CUDA: the verified candidate is also timed in a PyTorch process of its own,
    // side by side with PyTorch (EvaluateResult::besideTiming). That process starts for the one
    // evaluation, seconds of Python and PyTorch start-up: off where PyTorch eager is timed in every
    // evaluation as the yardstick of a task without a baseline kernel.
    bool pytorchBeside = true;
    // With `pytorch`: how many times each of the kernel, PyTorch eager and torch.compile is timed
    // (side by side, one round a call of each after one cache flush, in shuffled order). The
    // verdict's interval narrows with more: about +-1% at 20 rounds for a kernel that varies by 1%,
    // half that at 80. At least kMinPyTorchRounds, the fewest a 95% interval can come from.
    int pytorchRounds = 20;
};
inline constexpr int kMinPyTorchRounds = 6;
inline constexpr int kMaxPyTorchRounds = 1000;
// What is wrong with `rounds` as EvalOptions::pytorchRounds ("3 is not between 6 and 1000"), or ""
// when it is fine: the one check behind the protocol, the run configuration and the command lines.
std::string pytorchRoundsProblem(int rounds);

struct EvaluateRequest {
    std::int64_t id = 0;
    spec::TaskSpec task;
    std::string variant = "default";
    KernelInput reference;
    KernelInput candidate;
    std::optional<KernelInput> baseline;  // timed in the same call, for a paired speedup
    std::optional<KernelInput> yardstick; // the task's PyTorch form, timed when options.pytorch
    EvalOptions options;
};

struct ProbeRequest {
    std::int64_t id = 0;
};

// Asks for the device's measured ceilings (peak DRAM bandwidth, FP32 and tensor throughput),
// measured once per device by micro-kernels and cached; `refresh` measures again.
struct CeilingsRequest {
    std::int64_t id = 0;
    int device = 0;
    bool refresh = false;
};

struct ShutdownRequest {
    std::int64_t id = 0;
};

// Asks for what the compiler makes of one kernel file under the task's launch plan: the
// intermediate code (PTX for CUDA) and, where the toolkit's disassembler is present, the machine
// code (SASS), both with the source lines they came from. Nothing runs, so a worker answers it on
// a machine without a GPU driver when `arch` names the target.
struct DisassembleRequest {
    std::int64_t id = 0;
    spec::TaskSpec task;
    std::string variant = "default";
    KernelInput kernel;
    // The target as a compute capability (major * 10 + minor, e.g. 90); 0: the worker's device.
    int arch = 0;
    int device = 0;
    bool machineCode = true; // also the disassembled machine code, where the tools exist
};

using Request = std::variant<ProbeRequest, EvaluateRequest, ShutdownRequest, CeilingsRequest, DisassembleRequest>;

struct CompileInfo {
    std::string role;
    bool ok = false;
    double seconds = 0.0;
    std::string log;
    std::map<std::string, double> resources; // registers, shared bytes, spills... when known
};

struct OutputCheck {
    std::string name;
    std::uint64_t checked = 0; // elements compared, over all runs
    std::uint64_t mismatches = 0;
    std::uint64_t unwritten = 0; // elements still holding the poison pattern
    std::uint64_t nonFinite = 0; // NaN/Inf where the reference has a finite value
    double maxAbsError = 0.0;
    double maxRelError = 0.0;
    std::optional<std::uint64_t> firstMismatch; // flat index
    double firstGot = 0.0;
    double firstExpected = 0.0;
    std::uint64_t firstSeed = 0;
    // The output's tolerance: an element passes when |got - expected| <= atol + rtol * |expected|,
    // so a large relative error on values near zero can still pass. Unknown in older results.
    std::optional<double> atol;
    std::optional<double> rtol;
};

struct IntegrityCheck {
    std::string name; // inputs_unchanged, all_written, depends_on_inputs, timed_runs_verified...
    bool passed = true;
    std::string detail;
};

struct TimingStats {
    std::string method; // e.g. opencl-profiling, cupti-activity, cuda-events
    int count = 0;
    double medianUs = 0.0;
    double meanUs = 0.0;
    double minUs = 0.0;
    double maxUs = 0.0;
    double spread = 0.0; // (p75 - p25) / median
};
// How sure a speedup timed side by side is. Each round times both calls after the same cache
// flush, so each round gives one ratio (their time / the kernel's); [low, high] is a 95% confidence
// interval of the median of those ratios, from their order statistics (no assumption about how
// times are distributed). An interval that holds 1 is a tie: the two differ by less than the
// rounds vary.
struct RatioInterval {
    double low = 0.0;
    double high = 0.0;
    int rounds = 0;

    bool faster() const { return low > 1.0; }
    bool slower() const { return high < 1.0; }
    bool tie() const { return !faster() && !slower(); }
    // "faster", "slower" or "a tie": the word the interval's JSON carries as "verdict".
    const char* verdict() const { return faster() ? "faster" : slower() ? "slower" : "a tie"; }
    // "a tie, 95% interval 0.993x-1.004x over 20 paired rounds" (or "faster, ...", "slower, ...").
    std::string describe() const;
};

// Timing statistics as results carry them ({"method", "count", "median_us", ...}); missing fields
// read as zero. The PyTorch bridge answers in the same form.
TimingStats timingFromJson(const nlohmann::json& j);

// Hardware metrics of the candidate's kernels (summed over one run of its launch plan). Keys:
// dram_bytes, dram_read_bytes, dram_write_bytes, fp32_flops, fp64_flops, fp16_flops,
// tensor_flops, achieved_occupancy (0..1), sm_throughput (0..1 of peak), dram_throughput (0..1),
// duration_ns. A backend reports what it can measure.
struct ProfileResult {
    std::string status = "unsupported"; // ok, not_permitted, unsupported, error
    std::string message;
    std::map<std::string, double> metrics;
};

struct EvaluateResult {
    std::int64_t id = 0;
    Status status = Status::RuntimeError;
    std::string message; // one line for people
    std::string device;
    std::vector<CompileInfo> compile;
    std::vector<OutputCheck> outputs;
    std::vector<IntegrityCheck> checks;
    // The seeds this evaluation used, drawn or given: `kforge eval --seeds S --timing-seeds T`
    // reproduces it. Stress sets are named by the task and need no seed of their own.
    std::vector<std::uint64_t> seeds;
    std::vector<std::uint64_t> timingSeeds;
    std::vector<std::string> stressSets;
    std::optional<TimingStats> candidateTiming;
    std::optional<TimingStats> baselineTiming;
    std::optional<double> speedup; // baseline / candidate (medians; means in kernelbench mode), both from this call
    // What `speedup` is over: "baseline" (the task's baseline kernel), or "pytorch eager" for a task
    // that has no baseline kernel; empty when there is no speedup (or in results stored before
    // this was recorded, whose speedups are all over the baseline).
    std::string speedupBase;
    std::string timingMode; // "default" or "kernelbench"; empty when nothing was timed
    // PyTorch on the same inputs and device, when asked for (options.pytorch): eager and
    // torch.compile, and the candidate's speedups over each (their median / the candidate's).
    // Where the candidate could also be launched in PyTorch's process (CUDA, see
    // Backend::portableLaunches), `besideTiming` is its time there, timed side by side with eager
    // and torch.compile in shuffled rounds, and the speedups are the ratios of those three medians:
    // one process, one GPU state. Otherwise PyTorch is timed in its process and the candidate in
    // the worker's (candidateTiming).
    std::optional<TimingStats> eagerTiming;
    std::optional<TimingStats> compileTiming;
    std::optional<TimingStats> besideTiming;
    std::optional<double> speedupVsEager;
    std::optional<double> speedupVsCompile;
    // With `besideTiming`: how sure each of those speedups is (see RatioInterval).
    std::optional<RatioInterval> speedupVsEagerInterval;
    std::optional<RatioInterval> speedupVsCompileInterval;
    std::string pytorchNote; // what was not timed and why, or how (PyTorch's version, the method)
    std::vector<Diagnostic> diagnostics;
    std::optional<ProfileResult> profile; // when asked for
    double wallSeconds = 0.0;
    // Where it ran, recorded by the executor that ran it (not by the worker): the machine's host
    // name and the device index the request used there; `device` above names the model.
    std::string host;
    int deviceIndex = -1;
    // Where the wall time went, in seconds: "prepare" (seeds, launch plans, static checks),
    // "compile" (waiting for it after the inputs), "inputs" (generating them), "reference"
    // (expected outputs), "verification", "timing" (the timed runs with their checks).
    std::map<std::string, double> phaseSeconds;
};

struct CeilingsResult {
    std::int64_t id = 0;
    bool ok = false;
    std::string message;
    std::string device;
    bool cached = false;                    // read from the worker's cache rather than measured now
    std::string measuredAt;                 // UTC, ISO 8601
    std::map<std::string, double> ceilings; // dram_bytes_per_s, fp32_flops_per_s, fp16_tensor_flops_per_s, ...
};

// The answer to a DisassembleRequest. `ok` once the intermediate code is there; the machine code
// may still be missing, and `machineCodeNote` then says why (no disassembler in the toolkit...).
struct DisassembleResult {
    std::int64_t id = 0;
    bool ok = false;
    std::string message;  // why it failed, one line for people
    std::string log;      // the compiler's messages
    std::string file;     // the name the compiler gave the source, as line annotations name it
    std::string arch;     // the target, e.g. "sm_90a"
    std::string compiler; // e.g. "NVRTC 13.0"
    std::string intermediateFormat = "ptx";
    std::string intermediate; // with .loc line annotations
    std::string machineFormat = "sass";
    std::string machineCode; // with "//## File ..., line N" annotations where the tool gives them
    std::string machineTool; // e.g. "nvdisasm"
    std::string machineCodeNote;
    double seconds = 0.0;
};

struct DeviceInfo {
    std::string name;
    std::string vendor;
    std::string platform;
    std::string driver;
    std::string kind; // gpu, cpu, accelerator
    nlohmann::json details = nlohmann::json::object();
};

struct ProbeResult {
    std::int64_t id = 0;
    std::string backend;
    bool available = false;
    std::vector<DeviceInfo> devices;
    std::vector<std::string> problems; // what is missing and how to get it
    nlohmann::json details = nlohmann::json::object();
};

// Encoders produce one line (no trailing newline).
std::string encode(const Hello& h);
std::string encode(const Request& r);
std::string encode(const EvaluateResult& r);
std::string encode(const ProbeResult& r);
std::string encode(const CeilingsResult& r);
std::string encode(const DisassembleResult& r);
std::string encodeError(std::optional<std::int64_t> id, const std::string& message);

// Decoders name what is wrong: "line is not JSON: ...", "evaluate.task: ...".
spec::Expected<Hello> decodeHello(const std::string& line);
spec::Expected<Request> decodeRequest(const std::string& line);

// A worker's answer: a result, a probe, or an error report.
struct ErrorResponse {
    std::optional<std::int64_t> id;
    std::string message;
};
using Response = std::variant<EvaluateResult, ProbeResult, ErrorResponse, CeilingsResult, DisassembleResult>;
spec::Expected<Response> decodeResponse(const std::string& line);
std::optional<std::int64_t> responseId(const Response& r);

nlohmann::json toJson(const EvaluateResult& r);
spec::Expected<EvaluateResult> evaluateResultFromJson(const nlohmann::json& j);
// A result as `encode` wrote it (the run store keeps results in the wire format).
spec::Expected<EvaluateResult> decodeEvaluateResult(const std::string& text);
nlohmann::json toJson(const ProbeResult& r);
nlohmann::json toJson(const DisassembleResult& r);
spec::Expected<DisassembleResult> disassembleResultFromJson(const nlohmann::json& j);

} // namespace kforge::protocol

namespace kforge::protocol {

// The evaluate request for a kernel against a loaded task on one backend. An empty
// `candidateSource` evaluates the task's own baseline (and then nothing is paired with it).
// The Python that runs a task's PyTorch form (the workers' references, `kforge import`):
// $KFORGE_PYTHON, else the .venv that `packaging/install-deps.sh --torch` made when it was there
// at build time, else python3 from PATH.
std::string torchPython();

// The task's PyTorch form as the request's reference instead of its reference kernel (to check a
// kernel against PyTorch itself); fails naming the task when it has none.
spec::Status useTorchReference(EvaluateRequest& request, const spec::TaskBundle& task);

spec::Expected<EvaluateRequest> makeEvaluateRequest(const spec::TaskBundle& task, const std::string& backend,
                                                    const std::string& variant, const EvalOptions& options,
                                                    const std::string& candidateSource = {},
                                                    const std::string& candidateFile = {},
                                                    bool pairWithBaseline = true);

} // namespace kforge::protocol
