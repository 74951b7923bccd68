// kforge-worker-fake: a real worker program that speaks the real protocol, without a device, and
// misbehaves on demand so that the worker pool's failure handling can be tested end to end.
//
// Mode: `--mode X`, else $KFORGE_FAKE_MODE, else ok; one request can override it with a
// `// fake:mode=X` line in the candidate source. Modes:
//   ok             answer with status ok; candidate median from `// fake:time_us=EXPR` (default
//                  100), an expression over the kernel's parameters (declared defaults, overridden
//                  by the request), e.g. `100+abs(BX-16)`, so that a tuner has a landscape to
//                  search; baseline 200 when a baseline is given, speedup baseline / candidate.
//                  `// fake:incorrect_if=EXPR` makes it incorrect where EXPR is non-zero.
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
// A ceilings request is answered with fixed ceilings: DRAM 1 GB/s, FP32 10 GFLOP/s.
// Qt-free on purpose: like the real workers it links only the protocol code.

#include "expression.h"
#include "kernelfile.h"
#include "protocol.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

namespace {

using namespace kforge::protocol;

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

EvaluateResult okResult(const EvaluateRequest& request) {
    EvaluateResult r;
    r.id = request.id;
    r.status = Status::Ok;
    r.message = "fake evaluation by pid " + std::to_string(::getpid());
    r.device = "Fake Device";
    r.compile.push_back({"candidate", true, 0.001, "", {{"registers", 32}}});
    for (const auto& output : request.task.outputs) {
        OutputCheck check;
        check.name = output.name;
        check.checked = 1024;
        r.outputs.push_back(check);
    }
    r.checks.push_back({"all_written", true, ""});
    const double candidateUs = directiveExpression(request.candidate, "time_us", 100.0);
    r.candidateTiming = fakeTiming(candidateUs);
    if (request.baseline) {
        r.compile.push_back({"baseline", true, 0.001, "", {}});
        r.baselineTiming = fakeTiming(200.0);
        r.speedup = 200.0 / candidateUs;
    }
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
    r.device = "Fake Device";
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

// Answers one evaluation; returns the exit code to leave with, if any.
std::optional<int> evaluate(const EvaluateRequest& request, const std::string& poolMode) {
    const std::string mode = directive(request.candidate.source, "mode").value_or(poolMode);
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

ProbeResult probeResult(std::int64_t id) {
    ProbeResult p;
    p.id = id;
    p.backend = "fake";
    p.available = true;
    DeviceInfo device;
    device.name = "Fake Device";
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
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--mode" && i + 1 < argc) {
            mode = argv[++i];
        } else if (arg.rfind("--mode=", 0) == 0) {
            mode = arg.substr(7);
        } else {
            std::cerr << "kforge-worker-fake: unknown argument '" << arg
                      << "' (usage: kforge-worker-fake [--mode MODE])\n";
            return 2;
        }
    }

    std::string line;
    if (mode == "no-hello") {
        while (std::getline(std::cin, line)) {
        }
        return 0;
    }
    Hello hello{"fake", "0.0-fake", mode == "bad-hello" ? 999 : kVersion, static_cast<std::int64_t>(::getpid())};
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
            writeLine(encode(probeResult(probe->id)));
        } else if (const auto* ceilings = std::get_if<CeilingsRequest>(&*request)) {
            // Round numbers, so that tests can predict roofline fractions.
            CeilingsResult c;
            c.id = ceilings->id;
            c.ok = true;
            c.device = "Fake Device";
            c.cached = true;
            c.measuredAt = "2026-01-01T00:00:00Z";
            c.ceilings = {{"dram_bytes_per_s", 1e9}, {"fp32_flops_per_s", 1e10}};
            writeLine(encode(c));
        } else if (std::holds_alternative<ShutdownRequest>(*request)) {
            return 0;
        } else if (auto exitCode = evaluate(std::get<EvaluateRequest>(*request), mode)) {
            return *exitCode;
        }
    }
    return 0;
}
