// `kforge run`, `runs` and `export` end to end on the real OpenCL worker (PoCL on the CPU in CI):
// a short offline search on softmax's small sizes, then the stored run read back, exported and the
// exported kernel evaluated again with `kforge eval`.

#include "headlessrun.h"

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

class TestRunCli : public QObject {
    Q_OBJECT
private slots:
    void runBadInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("no task") << QStringList{} << 2 << QStringLiteral("run needs --task");
        QTest::newRow("bad backend") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--backend"), QStringLiteral("metal")}
                                     << 2 << QStringLiteral("backend must be opencl or cuda");
        QTest::newRow("bad islands") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--islands"), QStringLiteral("zero")}
                                     << 2 << QStringLiteral("--islands must be an integer of at least 1");
        QTest::newRow("unknown task") << QStringList{QStringLiteral("--task"), QStringLiteral("no_such_task")} << 3
                                      << QStringLiteral("no task named 'no_such_task'");
        QTest::newRow("unknown variant") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--variant"), QStringLiteral("huge")}
                                         << 3 << QStringLiteral("no size variant 'huge'");
    }

    void runBadInput() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        QTemporaryDir dir;
        args << QStringLiteral("--db") << dir.filePath(QStringLiteral("runs.kforge")) << QStringLiteral("--no-experience");
        const Run r = kforge(QStringList{QStringLiteral("run")} + args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    }

    void runShowExportEval() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        const QString library = dir.filePath(QStringLiteral("experience.kforge-library"));
        const Run run = kforge({QStringLiteral("run"), QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--variant"),
                                QStringLiteral("small"), QStringLiteral("--islands"), QStringLiteral("2"), QStringLiteral("--children"),
                                QStringLiteral("2"), QStringLiteral("--budget-evals"), QStringLiteral("10"), QStringLiteral("--db"), db,
                                QStringLiteral("--experience"), library, QStringLiteral("--json")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(run.out).object();
        QCOMPARE(summary.value(QStringLiteral("state")).toString(), QStringLiteral("finished"));
        QVERIFY(summary.value(QStringLiteral("evaluations")).toInt() <= 10);
        QVERIFY(summary.value(QStringLiteral("evaluations")).toInt() >= 3);
        QVERIFY(summary.value(QStringLiteral("best_candidate")).toInt() > 0);
        QVERIFY(summary.value(QStringLiteral("best_speedup")).toDouble() > 0.0);
        QVERIFY(summary.contains(QStringLiteral("wall_seconds")));

        const Run list = kforge({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--db"), db});
        QCOMPARE(list.exitCode, 0);
        QVERIFY2(list.out.contains("softmax on opencl"), list.out.constData());

        const Run show = kforge({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db, QStringLiteral("--json")});
        QCOMPARE(show.exitCode, 0);
        const QJsonObject report = QJsonDocument::fromJson(show.out).object();
        QCOMPARE(report.value(QStringLiteral("best_candidate")).toInt(), summary.value(QStringLiteral("best_candidate")).toInt());
        QVERIFY(!report.value(QStringLiteral("best_candidates")).toArray().isEmpty());

        const QString out = dir.filePath(QStringLiteral("best"));
        const Run exported = kforge({QStringLiteral("export"), QStringLiteral("--best"), QStringLiteral("--db"), db, QStringLiteral("--out"), out});
        QVERIFY2(exported.exitCode == 0, exported.err.constData());
        for (const char* f : {"kernel.cl", "launch-plan.json", "result.json", "report.md"})
            QVERIFY2(QFile::exists(out + QLatin1Char('/') + QLatin1String(f)), f);
        QFile plan(out + QStringLiteral("/launch-plan.json"));
        QVERIFY(plan.open(QIODevice::ReadOnly));
        QVERIFY(!QJsonDocument::fromJson(plan.readAll()).object().value(QStringLiteral("launches")).toArray().isEmpty());

        // The exported kernel carries its tuned values as defaults, so it is correct on its own.
        const Run again = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--variant"),
                                  QStringLiteral("small"), QStringLiteral("--kernel"), out + QStringLiteral("/kernel.cl"), QStringLiteral("--no-timing")});
        QVERIFY2(again.exitCode == 0, again.out.constData());

        // Resuming a finished run with a larger budget continues it.
        const Run resumed = kforge({QStringLiteral("run"), QStringLiteral("--resume"), QStringLiteral("--budget-evals"), QStringLiteral("14"),
                                    QStringLiteral("--db"), db, QStringLiteral("--experience"), library, QStringLiteral("--json")});
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        const QJsonObject more = QJsonDocument::fromJson(resumed.out).object();
        QCOMPARE(more.value(QStringLiteral("run")).toInt(), 1);
        QVERIFY(more.value(QStringLiteral("evaluations")).toInt() > summary.value(QStringLiteral("evaluations")).toInt());
        QVERIFY(more.value(QStringLiteral("evaluations")).toInt() <= 14);

        // The review queue and the experience library the run filled.
        const Run reviews = kforge({QStringLiteral("review"), QStringLiteral("list"), QStringLiteral("--db"), db});
        QCOMPARE(reviews.exitCode, 0);
        const Run listed = kforge({QStringLiteral("experience"), QStringLiteral("list"), QStringLiteral("--library"), library,
                                   QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--limit"), QStringLiteral("100000"), QStringLiteral("--json")});
        QCOMPARE(listed.exitCode, 0);
        const int insights = static_cast<int>(QJsonDocument::fromJson(listed.out).array().size());
        const QString shared = dir.filePath(QStringLiteral("shared.json"));
        const Run exportedLibrary = kforge({QStringLiteral("experience"), QStringLiteral("export"), shared, QStringLiteral("--library"), library});
        QVERIFY2(exportedLibrary.exitCode == 0, exportedLibrary.err.constData());
        const Run imported = kforge({QStringLiteral("experience"), QStringLiteral("import"), shared, QStringLiteral("--library"),
                                     dir.filePath(QStringLiteral("other.kforge-library"))});
        QVERIFY2(imported.exitCode == 0, imported.err.constData());
        QVERIFY2(imported.out.contains(QByteArray("imported ") + QByteArray::number(insights)), imported.out.constData());
        const Run badReview = kforge({QStringLiteral("review"), QStringLiteral("accept"), QStringLiteral("999"), QStringLiteral("--db"), db});
        QCOMPARE(badReview.exitCode, 3);
        QVERIFY(badReview.err.contains("not in the review queue"));
    }

    void exportWithoutRunsFails() {
        QTemporaryDir dir;
        const Run r = kforge({QStringLiteral("export"), QStringLiteral("--best"), QStringLiteral("--db"), dir.filePath(QStringLiteral("none.kforge")),
                              QStringLiteral("--out"), dir.filePath(QStringLiteral("x"))});
        QCOMPARE(r.exitCode, 3);
        QVERIFY(r.err.contains("no such run store"));
    }
};

QTEST_GUILESS_MAIN(TestRunCli)
#include "tst_runcli.moc"
