// kforge-gpucheck: the CUDA worker's acceptance checks on a real GPU. Every built-in task's
// baseline must evaluate correct; every integrity test kernel (tests/kernels/cuda) must be caught
// with the status its first line names; an illegal-address kernel and an endless loop must each
// cost one restarted worker and nothing more; every CUDA expert kernel (resources/experts) must be
// correct on the tasks it names, at their small and (where there is one) medium variants; a kernel file with TMA tensor
// maps (tests/kernels/tensormap) must be correct through the worker's descriptors where its when= picks the TMA kernel,
// and through its plain kernel elsewhere; a kernel file launched in thread block clusters (tests/kernels/cluster) must
// be correct on a GPU with clusters, fail without its cluster= and be refused on one without; the device's digest of a
// buffer (which spares the evaluator read-backs) must be the host's digest of the same bytes. Qt-free, so it runs on
// bare GPU hosts. Exits 77 (a skip for ctest) when there is no usable CUDA device.

#include "cudabackend.h"
#include "digest.h"
#include "inputs.h"
#include "reportformat.h"
#include "workerprocess.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using namespace kforge;
using namespace std::chrono_literals;

namespace {

struct Options {
    std::string worker;
    fs::path tasks = KFORGE_SOURCE_DIR "/tasks";
    fs::path kernels = KFORGE_SOURCE_DIR "/tests/kernels/cuda";
    fs::path experts = KFORGE_SOURCE_DIR "/resources/experts";
    fs::path tensorMaps = KFORGE_SOURCE_DIR "/tests/kernels/tensormap";
    fs::path clusters = KFORGE_SOURCE_DIR "/tests/kernels/cluster";
    fs::path out;
    bool fullSizes = true;
    bool torch = true; // also check each task's PyTorch form (needs a Python with PyTorch)
};

struct Outcome {
    std::string name;
    bool passed = false;
    std::string detail;
};

using gputest::utcNow;

std::string fmt(double v, int digits = 2) {
    return gputest::fixed(v, digits);
}

protocol::EvalOptions quickOptions() {
    protocol::EvalOptions o;
    o.minRepetitions = 5;
    o.maxRepetitions = 30;
    o.timeCapSeconds = 1.0;
    return o;
}

// The CUDA backend's digest, computed on the device, against the host's over the same bytes: at
// every tail length, in views at the evaluator's guard offset, and after one byte changed.
Outcome checkDeviceDigest() {
    Outcome o{"device digest equals the host digest", true, ""};
    cuda::CudaBackend backend;
    if (auto st = backend.open(0); !st)
        return {o.name, false, st.error()};
    int checked = 0;
    for (const std::size_t bytes : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                                    std::size_t{4000012}, (std::size_t{96} << 20) + 3}) {
        std::vector<unsigned char> data(bytes);
        for (std::size_t i = 0; i < bytes; ++i)
            data[i] = static_cast<unsigned char>(i * 167 + (i >> 11) + 1);
        auto parent = backend.allocate(bytes + 8192);
        auto id = parent ? backend.view(*parent, 4096, bytes) : spec::Expected<harness::BufferId>(parent);
        if (!id || !backend.upload(*id, data.data(), bytes))
            return {o.name, false, "cannot set up a buffer of " + std::to_string(bytes) + " bytes"};
        const std::uint64_t key = 0x1234567890abcdefull + bytes;
        for (const std::size_t at : {bytes, std::size_t{0}, bytes - 1}) { // unchanged, first, last byte
            if (at < bytes) {
                data[at] ^= 0x40;
                if (auto st = backend.upload(*id, data.data(), bytes); !st)
                    return {o.name, false, st.error()};
            }
            const auto device = backend.digest(*id, bytes, key);
            const std::uint64_t host = harness::digest(data.data(), bytes, key);
            if (!device || *device != host)
                return {o.name, false,
                        std::to_string(bytes) + " bytes: device " + (device ? std::to_string(*device) : device.error())
                            + ", host " + std::to_string(host)};
            ++checked;
        }
        backend.release(*id);
        backend.release(*parent);
    }
    o.detail = std::to_string(checked) + " buffers of 1 byte to 96 MiB agree";
    return o;
}

} // namespace

int main(int argc, char** argv) {
    Options opt;
    opt.worker = (fs::path(argv[0]).parent_path() / "kforge-worker-cuda").string();
    if (const char* env = std::getenv("KFORGE_WORKER_CUDA"))
        opt.worker = env;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << a << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--worker")
            opt.worker = next();
        else if (a == "--tasks")
            opt.tasks = next();
        else if (a == "--kernels")
            opt.kernels = next();
        else if (a == "--experts")
            opt.experts = next();
        else if (a == "--tensormaps")
            opt.tensorMaps = next();
        else if (a == "--clusters")
            opt.clusters = next();
        else if (a == "--out")
            opt.out = next();
        else if (a == "--small-only")
            opt.fullSizes = false;
        else if (a == "--no-torch")
            opt.torch = false;
        else {
            std::cout << "usage: kforge-gpucheck [--worker PATH] [--tasks DIR] [--kernels DIR] [--experts DIR] "
                         "[--tensormaps DIR] [--clusters DIR] [--out FILE.md] [--small-only] [--no-torch]\n";
            return a == "--help" ? 0 : 2;
        }
    }

    gputest::WorkerProcess worker(opt.worker);
    auto probe = worker.probe();
    if (!probe || !probe->available || probe->devices.empty()) {
        std::cout << "SKIP: no usable CUDA device: "
                  << (!probe ? probe.error()
                             : (probe->problems.empty() ? std::string("none found") : probe->problems.front()))
                  << "\n";
        return 77;
    }
    const auto& dev = probe->devices.front();
    const std::string header = "GPU: " + dev.name + ", driver " + dev.driver + ", " + utcNow();
    std::cout << header << "\n";

    std::vector<Outcome> outcomes;
    std::vector<std::string> rows;
    auto record = [&](Outcome o) {
        std::cout << (o.passed ? "PASS  " : "FAIL  ") << o.name << ": " << o.detail << std::endl;
        outcomes.push_back(std::move(o));
    };

    record(checkDeviceDigest());

    // Built-in tasks: every CUDA baseline is correct, at the test sizes and at the timing sizes.
    std::vector<fs::path> taskDirs;
    for (const auto& e : fs::directory_iterator(opt.tasks))
        if (fs::exists(e.path() / "task.json"))
            taskDirs.push_back(e.path());
    std::sort(taskDirs.begin(), taskDirs.end());
    for (const auto& dir : taskDirs) {
        auto bundle = spec::loadTaskDir(dir);
        if (!bundle) {
            record({dir.filename().string(), false, bundle.error()});
            continue;
        }
        if (!bundle->referenceSource.count("cuda"))
            continue;
        for (const std::string& variant : {std::string("small"), std::string("default")}) {
            if (variant == "default" && !opt.fullSizes)
                continue;
            protocol::EvalOptions options = quickOptions();
            if (variant == "default")
                // References at full size are slow; two seeds, drawn as the worker draws its own,
                // still catch constants.
                options.seeds = harness::secureSeeds(2);
            auto req = protocol::makeEvaluateRequest(*bundle, "cuda", variant, options);
            if (!req) {
                record({bundle->spec.name + " (" + variant + ")", false, req.error()});
                continue;
            }
            const auto r = worker.evaluate(std::move(*req), 300s);
            std::string detail = std::string(protocol::statusName(r.status)) + ": " + r.message;
            record({"baseline " + bundle->spec.name + " (" + variant + ")", r.status == protocol::Status::Ok, detail});
            if (r.status == protocol::Status::Ok && r.candidateTiming && variant == "default")
                rows.push_back("| " + bundle->spec.name + " | " + fmt(r.candidateTiming->medianUs) + " | "
                               + fmt(100 * r.candidateTiming->spread) + "% | "
                               + std::to_string(r.candidateTiming->count) + " | " + r.candidateTiming->method + " |");
        }
        // The task's PyTorch form agrees with its reference kernel: the baseline passes against it
        // too (PyTorch computing in float64 on the GPU, through the worker's bridge).
        if (bundle->referenceSource.count("torch") && opt.torch) {
            auto req = protocol::makeEvaluateRequest(*bundle, "cuda", "small", quickOptions());
            if (req)
                if (auto torch = protocol::useTorchReference(*req, *bundle); !torch)
                    req = spec::Error{torch.error()};
            if (!req) {
                record({"baseline " + bundle->spec.name + " against PyTorch", false, req.error()});
                continue;
            }
            const auto r = worker.evaluate(std::move(*req), 300s);
            std::string detail = std::string(protocol::statusName(r.status)) + ": " + r.message;
            for (const auto& d : r.diagnostics)
                if (d.role == "reference" && d.severity == "info")
                    detail += " (" + d.message + ")";
            record({"baseline " + bundle->spec.name + " against PyTorch", r.status == protocol::Status::Ok, detail});
        }
    }

    // Integrity kernels, each with the status its first line names: "expected status: A", or
    // "A or B" where compilers differ.
    static const std::regex head(R"(task ([a-z_0-9]+).*expected status: ([a-z_]+)(?: or ([a-z_]+))?)");
    std::vector<fs::path> kernels;
    for (const auto& e : fs::directory_iterator(opt.kernels))
        if (e.path().extension() == ".cu")
            kernels.push_back(e.path());
    std::sort(kernels.begin(), kernels.end());
    for (const auto& k : kernels) {
        auto source = spec::readTextFile(k);
        std::smatch m;
        const std::string first = source ? source->substr(0, source->find('\n')) : std::string();
        if (!source || !std::regex_search(first, m, head)) {
            record({k.filename().string(), false, "first line must name the task and the expected status"});
            continue;
        }
        auto bundle = spec::loadTaskDir(opt.tasks / m[1].str());
        if (!bundle) {
            record({k.filename().string(), false, bundle.error()});
            continue;
        }
        const std::string expected = m[2] == "pass" ? "ok" : m[2].str();
        const std::string alternative = m[3].matched ? m[3].str() : expected;
        auto req =
            protocol::makeEvaluateRequest(*bundle, "cuda", "small", quickOptions(), *source, k.filename().string());
        const int startsBefore = worker.starts();
        const auto r = worker.evaluate(std::move(*req), expected == "timeout" ? 20s : 120s);
        const std::string got(protocol::statusName(r.status));
        std::string detail = "expected " + expected + (alternative != expected ? " or " + alternative : std::string())
                             + ", got " + got + ": " + r.message;
        bool passed = got == expected || got == alternative;
        // A crash or a hang must cost exactly that evaluation: the next one runs on a new worker.
        if (expected == "runtime_error" || expected == "timeout") {
            auto again = protocol::makeEvaluateRequest(*bundle, "cuda", "small", quickOptions());
            const auto next = worker.evaluate(std::move(*again), 120s);
            passed = passed && next.status == protocol::Status::Ok && worker.starts() > startsBefore;
            detail += "; next evaluation on a restarted worker (" + worker.lastExit()
                      + "): " + std::string(protocol::statusName(next.status));
        }
        record({k.filename().string(), passed, detail});
    }

    // Every CUDA expert kernel (resources/experts, honest by construction) is correct on each task
    // its "// expert:tasks" line names, at the test sizes: the small variant (sizes that fit no
    // tile, so the kernels for odd sizes run) and, where the task has one, the medium variant
    // (aligned sizes, so the fast paths a launch plan's when= picks for them run too).
    std::vector<fs::path> experts;
    if (fs::is_directory(opt.experts))
        for (const auto& e : fs::recursive_directory_iterator(opt.experts))
            if (e.path().extension() == ".cu")
                experts.push_back(e.path());
    std::sort(experts.begin(), experts.end());
    for (const auto& k : experts) {
        auto source = spec::readTextFile(k);
        std::vector<std::string> tasks;
        if (source) {
            std::istringstream lines(*source);
            std::string line;
            while (std::getline(lines, line))
                if (line.rfind("// expert:tasks ", 0) == 0) {
                    std::istringstream names(line.substr(16));
                    for (std::string name; names >> name;)
                        tasks.push_back(name);
                }
        }
        const std::string name = "expert " + k.parent_path().filename().string() + "/" + k.filename().string();
        if (tasks.empty()) {
            record({name, false, "no // expert:tasks line"});
            continue;
        }
        for (const auto& task : tasks) {
            auto bundle = spec::loadTaskDir(opt.tasks / task);
            if (!bundle) {
                record({name + " on " + task, false, bundle.error()});
                continue;
            }
            std::vector<std::string> variants{"small"};
            if (bundle->spec.variants.count("medium"))
                variants.emplace_back("medium");
            for (const auto& variant : variants) {
                const std::string label = name + " on " + task + (variant == "small" ? "" : " (" + variant + ")");
                auto req = protocol::makeEvaluateRequest(*bundle, "cuda", variant, quickOptions(), *source,
                                                         k.filename().string());
                if (!req) {
                    record({label, false, req.error()});
                    continue;
                }
                const auto r = worker.evaluate(std::move(*req), 120s);
                record({label, r.status == protocol::Status::Ok,
                        std::string(protocol::statusName(r.status)) + ": " + r.message});
            }
        }
    }

    // TMA tensor maps end to end: the tile_add task of tests/kernels/tensormap (y = x + column index)
    // and a kernel file whose tiles travel through cp.async.bulk.tensor and // kforge:tensormap
    // descriptors the worker encodes, where rows are a multiple of 16 bytes (when=mod(N, 4) == 0),
    // and through a plain kernel elsewhere. Each size must be correct with the kernel when= picks.
    if (fs::is_directory(opt.tensorMaps)) {
        const fs::path file = opt.tensorMaps / "tile_add_tma.cu";
        auto bundle = spec::loadTaskDir(opt.tensorMaps);
        auto source = spec::readTextFile(file);
        std::vector<std::pair<std::string, std::string>> cases{{"small", "tile_add_tma"}, {"odd", "tile_add_plain"}};
        if (opt.fullSizes)
            cases.emplace_back("default", "tile_add_tma");
        for (const auto& c : cases) {
            const std::string name = "tensormap " + file.filename().string() + " (" + c.first + ")";
            if (!bundle || !source) {
                record({name, false, !bundle ? bundle.error() : source.error()});
                continue;
            }
            auto req = protocol::makeEvaluateRequest(*bundle, "cuda", c.first, quickOptions(), *source,
                                                     file.filename().string());
            if (!req) {
                record({name, false, req.error()});
                continue;
            }
            const auto r = worker.evaluate(std::move(*req), 120s);
            // launchResources names the kernels of the resolved plan: the one when= picked ran.
            bool ran = false;
            for (const auto& ci : r.compile)
                if (ci.role == "candidate")
                    ran |= ci.resources.count(c.second + ".registers") > 0;
            record({name, r.status == protocol::Status::Ok && ran,
                    std::string(protocol::statusName(r.status)) + ": " + r.message + "; " + c.second
                        + (ran ? " ran" : " did not run")});
        }
    }

    // Thread block clusters end to end: vector_add in clusters of two blocks that exchange their
    // halves through distributed shared memory (tests/kernels/cluster). With the cluster the
    // kernel is correct; launched without it (the same file with cluster= taken out) it writes
    // nothing and must fail verification, which shows the launch really ran in clusters. A GPU
    // without clusters refuses the launch plan, naming cluster=.
    if (fs::is_directory(opt.clusters)) {
        const fs::path file = opt.clusters / "vector_add_cluster.cu";
        auto bundle = spec::loadTaskDir(opt.tasks / "vector_add");
        auto source = spec::readTextFile(file);
        const std::string cc = dev.details.value("compute_capability", std::string());
        const bool hopper = !cc.empty() && std::atoi(cc.c_str()) >= 9;
        std::vector<std::string> variants{"small"};
        if (opt.fullSizes && hopper)
            variants.emplace_back("default");
        for (const auto& variant : variants) {
            const std::string name = "cluster " + file.filename().string() + " (" + variant + ")";
            if (!bundle || !source) {
                record({name, false, !bundle ? bundle.error() : source.error()});
                continue;
            }
            auto req = protocol::makeEvaluateRequest(*bundle, "cuda", variant, quickOptions(), *source,
                                                     file.filename().string());
            if (!req) {
                record({name, false, req.error()});
                continue;
            }
            const auto r = worker.evaluate(std::move(*req), 120s);
            const std::string detail = std::string(protocol::statusName(r.status)) + ": " + r.message;
            if (!hopper) {
                record({name + " refused below compute capability 9.0",
                        r.status == protocol::Status::Rejected
                            && r.message.find("cluster=(2) is not supported") != std::string::npos,
                        detail});
                continue;
            }
            // launchResources' cluster-aware occupancy, for the record.
            std::string resources;
            for (const auto& ci : r.compile)
                if (ci.role == "candidate")
                    for (const auto& [key, value] : ci.resources)
                        if (key.rfind("vector_add_cluster.", 0) == 0)
                            resources += (resources.empty() ? "; " : ", ") + key.substr(19) + " " + fmt(value);
            record({name, r.status == protocol::Status::Ok, detail + resources});
        }
        if (hopper && bundle && source) {
            std::string plain = *source;
            const std::string key = " cluster=(2)";
            const auto directive = plain.find("// kforge:launch ");
            const auto at = directive == std::string::npos ? directive : plain.find(key, directive);
            const std::string name = "cluster " + file.filename().string() + " without cluster= (small)";
            if (at == std::string::npos) {
                record({name, false, "the file's launch directive has no '" + key + "' to take out"});
            } else {
                plain.erase(at, key.size());
                auto req = protocol::makeEvaluateRequest(*bundle, "cuda", "small", quickOptions(), plain,
                                                         file.filename().string());
                const auto r = req ? worker.evaluate(std::move(*req), 120s) : protocol::EvaluateResult{};
                const bool failed =
                    req && (r.status == protocol::Status::Incorrect || r.status == protocol::Status::Rejected);
                record({name, failed,
                        req ? "expected incorrect or rejected, got " + std::string(protocol::statusName(r.status))
                                  + ": " + r.message
                            : req.error()});
            }
        }
    }

    const auto failed = std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return !o.passed; });
    std::cout << outcomes.size() - static_cast<std::size_t>(failed) << " passed, " << failed << " failed\n";

    if (!opt.out.empty()) {
        std::ofstream out(opt.out);
        out << "# kforge-gpucheck\n\n" << header << "\n\n";
        out << "### Checks\n\n| check | result | detail |\n|---|---|---|\n";
        for (const auto& o : outcomes) {
            std::string d = o.detail;
            std::replace(d.begin(), d.end(), '|', '/');
            out << "| " << o.name << " | " << (o.passed ? "pass" : "FAIL") << " | " << d << " |\n";
        }
        out << "\n### Baselines at default sizes\n\n| task | median us | spread | runs | timer "
               "|\n|---|---|---|---|---|\n";
        for (const auto& r : rows)
            out << r << "\n";
    }
    return failed ? 1 : 0;
}
