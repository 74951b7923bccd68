// kforge-cudabench: what the CUDA evaluation path costs and how far its timings can be trusted,
// measured side by side in one run on a real GPU:
//   1. evaluated candidates per second end to end for small kernels (1 worker, and several on one GPU);
//   2. compile time per kernel, cold and from the cubin cache;
//   3. harness overhead: an evaluation's wall time over the kernel time it measured;
//   4. the spread of 10 repeated measurements of one kernel (>= 50 us);
//   5. agreement with Nsight Compute's gpu__time_duration where ncu is present.
// Prints the GPU, driver and date with every figure. Exits 77 (a skip) without a CUDA device.

#include "reportformat.h"
#include "workerprocess.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace kforge;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string fmt(double v, int digits = 2) {
    return gputest::fixed(v, digits);
}

double median(std::vector<double> v) {
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A small candidate made unique by a comment, so that every one is compiled afresh.
std::string uniqueCandidate(const std::string& base, int index) {
    return base + "\n// candidate " + std::to_string(index) + "\n";
}

struct Report {
    std::ostringstream text;
    void line(const std::string& s) {
        std::cout << s << std::endl;
        text << s << "\n";
    }
};

} // namespace

int main(int argc, char** argv) {
    std::string workerPath = (fs::path(argv[0]).parent_path() / "kforge-worker-cuda").string();
    if (const char* env = std::getenv("KFORGE_WORKER_CUDA"))
        workerPath = env;
    fs::path source = KFORGE_SOURCE_DIR;
    fs::path out;
    int candidates = 40;
    int parallel = 4;
    std::vector<int> scaling;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--worker")
            workerPath = argv[i + 1];
        else if (a == "--source")
            source = argv[i + 1];
        else if (a == "--out")
            out = argv[i + 1];
        else if (a == "--candidates")
            candidates = std::max(4, std::atoi(argv[i + 1]));
        else if (a == "--workers")
            parallel = std::max(2, std::atoi(argv[i + 1]));
        else if (a == "--scaling") {
            // e.g. 1,2,4,8,16: throughput with each number of workers on the one GPU
            scaling.clear();
            std::istringstream in(argv[i + 1]);
            for (std::string n; std::getline(in, n, ',');)
                if (std::atoi(n.c_str()) > 0)
                    scaling.push_back(std::atoi(n.c_str()));
        }
    }

    // A private cubin cache, so that "cold" really is cold.
    const fs::path cache = fs::temp_directory_path() / ("kforge-bench-cache-" + std::to_string(::getpid()));
    fs::create_directories(cache);
    const std::vector<std::string> env{"KFORGE_CACHE_DIR=" + cache.string()};

    gputest::WorkerProcess worker(workerPath, env);
    auto probe = worker.probe();
    if (!probe || !probe->available || probe->devices.empty()) {
        std::cout << "SKIP: no usable CUDA device: " << (!probe ? probe.error() : std::string("none found")) << "\n";
        return 77;
    }
    Report report;
    report.line("# kforge CUDA evaluation benchmark");
    report.line("");
    report.line("GPU: " + probe->devices.front().name + ", driver " + probe->devices.front().driver + ", "
                + gputest::utcNow());
    report.line("");

    auto vectorAdd = spec::loadTaskDir(source / "tasks/vector_add");
    auto sgemm = spec::loadTaskDir(source / "tasks/sgemm");
    auto small = spec::readTextFile(source / "tests/kernels/cuda/vector_add_float4.cu");
    if (!vectorAdd || !sgemm || !small) {
        std::cerr << "cannot load the benchmark's tasks or kernels under " << source << "\n";
        return 2;
    }
    protocol::EvalOptions engineOptions; // what a search run uses

    // 1 + 2 + 3: candidates per second, compile times, overhead — one worker.
    std::vector<double> cold, cached, overhead;
    std::map<std::string, double> phases; // summed over the one-worker evaluations
    int ok = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < candidates; ++i) {
        auto req = protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", engineOptions, uniqueCandidate(*small, i),
                                                 "bench.cu");
        const auto r = worker.evaluate(std::move(*req), 120s);
        ok += r.status == protocol::Status::Ok;
        for (const auto& [phase, seconds] : r.phaseSeconds)
            phases[phase] += seconds;
        for (const auto& c : r.compile)
            if (c.role == "candidate")
                (c.resources.count("cache_hit") && c.resources.at("cache_hit") > 0 ? cached : cold)
                    .push_back(c.seconds);
        if (r.candidateTiming && r.baselineTiming) {
            const double kernelUs = r.candidateTiming->meanUs * r.candidateTiming->count
                                    + r.baselineTiming->meanUs * r.baselineTiming->count;
            overhead.push_back(r.wallSeconds * 1e6 / std::max(kernelUs, 1.0));
        }
    }
    const double oneWorker = candidates / std::chrono::duration<double>(Clock::now() - t0).count();
    // The same sources again: every compile now comes from the cache.
    for (int i = 0; i < std::min(candidates, 10); ++i) {
        auto req = protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", engineOptions, uniqueCandidate(*small, i),
                                                 "bench.cu");
        const auto r = worker.evaluate(std::move(*req), 120s);
        for (const auto& c : r.compile)
            if (c.role == "candidate" && c.resources.count("cache_hit") && c.resources.at("cache_hit") > 0)
                cached.push_back(c.seconds);
    }

    // Several workers sharing the GPU, as a host running several evaluations at once would. Each
    // worker is started and has evaluated once before the clock starts, as in a search run, where
    // workers live for the run.
    int firstIndex = 100000;
    auto throughput = [&](int workers, int total, std::map<std::string, double>* workerPhases) {
        std::vector<std::unique_ptr<gputest::WorkerProcess>> pool;
        for (int w = 0; w < workers; ++w)
            pool.push_back(std::make_unique<gputest::WorkerProcess>(workerPath, env));
        std::vector<std::thread> warm;
        for (auto& p : pool)
            warm.emplace_back([&, w = p.get(), i = firstIndex++] {
                auto req = protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", engineOptions,
                                                         uniqueCandidate(*small, i), "bench.cu");
                w->evaluate(std::move(*req), 120s);
            });
        for (auto& t : warm)
            t.join();
        std::atomic<int> next{firstIndex}, done{0};
        const int end = firstIndex + total;
        firstIndex = end;
        std::mutex phaseMutex;
        const auto start = Clock::now();
        std::vector<std::thread> threads;
        for (auto& p : pool)
            threads.emplace_back([&, w = p.get()] {
                for (int i = next++; i < end; i = next++) {
                    auto req = protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", engineOptions,
                                                             uniqueCandidate(*small, i), "bench.cu");
                    const auto r = w->evaluate(std::move(*req), 120s);
                    if (r.status == protocol::Status::Ok)
                        ++done;
                    if (workerPhases) {
                        const std::lock_guard lock(phaseMutex);
                        for (const auto& [phase, seconds] : r.phaseSeconds)
                            (*workerPhases)[phase] += seconds / total;
                    }
                }
            });
        for (auto& t : threads)
            t.join();
        return std::make_pair(done.load(), total / std::chrono::duration<double>(Clock::now() - start).count());
    };

    report.line("## Throughput (vector_add small variant, fresh source each, default evaluation options)");
    report.line("");
    report.line("| workers | candidates | correct | candidates/s | per worker, x one worker |");
    report.line("|---|---|---|---|---|");
    report.line("| 1 (cold start) | " + std::to_string(candidates) + " | " + std::to_string(ok) + " | " + fmt(oneWorker)
                + " | |");
    if (scaling.empty())
        scaling = {parallel};
    std::map<int, std::map<std::string, double>> scaledPhases;
    double single = 0.0;
    for (const int n : scaling) {
        const int total = std::max(candidates, 6 * n);
        const auto [correct, rate] = throughput(n, total, &scaledPhases[n]);
        if (n == 1)
            single = rate;
        report.line("| " + std::to_string(n) + " | " + std::to_string(total) + " | " + std::to_string(correct) + " | "
                    + fmt(rate) + " | " + (single > 0 ? fmt(rate / (n * single)) : std::string("")) + " |");
    }
    report.line("");
    if (!scaledPhases.empty()) {
        // Where a worker's time goes as more workers share the GPU: mean ms per evaluation.
        std::set<std::string> names;
        for (const auto& [n, m] : scaledPhases)
            for (const auto& [phase, seconds] : m)
                names.insert(phase);
        std::string header = "| phase, mean ms per evaluation |", rule = "|---|";
        for (const auto& [n, m] : scaledPhases) {
            header += " " + std::to_string(n) + " worker(s) |";
            rule += "---|";
        }
        report.line(header);
        report.line(rule);
        for (const auto& name : names) {
            std::string row = "| " + name + " |";
            for (const auto& [n, m] : scaledPhases)
                row += " " + (m.count(name) ? fmt(1000 * m.at(name)) : std::string("")) + " |";
            report.line(row);
        }
        report.line("");
    }
    // Where an evaluation's time goes: the same kind of candidates verified only, and timed with
    // CUDA events instead of CUPTI activity records.
    auto rate = [&](const protocol::EvalOptions& o, int first) {
        const auto start = Clock::now();
        const int n = 10;
        for (int i = first; i < first + n; ++i) {
            auto req =
                protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", o, uniqueCandidate(*small, i), "bench.cu");
            worker.evaluate(std::move(*req), 120s);
        }
        return n / std::chrono::duration<double>(Clock::now() - start).count();
    };
    protocol::EvalOptions verifyOnly = engineOptions;
    verifyOnly.timing = false;
    protocol::EvalOptions events = engineOptions;
    events.timingMode = "kernelbench";
    const double verifyRate = rate(verifyOnly, 10000);
    const double eventsRate = rate(events, 20000);
    report.line("Breakdown, 1 worker: verification only (no timing) " + fmt(verifyRate)
                + " candidates/s; timed with CUDA events "
                  "(KernelBench protocol, 100 trials) "
                + fmt(eventsRate) + " candidates/s.");
    report.line("");
    if (!phases.empty()) {
        // The worker's own account of an evaluation's wall time, per phase and step ("timing/run"),
        // mean over the cold one-worker run.
        std::string line = "Phases of one evaluation, 1 worker from a cold start, mean ms:";
        for (const auto& [phase, seconds] : phases)
            line += " " + phase + " " + fmt(1000 * seconds / candidates) + ";";
        line.back() = '.';
        report.line(line);
        report.line("");
    }
    report.line("## Compile time per kernel (NVRTC to cubin)");
    report.line("");
    report.line("| | median ms | n |");
    report.line("|---|---|---|");
    report.line("| cold | " + fmt(1000 * median(cold)) + " | " + std::to_string(cold.size()) + " |");
    report.line("| cached | " + fmt(1000 * median(cached)) + " | " + std::to_string(cached.size()) + " |");
    report.line("");
    report.line("Harness overhead: an evaluation's wall time is " + fmt(median(overhead), 1)
                + "x the kernel time it measured (median; compile, 3-seed verification, uploads and checks included).");
    report.line("");

    // 4: the spread of 10 repeated measurements of one kernel of >= 50 us, on an otherwise idle
    // GPU and while other workers evaluate small candidates on the same GPU, as a search with
    // several workers per GPU does.
    const auto repeatability = [&](int busyWorkers) {
        std::atomic<bool> stop{false};
        std::vector<std::thread> load;
        for (int w = 0; w < busyWorkers; ++w)
            load.emplace_back([&, w] {
                gputest::WorkerProcess busy(workerPath, env);
                for (int i = 0; !stop; ++i) {
                    auto req =
                        protocol::makeEvaluateRequest(*vectorAdd, "cuda", "small", engineOptions,
                                                      uniqueCandidate(*small, 500000 + 1000 * w + i), "bench.cu");
                    busy.evaluate(std::move(*req), 120s);
                }
            });
        if (busyWorkers > 0)
            std::this_thread::sleep_for(3s); // every busy worker started and evaluating
        std::vector<double> medians;
        for (int i = 0; i < 10; ++i) {
            auto req = protocol::makeEvaluateRequest(*sgemm, "cuda", "default", engineOptions);
            const auto r = worker.evaluate(std::move(*req), 300s);
            if (r.candidateTiming)
                medians.push_back(r.candidateTiming->medianUs);
        }
        stop = true;
        for (auto& t : load)
            t.join();
        double spread = 0.0;
        if (!medians.empty()) {
            const double mean =
                std::accumulate(medians.begin(), medians.end(), 0.0) / static_cast<double>(medians.size());
            spread =
                (*std::max_element(medians.begin(), medians.end()) - *std::min_element(medians.begin(), medians.end()))
                / mean;
        }
        return std::make_pair(median(medians), spread);
    };
    const auto idle = repeatability(0);
    const int busy = std::max(scaling.empty() ? parallel : *std::max_element(scaling.begin(), scaling.end()), 2) - 1;
    const auto loaded = repeatability(busy);
    report.line("## Repeatability (sgemm baseline, default sizes, 10 separate evaluations)");
    report.line("");
    report.line("| GPU shared with | median of medians us | (max - min) / mean over the 10 |");
    report.line("|---|---|---|");
    report.line("| nothing | " + fmt(idle.first) + " | " + fmt(100 * idle.second) + "% |");
    report.line("| " + std::to_string(busy) + " workers evaluating vector_add | " + fmt(loaded.first) + " ("
                + fmt(100 * (loaded.first - idle.first) / std::max(idle.first, 1e-9)) + "% from idle) | "
                + fmt(100 * loaded.second) + "% |");
    report.line("");

    // 5: Nsight Compute's own duration for the same kernels, where ncu is installed: the sgemm
    // baseline (compute-bound) and three memory-bound baselines, whose times depend most on the
    // state the cache flush leaves.
    const char* ncuCandidates[] = {"/usr/local/cuda/bin/ncu", "/usr/bin/ncu"};
    std::string ncu;
    for (const char* c : ncuCandidates)
        if (fs::exists(c))
            ncu = c;
    if (ncu.empty()) {
        report.line("Nsight Compute: ncu not found, agreement not measured.");
    } else {
        report.line("## Agreement with Nsight Compute (baselines, default sizes)");
        report.line("");
        report.line("| task | kforge median us | ncu gpu__time_duration median us | launches | difference |");
        report.line("|---|---|---|---|---|");
        std::string method;
        for (const char* name : {"sgemm", "vector_add", "rmsnorm", "row_sum"}) {
            auto task = spec::loadTaskDir(source / "tasks" / name);
            if (!task) {
                report.line(std::string("| ") + name + " | cannot load the task: " + task.error() + " | | | |");
                continue;
            }
            protocol::EvalOptions o;
            o.seeds = {1};
            o.minRepetitions = o.maxRepetitions = 20;
            o.warmup = 2;
            auto req = protocol::makeEvaluateRequest(*task, "cuda", "default", o);
            const auto ours = worker.evaluate(*req, 300s);
            const fs::path reqFile = cache / "request.json";
            std::ofstream(reqFile) << protocol::encode(protocol::Request{*req}) << "\n";
            // The baseline's kernel has the task's name in every built-in task timed here.
            const std::string cmd =
                ncu + " --clock-control none --metrics gpu__time_duration.sum --csv --kernel-name regex:'^" + name
                + "$' " + workerPath + " < " + reqFile.string() + " 2>/dev/null";
            std::vector<double> ncuUs;
            if (FILE* p = ::popen(cmd.c_str(), "r")) {
                char buf[4096];
                static const std::regex row(R"re("gpu__time_duration.sum","([a-z]+)","([0-9.,]+)")re");
                while (std::fgets(buf, sizeof buf, p)) {
                    std::string l = buf;
                    std::smatch m;
                    if (std::regex_search(l, m, row)) {
                        std::string v = m[2];
                        v.erase(std::remove(v.begin(), v.end(), ','), v.end());
                        // ncu writes units as "ns"/"nsecond", "us"/"usecond", "ms"/"msecond", "s"/"second".
                        const std::string unit = m[1];
                        const double scale = unit[0] == 'n' ? 1e-3 : unit[0] == 'u' ? 1.0 : unit[0] == 'm' ? 1e3 : 1e6;
                        ncuUs.push_back(std::stod(v) * scale);
                    }
                }
                ::pclose(p);
            }
            if (ncuUs.empty() || !ours.candidateTiming) {
                report.line(std::string("| ") + name + " | "
                            + (ours.candidateTiming ? fmt(ours.candidateTiming->medianUs) : "-")
                            + " | no gpu__time_duration rows came back | | |");
                continue;
            }
            method = ours.candidateTiming->method;
            const double n = median(ncuUs);
            const double k = ours.candidateTiming->medianUs;
            report.line(std::string("| ") + name + " | " + fmt(k) + " | " + fmt(n) + " | "
                        + std::to_string(ncuUs.size()) + " | " + fmt(100 * (k - n) / n) + "% |");
        }
        report.line("");
        report.line("kforge's clock: " + method
                    + ". ncu flushes and invalidates every cache before each launch it profiles.");
        report.line("");
    }
    fs::remove_all(cache);
    if (!out.empty())
        std::ofstream(out) << report.text.str();
    return 0;
}
