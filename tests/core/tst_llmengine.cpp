// The engine with LLM proposers end to end: kforge-worker-fake evaluates, kforge-fake-llm-server
// answers as a script says (by what each prompt asks for), so a whole run with mutation,
// crossover, repair, expert-persona initialisation, meta-prompt evolution and the money budget's
// hard stop can be checked from what the run store kept; so can the budgets being spent (not
// guarded), the key check before the start, an endpoint that refuses its key, and the calls in
// flight when a run ends or is stopped.

#include "enginetestdata.h"
#include "eval/workerpool.h"
#include "scriptedllm.h"
#include "search/engine.h"
#include "store/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace kforge;
using namespace kforge::search;
using namespace kforge::model;
using kforge::llm::LlmSettings;
using kforge::llm::ModelChoice;

namespace {

QString dataDir() {
    return kforge::test::engineDataDir();
}

using kforge::test::fakeWorkerPath;

// A kernel for the fake_scale task as a model would answer it: prose, one fenced block, prose.
// `{{n}}` becomes the request's number in the server, so no two answers are the same kernel.
QString answer(const QString& timeExpression, const QString& extra = {}) {
    return QStringLiteral("The parent reads one float per work-item; this version changes the mapping.\n\n"
                          "```c\n"
                          "// fake:time_us=%1\n"
                          "// fake:sleep_ms=5\n%2"
                          "// kforge:param BLOCK in {64, 128, 256} = 64\n"
                          "// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"
                          "__kernel void scale(__global const float* x, __global float* y, int N)\n"
                          "{\n"
                          "    const int i = get_global_id(0);\n"
                          "    const float variant_{{n}} = 0.0f * {{n}};\n"
                          "    if (i < N)\n"
                          "        y[i] = 2.0f * x[i] + variant_{{n}};\n"
                          "}\n"
                          "```\n\n"
                          "BLOCK stays a parameter so the tuner can pick it.\n")
        .arg(timeExpression, extra);
}

using kforgetest::rule;

// What each kind of prompt gets. The first rule that matches answers.
QJsonObject script() {
    QJsonArray rules;
    rules << rule(QStringLiteral("The strategy to rewrite"),
                  QStringLiteral("```text\nRewrite {{n}}: fuse the scale into a grid-stride loop and keep BLOCK a "
                                 "parameter.\n```\nIt names one concrete change."));
    rules << rule(QStringLiteral("could not be used as a kernel file"), answer(QStringLiteral("95")));
    rules << rule(QStringLiteral("# The kernel to repair"), answer(QStringLiteral("90")));
    // One strategy of the structure stage only ever yields wrong kernels: meta-prompt evolution
    // must notice and rewrite it.
    rules << rule(QStringLiteral("Change the mathematics, not the mapping"),
                  answer(QStringLiteral("50"), QStringLiteral("// fake:incorrect_if=1\n")));
    rules << rule(QStringLiteral("# The kernel to improve"),
                  QStringLiteral("I would use float4 loads here, and unroll by four."), 1);
    rules << rule(QStringLiteral("# Two kernels to combine"), answer(QStringLiteral("60+abs(BLOCK-128)/8")));
    rules << rule(QStringLiteral("# The kernel to improve"), answer(QStringLiteral("80+abs(BLOCK-128)/8")));
    rules << rule(QStringLiteral("# Your expertise"), answer(QStringLiteral("150")));
    return QJsonObject{{QStringLiteral("rules"), rules}};
}

} // namespace

class TestLlmEngine : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    kforgetest::ScriptedLlmServer m_server;
    int m_port = 0;
    static constexpr double kBudgetUsd = 0.09;

    Engine::Setup setupFor(const QString& db, qint64 budgetEvaluations) const {
        RunConfig c;
        c.task = dataDir() + QStringLiteral("/tasks/fake_scale");
        c.backend = model::Backend::OpenCL;
        c.islands = 2;
        c.childrenPerIsland = 3;
        c.migrationInterval = 2;
        c.budgetEvaluations = budgetEvaluations;
        c.seed = 11;
        c.workers = 2;
        c.evalTimeoutSeconds = 30;
        c.expertRate = 0.0;
        llm::Endpoint local;
        local.name = QStringLiteral("local");
        local.baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(m_port);
        local.keyring = false;
        local.maxConcurrent = 2;
        local.maxRetries = 1;
        local.backoffSeconds = 0.1;
        c.llm.endpoints << local;
        ModelChoice model;
        model.endpoint = QStringLiteral("local");
        model.model = QStringLiteral("gpt-4.1-mini"); // priced in the built-in table
        c.llm.models << model;
        c.llm.rate = 1.0;
        c.llm.crossoverRate = 0.3;
        c.llm.repairRate = 0.3;
        c.llm.metaInterval = 1;
        c.llm.maxTokens = 1024;
        c.llm.budgetUsd = kBudgetUsd;

        Engine::Setup s = kforge::test::fakeEngineSetup(db, c);
        s.useExperts = false;
        return s;
    }

    static RunSummary runToEnd(Engine& engine) {
        QSignalSpy finished(&engine, &Engine::finished);
        QMetaObject::invokeMethod(&engine, &Engine::start, Qt::QueuedConnection);
        if (!finished.wait(240000)) {
            RunSummary timedOut;
            timedOut.state = RunState::Failed;
            timedOut.message = QStringLiteral("the run did not finish in four minutes");
            return timedOut;
        }
        return finished.takeFirst().at(0).value<RunSummary>();
    }

    static QList<QJsonObject> requests(const QString& log) {
        QList<QJsonObject> list;
        QFile f(log);
        if (f.open(QIODevice::ReadOnly))
            for (const QByteArray& line : f.readAll().split('\n'))
                if (!line.trimmed().isEmpty())
                    list << QJsonDocument::fromJson(line).object();
        return list;
    }

    static QStringList eventKinds(store::RunStore& st, qint64 run) {
        QStringList kinds;
        if (auto events = st.events(run))
            for (const auto& e : *events)
                kinds << e.kindName;
        return kinds;
    }

    // A second fake server with its own script and request log, in a folder of its own.
    int startServer(kforgetest::ScriptedLlmServer& server, const QString& name, const QJsonObject& script) const {
        const QString dir = m_dir.filePath(name);
        QDir().mkpath(dir);
        return server.start(QStringLiteral(KFORGE_FAKE_LLM_SERVER), dir, script,
                            dir + QStringLiteral("/requests.jsonl"));
    }

    static double spent(store::RunStore& st, qint64 run) {
        double usd = 0.0;
        if (auto calls = st.llmCalls(run))
            for (const auto& c : *calls)
                usd += c.costUsd.value_or(0.0);
        return usd;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_port = m_server.start(QStringLiteral(KFORGE_FAKE_LLM_SERVER), m_dir.path(), script(),
                                m_dir.filePath(QStringLiteral("requests.jsonl")));
        QVERIFY(m_port > 0);
    }

    void cleanupTestCase() { m_server.stop(); }

    // What a language model reads of a kernel's roofline: the bound and the roofs' fractions, and for
    // float32 data on TF32 tensor cores how far along the third of that roof a 3xTF32 kernel can
    // reach it is (17% of the roof is half-way there, not a sixth of the way).
    void kernelContextShowsTheRoofline() {
        Entry e;
        e.candidate.id = 7;
        e.result = protocol::EvaluateResult{};
        e.result->status = protocol::Status::Ok;
        diagnose::Roofline r;
        r.bound = QStringLiteral("compute");
        r.memoryFraction = 0.04;
        r.computeFraction = 0.17;
        r.peakName = QStringLiteral("tf32_wgmma");
        e.roofline = r;
        QCOMPARE(LlmChildren::contextOf(e).roofline,
                 QStringLiteral("compute-bound; 4% of the DRAM roof, 17% of the TF32 tensor (wgmma) roof"));
        e.roofline->splitTf32Fraction = 0.51;
        QCOMPARE(LlmChildren::contextOf(e).roofline,
                 QStringLiteral("compute-bound; 4% of the DRAM roof, 17% of the TF32 tensor (wgmma) roof (51% of "
                                "the third of the TF32 roof that a 3xTF32 kernel can reach)"));
    }

    void scriptedRunShowsEveryOperatorAndStopsOnMoney() {
        const QString db = m_dir.filePath(QStringLiteral("llm.kforge"));
        Engine::Setup s = setupFor(db, 400);
        const RunConfig& c = s.config;
        QVERIFY2(c.validate(), "the test's configuration is valid");
        Engine engine(s);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(QLatin1String("LLM money budget reached")), qPrintable(summary.message));

        auto opened = store::RunStore::open(db);
        QVERIFY(opened);
        auto& st = **opened;
        auto calls = st.llmCalls(summary.runId);
        QVERIFY(calls);
        QMap<QString, int> byOp, byStatus;
        double usd = 0.0;
        int linked = 0;
        for (const auto& call : *calls) {
            ++byOp[call.op];
            ++byStatus[call.status];
            if (call.status == QLatin1String("cancelled")) {
                // In flight when the budget stopped the run (a strategy rewrite): nothing came back.
                QVERIFY(!call.costUsd && call.answer.isEmpty() && !call.prompt.isEmpty());
                continue;
            }
            QVERIFY2(call.costUsd.has_value(), "the fake server reports usage and the model has a price");
            usd += *call.costUsd;
            QCOMPARE(*call.inputTokens, 3000);
            QCOMPARE(*call.outputTokens, 800);
            QVERIFY(!call.prompt.isEmpty());
            QVERIFY(!call.answer.isEmpty());
            linked += call.candidateId ? 1 : 0;
        }
        qInfo() << "calls by operator" << byOp << "by status" << byStatus << "spent" << usd;
        for (const char* op : {"init", "mutate", "crossover", "repair", "meta"})
            QVERIFY2(byOp.value(QLatin1String(op)) > 0, op);
        QVERIFY(byStatus.value(QStringLiteral("unparsable")) >= 1);
        QVERIFY(linked > 0);
        // The hard stop: no call was started that could take the run over its budget.
        QVERIFY2(usd <= c.llm.budgetUsd, qPrintable(QString::number(usd)));

        // Candidates from the answers: origin llm, lineage to their parents, some correct.
        auto candidates = st.candidates(summary.runId);
        QVERIFY(candidates);
        int llmChildren = 0, crossovers = 0;
        for (const auto& cand : *candidates) {
            if (cand.origin != Origin::Llm)
                continue;
            ++llmChildren;
            QVERIFY2(!cand.parents.isEmpty(), qPrintable(cand.label));
            if (cand.label.contains(QLatin1String("crossover"))) {
                ++crossovers;
                QCOMPARE(cand.parents.size(), 2);
            }
        }
        QVERIFY(llmChildren >= 5);
        QVERIFY(crossovers >= 1);

        // Meta-prompt evolution: the strategy that only gave wrong kernels was rewritten.
        auto strategies = st.strategies(summary.runId);
        QVERIFY(strategies);
        bool rewritten = false;
        for (const auto& strategy : *strategies) {
            if (!strategy.parent)
                continue;
            QVERIFY(strategy.text.startsWith(QLatin1String("Rewrite ")));
            const auto weak = std::find_if(strategies->begin(), strategies->end(),
                                           [&](const auto& x) { return x.id == *strategy.parent; });
            QVERIFY(weak != strategies->end());
            QVERIFY(weak->retired);
            rewritten = rewritten || weak->text.contains(QLatin1String("Change the mathematics"));
        }
        QVERIFY(rewritten);
        auto events = st.events(summary.runId);
        QVERIFY(events);
        QStringList kinds;
        for (const auto& e : *events)
            kinds << e.kindName;
        QVERIFY(kinds.contains(QStringLiteral("strategy_rewritten")));
        QVERIFY(kinds.contains(QStringLiteral("llm_budget_reached")));
    }

    // The money budget holds over every session of a run, and a resumed run keeps its strategies.
    void budgetHoldsAcrossResume() {
        const QString db = m_dir.filePath(QStringLiteral("resume.kforge"));
        qint64 runId = 0;
        double first = 0.0;
        {
            Engine engine(setupFor(db, 14)); // ends on its evaluation budget, long before the money
            const auto summary = runToEnd(engine);
            QCOMPARE(summary.state, RunState::Finished);
            QVERIFY2(summary.message.contains(QLatin1String("evaluation budget")), qPrintable(summary.message));
            runId = summary.runId;
            auto st = store::RunStore::open(db);
            QVERIFY(st);
            first = spent(**st, runId);
            QVERIFY(first > 0.0);
        }
        Engine::Setup again = setupFor(db, 14);
        again.resumeRun = runId;
        again.budgetEvaluations = 400;
        Engine engine(again);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(QLatin1String("LLM money budget reached")), qPrintable(summary.message));
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        const double total = spent(**st, runId);
        QVERIFY(total > first);
        QVERIFY2(total <= kBudgetUsd, qPrintable(QString::number(total)));
        auto strategies = (*st)->strategies(runId);
        QVERIFY(strategies);
        const auto seeds =
            std::count_if(strategies->begin(), strategies->end(), [](const auto& x) { return !x.parent; });
        QCOMPARE(seeds, 6); // seeded once, not again on resume
    }

    // A budget is spent, not guarded: at least 90 % of it is used before the stop, never more.
    void budgetIsSpent_data() {
        QTest::addColumn<qint64>("tokens");
        QTest::addColumn<double>("usd");
        QTest::newRow("usd") << qint64(0) << 0.05;
        QTest::newRow("tokens") << qint64(60000) << 0.0;
    }

    void budgetIsSpent() {
        QFETCH(qint64, tokens);
        QFETCH(double, usd);
        const QString db =
            m_dir.filePath(QStringLiteral("spent-%1.kforge").arg(QString::fromLatin1(QTest::currentDataTag())));
        Engine::Setup s = setupFor(db, 1000);
        s.config.llm.budgetUsd = usd;
        s.config.llm.budgetTokens = tokens;
        Engine engine(s);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(tokens > 0 ? QLatin1String("LLM token budget reached")
                                                     : QLatin1String("LLM money budget reached")),
                 qPrintable(summary.message));
        QVERIFY2(summary.message.contains(QLatin1String(" %)")), qPrintable(summary.message));
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        qint64 used = 0;
        for (const auto& c : *calls) {
            QVERIFY2(c.status != QLatin1String("in-flight"), qPrintable(c.message));
            used += c.inputTokens.value_or(0) + c.outputTokens.value_or(0);
        }
        const double money = spent(**st, summary.runId);
        qInfo() << calls->size() << "calls," << used << "tokens, $" << money << ":" << summary.message;
        if (tokens > 0) {
            QVERIFY2(used <= tokens, qPrintable(QString::number(used)));
            QVERIFY2(used >= tokens * 9 / 10, qPrintable(QString::number(used)));
        } else {
            QVERIFY2(money <= usd, qPrintable(QString::number(money)));
            QVERIFY2(money >= 0.9 * usd, qPrintable(QString::number(money)));
        }
    }

    // Answers that bill everything a request allows (Anthropic: max_tokens with the thinking
    // budget on top, and the system prompt written to the prompt cache at 1.25x the input price)
    // still never take the run past its money budget: the reservation covers them.
    void budgetHoldsWhenAnswersBillTheirWholeLimit() {
        kforgetest::ScriptedLlmServer server;
        QJsonArray rules = script().value(QStringLiteral("rules")).toArray();
        for (QJsonValueRef r : rules) {
            QJsonObject o = r.toObject();
            o[QStringLiteral("usage")] = QJsonObject{{QStringLiteral("input"), 2000},
                                                     {QStringLiteral("output"), QStringLiteral("max")},
                                                     {QStringLiteral("cache_write"), 1500}};
            r = o;
        }
        const int port = startServer(server, QStringLiteral("limit"), QJsonObject{{QStringLiteral("rules"), rules}});
        QVERIFY(port > 0);
        const QString db = m_dir.filePath(QStringLiteral("limit.kforge"));
        Engine::Setup s = setupFor(db, 1000);
        llm::Endpoint& endpoint = s.config.llm.endpoints[0];
        endpoint.api = llm::Api::Anthropic;
        endpoint.baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        s.config.llm.models[0].model = QStringLiteral("claude-sonnet-4-5"); // thinks, in the built-in table
        const double usd = 0.4;
        s.config.llm.budgetUsd = usd;
        Engine engine(s);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(QLatin1String("LLM money budget reached")), qPrintable(summary.message));
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        int billed = 0;
        for (const auto& c : *calls)
            if (c.status == QLatin1String("ok")) {
                ++billed;
                QVERIFY2(c.outputTokens.value_or(0) > s.config.llm.maxTokens, "the thinking budget is billed too");
                QCOMPARE(c.cacheWriteTokens.value_or(-1), qint64{1500});
            }
        QVERIFY(billed >= 2);
        const double money = spent(**st, summary.runId);
        qInfo() << billed << "calls billed, $" << money << ":" << summary.message;
        QVERIFY2(money <= usd, qPrintable(QString::number(money)));
    }

    // An endpoint the run calls without its key: the run does not start, and says which key is missing where.
    void missingKeyFailsTheStart() {
        qunsetenv("KFORGE_TEST_ABSENT_KEY");
        const QString db = m_dir.filePath(QStringLiteral("nokey.kforge"));
        const qsizetype before = requests(m_dir.filePath(QStringLiteral("requests.jsonl"))).size();
        Engine::Setup s = setupFor(db, 40);
        s.config.llm.endpoints[0].keyEnv = QStringLiteral("KFORGE_TEST_ABSENT_KEY");
        s.config.llm.endpoints[0].keyRequired = true;
        Engine engine(s);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Failed);
        QVERIFY2(summary.message.contains(QLatin1String("\"local\""))
                     && summary.message.contains(QLatin1String("KFORGE_TEST_ABSENT_KEY")),
                 qPrintable(summary.message));
        QCOMPARE(summary.generations, 0);
        QCOMPARE(requests(m_dir.filePath(QStringLiteral("requests.jsonl"))).size(), before);
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        QVERIFY(calls->isEmpty());
    }

    // HTTP 401: the endpoint is called once and never again, and the run's events say so once.
    void refusedKeyIsNotCalledAgain() {
        kforgetest::ScriptedLlmServer server;
        QJsonObject refuse{{QStringLiteral("status"), 401},
                           {QStringLiteral("error"),
                            QJsonObject{{QStringLiteral("type"), QStringLiteral("invalid_request_error")},
                                        {QStringLiteral("code"), QStringLiteral("invalid_api_key")},
                                        {QStringLiteral("message"), QStringLiteral("Incorrect API key provided")}}}};
        const int port =
            startServer(server, QStringLiteral("auth"), QJsonObject{{QStringLiteral("rules"), QJsonArray{refuse}}});
        QVERIFY(port > 0);
        const QString db = m_dir.filePath(QStringLiteral("auth.kforge"));
        Engine::Setup s = setupFor(db, 30);
        s.config.llm.endpoints[0].baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        s.config.llm.endpoints[0].maxConcurrent = 1;
        Engine engine(s);
        const auto summary = runToEnd(engine);
        qInfo() << runStateName(summary.state) << summary.message;
        QVERIFY(summary.generations >= 1);
        QCOMPARE(requests(m_dir.filePath(QStringLiteral("auth/requests.jsonl"))).size(), 1);
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        QCOMPARE(eventKinds(**st, summary.runId).count(QStringLiteral("llm_endpoint_retired")), 1);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        QVERIFY(!calls->isEmpty());
        QCOMPARE(calls->at(0).status, QStringLiteral("auth"));
        for (const auto& c : *calls) {
            QCOMPARE(c.status, QStringLiteral("auth"));
            QVERIFY(!c.costUsd || *c.costUsd == 0.0);
        }
    }

    // Calls in flight when a run is stopped (Ctrl-C) are stored, as cancelled.
    void callsInFlightAtStopAreStoredCancelled() {
        kforgetest::ScriptedLlmServer server;
        QJsonArray rules = script().value(QStringLiteral("rules")).toArray();
        // Children of evaluated kernels never get an answer.
        rules.insert(
            0, QJsonObject{{QStringLiteral("match"),
                            QStringLiteral("# The kernel to improve|# Two kernels to combine|# The kernel to repair")},
                           {QStringLiteral("mode"), QStringLiteral("hang")}});
        const int port = startServer(server, QStringLiteral("hang"), QJsonObject{{QStringLiteral("rules"), rules}});
        QVERIFY(port > 0);
        const QString db = m_dir.filePath(QStringLiteral("hang.kforge"));
        Engine::Setup s = setupFor(db, 400);
        s.config.llm.endpoints[0].baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        s.config.llm.metaInterval = 0;
        s.config.llm.budgetUsd = 0.0;
        Engine engine(s);
        QSignalSpy finished(&engine, &Engine::finished);
        QMetaObject::invokeMethod(&engine, &Engine::start, Qt::QueuedConnection);
        const QString log = m_dir.filePath(QStringLiteral("hang/requests.jsonl"));
        const auto hung = [&] {
            int n = 0;
            for (const auto& r : requests(log))
                n += r.value(QStringLiteral("rule")).toInt() == 0 ? 1 : 0;
            return n;
        };
        QTRY_VERIFY_WITH_TIMEOUT(hung() >= 2, 120000);
        EngineCommand stop;
        stop.kind = EngineCommand::Kind::Stop;
        engine.post(stop);
        QVERIFY(finished.wait(120000));
        const auto summary = finished.takeFirst().at(0).value<RunSummary>();
        QCOMPARE(summary.state, RunState::Stopped);
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        int cancelled = 0;
        for (const auto& c : *calls) {
            QVERIFY2(c.status != QLatin1String("in-flight"), qPrintable(c.prompt.left(200)));
            if (c.status == QLatin1String("cancelled")) {
                ++cancelled;
                QVERIFY(c.op != QLatin1String("init"));
                QVERIFY(!c.prompt.isEmpty());
                QVERIFY2(c.message.contains(QLatin1String("cancelled")), qPrintable(c.message));
            }
        }
        QVERIFY2(cancelled >= hung(), qPrintable(QString::number(cancelled)));
    }

    // A strategy rewrite in flight when the run ends on its budget is stored, as cancelled.
    void rewriteInFlightAtTheEndIsStoredCancelled() {
        kforgetest::ScriptedLlmServer server;
        QJsonArray rules = script().value(QStringLiteral("rules")).toArray();
        rules.insert(0, QJsonObject{{QStringLiteral("match"), QStringLiteral("The strategy to rewrite")},
                                    {QStringLiteral("mode"), QStringLiteral("hang")}});
        const int port = startServer(server, QStringLiteral("meta"), QJsonObject{{QStringLiteral("rules"), rules}});
        QVERIFY(port > 0);
        const QString db = m_dir.filePath(QStringLiteral("meta.kforge"));
        Engine::Setup s = setupFor(db, 120);
        s.config.llm.endpoints[0].baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        s.config.llm.endpoints[0].maxConcurrent = 4; // the rewrites hang without holding back the children
        s.config.llm.budgetUsd = 0.0;
        Engine engine(s);
        const auto summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY(requests(m_dir.filePath(QStringLiteral("meta/requests.jsonl"))).size() > 0);
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto calls = (*st)->llmCalls(summary.runId);
        QVERIFY(calls);
        int meta = 0;
        for (const auto& c : *calls) {
            QVERIFY(c.status != QLatin1String("in-flight"));
            if (c.op == QLatin1String("meta")) {
                ++meta;
                QCOMPARE(c.status, QStringLiteral("cancelled"));
            }
        }
        QVERIFY2(meta >= 1, "a strategy rewrite was sent and is in the record");
    }
};

QTEST_GUILESS_MAIN(TestLlmEngine)
#include "tst_llmengine.moc"
