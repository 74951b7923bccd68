// `kforge run --llm` end to end on the real OpenCL worker (PoCL on the CPU in CI): the fake LLM server
// answers with real vector_add kernels (and one broken one, and one answer without code), so the
// run evaluates what the "model" wrote, repairs what failed, stops on its money budget, and
// `kforge llm calls|show|strategies` read the calls back from the run store.

#include "headlessrun.h"
#include "scriptedllm.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {

using Run = kforgetest::HeadlessRun;

Run kforge(const QStringList& args) {
    return kforgetest::runHeadless(args);
}

} // namespace

class TestLlmCli : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    kforgetest::ScriptedLlmServer m_server;
    int m_port = 0;

private slots:
    void initTestCase() {
        m_port = m_server.start(QStringLiteral(KFORGE_FAKE_LLM_SERVER), m_dir.path());
        QVERIFY(m_port > 0);
    }

    void cleanupTestCase() { m_server.stop(); }

    void badLlmOptions_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no model") << QStringList{QStringLiteral("--llm-rate"), QStringLiteral("0.5")}
                                  << QStringLiteral("need at least one --llm");
        QTest::newRow("bad model") << QStringList{QStringLiteral("--llm"), QStringLiteral("gpt-4o")}
                                   << QStringLiteral("expected ENDPOINT:MODEL");
        QTest::newRow("unknown endpoint") << QStringList{QStringLiteral("--llm"), QStringLiteral("nowhere:m")}
                                          << QStringLiteral("no endpoint 'nowhere'");
        QTest::newRow("bad endpoint") << QStringList{
            QStringLiteral("--llm-endpoint"), QStringLiteral("x=http://h,api=grpc"), QStringLiteral("--llm"),
            QStringLiteral("x:m")} << QStringLiteral("--llm-endpoint");
        QTest::newRow("bad rate") << QStringList{QStringLiteral("--llm"), QStringLiteral("ollama:m"),
                                                 QStringLiteral("--llm-rate"), QStringLiteral("2")}
                                  << QStringLiteral("rate must be between 0 and 1");
        QTest::newRow("bad stage") << QStringList{QStringLiteral("--llm"), QStringLiteral("ollama:m"),
                                                  QStringLiteral("--llm-stages"), QStringLiteral("fast")}
                                   << QStringLiteral("must be structure or tuning");
    }

    void badLlmOptions() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = kforge(QStringList{QStringLiteral("run"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                                         QStringLiteral("--db"), m_dir.filePath(QStringLiteral("bad.kforge")),
                                         QStringLiteral("--no-experience")}
                             + args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    }

    // A model whose endpoint has no key: the run fails at its start, naming the endpoint and where
    // the key is looked for, and no call is made.
    void missingKeyFailsTheStart() {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("KFORGE_TEST_ABSENT_KEY"));
        const Run run = kforgetest::runHeadless(
            {QStringLiteral("run"), QStringLiteral("--task"), QStringLiteral("vector_add"), QStringLiteral("--variant"),
             QStringLiteral("small"), QStringLiteral("--no-experts"), QStringLiteral("--no-experience"),
             QStringLiteral("--llm-endpoint"),
             QStringLiteral("keyed=http://127.0.0.1:%1/v1,key-env=KFORGE_TEST_ABSENT_KEY,keyring=0").arg(m_port),
             QStringLiteral("--llm"), QStringLiteral("keyed:gpt-4.1-mini"), QStringLiteral("--db"),
             m_dir.filePath(QStringLiteral("nokey.kforge"))},
            env);
        QVERIFY2(run.exitCode != 0, run.out.constData());
        QVERIFY2(run.err.contains("\"keyed\"") && run.err.contains("KFORGE_TEST_ABSENT_KEY"), run.err.constData());
        QVERIFY2(!run.err.contains("refused"), run.err.constData());
    }

    void scriptedRunOnPocl() {
        const QString db = m_dir.filePath(QStringLiteral("llm.kforge"));
        const Run run = kforge({QStringLiteral("run"),
                                QStringLiteral("--task"),
                                QStringLiteral("vector_add"),
                                QStringLiteral("--variant"),
                                QStringLiteral("small"),
                                QStringLiteral("--islands"),
                                QStringLiteral("2"),
                                QStringLiteral("--children"),
                                QStringLiteral("2"),
                                QStringLiteral("--budget-evals"),
                                QStringLiteral("40"),
                                QStringLiteral("--no-experts"),
                                QStringLiteral("--llm-endpoint"),
                                QStringLiteral("local=http://127.0.0.1:%1/v1,retries=1").arg(m_port),
                                QStringLiteral("--llm"),
                                QStringLiteral("local:gpt-4.1-mini"),
                                QStringLiteral("--llm-rate"),
                                QStringLiteral("1"),
                                QStringLiteral("--llm-repair"),
                                QStringLiteral("0.5"),
                                QStringLiteral("--llm-max-tokens"),
                                QStringLiteral("1024"),
                                QStringLiteral("--llm-budget-usd"),
                                QStringLiteral("0.03"),
                                QStringLiteral("--db"),
                                db,
                                QStringLiteral("--experience"),
                                m_dir.filePath(QStringLiteral("experience")),
                                QStringLiteral("--json")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(run.out).object();
        QCOMPARE(summary.value(QStringLiteral("state")).toString(), QStringLiteral("finished"));
        QVERIFY2(
            summary.value(QStringLiteral("message")).toString().contains(QLatin1String("LLM money budget reached")),
            qPrintable(summary.value(QStringLiteral("message")).toString()));
        QVERIFY(summary.value(QStringLiteral("best_speedup")).toDouble() > 0.0);

        const Run calls = kforge(
            {QStringLiteral("llm"), QStringLiteral("calls"), QStringLiteral("--db"), db, QStringLiteral("--json")});
        QVERIFY2(calls.exitCode == 0, calls.err.constData());
        const QJsonArray list = QJsonDocument::fromJson(calls.out).array();
        QVERIFY(list.size() >= 4);
        QSet<QString> ops, statuses;
        double usd = 0.0;
        qint64 evaluatedChild = 0;
        for (const QJsonValue& v : list) {
            const QJsonObject c = v.toObject();
            ops << c.value(QStringLiteral("operator")).toString();
            statuses << c.value(QStringLiteral("status")).toString();
            usd += c.value(QStringLiteral("cost_usd")).toDouble();
            if (!c.value(QStringLiteral("candidate")).isNull())
                evaluatedChild = c.value(QStringLiteral("candidate")).toInteger();
        }
        // Which operators a short run draws depends on the order answers arrive in; tst_llmengine checks
        // each one. Here: the personas' first kernels and at least one child of an evaluated kernel.
        const QString seen = QStringList(ops.values()).join(QLatin1Char(','));
        QVERIFY2(ops.contains(QStringLiteral("init")), qPrintable(seen));
        QVERIFY2(ops.contains(QStringLiteral("mutate")) || ops.contains(QStringLiteral("crossover"))
                     || ops.contains(QStringLiteral("repair")),
                 qPrintable(seen));
        QVERIFY(usd <= 0.03);
        QVERIFY(evaluatedChild > 0);

        // The run's candidates from the answers were really evaluated on PoCL: some correct, the broken one not.
        const Run show = kforge({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("--db"), db,
                                 QStringLiteral("--json"), QStringLiteral("--top"), QStringLiteral("50")});
        QVERIFY2(show.exitCode == 0, show.err.constData());
        const QJsonObject report = QJsonDocument::fromJson(show.out).object();
        QVERIFY2(report.value(QStringLiteral("llm")).toObject().value(QStringLiteral("calls")).toInt() == list.size(),
                 show.out.left(2000).constData());
        const Run showText = kforge({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("--db"), db});
        QVERIFY2(showText.out.contains("LLM calls: "), showText.out.constData());

        const Run text = kforge({QStringLiteral("llm"), QStringLiteral("calls"), QStringLiteral("--db"), db});
        QVERIFY2(text.out.contains("known cost"), text.out.constData());
        const Run one =
            kforge({QStringLiteral("llm"), QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db});
        QVERIFY2(one.exitCode == 0, one.err.constData());
        QVERIFY(one.out.contains("--- prompt") && one.out.contains("vector_add"));
        const Run strategies =
            kforge({QStringLiteral("llm"), QStringLiteral("strategies"), QStringLiteral("--db"), db});
        QVERIFY2(strategies.out.contains("structure-fuse"), strategies.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestLlmCli)
#include "tst_llmcli.moc"
