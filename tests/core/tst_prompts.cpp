// Prompts: the template language (substitution, sections, partials, standalone lines, errors that
// name file and line, user overrides), the built-in personas and strategy seeds, and golden files of
// every operator's prompt for the softmax task. Set KFORGE_UPDATE_GOLDEN=1 to rewrite the goldens
// after a deliberate change to a template, then read the diff.

#include "llm/promptbuilder.h"
#include "llm/prompttemplate.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <functional>

using namespace kforge::llm;

namespace {

void writeFile(const QString& path, const QString& text) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
    f.write(text.toUtf8());
}

QString readFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

QString goldenDir() {
    return QStringLiteral(KFORGE_PROMPTS_TEST_DATA);
}

// The softmax baseline as a parent, with the kind of diagnostics the engine attaches.
KernelContext baselineParent(const kforge::spec::TaskBundle& task, const QString& backend) {
    KernelContext k;
    k.id = 1;
    k.label = QStringLiteral("baseline");
    k.status = QStringLiteral("correct");
    k.speedup = 1.0;
    k.params = QStringLiteral("BLOCK=256");
    k.source = QString::fromStdString(task.baselineSource.at(backend.toStdString()));
    k.findings = {
        QStringLiteral("memory: 3 passes over each row: 3.0x the compulsory DRAM traffic (reads 12 B per element, "
                       "the task needs 8)"),
        QStringLiteral("latency: 4096 blocks of 256 threads, 2 barriers per reduction; achieved occupancy 62%")};
    k.roofline = QStringLiteral("memory-bound, 41% of DRAM 4.8 TB/s");
    return k;
}

KernelContext fusedParent() {
    KernelContext k;
    k.id = 17;
    k.label = QStringLiteral("online softmax, warp per row");
    k.status = QStringLiteral("correct");
    k.speedup = 1.84;
    k.params = QStringLiteral("ROWS=8");
    k.source = QStringLiteral(R"(// One warp per row: an online max/sum in one sweep, then the write sweep.
// kforge:param ROWS in {4, 8} = 8
// kforge:launch softmax_warp grid=(cdiv(M, ROWS)) block=(32 * ROWS)
extern "C" __global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    const int row = blockIdx.x * ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= M)
        return;
    const float* xr = x + (size_t)row * N;
    float m = __int_as_float(0xff800000), s = 0.0f;
    for (int j = lane; j < N; j += 32) {
        const float v = xr[j], mn = fmaxf(m, v);
        s = s * __expf(m - mn) + __expf(v - mn);
        m = mn;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, o), so = __shfl_xor_sync(0xffffffffu, s, o);
        const float mn = fmaxf(m, mo);
        s = s * __expf(m - mn) + so * __expf(mo - mn);
        m = mn;
    }
    const float inv = 1.0f / s;
    for (int j = lane; j < N; j += 32)
        y[(size_t)row * N + j] = __expf(xr[j] - m) * inv;
}
)");
    k.findings = {
        QStringLiteral("memory: loads are 4 B per thread; 16 B vector loads would quarter the load instructions")};
    k.roofline = QStringLiteral("memory-bound, 71% of DRAM 4.8 TB/s");
    return k;
}

KernelContext brokenKernel() {
    KernelContext k;
    k.id = 23;
    k.label = QStringLiteral("float4 loads");
    k.status = QStringLiteral("compile_error");
    k.params = QStringLiteral("ROWS=8");
    k.source = fusedParent().source;
    k.source.replace(QStringLiteral("const float v = xr[j], mn"), QStringLiteral("const float4 v = xr4[j], mn"));
    k.compileLog =
        QStringLiteral("kernel.cu(12): error: identifier \"xr4\" is undefined\n"
                       "kernel.cu(12): error: no suitable conversion function from \"float4\" to \"float\" exists\n\n"
                       "2 errors detected in the compilation of \"kernel.cu\".\n");
    k.findings = {QStringLiteral("line 12: identifier \"xr4\" is undefined")};
    return k;
}

const QStringList kExperience{
    QStringLiteral(
        "helped (softmax, cuda, 1.9x): an online max and rescaled sum replaced the separate max and sum passes; "
        "DRAM traffic fell from 12 to 8 bytes per element."),
    QStringLiteral("hurt (layernorm, cuda, 0.7x): a block of 1024 threads per row of 1024 elements left most threads "
                   "idle after the first reduction step.\n"
                   "-    block=(1024)\n"
                   "+    block=(128)")};

} // namespace

class TestPrompts : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();

    void substitution();
    void sections_data();
    void sections();
    void standaloneLines();
    void partials();
    void valuesAreNotTemplates();
    void errors_data();
    void errors();
    void userOverride();
    void builtInUserOverride();

    void names();
    void builtInTemplatesRender();
    void golden_data();
    void golden();
    void deterministic();
    void buildErrors();
    void deviceAsProbed_data();
    void deviceAsProbed();
    void deviceKinds_data();
    void deviceKinds();
    void sizesListedOnce();
    void longSourceVerbatim();
    void experienceCapped();
    void repairQuotesLines();

    void personas();
    void personaOverrideAndErrors();
    void strategySeeds();
    void strategySeedErrors_data();
    void strategySeedErrors();

private:
    PromptContext context(Operator op, Stage stage, const QString& backend = QStringLiteral("cuda")) const;

    kforge::spec::TaskBundle m_task;
    std::optional<PromptBuilder> m_builder;
    QList<Persona> m_personas;
    QList<StrategySeed> m_seeds;
};

void TestPrompts::initTestCase() {
    // Keeps the user's own templates and skills out of the tests.
    QStandardPaths::setTestModeEnabled(true);
    QDir(PromptTemplates::userDir()).removeRecursively();
    const QByteArray tasks = qgetenv("KFORGE_TASKS_DIR");
    QVERIFY2(!tasks.isEmpty(), "KFORGE_TASKS_DIR is not set");
    auto bundle = kforge::spec::loadTaskDir(std::filesystem::path(tasks.toStdString()) / "softmax");
    QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str());
    m_task = *bundle;
    auto builder = PromptBuilder::builtIn();
    QVERIFY2(builder.ok(), builder.ok() ? "" : builder.error().c_str());
    m_builder = *builder;
    auto personas = loadPersonas();
    QVERIFY2(personas.ok(), personas.ok() ? "" : personas.error().c_str());
    m_personas = *personas;
    auto seeds = loadStrategySeeds();
    QVERIFY2(seeds.ok(), seeds.ok() ? "" : seeds.error().c_str());
    m_seeds = *seeds;
}

PromptContext TestPrompts::context(Operator op, Stage stage, const QString& backend) const {
    PromptContext c;
    c.op = op;
    c.stage = stage;
    c.task = &m_task;
    c.backend = backend;
    // The names the workers report: CUDA's device name, and PoCL's name for its CPU device, timed
    // at the small sizes as CI's PoCL runs are.
    c.device = backend == QLatin1String("cuda") ? QStringLiteral("NVIDIA H200")
                                                : QStringLiteral("cpu-haswell-AMD EPYC 7B13 64-Core Processor");
    if (backend != QLatin1String("cuda"))
        c.variant = QStringLiteral("small");
    c.ceilings = backend == QLatin1String("cuda")
                     ? QStringLiteral("DRAM 4.8 TB/s, FP32 67 TFLOP/s, ridge point 14 FLOP/B")
                     : QString();
    for (const StrategySeed& s : m_seeds)
        if (s.stage == stage) {
            c.strategy = s.text; // the first of the stage
            break;
        }
    c.experience = kExperience;
    switch (op) {
    case Operator::Init:
        c.personaName = m_personas.value(0).name;
        c.personaSkill = m_personas.value(0).skill;
        break;
    case Operator::Mutate:
        c.parents = {baselineParent(m_task, backend)};
        break;
    case Operator::Crossover:
        c.parents = {baselineParent(m_task, backend), fusedParent()};
        break;
    case Operator::Repair:
        c.parents = {brokenKernel()};
        break;
    case Operator::Meta:
        c.strategy.clear();
        c.experience.clear();
        for (const StrategySeed& s : m_seeds)
            if (s.stage == stage) {
                if (c.bestStrategy.isEmpty()) {
                    c.bestStrategy = s.text;
                    c.bestStats =
                        QStringLiteral("used for 24 kernels, mean reward 0.61 (0: unusable or wrong, 0.5: as fast "
                                       "as the parent, 1: twice as fast)");
                } else {
                    c.weakStrategy = s.text;
                    c.weakStats = QStringLiteral("used for 19 kernels, mean reward 0.22 (0: unusable or wrong, 0.5: as "
                                                 "fast as the parent, 1: twice as fast)");
                }
            }
        break;
    }
    return c;
}

// ---- the template language ----

void TestPrompts::substitution() {
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("a.md")), QStringLiteral("Hello {{name}}, {{ other }}!\n"));
    auto t = PromptTemplates::load(dir.path());
    QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
    auto out = t->render(QStringLiteral("a"), {{QStringLiteral("name"), QStringLiteral("kforge")},
                                               {QStringLiteral("other"), QStringLiteral("GPU")}});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, QStringLiteral("Hello kforge, GPU!\n"));
    QCOMPARE(t->names(), QStringList{QStringLiteral("a")});
}

void TestPrompts::sections_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expected");
    QTest::newRow("section kept") << "[{{#v}}yes {{v}}{{/v}}]"
                                  << "x"
                                  << "[yes x]";
    QTest::newRow("section dropped") << "[{{#v}}yes {{v}}{{/v}}]"
                                     << ""
                                     << "[]";
    QTest::newRow("blank is empty") << "[{{#v}}yes{{/v}}]"
                                    << " \n\t"
                                    << "[]";
    QTest::newRow("inverted kept") << "[{{^v}}none{{/v}}]"
                                   << ""
                                   << "[none]";
    QTest::newRow("inverted dropped") << "[{{^v}}none{{/v}}]"
                                      << "x"
                                      << "[]";
    QTest::newRow("nested") << "[{{#v}}a{{#v}}b{{/v}}{{^v}}c{{/v}}{{/v}}]"
                            << "x"
                            << "[ab]";
    QTest::newRow("comment") << "[{{! a note }}{{v}}]"
                             << "x"
                             << "[x]";
}

void TestPrompts::sections() {
    QFETCH(QString, text);
    QFETCH(QString, value);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("t.md")), text);
    auto t = PromptTemplates::load(dir.path());
    QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
    auto out = t->render(QStringLiteral("t"), {{QStringLiteral("v"), value}});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, expected);
}

void TestPrompts::standaloneLines() {
    // Tags alone on their lines leave no blank lines behind; inline ones keep their line.
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("t.md")), QStringLiteral("first\n"
                                                                   "{{#a}}\n"
                                                                   "  a is {{a}}\n"
                                                                   "  {{/a}}\n"
                                                                   "{{^b}}\n"
                                                                   "no b\n"
                                                                   "{{/b}}\n"
                                                                   "{{! dropped with its line }}\n"
                                                                   "x {{#b}}b{{/b}} y\n"
                                                                   "last\n"));
    auto t = PromptTemplates::load(dir.path());
    QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
    auto out =
        t->render(QStringLiteral("t"), {{QStringLiteral("a"), QStringLiteral("1")}, {QStringLiteral("b"), QString()}});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, QStringLiteral("first\n  a is 1\nno b\nx  y\nlast\n"));
}

void TestPrompts::partials() {
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("main.md")), QStringLiteral("top\n{{>part}}\ninline [{{>word}}]\n"));
    writeFile(dir.filePath(QStringLiteral("part.md")), QStringLiteral("part sees {{v}}\n"));
    writeFile(dir.filePath(QStringLiteral("word.md")), QStringLiteral("{{v}}"));
    auto t = PromptTemplates::load(dir.path());
    QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
    auto out = t->render(QStringLiteral("main"), {{QStringLiteral("v"), QStringLiteral("V")}});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, QStringLiteral("top\npart sees V\ninline [V]\n"));
}

void TestPrompts::valuesAreNotTemplates() {
    // Kernel sources and model answers may hold "{{": they are inserted, never interpreted.
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("t.md")), QStringLiteral("<{{v}}>"));
    auto t = PromptTemplates::load(dir.path());
    QVERIFY(t.ok());
    auto out = t->render(QStringLiteral("t"), {{QStringLiteral("v"), QStringLiteral("{{#x}} {{y}}")}});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, QStringLiteral("<{{#x}} {{y}}>"));
}

void TestPrompts::errors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("atLoad");
    QTest::addColumn<QString>("expected"); // after "<dir>/t.md:"
    QTest::newRow("unknown variable") << "one\ntwo {{nope}}\n" << false << "2: unknown variable {{nope}} (known: v)";
    QTest::newRow("unknown section") << "one\n\n{{#nope}}x{{/nope}}\n" << false << "3: unknown variable {{#nope}}";
    QTest::newRow("unclosed section") << "a\n{{#v}}\nb\n"
                                      << true << "2: section {{#v}} is not closed (expected {{/v}})";
    QTest::newRow("mismatched close") << "{{#v}}\n{{^w}}\n{{/v}}\n"
                                      << true << "3: {{/v}} does not close {{^w}} opened at line 2";
    QTest::newRow("stray close") << "a\n{{/v}}\n" << true << "2: {{/v}} closes no open section";
    QTest::newRow("missing partial") << "a\nb\n{{>nowhere}}\n"
                                     << true << "3: partial {{>nowhere}} not found: there is no nowhere.md in";
    QTest::newRow("unclosed tag") << "a {{v\n" << true << "1: '{{' is not closed by '}}'";
    QTest::newRow("bad tag") << "{{v w}}\n" << true << "1: cannot read the tag {{v w}}";
    QTest::newRow("self partial") << "{{>t}}\n" << false << "1: partials nest more than 16 deep";
}

void TestPrompts::errors() {
    QFETCH(QString, text);
    QFETCH(bool, atLoad);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("t.md"));
    writeFile(file, text);
    auto t = PromptTemplates::load(dir.path());
    QString error;
    if (atLoad) {
        QVERIFY(!t.ok());
        error = QString::fromStdString(t.error());
    } else {
        QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
        auto out = t->render(QStringLiteral("t"), {{QStringLiteral("v"), QStringLiteral("x")}});
        QVERIFY(!out.ok());
        error = QString::fromStdString(out.error());
    }
    QVERIFY2(error.startsWith(file + QLatin1Char(':') + expected), qPrintable(error));
}

void TestPrompts::userOverride() {
    QTemporaryDir builtIn, user;
    writeFile(builtIn.filePath(QStringLiteral("main.md")), QStringLiteral("main: {{>part}}"));
    writeFile(builtIn.filePath(QStringLiteral("part.md")), QStringLiteral("built-in part"));
    writeFile(user.filePath(QStringLiteral("part.md")), QStringLiteral("user part"));
    auto t =
        PromptTemplates::load(QStringList{builtIn.path(), user.path(), builtIn.filePath(QStringLiteral("missing"))});
    QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
    auto out = t->render(QStringLiteral("main"), {});
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().c_str());
    QCOMPARE(*out, QStringLiteral("main: user part"));
    QCOMPARE(t->fileOf(QStringLiteral("part")), user.filePath(QStringLiteral("part.md")));

    QVERIFY(!PromptTemplates::load(builtIn.filePath(QStringLiteral("missing"))).ok());
    QTemporaryDir empty;
    auto none = PromptTemplates::load(empty.path());
    QVERIFY(!none.ok());
    QVERIFY2(QString::fromStdString(none.error()).contains(QStringLiteral("no prompt templates")),
             none.error().c_str());
}

void TestPrompts::builtInUserOverride() {
    const QString userDir = PromptTemplates::userDir();
    QVERIFY(!userDir.isEmpty());
    writeFile(userDir + QStringLiteral("/stage_tuning.md"), QStringLiteral("Tune it, {{backend}}.\n"));
    auto builder = PromptBuilder::builtIn();
    QDir(userDir).removeRecursively();
    QVERIFY2(builder.ok(), builder.ok() ? "" : builder.error().c_str());
    auto prompt = builder->build(context(Operator::Mutate, Stage::Tuning));
    QVERIFY2(prompt.ok(), prompt.ok() ? "" : prompt.error().c_str());
    QVERIFY(prompt->messages.first().content.contains(QStringLiteral("\nTune it, cuda.\n")));
    QVERIFY(!prompt->messages.first().content.contains(QStringLiteral("Tiling: the tile sizes")));
}

// ---- the prompt builder ----

void TestPrompts::names() {
    for (Operator op : {Operator::Init, Operator::Mutate, Operator::Crossover, Operator::Repair, Operator::Meta})
        QCOMPARE(parseLlmOperator(llmOperatorName(op)), op);
    for (Stage s : {Stage::Structure, Stage::Tuning})
        QCOMPARE(parseStage(stageName(s)), s);
    QVERIFY(!parseLlmOperator(QStringLiteral("mutation")));
    QVERIFY(!parseStage(QString()));
    QCOMPARE(llmOperatorName(Operator::Crossover), QStringLiteral("crossover"));
    QCOMPARE(stageName(Stage::Tuning), QStringLiteral("tuning"));
}

void TestPrompts::builtInTemplatesRender() {
    // Every operator in both stages and both backends renders: a template that uses a name the
    // builder does not define fails here, whichever combination it hides in.
    for (Operator op : {Operator::Init, Operator::Mutate, Operator::Crossover, Operator::Repair, Operator::Meta})
        for (Stage s : {Stage::Structure, Stage::Tuning})
            for (const QString& backend : {QStringLiteral("cuda"), QStringLiteral("opencl")}) {
                PromptContext c = context(op, s, backend);
                c.device.clear();
                c.ceilings.clear();
                auto prompt = m_builder->build(c);
                QVERIFY2(prompt.ok(), qPrintable(llmOperatorName(op) + QLatin1Char('/') + stageName(s)
                                                 + QLatin1Char('/') + backend + QStringLiteral(": ")
                                                 + QString::fromStdString(prompt.ok() ? "" : prompt.error())));
                QCOMPARE(prompt->templateName, llmOperatorName(op));
                QCOMPARE(prompt->messages.size(), 1);
                QCOMPARE(prompt->messages.first().role, QStringLiteral("user"));
                QVERIFY(!prompt->system.contains(QStringLiteral("{{")));
                QVERIFY(!prompt->messages.first().content.contains(QStringLiteral("\n\n\n")));
                QVERIFY(!prompt->system.contains(QStringLiteral("\n\n\n")));
            }
}

void TestPrompts::golden_data() {
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("stage");
    QTest::addColumn<QString>("backend");
    QTest::newRow("init-structure") << int(Operator::Init) << int(Stage::Structure) << "cuda";
    QTest::newRow("mutate-structure") << int(Operator::Mutate) << int(Stage::Structure) << "cuda";
    QTest::newRow("mutate-tuning-opencl") << int(Operator::Mutate) << int(Stage::Tuning) << "opencl";
    QTest::newRow("crossover-tuning") << int(Operator::Crossover) << int(Stage::Tuning) << "cuda";
    QTest::newRow("repair-tuning") << int(Operator::Repair) << int(Stage::Tuning) << "cuda";
    QTest::newRow("meta-structure") << int(Operator::Meta) << int(Stage::Structure) << "cuda";
}

void TestPrompts::golden() {
    QFETCH(int, op);
    QFETCH(int, stage);
    QFETCH(QString, backend);
    auto prompt = m_builder->build(context(static_cast<Operator>(op), static_cast<Stage>(stage), backend));
    QVERIFY2(prompt.ok(), prompt.ok() ? "" : prompt.error().c_str());
    QString text = QStringLiteral("===== system =====\n") + prompt->system;
    for (const Message& m : prompt->messages)
        text += QStringLiteral("===== %1 =====\n").arg(m.role) + m.content;
    const QString file =
        goldenDir() + QLatin1Char('/') + QLatin1String(QTest::currentDataTag()) + QStringLiteral(".golden.txt");
    if (qEnvironmentVariable("KFORGE_UPDATE_GOLDEN") == QLatin1String("1")) {
        writeFile(file, text);
        qWarning("rewrote %s", qPrintable(file));
        return;
    }
    QVERIFY2(QFileInfo::exists(file),
             qPrintable(file + QStringLiteral(" is missing: run with KFORGE_UPDATE_GOLDEN=1")));
    const QString golden = readFile(file);
    if (text != golden) {
        // Name the first differing line: a whole prompt in a failure message is unreadable.
        const QStringList got = text.split(QLatin1Char('\n')), want = golden.split(QLatin1Char('\n'));
        qsizetype i = 0;
        while (i < got.size() && i < want.size() && got[i] == want[i])
            ++i;
        QFAIL(qPrintable(
            QStringLiteral("%1 differs at line %2:\n  got:  %3\n  want: %4\n(KFORGE_UPDATE_GOLDEN=1 rewrites it)")
                .arg(file)
                .arg(i + 1)
                .arg(got.value(i), want.value(i))));
    }
}

void TestPrompts::deterministic() {
    for (Operator op : {Operator::Init, Operator::Crossover, Operator::Meta}) {
        auto a = m_builder->build(context(op, Stage::Structure));
        auto b = PromptBuilder::builtIn()->build(context(op, Stage::Structure));
        QVERIFY(a.ok() && b.ok());
        QCOMPARE(a->system, b->system);
        QCOMPARE(a->messages.first().content, b->messages.first().content);
    }
}

void TestPrompts::buildErrors() {
    auto expectError = [&](PromptContext c, const QString& part) {
        auto p = m_builder->build(c);
        QVERIFY(!p.ok());
        QVERIFY2(QString::fromStdString(p.error()).contains(part), p.error().c_str());
    };
    PromptContext c = context(Operator::Mutate, Stage::Structure);
    c.parents.clear();
    expectError(c, QStringLiteral("the mutate operator takes 1 kernel(s), not 0"));
    c = context(Operator::Crossover, Stage::Structure);
    c.parents.removeLast();
    expectError(c, QStringLiteral("the crossover operator takes 2 kernel(s), not 1"));
    c = context(Operator::Init, Stage::Structure);
    c.task = nullptr;
    expectError(c, QStringLiteral("needs a task"));
    c = context(Operator::Init, Stage::Structure);
    c.backend = QStringLiteral("metal");
    expectError(c, QStringLiteral("unknown backend \"metal\""));
    c = context(Operator::Init, Stage::Structure);
    c.variant = QStringLiteral("huge");
    expectError(c, QStringLiteral("huge"));
}

void TestPrompts::deviceAsProbed_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("line");       // the task's device line
    QTest::addColumn<QStringList>("absent"); // in no prompt of any operator or persona
    const QStringList gpuFacts{QStringLiteral("H200"),
                               QStringLiteral("NVIDIA"),
                               QStringLiteral("Hopper"),
                               QStringLiteral("HBM"),
                               QStringLiteral("GPU kernel engineer"),
                               QStringLiteral("sm_90"),
                               QStringLiteral("A100"),
                               QStringLiteral("tensor cores give")};
    QTest::newRow("PoCL CPU") << "opencl"
                              << ""
                              << "- Device: cpu-haswell-AMD EPYC 7B13 64-Core Processor (CPU): every kernel is "
                                 "compiled, checked and timed on it"
                              << gpuFacts;
    QTest::newRow("OpenCL, kind unknown")
        << "opencl"
        << "unknown-to-kforge"
        << "- Device: cpu-haswell-AMD EPYC 7B13 64-Core Processor (unknown-to-kforge)"
        << QStringList{QStringLiteral("H200"), QStringLiteral("Hopper"), QStringLiteral("GPU kernel engineer")};
    QTest::newRow("CUDA") << "cuda"
                          << ""
                          << "- Device: NVIDIA H200 (GPU): every kernel is compiled, checked and timed on it"
                          << QStringList{QStringLiteral("cpu-haswell"), QStringLiteral("a CPU")};
}

void TestPrompts::deviceAsProbed() {
    QFETCH(QString, backend);
    QFETCH(QString, kind);
    QFETCH(QString, line);
    QFETCH(QStringList, absent);
    for (Operator op : {Operator::Init, Operator::Mutate, Operator::Crossover, Operator::Repair, Operator::Meta})
        for (Stage stage : {Stage::Structure, Stage::Tuning})
            for (const Persona& persona : m_personas) {
                PromptContext c = context(op, stage, backend);
                c.deviceKind = kind;
                if (op == Operator::Init) {
                    c.personaName = persona.name;
                    c.personaSkill = persona.skill;
                }
                auto prompt = m_builder->build(c);
                QVERIFY2(prompt.ok(), prompt.ok() ? "" : prompt.error().c_str());
                const QString text = prompt->system + prompt->messages.first().content;
                const QString where = llmOperatorName(op) + QLatin1Char('/') + stageName(stage) + QLatin1Char('/')
                                      + persona.id + QStringLiteral(": ");
                if (op != Operator::Meta)
                    QVERIFY2(text.contains(line), qPrintable(where + text));
                for (const QString& fact : absent)
                    QVERIFY2(!text.contains(fact), qPrintable(where + fact));
                QVERIFY2(!text.contains(QStringLiteral("{{")), qPrintable(where + text));
                QVERIFY2(!text.contains(QStringLiteral("\n\n\n")), qPrintable(where + text));
                if (op != Operator::Init)
                    break; // one persona is enough where none is shown
            }
}

void TestPrompts::deviceKinds_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("expected");
    QTest::newRow("probe says") << "GPU"
                                << "opencl"
                                << "gfx90a"
                                << "gpu";
    QTest::newRow("probe wins") << "cpu"
                                << "opencl"
                                << "NVIDIA H200"
                                << "cpu";
    QTest::newRow("cuda") << ""
                          << "cuda"
                          << "NVIDIA H200"
                          << "gpu";
    QTest::newRow("pocl cpu") << ""
                              << "opencl"
                              << "cpu-haswell-AMD EPYC 7B13"
                              << "cpu";
    QTest::newRow("old pocl") << ""
                              << "opencl"
                              << "pthread-Intel(R) Xeon(R)"
                              << "cpu";
    QTest::newRow("opencl gpu") << ""
                                << "opencl"
                                << "NVIDIA H200"
                                << "";
    QTest::newRow("nothing") << ""
                             << "opencl"
                             << ""
                             << "";
}

void TestPrompts::deviceKinds() {
    QFETCH(QString, kind);
    QFETCH(QString, backend);
    QFETCH(QString, device);
    QFETCH(QString, expected);
    QCOMPARE(kforge::llm::deviceKindOf(kind, backend, device), expected);
}

void TestPrompts::sizesListedOnce() {
    for (const QString& variant : {QString(), QStringLiteral("small"), QStringLiteral("medium")}) {
        PromptContext c = context(Operator::Mutate, Stage::Structure);
        c.variant = variant;
        auto values = m_builder->values(c);
        QVERIFY2(values.ok(), values.ok() ? "" : values.error().c_str());
        const QString timed = values->at(QStringLiteral("sizes"));
        const QString others = values->at(QStringLiteral("other_sizes"));
        QVERIFY2(!others.contains(timed), qPrintable(others));
        const QStringList parts = others.split(QStringLiteral("; "));
        QCOMPARE(parts.size(), 2);
        for (const QString& name : {QStringLiteral("(default)"), QStringLiteral("(small)"), QStringLiteral("(medium)")})
            QCOMPARE(
                others.count(name),
                name == QLatin1Char('(') + (variant.isEmpty() ? QStringLiteral("default") : variant) + QLatin1Char(')')
                    ? 0
                    : 1);
    }
}

void TestPrompts::longSourceVerbatim() {
    PromptContext c = context(Operator::Mutate, Stage::Tuning);
    QString source = c.parents[0].source;
    for (int i = 0; i < 2000; ++i)
        source += QStringLiteral("// padding line %1 with `code` and {{braces}}\n").arg(i);
    c.parents[0].source = source;
    auto p = m_builder->build(c);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().c_str());
    QVERIFY(p->messages.first().content.contains(source.trimmed()));
}

void TestPrompts::experienceCapped() {
    PromptContext c = context(Operator::Mutate, Stage::Structure);
    c.experience.clear();
    for (int i = 0; i < 20; ++i)
        c.experience << QStringLiteral("insight %1: ").arg(i) + QString(400, QLatin1Char('x'));
    auto values = m_builder->values(c);
    QVERIFY(values.ok());
    const QString experience = values->at(QStringLiteral("experience"));
    QVERIFY(experience.contains(QStringLiteral("insight 0:")));
    QVERIFY(experience.contains(QStringLiteral("insight %1:").arg(PromptBuilder::kMaxExperienceItems - 1)));
    QVERIFY(!experience.contains(QStringLiteral("insight %1:").arg(PromptBuilder::kMaxExperienceItems)));

    c.experience = {QString(PromptBuilder::kMaxExperienceChars * 3, QLatin1Char('y')), QStringLiteral("second")};
    values = m_builder->values(c);
    QVERIFY(values.ok());
    QVERIFY(values->at(QStringLiteral("experience")).size() < PromptBuilder::kMaxExperienceChars + 100);
    QVERIFY(values->at(QStringLiteral("experience")).contains(QStringLiteral("[... cut]")));
    QVERIFY(!values->at(QStringLiteral("experience")).contains(QStringLiteral("second")));
}

void TestPrompts::repairQuotesLines() {
    // An unparsable answer is quoted as text, with a fence longer than any fence inside it.
    PromptContext c = context(Operator::Repair, Stage::Structure);
    KernelContext answer;
    answer.label = QStringLiteral("your previous answer");
    answer.status = QStringLiteral("unparsable");
    answer.source = QStringLiteral("Here it is:\n```cuda\n__global__ void k() {}\n```\n");
    answer.parseError = QStringLiteral("the code block has no // kforge:launch directive");
    c.parents = {answer};
    auto p = m_builder->build(c);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().c_str());
    const QString user = p->messages.first().content;
    QVERIFY2(user.contains(QStringLiteral("````markdown\nHere it is:\n```cuda\n")), qPrintable(user));
    QVERIFY(
        user.contains(QStringLiteral("could not be used as a kernel file: the code block has no // kforge:launch")));
    QVERIFY(!user.contains(QStringLiteral("does not compile")));

    // A compile error quotes the lines it points at, with their numbers.
    auto broken = m_builder->build(context(Operator::Repair, Stage::Structure));
    QVERIFY(broken.ok());
    QVERIFY2(broken->messages.first().content.contains(QStringLiteral("12 |         const float4 v = xr4[j], mn")),
             qPrintable(broken->messages.first().content));
}

// ---- personas and strategy seeds ----

void TestPrompts::personas() {
    QCOMPARE(m_personas.size(), 3);
    QStringList ids;
    for (const Persona& p : m_personas) {
        ids << p.id;
        QVERIFY2(p.name.endsWith(QStringLiteral("expert")), qPrintable(p.name));
        QVERIFY2(p.skill.count(QLatin1Char('\n')) >= 30, qPrintable(p.id));
        QVERIFY(!p.skill.startsWith(QLatin1Char('#')));
    }
    QCOMPARE(ids, (QStringList{QStringLiteral("compute"), QStringLiteral("mapping"), QStringLiteral("memory")}));
}

void TestPrompts::personaOverrideAndErrors() {
    QTemporaryDir builtIn, user;
    writeFile(builtIn.filePath(QStringLiteral("a.md")), QStringLiteral("# Alpha expert\nalpha text\n"));
    writeFile(builtIn.filePath(QStringLiteral("b.md")), QStringLiteral("# Beta expert\nbeta text\n"));
    writeFile(user.filePath(QStringLiteral("b.md")), QStringLiteral("# Better beta\r\nnew\r\ntext\r\n"));
    auto personas = loadPersonas({builtIn.path(), user.path()});
    QVERIFY2(personas.ok(), personas.ok() ? "" : personas.error().c_str());
    QCOMPARE(personas->size(), 2);
    QCOMPARE(personas->at(1).name, QStringLiteral("Better beta"));
    QCOMPARE(personas->at(1).skill, QStringLiteral("new\ntext"));

    writeFile(user.filePath(QStringLiteral("c.md")), QStringLiteral("no heading\n"));
    auto bad = loadPersonas({builtIn.path(), user.path()});
    QVERIFY(!bad.ok());
    QVERIFY2(
        QString::fromStdString(bad.error()).startsWith(user.filePath(QStringLiteral("c.md")) + QStringLiteral(":1:")),
        bad.error().c_str());
}

void TestPrompts::strategySeeds() {
    int structure = 0, tuning = 0;
    QStringList texts;
    for (const StrategySeed& s : m_seeds) {
        (s.stage == Stage::Structure ? structure : tuning) += 1;
        QVERIFY2(s.id.startsWith(stageName(s.stage) + QLatin1Char('-')), qPrintable(s.id));
        QVERIFY(s.text.size() > 200 && s.text.size() < 4000);
        QVERIFY(!texts.contains(s.text));
        texts << s.text;
    }
    QCOMPARE(structure, 3);
    QCOMPARE(tuning, 3);
}

void TestPrompts::strategySeedErrors_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not json") << "{"
                              << "not valid JSON at line 1";
    QTest::newRow("no list") << "{\"strategies\": []}"
                             << ": strategies: expected a non-empty array";
    QTest::newRow("unknown key") << "{\"strategies\": [], \"x\": 1}"
                                 << ": unknown key \"x\"";
    QTest::newRow("bad stage") << "{\"strategies\": [{\"id\": \"a\", \"stage\": \"structure\", \"text\": \"t\"}, "
                                  "{\"id\": \"b\", \"stage\": \"fast\", \"text\": \"t\"}]}"
                               << ": strategies[1].stage: unknown stage \"fast\"";
    QTest::newRow("missing text") << "{\"strategies\": [{\"id\": \"a\", \"stage\": \"tuning\"}]}"
                                  << ": strategies[0]: missing \"text\"";
    QTest::newRow("duplicate id") << "{\"strategies\": [{\"id\": \"a\", \"stage\": \"tuning\", \"text\": \"t\"}, "
                                     "{\"id\": \"a\", \"stage\": \"tuning\", \"text\": \"u\"}]}"
                                  << ": strategies[1].id: \"a\" is used twice";
}

void TestPrompts::strategySeedErrors() {
    QFETCH(QString, json);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("strategies.json"));
    writeFile(file, json);
    auto seeds = loadStrategySeeds(file);
    QVERIFY(!seeds.ok());
    const QString error = QString::fromStdString(seeds.error());
    QVERIFY2(error.startsWith(file) && error.contains(expected), qPrintable(error));
}

QTEST_GUILESS_MAIN(TestPrompts)
#include "tst_prompts.moc"
