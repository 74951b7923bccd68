// kforge-worker-fake: a real worker program that speaks the real protocol, without a device, and
// misbehaves on demand so that the worker pool's failure handling can be tested end to end.
//
// It can stand in for any backend: `--backend B` (else $KFORGE_FAKE_BACKEND, else "fake") is the
// backend its hello and probe name, so that with KFORGE_WORKER_OPENCL pointing at it `kforge eval`
// and `kforge run` drive it as their OpenCL worker.
//
// Mode: `--mode X`, else $KFORGE_FAKE_MODE, else ok; one request can override it with a
// `// fake:mode=X` line in the candidate source, and $KFORGE_FAKE_MODE_AT="N:X[,M:Y]" gives the
// N-th evaluation mode X, counting every evaluation of every fake worker process in the file
// $KFORGE_FAKE_COUNTER (so "the third evaluation of the run crashes" survives restarts). Modes:
//   ok             answer with status ok; candidate median from `// fake:time_us=EXPR` (default
//                  100), an expression over the kernel's parameters (declared defaults, overridden
//                  by the request), e.g. `100+abs(BX-16)`, so that a tuner has a landscape to
//                  search; baseline 200 (or `// fake:baseline_us=EXPR`) when a baseline is
//                  given, speedup baseline / candidate. `// fake:incorrect_if=EXPR` makes it
//                  incorrect where EXPR is non-zero; `// fake:fresh_inputs_speed=fail` fails the
//                  fresh_inputs_speed integrity check (status stays ok). The seeds are the
//                  request's, or drawn at random, and reported as the real workers do.
//   crash          abort() on evaluate              hang      never answer an evaluate
//   garbage        print a non-JSON line            wrong-id  answer with another request's id
//   slow           sleep `// fake:sleep_ms=N` (default 500) ms, then answer ok; a sleep_ms line
//                  alone makes any mode take that long
//   bad-hello      hello with protocol 999          no-hello  never print hello; read until EOF
//   exit-after     answer ok, then exit with code 3 (a lost device), after `// fake:exit_delay_ms=N`
//                  (default 0) so that the pool can write the next request first
//   incorrect      status incorrect                 compile-error  status compile_error, line 3
//   error          an error response for the request (what a worker says to a request it cannot read)
//   long-line      65 MiB without a newline, then hang
//   babble         a non-JSON line right after the hello line (in the same write)
//   no-device      a probe lists no device and says the driver is missing (a GPU host without
//                  the NVIDIA driver)
// `// fake:report_env=1` adds an "environment" diagnostic to an ok result: the names (never the
// values) of the variables the worker inherited, one per line, sorted.
// A ceilings request is answered with fixed ceilings: DRAM 1 GB/s, FP32 10 GFLOP/s, a 2 KiB
// cache (a quarter of the engine tests' fake_scale working set, so the DRAM roof binds it); the
// first two times $KFORGE_FAKE_ROOF_SCALE, for a device named $KFORGE_FAKE_DEVICE.
// Qt-free on purpose: like the real workers it links only the protocol code.

#include "expression.h"
#include "kernelfile.h"
#include "protocol.h"

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace {

using namespace kforge::protocol;

// $KFORGE_FAKE_DEVICE names the device (default "Fake Device"), and $KFORGE_FAKE_ROOF_SCALE
// multiplies its DRAM and FP32 ceilings: a second GPU model, for runs that mix models.
std::string deviceName() {
    const char* name = std::getenv("KFORGE_FAKE_DEVICE");
    return name && *name ? name : "Fake Device";
}

// $KFORGE_FAKE_ROOF_FILE, where it names a file holding a number, multiplies them too, read at
// every measurement: a test raises the roofs a run measures again by writing it.
double roofScale() {
    const char* scale = std::getenv("KFORGE_FAKE_ROOF_SCALE");
    double s = scale && *scale ? std::strtod(scale, nullptr) : 1.0;
    if (const char* file = std::getenv("KFORGE_FAKE_ROOF_FILE"); file && *file) {
        std::ifstream in(file);
        double factor = 0.0;
        if (in >> factor && factor > 0.0)
            s *= factor;
    }
    return s;
}

void writeLine(const std::string& line) {
    std::cout << line << '\n';
    std::cout.flush();
}

// The value of a `// fake:<key>=<value>` line in a kernel source.
std::optional<std::string> directive(const std::string& source, const std::string& key) {
    const std::string marker = "// fake:" + key + "=";
    const auto pos = source.find(marker);
    if (pos == std::string::npos)
        return std::nullopt;
    const auto begin = pos + marker.size();
    const auto end = source.find_first_of(" \t\r\n", begin);
    return source.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

double directiveNumber(const std::string& source, const std::string& key, double fallback) {
    if (auto v = directive(source, key)) {
        try {
            return std::stod(*v);
        } catch (const std::exception&) {
        }
    }
    return fallback;
}

// The kernel's parameters as the worker would define them: declared defaults, then the request's
// overrides.
kforge::spec::Variables paramValues(const KernelInput& kernel) {
    kforge::spec::Variables vars;
    if (auto kf = kforge::spec::KernelFile::parse(kernel.source, kforge::spec::Dialect::OpenCL))
        for (const auto& p : kf->params)
            vars[p.name] = static_cast<double>(p.value);
    for (const auto& [name, value] : kernel.params)
        vars[name] = static_cast<double>(value);
    return vars;
}

double directiveExpression(const KernelInput& kernel, const std::string& key, double fallback) {
    auto text = directive(kernel.source, key);
    if (!text)
        return fallback;
    auto value = kforge::spec::Expression::evaluate(*text, paramValues(kernel));
    return value ? *value : fallback;
}

[[noreturn]] void sleepForever() {
    for (;;)
        std::this_thread::sleep_for(std::chrono::hours(1));
}

TimingStats fakeTiming(double us) {
    TimingStats t;
    t.method = "fake";
    t.count = 5;
    t.medianUs = t.meanUs = t.minUs = t.maxUs = us;
    t.spread = 0.0;
    return t;
}

std::vector<std::uint64_t> seedsOr(const std::vector<std::uint64_t>& given, std::size_t count) {
    if (!given.empty())
        return given;
    std::random_device random;
    std::vector<std::uint64_t> seeds;
    for (std::size_t i = 0; i < count; ++i)
        seeds.push_back((static_cast<std::uint64_t>(random()) << 32) | random());
    return seeds;
}

// The names of the variables this process inherited, one per line.
std::string environmentNames() {
    std::vector<std::string> names;
    for (char** entry = environ; entry && *entry; ++entry) {
        const std::string text = *entry;
        names.push_back(text.substr(0, text.find('=')));
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& name : names)
        out += (out.empty() ? "" : "\n") + name;
    return out;
}

EvaluateResult okResult(const EvaluateRequest& request) {
    EvaluateResult r;
    r.id = request.id;
    r.seeds = seedsOr(request.options.seeds, 3);
    r.timingSeeds = seedsOr(request.options.timingSeeds, 1);
    if (request.options.stress)
        r.stressSets = {"fake_identical_rows"};
    r.status = Status::Ok;
    r.message = "fake evaluation by pid " + std::to_string(::getpid());
    r.device = deviceName();
    r.compile.push_back({"candidate", true, 0.001, "", {{"registers", 32}}});
    for (const auto& output : request.task.outputs) {
        OutputCheck check;
        check.name = output.name;
        check.checked = 1024;
        r.outputs.push_back(check);
    }
    r.checks.push_back({"all_written", true, ""});
    if (directive(request.candidate.source, "fresh_inputs_speed") == std::string("fail"))
        r.checks.push_back({"fresh_inputs_speed", false, "4.0x faster on repeated inputs than on fresh ones (fake)"});
    const double candidateUs = directiveExpression(request.candidate, "time_us", 100.0);
    r.candidateTiming = fakeTiming(candidateUs);
    if (request.baseline) {
        r.compile.push_back({"baseline", true, 0.001, "", {}});
        const double baselineUs = directiveExpression(request.candidate, "baseline_us", 200.0);
        r.baselineTiming = fakeTiming(baselineUs);
        r.speedup = baselineUs / candidateUs;
    }
    if (directive(request.candidate.source, "report_env") == std::string("1"))
        r.diagnostics.push_back({"environment", "info", environmentNames(), "", 0, 0});
    r.wallSeconds = 0.001;
    return r;
}

EvaluateResult incorrectResult(const EvaluateRequest& request) {
    EvaluateResult r = okResult(request);
    r.status = Status::Incorrect;
    r.message = "output mismatches the reference";
    r.candidateTiming.reset();
    r.baselineTiming.reset();
    r.speedup.reset();
    for (auto& output : r.outputs) {
        output.mismatches = 1;
        output.maxAbsError = 1.0;
        output.maxRelError = 0.5;
        output.firstMismatch = 0;
        output.firstGot = 1.0;
        output.firstExpected = 2.0;
        output.firstSeed = 1;
    }
    r.diagnostics.push_back({"verification", "error", "element 0 is 1 but the reference says 2", "candidate", 0, 0});
    return r;
}

EvaluateResult compileErrorResult(const EvaluateRequest& request) {
    EvaluateResult r;
    r.id = request.id;
    r.status = Status::CompileError;
    r.message = "the candidate does not compile";
    r.device = deviceName();
    r.compile.push_back({"candidate", false, 0.001, "candidate.cl:3:5: error: use of undeclared identifier 'x'", {}});
    r.diagnostics.push_back({"compile", "error", "use of undeclared identifier 'x'", "candidate", 3, 5});
    return r;
}

std::optional<std::int64_t> idOf(const std::string& line) {
    try {
        auto j = nlohmann::json::parse(line);
        if (j.is_object() && j.contains("id") && j["id"].is_number_integer())
            return j["id"].get<std::int64_t>();
    } catch (const nlohmann::json::exception&) {
    }
    return std::nullopt;
}

// The number of this evaluation among all the fake workers' sharing $KFORGE_FAKE_COUNTER (1 for
// the first); 0 without one.
long countEvaluation() {
    const char* path = std::getenv("KFORGE_FAKE_COUNTER");
    if (!path || !*path)
        return 0;
    std::FILE* file = std::fopen(path, "a+");
    if (!file)
        return 0;
    ::flock(::fileno(file), LOCK_EX);
    long count = 0;
    std::rewind(file);
    if (std::fscanf(file, "%ld", &count) != 1)
        count = 0;
    ++count;
    if (std::FILE* again = std::fopen(path, "w")) {
        std::fprintf(again, "%ld\n", count);
        std::fclose(again);
    }
    ::flock(::fileno(file), LOCK_UN);
    std::fclose(file);
    return count;
}

// The mode $KFORGE_FAKE_MODE_AT gives evaluation `number`, if any.
std::optional<std::string> modeAt(long number) {
    const char* spec = std::getenv("KFORGE_FAKE_MODE_AT");
    if (!spec || number <= 0)
        return std::nullopt;
    std::stringstream items(spec);
    std::string item;
    while (std::getline(items, item, ',')) {
        const auto colon = item.find(':');
        if (colon != std::string::npos && std::atol(item.substr(0, colon).c_str()) == number)
            return item.substr(colon + 1);
    }
    return std::nullopt;
}

// Answers one evaluation; returns the exit code to leave with, if any.
std::optional<int> evaluate(const EvaluateRequest& request, const std::string& poolMode) {
    const std::string mode =
        modeAt(countEvaluation()).value_or(directive(request.candidate.source, "mode").value_or(poolMode));
    if (mode == "crash") {
        std::cerr << "fake: crashing on purpose while evaluating request " << request.id << std::endl;
        std::abort();
    }
    if (mode == "hang") {
        std::cerr << "fake: hanging on purpose" << std::endl;
        sleepForever();
    }
    if (mode == "garbage") {
        writeLine("fake garbage: this line is not JSON " + std::string(300, 'x'));
        return std::nullopt;
    }
    if (mode == "wrong-id") {
        EvaluateResult r = okResult(request);
        r.id = request.id + 1000;
        writeLine(encode(r));
        return std::nullopt;
    }
    if (mode == "error") {
        writeLine(encodeError(request.id, "fake: cannot read this request"));
        return std::nullopt;
    }
    if (mode == "long-line") {
        const std::string chunk(std::size_t{1024} * 1024, 'x');
        std::cout << "fake long line: ";
        for (int i = 0; i < 65; ++i)
            std::cout << chunk;
        std::cout.flush();
        sleepForever();
    }
    if (mode == "slow" || directive(request.candidate.source, "sleep_ms")) {
        const auto ms = static_cast<long>(directiveNumber(request.candidate.source, "sleep_ms", 500.0));
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    if (mode == "incorrect" || directiveExpression(request.candidate, "incorrect_if", 0.0) != 0.0) {
        writeLine(encode(incorrectResult(request)));
        return std::nullopt;
    }
    if (mode == "compile-error") {
        writeLine(encode(compileErrorResult(request)));
        return std::nullopt;
    }
    writeLine(encode(okResult(request)));
    if (mode == "exit-after") {
        std::cerr << "fake: the device is unusable after this request; exiting" << std::endl;
        const auto ms = static_cast<long>(directiveNumber(request.candidate.source, "exit_delay_ms", 0.0));
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        return 3;
    }
    return std::nullopt;
}

ProbeResult probeResult(std::int64_t id, const std::string& backend, const std::string& mode) {
    ProbeResult p;
    p.id = id;
    p.backend = backend;
    if (mode == "no-device") {
        p.problems.push_back("no NVIDIA driver: libcuda.so.1 could not be loaded (fake)");
        return p;
    }
    p.available = true;
    DeviceInfo device;
    device.name = deviceName();
    device.vendor = "kforge";
    device.platform = "fake";
    device.driver = "0";
    device.kind = "cpu";
    p.devices.push_back(device);
    return p;
}

} // namespace

int main(int argc, char** argv) {
    std::string mode = "ok";
    if (const char* env = std::getenv("KFORGE_FAKE_MODE"); env && *env)
        mode = env;
    std::string backend = "fake";
    if (const char* env = std::getenv("KFORGE_FAKE_BACKEND"); env && *env)
        backend = env;
    bool probeOnly = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--probe") {
            probeOnly = true;
        } else if (arg == "--mode" && i + 1 < argc) {
            mode = argv[++i];
        } else if (arg.rfind("--mode=", 0) == 0) {
            mode = arg.substr(7);
        } else if (arg == "--backend" && i + 1 < argc) {
            backend = argv[++i];
        } else if (arg.rfind("--backend=", 0) == 0) {
            backend = arg.substr(10);
        } else {
            std::cerr << "kforge-worker-fake: unknown argument '" << arg
                      << "' (usage: kforge-worker-fake [--mode MODE] [--backend NAME] [--probe])\n";
            return 2;
        }
    }
    if (probeOnly) { // as the real workers' --probe: the device list, then exit
        writeLine(encode(probeResult(0, backend, mode)));
        return 0;
    }

    std::string line;
    if (mode == "no-hello") {
        while (std::getline(std::cin, line)) {
        }
        return 0;
    }
    Hello hello{backend, "0.0-fake", mode == "bad-hello" ? 999 : kVersion, static_cast<std::int64_t>(::getpid()),
                {},      {}};
    sayWhere(hello);
    if (mode == "babble")
        writeLine(encode(hello) + "\nfake babble: not a protocol line");
    else
        writeLine(encode(hello));

    while (std::getline(std::cin, line)) {
        if (line.empty() || line == "\r")
            continue;
        auto request = decodeRequest(line);
        if (!request) {
            writeLine(encodeError(idOf(line), request.error()));
            continue;
        }
        if (const auto* probe = std::get_if<ProbeRequest>(&*request)) {
            writeLine(encode(probeResult(probe->id, backend, mode)));
        } else if (const auto* ceilings = std::get_if<CeilingsRequest>(&*request)) {
            // Round numbers, so that tests can predict roofline fractions.
            CeilingsResult c;
            c.id = ceilings->id;
            c.ok = true;
            c.device = deviceName();
            c.cached = true;
            c.measuredAt = "2026-01-01T00:00:00Z";
            const double scale = roofScale();
            c.ceilings = {{"dram_bytes_per_s", 1e9 * scale}, {"fp32_flops_per_s", 1e10 * scale}, {"cache_bytes", 2048}};
            writeLine(encode(c));
        } else if (std::holds_alternative<ShutdownRequest>(*request)) {
            return 0;
        } else if (auto exitCode = evaluate(std::get<EvaluateRequest>(*request), mode)) {
            return *exitCode;
        }
    }
    return 0;
}
