// The evaluator's judgement of timings, on a scripted backend: its device is host memory, its
// "kernels" compute vector_add on the host, and each run reports the time a script gives it. So
// what the evaluator concludes from first runs and repeats is tested on exact figures, with no
// device and no timer noise.
#include "backend.h"
#include "evaluator.h"
#include "taskspec.h"

#include <QTest>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string_view>

using namespace kforge;

namespace {

// How a scripted kernel's runs are timed. All of them compute z = x + y (but `Stale`, below).
enum class Script {
    Steady,   // 100 us, always
    Unlucky,  // the first timed run on the first unseen inputs takes 400 us, every other 100 us
    Keeper,   // 400 us on inputs it has not seen in any run before, 100 us on ones it has
    Stale,    // timed runs: computes on buffers it has not written before (400 us); on those it has,
              // writes what it computed there last time (100 us), whatever the inputs are now
    Baseline, // the task's baseline: 400 us on a first sight of inputs, 200 us on repeats
};

class ScriptedProgram : public harness::Program {
public:
    explicit ScriptedProgram(Script s) : script(s) {}
    Script script;
    std::set<std::size_t> seen;                                      // contents of inputs run on
    std::map<harness::BufferId, std::vector<unsigned char>> written; // Stale: outputs per buffer
    bool luckRanOut = false;                                         // Unlucky: its slow run is over
};

class ScriptedBackend : public harness::Backend {
public:
    std::string name() const override { return "scripted"; }
    spec::Dialect dialect() const override { return spec::Dialect::OpenCL; }
    protocol::ProbeResult probe() override { return {}; }
    spec::Status open(int) override {
        m_deviceName = "scripted device";
        return spec::success();
    }
    std::vector<protocol::Diagnostic> staticCheck(const std::string&) const override { return {}; }
    harness::CompileOutput compile(const std::string& source, const std::vector<std::string>&,
                                   const std::string&) override {
        Script s = Script::Steady;
        if (source.find("// scripted: unlucky") != std::string::npos)
            s = Script::Unlucky;
        else if (source.find("// scripted: keeper") != std::string::npos)
            s = Script::Keeper;
        else if (source.find("// scripted: stale") != std::string::npos)
            s = Script::Stale;
        else if (source.find("// scripted: baseline") != std::string::npos)
            s = Script::Baseline;
        harness::CompileOutput out;
        out.ok = true;
        out.program = std::make_unique<ScriptedProgram>(s);
        return out;
    }
    spec::Expected<harness::BufferId> allocate(std::size_t bytes) override {
        m_buffers[++m_next] = {std::make_shared<std::vector<unsigned char>>(bytes), 0, bytes};
        return m_next;
    }
    spec::Expected<harness::BufferId> view(harness::BufferId parent, std::size_t offset, std::size_t bytes) override {
        const Buffer& p = m_buffers.at(parent);
        if (offset + bytes > p.bytes)
            return spec::fail("view past its parent's end");
        m_buffers[++m_next] = {p.storage, p.offset + offset, bytes};
        return m_next;
    }
    void release(harness::BufferId id) override { m_buffers.erase(id); }
    spec::Status upload(harness::BufferId id, const void* data, std::size_t bytes) override {
        std::memcpy(at(id), data, std::min(bytes, m_buffers.at(id).bytes));
        return spec::success();
    }
    spec::Status download(harness::BufferId id, void* data, std::size_t bytes, std::size_t offset) override {
        std::memcpy(data, at(id) + offset, bytes);
        return spec::success();
    }
    void prepareTimedRun() override { m_prepared = true; }
    void flushCaches() override {
        m_timed = true;
        ++flushes;
        if (!std::exchange(m_prepared, false))
            ++unpreparedFlushes;
    }
    int flushes = 0;
    int unpreparedFlushes = 0; // flushes that prepareTimedRun() did not come before
    std::string timingMethod() const override { return "scripted"; }

    spec::Expected<harness::RunResult> run(harness::Program& program, const spec::LaunchPlan&,
                                           const harness::Bindings& b, const harness::AfterLaunch&) override {
        auto& p = static_cast<ScriptedProgram&>(program);
        const bool timed = std::exchange(m_timed, false); // a timed run flushes the caches first
        const std::size_t n = m_buffers.at(b.outputs[0]).bytes / sizeof(float);
        const auto* x = reinterpret_cast<const float*>(at(b.inputs[0]));
        const auto* y = reinterpret_cast<const float*>(at(b.inputs[1]));
        auto* z = reinterpret_cast<float*>(at(b.outputs[0]));
        const std::size_t content =
            std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(x), n * sizeof(float)));
        const bool seen = !p.seen.insert(content).second;
        harness::RunResult r;
        r.microseconds = 100.0;
        switch (p.script) {
        case Script::Steady:
            break;
        case Script::Unlucky:
            if (timed && !seen && !p.luckRanOut) {
                r.microseconds = 400.0;
                p.luckRanOut = true;
            }
            break;
        case Script::Keeper:
            r.microseconds = seen ? 100.0 : 400.0;
            break;
        case Script::Baseline:
            r.microseconds = seen ? 200.0 : 400.0;
            break;
        case Script::Stale:
            if (timed) {
                auto kept = p.written.find(b.outputs[0]);
                if (kept != p.written.end()) {
                    std::memcpy(z, kept->second.data(), kept->second.size());
                    r.microseconds = 100.0;
                    return r;
                }
                r.microseconds = 400.0;
            }
            break;
        }
        for (std::size_t i = 0; i < n; ++i)
            z[i] = x[i] + y[i];
        if (p.script == Script::Stale && timed) {
            auto& keep = p.written[b.outputs[0]];
            keep.assign(reinterpret_cast<const unsigned char*>(z), reinterpret_cast<const unsigned char*>(z + n));
        }
        return r;
    }

private:
    struct Buffer {
        std::shared_ptr<std::vector<unsigned char>> storage;
        std::size_t offset = 0;
        std::size_t bytes = 0;
    };
    unsigned char* at(harness::BufferId id) {
        const Buffer& b = m_buffers.at(id);
        return b.storage->data() + b.offset;
    }
    std::map<harness::BufferId, Buffer> m_buffers;
    harness::BufferId m_next = 0;
    bool m_timed = false;
    bool m_prepared = false;
};

// vector_add (small) with the candidate's script named in its source; the task's baseline timed
// beside it when `baseline`.
protocol::EvaluateRequest request(const char* script, bool baseline) {
    auto bundle = spec::loadTaskDir(std::filesystem::path(KFORGE_SOURCE_DIR) / "tasks" / "vector_add");
    if (!bundle)
        qFatal("%s", bundle.error().c_str());
    protocol::EvaluateRequest r;
    r.task = bundle->spec;
    r.variant = "small";
    r.reference = {"reference", "reference.cl", bundle->referenceSource.at("opencl"), {}, "kernel"};
    r.candidate = {"candidate",
                   "candidate.cl",
                   "// scripted: " + std::string(script) + "\n" + bundle->baselineSource.at("opencl"),
                   {},
                   "kernel"};
    if (baseline)
        r.baseline = protocol::KernelInput{
            "baseline", "baseline.cl", "// scripted: baseline\n" + bundle->baselineSource.at("opencl"), {}, "kernel"};
    r.options.inputSets = 1; // one first run per kernel: the thinnest evidence there is
    r.options.warmup = 1;
    r.options.minRepetitions = 5;
    r.options.maxRepetitions = 5;
    return r;
}

// One evaluation of a scripted candidate on a backend and evaluator of its own.
protocol::EvaluateResult evaluate(const char* script, bool baseline) {
    ScriptedBackend backend;
    harness::Evaluator evaluator(backend, 0);
    return evaluator.evaluate(request(script, baseline));
}

const protocol::IntegrityCheck* check(const protocol::EvaluateResult& r, const std::string& name) {
    for (const auto& c : r.checks)
        if (c.name == name)
            return &c;
    return nullptr;
}

} // namespace

class TestEvaluator : public QObject {
    Q_OBJECT
private slots:
    // Each timed run's turn with the device alone holds only the cache flush and the run: the
    // backend finishes earlier work and its timer's bookkeeping before the turn.
    void timedRunsArePreparedBeforeTheirTurn() {
        ScriptedBackend backend;
        harness::Evaluator evaluator(backend, 0);
        const auto r = evaluator.evaluate(request("steady", true));
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        QVERIFY(backend.flushes >= 10); // five timed runs each of the candidate and the baseline
        QCOMPARE(backend.unpreparedFlushes, 0);
    }
    void steadyKernelPasses() {
        const auto r = evaluate("steady", false);
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        const auto* c = check(r, "fresh_inputs_speed");
        QVERIFY(c);
        QVERIFY2(c->passed, c->detail.c_str());
        QVERIFY2(c->detail.find("further unseen") == std::string::npos, c->detail.c_str()); // nothing to settle
    }

    // One slow first run, and only one, is the device's: a first run on a further unseen input
    // set clears the kernel, and the check says so.
    void oneSlowFirstRunIsCleared() {
        const auto r = evaluate("unlucky", false);
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        const auto* c = check(r, "fresh_inputs_speed");
        QVERIFY(c);
        QVERIFY2(c->passed, c->detail.c_str());
        QVERIFY2(c->detail.find("4x") != std::string::npos, c->detail.c_str());
        QVERIFY2(c->detail.find("further unseen input set took 100 us (1 tried)") != std::string::npos,
                 c->detail.c_str());
        QCOMPARE(r.candidateTiming->medianUs, 100.0);
    }

    // A kernel slow on every first sight of inputs and fast on repeats keeps something between
    // calls: the further unseen sets confirm it, and the check fails naming them.
    void keptResultsAreConfirmed() {
        const auto r = evaluate("keeper", false);
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str()); // correct, but not to be trusted
        const auto* c = check(r, "fresh_inputs_speed");
        QVERIFY(c);
        QVERIFY2(!c->passed, c->detail.c_str());
        QVERIFY2(c->detail.find("much faster on inputs it has seen before") != std::string::npos, c->detail.c_str());
        QVERIFY2(c->detail.find("first runs on 4 further unseen input sets were as slow (400, 400, 400, 400 us)")
                     != std::string::npos,
                 c->detail.c_str());
        bool warned = false;
        for (const auto& d : r.diagnostics)
            warned = warned || (d.kind == "integrity" && d.message == c->detail);
        QVERIFY(warned);
    }

    // The baseline's own gain from repeats is the control: a kernel that gains no more than it is
    // not suspected at all, however slow its first runs.
    void theBaselineIsTheControl() {
        const auto r = evaluate("keeper", true);
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        const auto* c = check(r, "fresh_inputs_speed");
        QVERIFY(c);
        QVERIFY2(!c->passed, c->detail.c_str()); // 4x against the baseline's 2x: still suspicious
        QVERIFY2(c->detail.find("the baseline 2x") != std::string::npos, c->detail.c_str());
        const auto steady = evaluate("unlucky", true);
        const auto* s = check(steady, "fresh_inputs_speed");
        QVERIFY(s);
        QVERIFY2(s->passed, s->detail.c_str());
        QVERIFY(steady.speedup.has_value());
    }

    // Where sets are made one at a time (little host memory), the further sets take the timed
    // sets' place: the judgements are the same.
    void recheckWithSetsMadeOneAtATime() {
        qputenv("KFORGE_WORKER_HOST_MEMORY", "1K");
        struct Unset {
            ~Unset() { qunsetenv("KFORGE_WORKER_HOST_MEMORY"); }
        } unset;
        const auto unlucky = evaluate("unlucky", false);
        QVERIFY2(unlucky.status == protocol::Status::Ok, unlucky.message.c_str());
        bool oneAtATime = false;
        for (const auto& d : unlucky.diagnostics)
            oneAtATime = oneAtATime || d.message.find("made one at a time") != std::string::npos;
        QVERIFY(oneAtATime);
        const auto* c = check(unlucky, "fresh_inputs_speed");
        QVERIFY(c);
        QVERIFY2(c->passed, c->detail.c_str());
        const auto keeper = evaluate("keeper", false);
        const auto* k = check(keeper, "fresh_inputs_speed");
        QVERIFY(k);
        QVERIFY2(!k->passed, k->detail.c_str());
    }

    // A kernel that keys what it keeps on its buffers rather than on their contents gives stale
    // results when further unseen inputs arrive in the same buffers: it is incorrect.
    void staleResultsOnFurtherSetsAreIncorrect() {
        const auto r = evaluate("stale", false);
        QVERIFY2(r.status == protocol::Status::Incorrect, r.message.c_str());
        QVERIFY2(r.message.find("further unseen input set") != std::string::npos, r.message.c_str());
        QVERIFY2(r.message.find("wrong elements") != std::string::npos, r.message.c_str());
        const auto* c = check(r, "timed_runs_verified");
        QVERIFY(c);
        QVERIFY(!c->passed);
    }
};

QTEST_GUILESS_MAIN(TestEvaluator)
#include "tst_evaluator.moc"
