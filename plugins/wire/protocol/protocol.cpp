#include "protocol.h"

#include "safeio.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unistd.h>
#include <utility>

namespace kforge::protocol {

using nlohmann::json;
using spec::Error;
using spec::Expected;

namespace {

// Protocol messages nest a few levels (a result's timing, a task's reference data); far more is
// not a message.
constexpr int kMaxLineDepth = 64;

constexpr std::pair<Status, std::string_view> kStatusNames[] = {
    {Status::Ok, "ok"},           {Status::CompileError, "compile_error"}, {Status::RuntimeError, "runtime_error"},
    {Status::Timeout, "timeout"}, {Status::Incorrect, "incorrect"},        {Status::Rejected, "rejected"},
};

// Lines go out as one line of JSON whatever the strings in them hold: a byte that is not UTF-8 (a
// host name, a message quoting a compiler) becomes U+FFFD instead of an exception. Kernel sources
// never need it: they are refused when they are read if they are not UTF-8 (spec::readTextFile).
std::string oneLine(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Lines come from another process (a worker, or kforge) and may be anything: deep nesting, numbers
// beyond double's range (1e999) and invalid UTF-8 become errors, never exceptions.
Expected<json> parseLine(const std::string& line) {
    auto j = spec::parseJson(line, kMaxLineDepth);
    if (!j) {
        std::string what = j.error();
        const auto pos = what.find("invalid JSON: ");
        if (pos != std::string::npos)
            what = what.substr(pos + 14);
        return Error{"line is not JSON (" + what + ")"};
    }
    if (!j->is_object())
        return Error{"line is not a JSON object"};
    return std::move(*j);
}

// A JSON integer as an integer type T when T holds it; nullopt for anything else. nlohmann's own
// get<int>() of 1e300 is undefined behaviour, and of -1 as an unsigned type wraps around.
template <typename T> std::optional<T> integerAs(const json& v) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        return std::in_range<T>(u) ? std::optional<T>(static_cast<T>(u)) : std::nullopt;
    }
    if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        return std::in_range<T>(i) ? std::optional<T>(static_cast<T>(i)) : std::nullopt;
    }
    return std::nullopt;
}

// A field's value, or `fallback` where it is missing, null or of another type (an integer field
// holding a fraction, or a number its type cannot hold, included).
template <typename T> T value(const json& j, const char* key, T fallback) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return integerAs<T>(*it).value_or(fallback);
    } else {
        try {
            return it->get<T>();
        } catch (const json::exception&) {
            return fallback;
        }
    }
}

// A list of seeds: unsigned 64-bit integers, at least one.
Expected<std::vector<std::uint64_t>> seedList(const json& j, const std::string& field) {
    if (!j.is_array() || j.empty())
        return Error{field + ": needs a list of at least one seed"};
    std::vector<std::uint64_t> seeds;
    for (const json& v : j) {
        const auto seed = integerAs<std::uint64_t>(v);
        if (!seed) {
            const std::string shown = oneLine(v);
            std::string message = field;
            message.append(": ").append(shown, 0, 40).append(shown.size() > 40 ? "..." : "");
            message.append(" is not a seed (an integer from 0 to 2^64 - 1)");
            return Error{message};
        }
        seeds.push_back(*seed);
    }
    return seeds;
}

// A message's "id", which every request and response carries; `what` names the message in the error.
Expected<std::int64_t> idOf(const json& j, const char* what) {
    auto id = j.find("id");
    const auto value = id == j.end() ? std::nullopt : integerAs<std::int64_t>(*id);
    if (!value)
        return Error{std::string(what) + ": 'id' is missing or not an integer"};
    return *value;
}

json kernelToJson(const KernelInput& k) {
    json j{{"role", k.role}, {"file", k.file}, {"source", k.source}, {"params", k.params}};
    if (k.form != "kernel")
        j["form"] = k.form;
    return j;
}

Expected<KernelInput> kernelFromJson(const json& j, const std::string& field) {
    if (!j.is_object())
        return Error{field + ": must be an object with source"};
    KernelInput k;
    auto src = j.find("source");
    if (src == j.end() || !src->is_string())
        return Error{field + ".source: missing or not a string"};
    k.source = src->get<std::string>();
    k.role = value<std::string>(j, "role", field);
    k.file = value<std::string>(j, "file", field);
    k.form = value<std::string>(j, "form", std::string("kernel"));
    if (k.form != "kernel" && k.form != "torch")
        return Error{field + ".form: unknown form '" + k.form + "' (known: kernel, torch)"};
    if (auto p = j.find("params"); p != j.end()) {
        if (!p->is_object())
            return Error{field + ".params: must be an object of name: integer"};
        for (const auto& [name, v] : p->items()) {
            const auto param = integerAs<std::int64_t>(v);
            if (!param) {
                std::string message = field;
                message.append(".params.").append(name).append(": must be an integer");
                return Error{message};
            }
            k.params[name] = *param;
        }
    }
    return k;
}

json optionsToJson(const EvalOptions& o) {
    json j = {{"timing", o.timing},
              {"warmup", o.warmup},
              {"min_repetitions", o.minRepetitions},
              {"max_repetitions", o.maxRepetitions},
              {"time_cap_s", o.timeCapSeconds},
              {"target_precision", o.targetPrecision},
              {"input_sets", o.inputSets},
              {"device", o.device},
              {"timing_mode", o.timingMode},
              {"profile", o.profile},
              {"pytorch", o.pytorch},
              {"pytorch_compile", o.pytorchCompile},
              {"pytorch_beside", o.pytorchBeside},
              {"pytorch_rounds", o.pytorchRounds},
              {"stress", o.stress}};
    if (!o.seeds.empty())
        j["seeds"] = o.seeds;
    if (!o.timingSeeds.empty())
        j["timing_seeds"] = o.timingSeeds;
    return j;
}

Expected<EvalOptions> optionsFromJson(const json& j) {
    EvalOptions o;
    if (j.is_null())
        return o;
    if (!j.is_object())
        return Error{"evaluate.options: must be an object"};
    try {
        for (auto [key, seeds] : {std::pair{"seeds", &o.seeds}, std::pair{"timing_seeds", &o.timingSeeds}}) {
            if (!j.contains(key))
                continue;
            auto list = seedList(j.at(key), std::string("evaluate.options.") + key);
            if (!list)
                return Error{list.error()};
            *seeds = std::move(*list);
        }
        o.stress = value(j, "stress", o.stress);
        o.timing = value(j, "timing", o.timing);
        o.warmup = value(j, "warmup", o.warmup);
        o.minRepetitions = value(j, "min_repetitions", o.minRepetitions);
        o.maxRepetitions = value(j, "max_repetitions", o.maxRepetitions);
        o.timeCapSeconds = value(j, "time_cap_s", o.timeCapSeconds);
        o.targetPrecision = value(j, "target_precision", o.targetPrecision);
        o.inputSets = value(j, "input_sets", o.inputSets);
        o.device = value(j, "device", o.device);
        o.timingMode = value<std::string>(j, "timing_mode", o.timingMode);
        o.profile = value(j, "profile", o.profile);
        o.pytorch = value(j, "pytorch", o.pytorch);
        o.pytorchCompile = value(j, "pytorch_compile", o.pytorchCompile);
        o.pytorchBeside = value(j, "pytorch_beside", o.pytorchBeside);
        o.pytorchRounds = value(j, "pytorch_rounds", o.pytorchRounds);
    } catch (const json::exception& e) {
        return Error{std::string("evaluate.options: ") + e.what()};
    }
    if (o.timingMode != "default" && o.timingMode != "kernelbench")
        return Error{"evaluate.options.timing_mode: '" + o.timingMode + "' is not one of default, kernelbench"};
    if (o.warmup < 0 || o.minRepetitions < 1 || o.maxRepetitions < o.minRepetitions || o.inputSets < 1
        || o.timeCapSeconds <= 0)
        return Error{"evaluate.options: warmup >= 0, 1 <= min_repetitions <= max_repetitions, input_sets >= 1 and "
                     "time_cap_s > 0 are required"};
    if (const std::string problem = pytorchRoundsProblem(o.pytorchRounds); !problem.empty())
        return Error{"evaluate.options.pytorch_rounds: " + problem};
    return o;
}

json timingToJson(const TimingStats& t) {
    return {{"method", t.method}, {"count", t.count},  {"median_us", t.medianUs}, {"mean_us", t.meanUs},
            {"min_us", t.minUs},  {"max_us", t.maxUs}, {"spread", t.spread}};
}

} // namespace

TimingStats timingFromJson(const nlohmann::json& j) {
    TimingStats t;
    t.method = value<std::string>(j, "method", "");
    t.count = value(j, "count", 0);
    t.medianUs = value(j, "median_us", 0.0);
    t.meanUs = value(j, "mean_us", 0.0);
    t.minUs = value(j, "min_us", 0.0);
    t.maxUs = value(j, "max_us", 0.0);
    t.spread = value(j, "spread", 0.0);
    return t;
}

std::string pytorchRoundsProblem(int rounds) {
    if (rounds >= kMinPyTorchRounds && rounds <= kMaxPyTorchRounds)
        return {};
    return std::to_string(rounds) + " is not between " + std::to_string(kMinPyTorchRounds) + " and "
           + std::to_string(kMaxPyTorchRounds);
}

std::string RatioInterval::describe() const {
    std::array<char, 96> text{};
    std::snprintf(text.data(), text.size(), "%s, 95%% interval %.3fx-%.3fx over %d paired rounds", verdict(), low, high,
                  rounds);
    return text.data();
}

std::string_view statusName(Status s) {
    for (const auto& [st, name] : kStatusNames)
        if (st == s)
            return name;
    return "runtime_error";
}

std::optional<Status> parseStatus(std::string_view name) {
    for (const auto& [st, n] : kStatusNames)
        if (n == name)
            return st;
    return std::nullopt;
}

void sayWhere(Hello& hello) {
    std::array<char, 256> name{};
    if (::gethostname(name.data(), name.size() - 1) == 0)
        hello.host = name.data();
    if (const char* job = std::getenv("SLURM_JOB_ID"))
        hello.job = job;
}

std::string encode(const Hello& h) {
    return oneLine(json{{"kforge", kMagic},
                        {"protocol", h.protocol},
                        {"backend", h.backend},
                        {"version", h.workerVersion},
                        {"pid", h.pid},
                        {"host", h.host},
                        {"job", h.job}});
}

std::string encode(const Request& r) {
    return std::visit(
        [](const auto& req) -> std::string {
            using T = std::decay_t<decltype(req)>;
            if constexpr (std::is_same_v<T, ProbeRequest>) {
                return oneLine(json{{"id", req.id}, {"type", "probe"}});
            } else if constexpr (std::is_same_v<T, CeilingsRequest>) {
                return oneLine(
                    json{{"id", req.id}, {"type", "ceilings"}, {"device", req.device}, {"refresh", req.refresh}});
            } else if constexpr (std::is_same_v<T, ShutdownRequest>) {
                return oneLine(json{{"id", req.id}, {"type", "shutdown"}});
            } else if constexpr (std::is_same_v<T, DisassembleRequest>) {
                return oneLine(json{{"id", req.id},
                                    {"type", "disassemble"},
                                    {"task", req.task.toJson()},
                                    {"variant", req.variant},
                                    {"kernel", kernelToJson(req.kernel)},
                                    {"arch", req.arch},
                                    {"device", req.device},
                                    {"machine_code", req.machineCode}});
            } else {
                json j{{"id", req.id},
                       {"type", "evaluate"},
                       {"task", req.task.toJson()},
                       {"variant", req.variant},
                       {"reference", kernelToJson(req.reference)},
                       {"candidate", kernelToJson(req.candidate)},
                       {"options", optionsToJson(req.options)}};
                if (req.baseline)
                    j["baseline"] = kernelToJson(*req.baseline);
                if (req.yardstick)
                    j["yardstick"] = kernelToJson(*req.yardstick);
                return oneLine(j);
            }
        },
        r);
}

json toJson(const EvaluateResult& r) {
    json j{{"id", r.id},           {"type", "result"},   {"status", std::string(statusName(r.status))},
           {"message", r.message}, {"device", r.device}, {"wall_s", r.wallSeconds}};
    json compile = json::array();
    for (const auto& c : r.compile)
        compile.push_back(
            {{"role", c.role}, {"ok", c.ok}, {"seconds", c.seconds}, {"log", c.log}, {"resources", c.resources}});
    j["compile"] = compile;
    json outputs = json::array();
    for (const auto& o : r.outputs) {
        json e{{"name", o.name},
               {"checked", o.checked},
               {"mismatches", o.mismatches},
               {"unwritten", o.unwritten},
               {"non_finite", o.nonFinite},
               {"max_abs_error", o.maxAbsError},
               {"max_rel_error", o.maxRelError}};
        if (o.atol && o.rtol) {
            e["atol"] = *o.atol;
            e["rtol"] = *o.rtol;
        }
        if (o.firstMismatch)
            e["first_mismatch"] = {
                {"index", *o.firstMismatch}, {"got", o.firstGot}, {"expected", o.firstExpected}, {"seed", o.firstSeed}};
        outputs.push_back(e);
    }
    j["outputs"] = outputs;
    json checks = json::array();
    for (const auto& c : r.checks)
        checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
    j["checks"] = checks;
    if (!r.seeds.empty())
        j["seeds"] = r.seeds;
    if (!r.timingSeeds.empty())
        j["timing_seeds"] = r.timingSeeds;
    if (!r.stressSets.empty())
        j["stress_sets"] = r.stressSets;
    if (!r.phaseSeconds.empty())
        j["phase_s"] = r.phaseSeconds;
    if (!r.host.empty())
        j["host"] = r.host;
    if (r.deviceIndex >= 0)
        j["device_index"] = r.deviceIndex;
    json timing = json::object();
    if (r.candidateTiming)
        timing["candidate"] = timingToJson(*r.candidateTiming);
    if (r.baselineTiming)
        timing["baseline"] = timingToJson(*r.baselineTiming);
    if (r.speedup)
        timing["speedup"] = *r.speedup;
    if (!r.speedupBase.empty())
        timing["speedup_base"] = r.speedupBase;
    if (!r.timingMode.empty())
        timing["mode"] = r.timingMode;
    json pytorch = json::object();
    if (r.eagerTiming)
        pytorch["eager"] = timingToJson(*r.eagerTiming);
    if (r.compileTiming)
        pytorch["compile"] = timingToJson(*r.compileTiming);
    if (r.besideTiming)
        pytorch["candidate_beside"] = timingToJson(*r.besideTiming);
    if (r.speedupVsEager)
        pytorch["speedup_vs_eager"] = *r.speedupVsEager;
    if (r.speedupVsCompile)
        pytorch["speedup_vs_compile"] = *r.speedupVsCompile;
    const auto interval = [](const RatioInterval& i) {
        return json{{"low", i.low}, {"high", i.high}, {"rounds", i.rounds}, {"verdict", i.verdict()}};
    };
    if (r.speedupVsEagerInterval)
        pytorch["speedup_vs_eager_interval"] = interval(*r.speedupVsEagerInterval);
    if (r.speedupVsCompileInterval)
        pytorch["speedup_vs_compile_interval"] = interval(*r.speedupVsCompileInterval);
    if (!r.pytorchNote.empty())
        pytorch["note"] = r.pytorchNote;
    if (!pytorch.empty())
        timing["pytorch"] = pytorch;
    j["timing"] = timing;
    json diags = json::array();
    for (const auto& d : r.diagnostics) {
        json e{{"kind", d.kind}, {"severity", d.severity}, {"message", d.message}};
        if (!d.role.empty())
            e["role"] = d.role;
        if (d.line > 0)
            e["line"] = d.line;
        if (d.column > 0)
            e["column"] = d.column;
        diags.push_back(e);
    }
    j["diagnostics"] = diags;
    if (r.profile)
        j["profile"] = {
            {"status", r.profile->status}, {"message", r.profile->message}, {"metrics", r.profile->metrics}};
    return j;
}

std::string encode(const EvaluateResult& r) {
    return oneLine(toJson(r));
}

json toJson(const ProbeResult& r) {
    json devices = json::array();
    for (const auto& d : r.devices)
        devices.push_back({{"name", d.name},
                           {"vendor", d.vendor},
                           {"platform", d.platform},
                           {"driver", d.driver},
                           {"kind", d.kind},
                           {"details", d.details}});
    return {{"id", r.id},         {"type", "probe"},        {"backend", r.backend}, {"available", r.available},
            {"devices", devices}, {"problems", r.problems}, {"details", r.details}};
}

std::string encode(const ProbeResult& r) {
    return oneLine(toJson(r));
}

std::string encode(const CeilingsResult& r) {
    return oneLine(json{{"id", r.id},
                        {"type", "ceilings"},
                        {"ok", r.ok},
                        {"message", r.message},
                        {"device", r.device},
                        {"cached", r.cached},
                        {"measured_at", r.measuredAt},
                        {"ceilings", r.ceilings}});
}

json toJson(const DisassembleResult& r) {
    return {{"id", r.id},
            {"type", "disassembly"},
            {"ok", r.ok},
            {"message", r.message},
            {"log", r.log},
            {"file", r.file},
            {"arch", r.arch},
            {"compiler", r.compiler},
            {"intermediate_format", r.intermediateFormat},
            {"intermediate", r.intermediate},
            {"machine_format", r.machineFormat},
            {"machine_code", r.machineCode},
            {"machine_tool", r.machineTool},
            {"machine_code_note", r.machineCodeNote},
            {"seconds", r.seconds}};
}

std::string encode(const DisassembleResult& r) {
    return oneLine(toJson(r));
}

Expected<DisassembleResult> disassembleResultFromJson(const json& j) {
    if (!j.is_object())
        return Error{"disassembly: not a JSON object"};
    DisassembleResult r;
    auto id = idOf(j, "disassembly");
    if (!id)
        return Error{id.error()};
    r.id = *id;
    r.ok = value(j, "ok", false);
    r.message = value<std::string>(j, "message", "");
    r.log = value<std::string>(j, "log", "");
    r.file = value<std::string>(j, "file", "");
    r.arch = value<std::string>(j, "arch", "");
    r.compiler = value<std::string>(j, "compiler", "");
    r.intermediateFormat = value<std::string>(j, "intermediate_format", "ptx");
    r.intermediate = value<std::string>(j, "intermediate", "");
    r.machineFormat = value<std::string>(j, "machine_format", "sass");
    r.machineCode = value<std::string>(j, "machine_code", "");
    r.machineTool = value<std::string>(j, "machine_tool", "");
    r.machineCodeNote = value<std::string>(j, "machine_code_note", "");
    r.seconds = value(j, "seconds", 0.0);
    if (r.ok && r.intermediate.empty())
        return Error{"disassembly " + std::to_string(r.id) + ": 'ok' but no intermediate code"};
    return r;
}

std::string encodeError(std::optional<std::int64_t> id, const std::string& message) {
    json j{{"type", "error"}, {"message", message}};
    j["id"] = id ? json(*id) : json(nullptr);
    return oneLine(j);
}

Expected<Hello> decodeHello(const std::string& line) {
    auto j = parseLine(line);
    if (!j)
        return Error{"hello: " + j.error()};
    if (value<std::string>(*j, "kforge", "") != kMagic)
        return Error{"hello: the first line does not identify a kforge worker"};
    Hello h;
    h.protocol = value(*j, "protocol", 0);
    h.backend = value<std::string>(*j, "backend", "");
    h.workerVersion = value<std::string>(*j, "version", "");
    h.pid = value<std::int64_t>(*j, "pid", 0);
    h.host = value<std::string>(*j, "host", "");
    h.job = value<std::string>(*j, "job", "");
    if (h.protocol != kVersion)
        return Error{"hello: the worker speaks protocol " + std::to_string(h.protocol) + ", this kforge speaks "
                     + std::to_string(kVersion) + " (rebuild or reinstall the worker)"};
    return h;
}

namespace {

// A request's task and variant ("evaluate.task: ...", "evaluate.variant: ...").
spec::Status readTask(const json& j, const std::string& request, spec::TaskSpec& task, std::string& variant) {
    auto it = j.find("task");
    if (it == j.end())
        return spec::fail(request + ": 'task' is missing");
    auto spec = spec::TaskSpec::fromJson(*it, request + ".task");
    if (!spec)
        return spec::fail(spec.error());
    task = std::move(*spec);
    variant = value<std::string>(j, "variant", "default");
    if (auto sizes = task.sizesFor(variant); !sizes)
        return spec::fail(request + ".variant: " + sizes.error());
    return spec::success();
}

Expected<Request> decodeDisassemble(const json& j, std::int64_t id) {
    DisassembleRequest r;
    r.id = id;
    if (auto s = readTask(j, "disassemble", r.task, r.variant); !s)
        return Error{s.error()};
    auto kernel = j.find("kernel");
    if (kernel == j.end())
        return Error{"disassemble: 'kernel' is missing"};
    auto k = kernelFromJson(*kernel, "disassemble.kernel");
    if (!k)
        return Error{k.error()};
    if (k->form != "kernel")
        return Error{"disassemble.kernel.form: must be a kernel, not '" + k->form + "'"};
    r.kernel = std::move(*k);
    auto arch = j.find("arch");
    if (arch != j.end()
        && (!arch->is_number_integer() || arch->get<std::int64_t>() < 0 || arch->get<std::int64_t>() > 1000))
        return Error{"disassemble.arch: must be a compute capability such as 90 (for 9.0), or 0 for the device's"};
    r.arch = arch == j.end() ? 0 : arch->get<int>();
    r.device = value(j, "device", 0);
    r.machineCode = value(j, "machine_code", true);
    return Request{std::move(r)};
}

} // namespace

Expected<Request> decodeRequest(const std::string& line) {
    auto parsed = parseLine(line);
    if (!parsed)
        return Error{parsed.error()};
    const json& j = *parsed;
    auto readId = idOf(j, "request");
    if (!readId)
        return Error{readId.error()};
    const std::int64_t id = *readId;
    const std::string type = value<std::string>(j, "type", "");
    if (type == "probe")
        return Request{ProbeRequest{id}};
    if (type == "shutdown")
        return Request{ShutdownRequest{id}};
    if (type == "ceilings")
        return Request{CeilingsRequest{id, value(j, "device", 0), value(j, "refresh", false)}};
    if (type == "disassemble")
        return decodeDisassemble(j, id);
    if (type != "evaluate")
        return Error{"request " + std::to_string(id) + ": unknown type '" + type
                     + "' (known: probe, evaluate, ceilings, disassemble, shutdown)"};

    EvaluateRequest r;
    r.id = id;
    if (auto s = readTask(j, "evaluate", r.task, r.variant); !s)
        return Error{s.error()};
    for (auto [key, target] : {std::pair{"reference", &r.reference}, std::pair{"candidate", &r.candidate}}) {
        auto it = j.find(key);
        if (it == j.end())
            return Error{std::string("evaluate: '") + key + "' is missing"};
        auto k = kernelFromJson(*it, std::string("evaluate.") + key);
        if (!k)
            return Error{k.error()};
        *target = std::move(*k);
    }
    if (auto it = j.find("baseline"); it != j.end() && !it->is_null()) {
        auto k = kernelFromJson(*it, "evaluate.baseline");
        if (!k)
            return Error{k.error()};
        r.baseline = std::move(*k);
    }
    if (auto it = j.find("yardstick"); it != j.end() && !it->is_null()) {
        auto k = kernelFromJson(*it, "evaluate.yardstick");
        if (!k)
            return Error{k.error()};
        if (k->form != "torch")
            return Error{"evaluate.yardstick.form: must be torch, not '" + k->form + "'"};
        r.yardstick = std::move(*k);
    }
    // Only the reference may be computed by PyTorch: candidates and baselines are kernels.
    for (const KernelInput* k : {&r.candidate, r.baseline ? &*r.baseline : nullptr})
        if (k && k->form != "kernel")
            return Error{"evaluate." + k->role + ".form: must be a kernel, not '" + k->form + "'"};
    auto opts = optionsFromJson(j.contains("options") ? j.at("options") : json());
    if (!opts)
        return Error{opts.error()};
    r.options = *opts;
    return Request{std::move(r)};
}

Expected<EvaluateResult> evaluateResultFromJson(const json& j) {
    EvaluateResult r;
    auto id = idOf(j, "result");
    if (!id)
        return Error{id.error()};
    r.id = *id;
    auto status = parseStatus(value<std::string>(j, "status", ""));
    if (!status)
        return Error{"result " + std::to_string(r.id) + ": unknown status '" + value<std::string>(j, "status", "")
                     + "'"};
    r.status = *status;
    r.message = value<std::string>(j, "message", "");
    r.device = value<std::string>(j, "device", "");
    r.wallSeconds = value(j, "wall_s", 0.0);
    try {
        for (const auto& c : value(j, "compile", json::array())) {
            CompileInfo ci;
            ci.role = value<std::string>(c, "role", "");
            ci.ok = value(c, "ok", false);
            ci.seconds = value(c, "seconds", 0.0);
            ci.log = value<std::string>(c, "log", "");
            ci.resources = value(c, "resources", std::map<std::string, double>{});
            r.compile.push_back(ci);
        }
        for (const auto& o : value(j, "outputs", json::array())) {
            OutputCheck oc;
            oc.name = value<std::string>(o, "name", "");
            oc.checked = value<std::uint64_t>(o, "checked", 0);
            oc.mismatches = value<std::uint64_t>(o, "mismatches", 0);
            oc.unwritten = value<std::uint64_t>(o, "unwritten", 0);
            oc.nonFinite = value<std::uint64_t>(o, "non_finite", 0);
            oc.maxAbsError = value(o, "max_abs_error", 0.0);
            oc.maxRelError = value(o, "max_rel_error", 0.0);
            if (o.contains("atol") && o.contains("rtol") && o["atol"].is_number() && o["rtol"].is_number()) {
                oc.atol = o["atol"].get<double>();
                oc.rtol = o["rtol"].get<double>();
            }
            if (auto fm = o.find("first_mismatch"); fm != o.end() && fm->is_object()) {
                oc.firstMismatch = value<std::uint64_t>(*fm, "index", 0);
                oc.firstGot = value(*fm, "got", 0.0);
                oc.firstExpected = value(*fm, "expected", 0.0);
                oc.firstSeed = value<std::uint64_t>(*fm, "seed", 0);
            }
            r.outputs.push_back(oc);
        }
        for (const auto& c : value(j, "checks", json::array()))
            r.checks.push_back(
                {value<std::string>(c, "name", ""), value(c, "passed", false), value<std::string>(c, "detail", "")});
        for (auto [key, seeds] : {std::pair{"seeds", &r.seeds}, std::pair{"timing_seeds", &r.timingSeeds}})
            if (auto it = j.find(key); it != j.end())
                if (auto list = seedList(*it, std::string("result.") + key))
                    *seeds = std::move(*list);
        r.stressSets = value(j, "stress_sets", std::vector<std::string>{});
        r.phaseSeconds = value(j, "phase_s", std::map<std::string, double>{});
        r.host = value<std::string>(j, "host", "");
        r.deviceIndex = value(j, "device_index", -1);
        const json timing = value(j, "timing", json::object());
        if (timing.contains("candidate"))
            r.candidateTiming = timingFromJson(timing.at("candidate"));
        if (timing.contains("baseline"))
            r.baselineTiming = timingFromJson(timing.at("baseline"));
        if (timing.contains("speedup") && timing.at("speedup").is_number())
            r.speedup = timing.at("speedup").get<double>();
        r.speedupBase = value<std::string>(timing, "speedup_base", ""); // older results: the baseline
        r.timingMode = value<std::string>(timing, "mode", "");
        const json pytorch = value(timing, "pytorch", json::object());
        if (pytorch.contains("eager"))
            r.eagerTiming = timingFromJson(pytorch.at("eager"));
        if (pytorch.contains("compile"))
            r.compileTiming = timingFromJson(pytorch.at("compile"));
        if (pytorch.contains("candidate_beside"))
            r.besideTiming = timingFromJson(pytorch.at("candidate_beside"));
        if (pytorch.contains("speedup_vs_eager") && pytorch.at("speedup_vs_eager").is_number())
            r.speedupVsEager = pytorch.at("speedup_vs_eager").get<double>();
        if (pytorch.contains("speedup_vs_compile") && pytorch.at("speedup_vs_compile").is_number())
            r.speedupVsCompile = pytorch.at("speedup_vs_compile").get<double>();
        const auto interval = [&](const char* key) -> std::optional<RatioInterval> {
            const json i = value(pytorch, key, json());
            if (!i.is_object() || !i.contains("low") || !i.contains("high") || !i.at("low").is_number()
                || !i.at("high").is_number())
                return std::nullopt;
            return RatioInterval{i.at("low").get<double>(), i.at("high").get<double>(), value(i, "rounds", 0)};
        };
        r.speedupVsEagerInterval = interval("speedup_vs_eager_interval");
        r.speedupVsCompileInterval = interval("speedup_vs_compile_interval");
        r.pytorchNote = value<std::string>(pytorch, "note", "");
        for (const auto& d : value(j, "diagnostics", json::array())) {
            Diagnostic diag;
            diag.kind = value<std::string>(d, "kind", "");
            diag.severity = value<std::string>(d, "severity", "error");
            diag.message = value<std::string>(d, "message", "");
            diag.role = value<std::string>(d, "role", "");
            diag.line = value(d, "line", 0);
            diag.column = value(d, "column", 0);
            r.diagnostics.push_back(diag);
        }
        if (auto p = j.find("profile"); p != j.end() && p->is_object()) {
            ProfileResult pr;
            pr.status = value<std::string>(*p, "status", "error");
            pr.message = value<std::string>(*p, "message", "");
            pr.metrics = value(*p, "metrics", std::map<std::string, double>{});
            r.profile = pr;
        }
    } catch (const json::exception& e) {
        return Error{"result " + std::to_string(r.id) + ": " + e.what()};
    }
    return r;
}

Expected<EvaluateResult> decodeEvaluateResult(const std::string& text) {
    auto parsed = parseLine(text);
    if (!parsed)
        return Error{parsed.error()};
    return evaluateResultFromJson(*parsed);
}

Expected<Response> decodeResponse(const std::string& line) {
    auto parsed = parseLine(line);
    if (!parsed)
        return Error{parsed.error()};
    const json& j = *parsed;
    const std::string type = value<std::string>(j, "type", "");
    if (type == "result") {
        auto r = evaluateResultFromJson(j);
        if (!r)
            return Error{r.error()};
        return Response{std::move(*r)};
    }
    if (type == "probe") {
        ProbeResult p;
        auto id = idOf(j, "probe");
        if (!id)
            return Error{id.error()};
        p.id = *id;
        p.backend = value<std::string>(j, "backend", "");
        p.available = value(j, "available", false);
        p.problems = value(j, "problems", std::vector<std::string>{});
        p.details = value(j, "details", json::object());
        for (const auto& d : value(j, "devices", json::array())) {
            DeviceInfo di;
            di.name = value<std::string>(d, "name", "");
            di.vendor = value<std::string>(d, "vendor", "");
            di.platform = value<std::string>(d, "platform", "");
            di.driver = value<std::string>(d, "driver", "");
            di.kind = value<std::string>(d, "kind", "");
            di.details = value(d, "details", json::object());
            p.devices.push_back(di);
        }
        return Response{std::move(p)};
    }
    if (type == "ceilings") {
        CeilingsResult c;
        auto id = idOf(j, "ceilings");
        if (!id)
            return Error{id.error()};
        c.id = *id;
        c.ok = value(j, "ok", false);
        c.message = value<std::string>(j, "message", "");
        c.device = value<std::string>(j, "device", "");
        c.cached = value(j, "cached", false);
        c.measuredAt = value<std::string>(j, "measured_at", "");
        c.ceilings = value(j, "ceilings", std::map<std::string, double>{});
        return Response{std::move(c)};
    }
    if (type == "disassembly") {
        auto r = disassembleResultFromJson(j);
        if (!r)
            return Error{r.error()};
        return Response{std::move(*r)};
    }
    if (type == "error") {
        ErrorResponse e;
        if (auto id = j.find("id"); id != j.end() && id->is_number_integer())
            e.id = id->get<std::int64_t>();
        e.message = value<std::string>(j, "message", "(no message)");
        return Response{e};
    }
    return Error{"response: unknown type '" + type + "' (expected result, probe, ceilings, disassembly or error)"};
}

std::optional<std::int64_t> responseId(const Response& r) {
    if (const auto* e = std::get_if<EvaluateResult>(&r))
        return e->id;
    if (const auto* p = std::get_if<ProbeResult>(&r))
        return p->id;
    if (const auto* c = std::get_if<CeilingsResult>(&r))
        return c->id;
    if (const auto* d = std::get_if<DisassembleResult>(&r))
        return d->id;
    return std::get<ErrorResponse>(r).id;
}

} // namespace kforge::protocol

namespace kforge::protocol {

spec::Expected<EvaluateRequest> makeEvaluateRequest(const spec::TaskBundle& task, const std::string& backend,
                                                    const std::string& variant, const EvalOptions& options,
                                                    const std::string& candidateSource,
                                                    const std::string& candidateFile, bool pairWithBaseline) {
    const auto& spec = task.spec;
    // The backend's own reference kernel where the task has one; otherwise its PyTorch form.
    const bool kernelReference = task.referenceSource.count(backend) > 0;
    if (!kernelReference && !task.referenceSource.count("torch"))
        return spec::fail("task '" + spec.name + "' has no " + backend
                          + " reference (add a kernel, or a \"torch\" form, to \"reference\" in task.json)");
    const bool hasBaseline = task.baselineSource.count(backend) > 0;
    if (!hasBaseline && candidateSource.empty())
        return spec::fail("task '" + spec.name + "' has no " + backend
                          + " baseline to evaluate: give a candidate kernel (or add one to \"baseline\" in task.json)");
    if (auto sizes = spec.sizesFor(variant); !sizes)
        return spec::Error{sizes.error()};

    EvaluateRequest r;
    r.task = spec;
    r.variant = variant;
    r.options = options;
    const std::string referenceKey = kernelReference ? backend : "torch";
    r.reference = {"reference",
                   task.referenceFile.at(referenceKey),
                   task.referenceSource.at(referenceKey),
                   {},
                   kernelReference ? "kernel" : "torch"};
    if (candidateSource.empty()) {
        r.candidate = {"candidate", task.baselineFile.at(backend), task.baselineSource.at(backend), {}};
    } else {
        r.candidate = {"candidate", candidateFile, candidateSource, {}};
        if (pairWithBaseline && hasBaseline) // without one, no speedup over it is reported
            r.baseline = KernelInput{"baseline", task.baselineFile.at(backend), task.baselineSource.at(backend), {}};
    }
    // Without a baseline kernel, PyTorch eager is the yardstick of the speedup: it is timed in every
    // evaluation (torch.compile only when asked).
    const bool torchForm = task.referenceSource.count("torch") > 0;
    if (torchForm && !hasBaseline && options.timing && !options.pytorch) {
        r.options.pytorch = true;
        r.options.pytorchCompile = false;
        r.options.pytorchBeside = false;
    }
    if (r.options.pytorch && torchForm)
        r.yardstick =
            KernelInput{"yardstick", task.referenceFile.at("torch"), task.referenceSource.at("torch"), {}, "torch"};
    return r;
}

spec::Status useTorchReference(EvaluateRequest& request, const spec::TaskBundle& task) {
    const auto source = task.referenceSource.find("torch");
    if (source == task.referenceSource.end())
        return spec::fail("task '" + task.spec.name
                          + "' has no PyTorch form (add \"torch\": \"reference.py\" to \"reference\" in task.json)");
    request.reference = {"reference", task.referenceFile.at("torch"), source->second, {}, "torch"};
    return spec::success();
}

std::string torchPython() {
    if (const char* p = std::getenv("KFORGE_PYTHON"); p && *p)
        return p;
#ifdef KFORGE_TORCH_PYTHON
    if (::access(KFORGE_TORCH_PYTHON, X_OK) == 0)
        return KFORGE_TORCH_PYTHON;
#endif
    return "python3";
}

} // namespace kforge::protocol
