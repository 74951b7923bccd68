// Diagnosis: every built-in rule fires on a crafted evaluation with the expected message (and an
// expert who adds a rule must add a row here), the facts of crafted results (first mismatch's row
// and column, resources over kernels), unknown facts keep a rule silent, a user's file replaces a
// built-in rule, and broken rule files name the file, the rule and what is wrong.

#include "diagnose/diagnosis.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <functional>
#include <vector>

using kforge::diagnose::Diagnosis;
using kforge::diagnose::Facts;
using kforge::diagnose::Finding;
using kforge::diagnose::Findings;
using kforge::diagnose::Roofline;
using kforge::protocol::EvaluateResult;
using kforge::protocol::Status;

namespace {

// A correct, timed, healthy evaluation: no built-in rule fires on it.
EvaluateResult healthyResult() {
    EvaluateResult r;
    r.status = Status::Ok;
    kforge::protocol::CompileInfo c;
    c.role = "candidate";
    c.ok = true;
    c.resources = {{"k.registers", 32}, {"k.shared_bytes", 4096}, {"k.local_bytes", 0}, {"k.occupancy", 1.0}};
    r.compile.push_back(c);
    kforge::protocol::OutputCheck o;
    o.name = "y";
    o.checked = 99000; // 33 x 1000, three seeds
    r.outputs.push_back(o);
    r.checks = {{"inputs_unchanged", true, ""},
                {"no_side_effects", true, ""},
                {"all_written", true, ""},
                {"depends_on_inputs", true, ""},
                {"timed_runs_verified", true, ""}};
    kforge::protocol::TimingStats t;
    t.count = 50;
    t.medianUs = 100.0;
    t.spread = 0.02;
    r.candidateTiming = t;
    t.medianUs = 120.0;
    r.baselineTiming = t;
    r.speedup = 1.2;
    return r;
}

// Memory-bound at 75% of the DRAM roof: nothing to say.
Roofline healthyRoofline() {
    Roofline r;
    r.flops = 1e6;
    r.bytes = 2e8;
    r.seconds = 1e-4;
    r.intensity = r.flops / r.bytes;
    r.achievedFlops = 1e10;
    r.achievedBytes = 1.5e12;
    r.peakFlops = 6e13;
    r.peakName = QStringLiteral("fp32");
    r.peakBytes = 2e12;
    r.boundSeconds = 0.75e-4;
    r.fractionOfBound = 0.75;
    r.computeFraction = r.achievedFlops / r.peakFlops;
    r.memoryFraction = 0.75;
    r.bound = QStringLiteral("memory");
    return r;
}

struct RuleCase {
    QString rule;
    std::function<void(EvaluateResult&, Roofline&)> craft;
    QString expected; // substring of the message
};

void failCheck(EvaluateResult& r, const std::string& name) {
    for (auto& c : r.checks)
        if (c.name == name)
            c.passed = false;
}

// One row per built-in rule. A new rule in resources/diagnose/rules.json needs a row here:
// everyRuleHasACase() fails otherwise.
const std::vector<RuleCase>& ruleCases() {
    static const std::vector<RuleCase> cases{
        {QStringLiteral("compile-failed"),
         [](EvaluateResult& r, Roofline&) {
             r.status = Status::CompileError;
             r.compile[0].ok = false;
         },
         QStringLiteral("did not compile")},
        {QStringLiteral("runtime-error"), [](EvaluateResult& r, Roofline&) { r.status = Status::RuntimeError; },
         QStringLiteral("failed at run time")},
        {QStringLiteral("timeout"), [](EvaluateResult& r, Roofline&) { r.status = Status::Timeout; },
         QStringLiteral("did not finish in time")},
        {QStringLiteral("outputs-unwritten"),
         [](EvaluateResult& r, Roofline&) {
             r.status = Status::Incorrect;
             r.outputs[0].unwritten = 9900;
             r.outputs[0].mismatches = 9900;
             failCheck(r, "all_written");
         },
         QStringLiteral("9900 of 99000 output elements never written (10%)")},
        {QStringLiteral("wrong-results"),
         [](EvaluateResult& r, Roofline&) {
             r.status = Status::Incorrect;
             r.outputs[0].mismatches = 5;
             r.outputs[0].maxAbsError = 0.5;
             r.outputs[0].maxRelError = 0.25;
         },
         QStringLiteral("5 of 99000 output elements wrong (0.0051%); max abs error 0.5, max rel error 0.25")},
        {QStringLiteral("first-mismatch"),
         [](EvaluateResult& r, Roofline&) {
             r.status = Status::Incorrect;
             r.outputs[0].mismatches = 1;
             r.outputs[0].firstMismatch = 2 * 1000 + 7;
             r.outputs[0].firstGot = 1.5;
             r.outputs[0].firstExpected = 1.0;
         },
         QStringLiteral("first mismatch at row 2, column 7 of 33 x 1000: got 1.5, expected 1")},
        {QStringLiteral("non-finite"),
         [](EvaluateResult& r, Roofline&) {
             r.status = Status::Incorrect;
             r.outputs[0].nonFinite = 3;
             r.outputs[0].mismatches = 3;
         },
         QStringLiteral("3 NaN or Inf values")},
        {QStringLiteral("inputs-modified"), [](EvaluateResult& r, Roofline&) { failCheck(r, "inputs_unchanged"); },
         QStringLiteral("writes to its inputs")},
        {QStringLiteral("output-independent-of-inputs"),
         [](EvaluateResult& r, Roofline&) { failCheck(r, "depends_on_inputs"); },
         QStringLiteral("does not change when the inputs do")},
        {QStringLiteral("timed-runs-wrong"), [](EvaluateResult& r, Roofline&) { failCheck(r, "timed_runs_verified"); },
         QStringLiteral("wrong in the timed runs")},
        {QStringLiteral("side-effects"), [](EvaluateResult& r, Roofline&) { failCheck(r, "no_side_effects"); },
         QStringLiteral("writes outside its outputs")},
        {QStringLiteral("register-spills"),
         [](EvaluateResult& r, Roofline&) {
             r.compile[0].resources["k.local_bytes"] = 128;
             r.compile[0].resources["k.registers"] = 255;
         },
         QStringLiteral("128 B spilled per thread to local memory (255 registers)")},
        {QStringLiteral("register-limited-occupancy"),
         [](EvaluateResult& r, Roofline&) {
             r.compile[0].resources["k.registers"] = 168;
             r.compile[0].resources["k.occupancy"] = 0.375;
         },
         QStringLiteral("168 registers per thread limit occupancy to 38%")},
        {QStringLiteral("shared-limited-occupancy"),
         [](EvaluateResult& r, Roofline&) {
             r.compile[0].resources["k.shared_bytes"] = 98304;
             r.compile[0].resources["k.occupancy"] = 0.25;
         },
         QStringLiteral("98304 B of shared memory per block limit occupancy to 25%")},
        {QStringLiteral("memory-bound-low"),
         [](EvaluateResult&, Roofline& roof) {
             roof.memoryFraction = 0.41;
             roof.achievedBytes = 0.82e12;
         },
         QStringLiteral("memory-bound at 41% of the measured DRAM bandwidth (820 of 2000 GB/s)")},
        {QStringLiteral("memory-bound-near-roof"),
         [](EvaluateResult&, Roofline& roof) {
             roof.memoryFraction = 0.9;
             roof.achievedBytes = 1.8e12;
         },
         QStringLiteral("at 90% of the DRAM bandwidth: little left but moving fewer bytes")},
        {QStringLiteral("compute-bound-low"),
         [](EvaluateResult&, Roofline& roof) {
             roof.bound = QStringLiteral("compute");
             roof.computeFraction = 0.3;
             roof.achievedFlops = 1.8e13;
         },
         QStringLiteral("compute-bound at 30% of the FP32 peak (18000 of 60000 GFLOP/s)")},
        {QStringLiteral("compute-bound-split-tf32"),
         [](EvaluateResult&, Roofline& roof) {
             roof.bound = QStringLiteral("compute");
             roof.peakName = QStringLiteral("tf32_wgmma");
             roof.computeFraction = 0.17;
             roof.splitTf32Fraction = 0.51;
         },
         QStringLiteral("compute-bound at 17% of the TF32 tensor (wgmma) peak: 51% of the third of it that a "
                        "float32-accurate 3xTF32 kernel")},
        {QStringLiteral("compute-bound-near-roof"),
         [](EvaluateResult&, Roofline& roof) {
             roof.bound = QStringLiteral("compute");
             roof.computeFraction = 0.92;
         },
         QStringLiteral("compute-bound at 92% of the FP32 peak: little left")},
        {QStringLiteral("latency-bound"),
         [](EvaluateResult&, Roofline& roof) {
             roof.bound = QStringLiteral("latency");
             roof.fractionOfBound = 0.05;
             roof.memoryFraction = 0.05;
         },
         QStringLiteral("latency-bound (5% of the roofline's speed)")},
        {QStringLiteral("noisy-timing"), [](EvaluateResult& r, Roofline&) { r.candidateTiming->spread = 0.25; },
         QStringLiteral("spread 25% of the median")},
        {QStringLiteral("slower-than-baseline"), [](EvaluateResult& r, Roofline&) { r.speedup = 0.5; },
         QStringLiteral("slower than the baseline (0.5x its speed)")},
        {QStringLiteral("faster-on-repeats"),
         [](EvaluateResult& r, Roofline&) {
             r.checks.push_back({"fresh_inputs_speed", false, "4.0x faster on repeated inputs"});
         },
         QStringLiteral("markedly faster on inputs it has seen before")},
        {QStringLiteral("low-achieved-occupancy"),
         [](EvaluateResult& r, Roofline&) {
             kforge::protocol::ProfileResult p;
             p.status = "ok";
             p.metrics = {{"achieved_occupancy", 0.12}, {"sm_throughput", 0.3}};
             r.profile = p;
         },
         QStringLiteral("low achieved occupancy (12% of the warps")},
    };
    return cases;
}

QString writeFile(const QString& path, const QByteArray& text) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        qFatal("cannot write %s", qPrintable(path));
    f.write(text);
    return path;
}

const Finding* findRule(const Findings& findings, const QString& rule) {
    for (const Finding& f : findings)
        if (f.rule == rule)
            return &f;
    return nullptr;
}

qsizetype indexOfRule(const Findings& findings, const QString& rule) {
    for (qsizetype i = 0; i < findings.size(); ++i)
        if (findings[i].rule == rule)
            return i;
    return -1;
}

QString describe(const Findings& findings) {
    QStringList lines;
    for (const Finding& f : findings)
        lines << f.rule + QStringLiteral(": ") + f.message;
    return lines.join(QStringLiteral("; "));
}

} // namespace

class TestDiagnosis : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void builtInLoads();
    void missingBuiltInIsNamed();
    void everyRuleHasACase();
    void ruleFires_data();
    void ruleFires();
    void healthyResultIsQuiet();
    void factsOfFirstMismatch();
    void factsOfResourcesOverKernels();
    void absentFactsDoNotFire();
    void messageFormatting();
    void workerDiagnosticsFirstThenBySeverity();
    void userFileReplacesRule();
    void builtInReadsUserFile();
    void computeFindingsNameTheirPeak();
    void badRules_data();
    void badRules();
    void badFiles();
    void findingJsonRoundTrip();

private:
    Diagnosis m_builtIn;
    kforge::spec::TaskSpec m_task;
    kforge::spec::Sizes m_sizes;
};

void TestDiagnosis::initTestCase() {
    // Keeps the user's own rules (and anything else in their data folder) out of the tests.
    QStandardPaths::setTestModeEnabled(true);
    const QByteArray tasks = qgetenv("KFORGE_TASKS_DIR");
    QVERIFY2(!tasks.isEmpty(), "KFORGE_TASKS_DIR is not set");
    auto bundle = kforge::spec::loadTaskDir(std::filesystem::path(tasks.toStdString()) / "softmax");
    QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str());
    m_task = bundle->spec;
    auto sizes = m_task.sizesFor("small"); // M = 33, N = 1000
    QVERIFY(sizes.ok());
    m_sizes = *sizes;
    QCOMPARE(m_sizes.at("M"), 33);
    QCOMPARE(m_sizes.at("N"), 1000);
    auto builtIn = Diagnosis::builtIn();
    QVERIFY2(builtIn.ok(), builtIn.ok() ? "" : builtIn.error().c_str());
    m_builtIn = *builtIn;
}

void TestDiagnosis::builtInLoads() {
    QVERIFY(m_builtIn.ruleIds().size() >= 14);
    QVERIFY(m_builtIn.ruleIds().contains(QStringLiteral("register-spills")));
}

void TestDiagnosis::everyRuleHasACase() {
    QStringList missing;
    for (const QString& id : m_builtIn.ruleIds()) {
        const bool covered =
            std::any_of(ruleCases().begin(), ruleCases().end(), [&](const RuleCase& c) { return c.rule == id; });
        if (!covered)
            missing << id;
    }
    QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("built-in rules without a test case in ruleCases(): ")
                                           + missing.join(QStringLiteral(", "))));
}

void TestDiagnosis::ruleFires_data() {
    QTest::addColumn<int>("index");
    for (std::size_t i = 0; i < ruleCases().size(); ++i)
        QTest::newRow(qPrintable(ruleCases()[i].rule)) << static_cast<int>(i);
}

void TestDiagnosis::ruleFires() {
    QFETCH(int, index);
    const RuleCase& c = ruleCases()[static_cast<std::size_t>(index)];
    QVERIFY2(m_builtIn.ruleIds().contains(c.rule), qPrintable(c.rule + QStringLiteral(" is not a built-in rule")));
    EvaluateResult result = healthyResult();
    Roofline roofline = healthyRoofline();
    c.craft(result, roofline);
    const Findings findings = m_builtIn.diagnose(result, m_task, m_sizes, roofline);
    const Finding* f = findRule(findings, c.rule);
    QVERIFY2(f, qPrintable(QStringLiteral("did not fire; findings: ") + describe(findings)));
    QVERIFY2(f->message.contains(c.expected), qPrintable(QStringLiteral("message: ") + f->message));
    QVERIFY(!f->kind.isEmpty());
    QVERIFY(QStringList({QStringLiteral("error"), QStringLiteral("warning"), QStringLiteral("info")})
                .contains(f->severity));
    QVERIFY(!f->direction.isEmpty());
    QVERIFY2(!f->message.contains(QLatin1Char('?')), qPrintable(QStringLiteral("unknown fact in: ") + f->message));
}

void TestDiagnosis::healthyResultIsQuiet() {
    const Findings findings = m_builtIn.diagnose(healthyResult(), m_task, m_sizes, healthyRoofline());
    QVERIFY2(findings.isEmpty(), qPrintable(describe(findings)));
    // A large speedup over a naive baseline is what an expert kernel looks like: no finding says
    // otherwise (suspicion comes from the measured roofs and the fresh-inputs check).
    EvaluateResult fast = healthyResult();
    fast.speedup = 50.0;
    const Findings quiet = m_builtIn.diagnose(fast, m_task, m_sizes, healthyRoofline());
    QVERIFY2(quiet.isEmpty(), qPrintable(describe(quiet)));
}

void TestDiagnosis::factsOfFirstMismatch() {
    EvaluateResult r = healthyResult();
    r.status = Status::Incorrect;
    r.outputs[0].mismatches = 4;
    // Row 5, column 17 of the second seed's output: the index counts over the runs.
    r.outputs[0].firstMismatch = 33000 + 5 * 1000 + 17;
    r.outputs[0].firstGot = 0.25;
    r.outputs[0].firstExpected = 0.5;
    const Facts facts = kforge::diagnose::factsOf(r, m_task, m_sizes, std::nullopt);
    QCOMPARE(facts.at("first_mismatch_row"), 5.0);
    QCOMPARE(facts.at("first_mismatch_col"), 17.0);
    QCOMPARE(facts.at("rows"), 33.0);
    QCOMPARE(facts.at("cols"), 1000.0);
    QCOMPARE(facts.at("first_got"), 0.25);
    QCOMPARE(facts.at("mismatches"), 4.0);
    QCOMPARE(facts.at("status_incorrect"), 1.0);
    QCOMPARE(facts.at("status_ok"), 0.0);
    QCOMPARE(facts.at("unwritten_fraction"), 0.0);
    QCOMPARE(facts.at("inputs_changed"), 0.0);
    QCOMPARE(facts.at("median_us"), 100.0);
    QCOMPARE(facts.at("speedup"), 1.2);
    // Without a roofline or a profile those facts are unknown, not zero.
    QVERIFY(!facts.count("memory_fraction"));
    QVERIFY(!facts.count("bound_memory"));
    QVERIFY(!facts.count("achieved_occupancy"));
}

void TestDiagnosis::factsOfResourcesOverKernels() {
    EvaluateResult r = healthyResult();
    r.compile[0].resources = {{"row_max.registers", 40},      {"row_sum.registers", 96},  {"row_sum.local_bytes", 16},
                              {"row_max.shared_bytes", 4096}, {"row_max.occupancy", 1.0}, {"row_sum.occupancy", 0.5},
                              {"row_max.blocks_per_sm", 8}};
    kforge::protocol::CompileInfo baseline;
    baseline.role = "baseline";
    baseline.resources = {{"registers", 255}, {"local_bytes", 512}};
    r.compile.push_back(baseline);
    Roofline roof = healthyRoofline();
    roof.peakBytes = 0.0; // no ceilings: no fractions
    roof.peakFlops = 0.0;
    const Facts facts = kforge::diagnose::factsOf(r, m_task, m_sizes, roof);
    QCOMPARE(facts.at("registers"), 96.0);
    QCOMPARE(facts.at("local_bytes"), 16.0);
    QCOMPARE(facts.at("shared_bytes"), 4096.0);
    QCOMPARE(facts.at("occupancy"), 0.5); // the kernel that limits
    QVERIFY(!facts.count("blocks_per_sm"));
    QVERIFY(!facts.count("memory_fraction"));
    QCOMPARE(facts.at("bound_memory"), 1.0);
    QCOMPARE(facts.at("achieved_gb_per_s"), 1500.0);
}

void TestDiagnosis::absentFactsDoNotFire() {
    // Nothing known: no rule fires, not even those whose condition would hold for zeros.
    QVERIFY(m_builtIn.apply({}).isEmpty());

    // A memory-bound kernel at 10% of a roof that was never measured says nothing about the roof.
    EvaluateResult r = healthyResult();
    Roofline roof = healthyRoofline();
    roof.peakBytes = 0.0;
    roof.memoryFraction = 0.0;
    Findings findings = m_builtIn.diagnose(r, m_task, m_sizes, roof);
    QVERIFY2(!findRule(findings, QStringLiteral("memory-bound-low")), qPrintable(describe(findings)));

    // No baseline timed: no speedup, even though 0 < 0.95.
    r.speedup.reset();
    r.baselineTiming.reset();
    findings = m_builtIn.diagnose(r, m_task, m_sizes, std::nullopt);
    QVERIFY2(findings.isEmpty(), qPrintable(describe(findings)));

    // A rule over an absent fact stays silent while the others fire.
    auto custom = Diagnosis::fromJson(QJsonDocument::fromJson(R"({"version": 1, "rules": [
            {"id": "a", "kind": "timing", "severity": "info", "when": "speedup < 2", "message": "a"},
            {"id": "b", "kind": "timing", "severity": "info", "when": "median_us > 0", "message": "b"}]})")
                                          .object(),
                                      QStringLiteral("custom.json"));
    QVERIFY2(custom.ok(), custom.ok() ? "" : custom.error().c_str());
    findings = custom->apply({{"median_us", 10.0}});
    QCOMPARE(findings.size(), 1);
    QCOMPARE(findings[0].rule, QStringLiteral("b"));
}

void TestDiagnosis::messageFormatting() {
    auto rules = Diagnosis::fromJson(QJsonDocument::fromJson(R"({"version": 1, "rules": [
            {"id": "f", "kind": "memory", "severity": "info", "when": "memory_fraction > 0",
             "message": "{memory_fraction%} | {memory_fraction} | {median_us} | {registers} | {spread%} | {achieved_gb_per_s}",
             "evidence": ["registers", "memory_fraction", "speedup"]}]})")
                                         .object(),
                                     QStringLiteral("format.json"));
    QVERIFY2(rules.ok(), rules.ok() ? "" : rules.error().c_str());
    const Findings findings = rules->apply({{"memory_fraction", 0.4123},
                                            {"median_us", 12.3456},
                                            {"registers", 64},
                                            {"spread", 0.005},
                                            {"achieved_gb_per_s", 1834.7}});
    QCOMPARE(findings.size(), 1);
    QCOMPARE(findings[0].message, QStringLiteral("41% | 0.412 | 12.3 | 64 | 0.5% | 1835"));
    // Evidence lists the facts that are known, in the rule's order.
    QCOMPARE(findings[0].evidence, QStringLiteral("registers = 64, memory_fraction = 0.412"));
    QCOMPARE(findings[0].line, 0);
}

void TestDiagnosis::workerDiagnosticsFirstThenBySeverity() {
    EvaluateResult r = healthyResult();
    r.status = Status::CompileError;
    r.outputs.clear();
    r.speedup = 0.5;                 // a warning, listed after the error
    r.candidateTiming->spread = 0.3; // info, listed last
    r.diagnostics = {{"compile", "error", "expected ';' after expression", "candidate", 42, 7},
                     {"compile", "error", "no line", "candidate", 0, 0},
                     {"compile", "error", "in the reference", "reference", 3, 1},
                     {"launch_plan", "warning", "grid too small", "candidate", 5, 0}};
    const Findings findings = m_builtIn.diagnose(r, m_task, m_sizes, std::nullopt);
    QVERIFY2(findings.size() >= 5, qPrintable(describe(findings)));
    QCOMPARE(findings[0].rule, QStringLiteral("worker-compile"));
    QCOMPARE(findings[0].line, 42);
    QCOMPARE(findings[0].kind, QStringLiteral("compile"));
    QCOMPARE(findings[0].message, QStringLiteral("expected ';' after expression"));
    QCOMPARE(findings[1].rule, QStringLiteral("worker-launch_plan"));
    QCOMPARE(findings[1].severity, QStringLiteral("warning"));
    QCOMPARE(findings[1].line, 5);
    QCOMPARE(findings[2].rule, QStringLiteral("compile-failed"));
    const qsizetype slower = indexOfRule(findings, QStringLiteral("slower-than-baseline"));
    const qsizetype noisy = indexOfRule(findings, QStringLiteral("noisy-timing"));
    QVERIFY(slower > 2);
    QVERIFY(noisy > slower);
    for (qsizetype i = 3; i < findings.size(); ++i)
        QCOMPARE(findings[i].line, 0);
}

void TestDiagnosis::missingBuiltInIsNamed() {
    // Every built-in file (rules, prompts, prices, endpoints, ...) that cannot be found is named
    // with the folders searched and the variable that points at the right one.
    const QString message = kforge::util::ResourceLocator::notFound(QStringLiteral("diagnose/rules.json"),
                                                                    QStringLiteral("diagnosis rules"));
    QVERIFY2(message.startsWith(u"the built-in diagnosis rules (diagnose/rules.json) could not be found; looked in "),
             qPrintable(message));
    QVERIFY(message.contains(u"KFORGE_RESOURCES_DIR"));
    for (const QString& dir : kforge::util::ResourceLocator::dirs())
        QVERIFY2(message.contains(dir), qPrintable(dir));
}

void TestDiagnosis::userFileReplacesRule() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString builtInPath = kforge::util::ResourceLocator::find(QStringLiteral("diagnose/rules.json"));
    QVERIFY(!builtInPath.isEmpty());
    const QString user = writeFile(dir.filePath(QStringLiteral("rules.json")), R"({"version": 1, "rules": [
        {"id": "register-spills", "kind": "resources", "severity": "error", "when": "local_bytes > 64",
         "message": "spills of {local_bytes} B are not allowed here"},
        {"id": "big-blocks", "kind": "resources", "severity": "info", "when": "shared_bytes > 1000",
         "message": "{shared_bytes} B shared"}]})");
    auto merged = Diagnosis::load({builtInPath, user});
    QVERIFY2(merged.ok(), merged.ok() ? "" : merged.error().c_str());
    QCOMPARE(merged->ruleIds().size(), m_builtIn.ruleIds().size() + 1);
    QCOMPARE(merged->ruleIds().count(QStringLiteral("register-spills")), 1);
    QCOMPARE(merged->ruleIds().last(), QStringLiteral("big-blocks"));

    Findings findings = merged->apply({{"local_bytes", 32}, {"registers", 255}});
    QVERIFY2(!findRule(findings, QStringLiteral("register-spills")), qPrintable(describe(findings)));
    findings = merged->apply({{"local_bytes", 128}, {"shared_bytes", 2048}});
    const Finding* f = findRule(findings, QStringLiteral("register-spills"));
    QVERIFY(f);
    QCOMPARE(f->message, QStringLiteral("spills of 128 B are not allowed here"));
    QCOMPARE(f->severity, QStringLiteral("error"));
    QVERIFY(findRule(findings, QStringLiteral("big-blocks")));
}

// A compute-bound finding says which roof the kernel is held to: FP32, or the tensor roof its
// instructions have (a 3xTF32 GEMM is judged against TF32's, not FP32's).
void TestDiagnosis::computeFindingsNameTheirPeak() {
    Roofline roof = healthyRoofline();
    roof.bound = QStringLiteral("compute");
    roof.computeFraction = 0.3;
    roof.achievedFlops = 9.48e13;
    roof.peakFlops = 3.16e14;
    roof.peakName = QStringLiteral("tf32_tensor");
    const Findings findings = m_builtIn.diagnose(healthyResult(), m_task, m_sizes, roof);
    const Finding* f = findRule(findings, QStringLiteral("compute-bound-low"));
    QVERIFY2(f, qPrintable(describe(findings)));
    QCOMPARE(f->message,
             QStringLiteral("compute-bound at 30% of the TF32 tensor (mma.sync) peak (94800 of 316000 GFLOP/s)"));
    QCOMPARE(kforge::diagnose::labelsOf(roof).at("peak"), QStringLiteral("TF32 tensor (mma.sync)"));
    QVERIFY(kforge::diagnose::labelsOf(std::nullopt).empty());
    QVERIFY(!findRule(findings, QStringLiteral("compute-bound-split-tf32")));

    // Counted in the task's FLOPs, a float32-accurate (3xTF32) kernel can reach a third of the TF32
    // roof: 17% of it is half-way there, and the finding says so instead of "30% of the roof".
    roof.computeFraction = 0.17;
    roof.splitTf32Fraction = 0.51;
    Findings split = m_builtIn.diagnose(healthyResult(), m_task, m_sizes, roof);
    QVERIFY2(findRule(split, QStringLiteral("compute-bound-split-tf32")), qPrintable(describe(split)));
    QVERIFY2(!findRule(split, QStringLiteral("compute-bound-low")), qPrintable(describe(split)));
    // Above the third, the kernel cannot be doing three products per product: the plain finding.
    roof.computeFraction = 0.4;
    roof.splitTf32Fraction = 1.2;
    split = m_builtIn.diagnose(healthyResult(), m_task, m_sizes, roof);
    QVERIFY2(findRule(split, QStringLiteral("compute-bound-low")), qPrintable(describe(split)));
    QVERIFY2(!findRule(split, QStringLiteral("compute-bound-split-tf32")), qPrintable(describe(split)));
    // A label the evaluation does not have reads "?", as an unknown number does.
    QCOMPARE(m_builtIn.apply({{"bound_compute", 1.0}, {"compute_fraction", 0.95}, {"achieved_gflop_per_s", 1.0}})
                 .value(0)
                 .message,
             QStringLiteral("compute-bound at 95% of the ? peak: little left but doing fewer operations"));
}

void TestDiagnosis::builtInReadsUserFile() {
    const QString userDir = kforge::util::ResourceLocator::userDir();
    QVERIFY(!userDir.isEmpty());
    const QString path = userDir + QStringLiteral("/diagnose/rules.json");
    writeFile(path, R"({"version": 1, "rules": [
        {"id": "noisy-timing", "kind": "timing", "severity": "warning", "when": "spread > 0.5",
         "message": "very noisy: {spread%}"}]})");
    auto loaded = Diagnosis::builtIn();
    QFile::remove(path);
    QDir().rmdir(QFileInfo(path).absolutePath());
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().c_str());
    QCOMPARE(loaded->ruleIds(), m_builtIn.ruleIds());
    QVERIFY(loaded->apply({{"spread", 0.3}}).isEmpty());
    const Findings findings = loaded->apply({{"spread", 0.8}});
    QCOMPARE(findings.size(), 1);
    QCOMPARE(findings[0].message, QStringLiteral("very noisy: 80%"));
}

void TestDiagnosis::badRules_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("error");
    const auto rule = [](const char* extra) {
        return QByteArray(R"({"version": 1, "rules": [{"id": "x", "kind": "timing", "severity": "info", )") + extra
               + "}]}";
    };
    QTest::newRow("unknown top-level key")
        << QByteArray(R"({"version": 1, "rules": [], "rule": []})") << QStringLiteral("bad.json: unknown key \"rule\"");
    QTest::newRow("no version") << QByteArray(R"({"rules": []})") << QStringLiteral("bad.json: missing \"version\"");
    QTest::newRow("future version") << QByteArray(R"({"version": 2, "rules": []})")
                                    << QStringLiteral("bad.json: version: unsupported version 2");
    QTest::newRow("rules not an array") << QByteArray(R"({"version": 1, "rules": {}})")
                                        << QStringLiteral("bad.json: rules: expected an array");
    QTest::newRow("rule not an object") << QByteArray(R"({"version": 1, "rules": [3]})")
                                        << QStringLiteral("bad.json: rules[0]: expected an object");
    QTest::newRow("no id") << QByteArray(R"({"version": 1, "rules": [{"kind": "timing"}]})")
                           << QStringLiteral("bad.json: rules[0]: missing \"id\"");
    QTest::newRow("unknown key") << rule(R"("when": "spread > 0", "message": "m", "colour": "red")")
                                 << QStringLiteral("bad.json: rules[0] (x): unknown key \"colour\"");
    QTest::newRow("no when") << rule(R"("message": "m")") << QStringLiteral("bad.json: rules[0] (x): missing \"when\"");
    QTest::newRow("no message") << rule(R"("when": "spread > 0")")
                                << QStringLiteral("bad.json: rules[0] (x): missing \"message\"");
    QTest::newRow("bad severity") << QByteArray(
        R"({"version": 1, "rules": [{"id": "x", "kind": "timing", "severity": "fatal",
                         "when": "spread > 0", "message": "m"}]})")
                                  << QStringLiteral("bad.json: rules[0] (x): severity: unknown severity \"fatal\"");
    QTest::newRow("bad kind") << QByteArray(R"({"version": 1, "rules": [{"id": "x", "kind": "speed", "severity": "info",
                         "when": "spread > 0", "message": "m"}]})")
                              << QStringLiteral("bad.json: rules[0] (x): kind: unknown kind \"speed\"");
    QTest::newRow("does not parse") << rule(R"("when": "spread > ", "message": "m")")
                                    << QStringLiteral("bad.json: rules[0] (x): when: 'spread > ': ");
    QTest::newRow("unknown fact") << rule(R"("when": "sped > 1", "message": "m")")
                                  << QStringLiteral("bad.json: rules[0] (x): when: unknown fact \"sped\"");
    QTest::newRow("unknown fact in message")
        << rule(R"("when": "spread > 1", "message": "{sped}")")
        << QStringLiteral("bad.json: rules[0] (x): message: unknown fact \"sped\"");
    QTest::newRow("a word as a percentage")
        << rule(R"("when": "spread > 1", "message": "{peak%}")")
        << QStringLiteral("bad.json: rules[0] (x): message: {peak%} makes a percentage of a word");
    QTest::newRow("a word in the condition") << rule(R"("when": "peak > 1", "message": "m")")
                                             << QStringLiteral("bad.json: rules[0] (x): when: unknown fact \"peak\"");
    QTest::newRow("unknown evidence") << rule(R"("when": "spread > 1", "message": "m", "evidence": ["spread", "x"])")
                                      << QStringLiteral("bad.json: rules[0] (x): evidence[1]: unknown fact \"x\"");
    QTest::newRow("empty message") << rule(R"("when": "spread > 1", "message": " ")")
                                   << QStringLiteral("bad.json: rules[0] (x): message: expected a non-empty string");
    QTest::newRow("duplicate id") << QByteArray(R"({"version": 1, "rules": [
               {"id": "x", "kind": "timing", "severity": "info", "when": "spread > 0", "message": "m"},
               {"id": "x", "kind": "timing", "severity": "info", "when": "spread > 1", "message": "n"}]})")
                                  << QStringLiteral("bad.json: rules[1] (x): duplicate id \"x\"");
}

void TestDiagnosis::badRules() {
    QFETCH(QByteArray, json);
    QFETCH(QString, error);
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    QCOMPARE(parseError.error, QJsonParseError::NoError);
    auto loaded = Diagnosis::fromJson(doc.object(), QStringLiteral("bad.json"));
    QVERIFY(!loaded.ok());
    const QString message = QString::fromStdString(loaded.error());
    QVERIFY2(message.startsWith(error), qPrintable(message));
}

void TestDiagnosis::badFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString broken = writeFile(dir.filePath(QStringLiteral("broken.json")), "{\"version\": 1,\n \"rules\": [,]}");
    auto loaded = Diagnosis::load({broken});
    QVERIFY(!loaded.ok());
    QVERIFY2(QString::fromStdString(loaded.error()).startsWith(broken + QStringLiteral(": not valid JSON at line 2")),
             loaded.error().c_str());

    const QString missing = dir.filePath(QStringLiteral("missing.json"));
    loaded = Diagnosis::load({missing});
    QVERIFY(!loaded.ok());
    QVERIFY2(QString::fromStdString(loaded.error()).startsWith(missing + QStringLiteral(": cannot read")),
             loaded.error().c_str());

    // The second file's error names that file.
    const QString bad = writeFile(dir.filePath(QStringLiteral("user.json")),
                                  R"({"version": 1, "rules": [{"id": "y", "kind": "timing", "severity": "info",
                                      "when": "speedup >", "message": "m"}]})");
    loaded = Diagnosis::load({kforge::util::ResourceLocator::find(QStringLiteral("diagnose/rules.json")), bad});
    QVERIFY(!loaded.ok());
    QVERIFY2(QString::fromStdString(loaded.error()).startsWith(bad + QStringLiteral(": rules[0] (y): when: ")),
             loaded.error().c_str());
}

void TestDiagnosis::findingJsonRoundTrip() {
    Finding f;
    f.rule = QStringLiteral("register-spills");
    f.kind = QStringLiteral("resources");
    f.severity = QStringLiteral("warning");
    f.message = QStringLiteral("128 B spilled per thread");
    f.evidence = QStringLiteral("local_bytes = 128, registers = 255");
    f.line = 12;
    f.direction = QStringLiteral("smaller register tiles");
    const QJsonObject json = f.toJson();
    QCOMPARE(json.value(QLatin1String("line")).toInt(), 12);
    QCOMPARE(json.value(QLatin1String("evidence")).toString(), f.evidence);
    const Finding back = Finding::fromJson(json);
    QCOMPARE(back.rule, f.rule);
    QCOMPARE(back.kind, f.kind);
    QCOMPARE(back.severity, f.severity);
    QCOMPARE(back.message, f.message);
    QCOMPARE(back.evidence, f.evidence);
    QCOMPARE(back.line, f.line);
    QCOMPARE(back.direction, f.direction);
    QCOMPARE(Finding::fromJson({}).line, 0);
}

QTEST_GUILESS_MAIN(TestDiagnosis)
#include "tst_diagnosis.moc"
