// `kforge run`, `runs` and `export` end to end on the real OpenCL worker (PoCL on the CPU in CI):
// a short offline search on softmax's small sizes, then the stored run read back, exported and the
// exported kernel evaluated again with `kforge eval`. Then the same command line with the fake
// worker posing as the OpenCL one, crashing, hanging or babbling on a chosen evaluation.

#include "headlessrun.h"
#include "store/runstore.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

namespace {

using Run = kforgetest::HeadlessRun;

Run headless(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    return kforgetest::runHeadless(args, env);
}

// The fake worker as kforge's OpenCL worker; evaluation `at` (counted over every worker process
// of the run) misbehaves as `mode`.
QProcessEnvironment fakeOpenCl(const QTemporaryDir& dir, const QString& modeAt = {}) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("KFORGE_WORKER_OPENCL"),
               qEnvironmentVariable("KFORGE_WORKER_DIR") + QStringLiteral("/kforge-worker-fake"));
    env.insert(QStringLiteral("KFORGE_FAKE_BACKEND"), QStringLiteral("opencl"));
    env.insert(QStringLiteral("KFORGE_FAKE_COUNTER"), dir.filePath(QStringLiteral("evaluations")));
    if (!modeAt.isEmpty())
        env.insert(QStringLiteral("KFORGE_FAKE_MODE_AT"), modeAt);
    return env;
}

// A short search of the engine tests' fake_scale task: the baseline and its confirmation, then two
// children per generation.
QStringList fakeRun(const QString& db, int budget, QStringList more = {}) {
    return QStringList{QStringLiteral("run"),
                       QStringLiteral("--task"),
                       QStringLiteral(KFORGE_ENGINE_TEST_DATA "/tasks/fake_scale"),
                       QStringLiteral("--islands"),
                       QStringLiteral("1"),
                       QStringLiteral("--children"),
                       QStringLiteral("2"),
                       QStringLiteral("--budget-evals"),
                       QString::number(budget),
                       QStringLiteral("--no-experts"),
                       QStringLiteral("--no-experience"),
                       QStringLiteral("--db"),
                       db,
                       QStringLiteral("--json")}
           + more;
}

QList<kforge::store::EvaluationRecord> storedEvaluations(const QString& db) {
    auto store = kforge::store::RunStore::open(db, kforge::store::OpenMode::ReadOnly);
    if (!store)
        return {};
    auto evaluations = (*store)->evaluations(1);
    return evaluations ? *evaluations : QList<kforge::store::EvaluationRecord>{};
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
        QTest::newRow("bad backend") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"),
                                                    QStringLiteral("--backend"), QStringLiteral("metal")}
                                     << 2 << QStringLiteral("backend must be opencl or cuda");
        QTest::newRow("bad islands") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"),
                                                    QStringLiteral("--islands"), QStringLiteral("zero")}
                                     << 2 << QStringLiteral("--islands must be an integer of at least 1");
        QTest::newRow("too few PyTorch rounds") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"),
                                                               QStringLiteral("--pytorch-rounds"), QStringLiteral("5")}
                                                << 2 << QStringLiteral("--pytorch-rounds: 5 is not between 6 and 1000");
        QTest::newRow("PyTorch rounds not a number")
            << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--pytorch-rounds"),
                           QStringLiteral("many")}
            << 2 << QStringLiteral("--pytorch-rounds must be a whole number, not 'many'");
        QTest::newRow("too many PyTorch rounds")
            << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--pytorch-rounds"),
                           QStringLiteral("5000")}
            << 2 << QStringLiteral("--pytorch-rounds: 5000 is not between 6 and 1000");
        QTest::newRow("unknown task") << QStringList{QStringLiteral("--task"), QStringLiteral("no_such_task")} << 3
                                      << QStringLiteral("no task named 'no_such_task'");
        QTest::newRow("unknown variant") << QStringList{QStringLiteral("--task"), QStringLiteral("softmax"),
                                                        QStringLiteral("--variant"), QStringLiteral("huge")}
                                         << 3 << QStringLiteral("no size variant 'huge'");
    }

    void runBadInput() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        QTemporaryDir dir;
        args << QStringLiteral("--db") << dir.filePath(QStringLiteral("runs.kforge"))
             << QStringLiteral("--no-experience");
        const Run r = headless(QStringList{QStringLiteral("run")} + args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    }

    void runShowExportEval() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        const QString library = dir.filePath(QStringLiteral("experience.kforge-library"));
        const Run run = headless({QStringLiteral("run"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                  QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--islands"),
                                  QStringLiteral("2"), QStringLiteral("--children"), QStringLiteral("2"),
                                  QStringLiteral("--budget-evals"), QStringLiteral("10"), QStringLiteral("--db"), db,
                                  QStringLiteral("--experience"), library, QStringLiteral("--json")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(run.out).object();
        QCOMPARE(summary.value(QStringLiteral("state")).toString(), QStringLiteral("finished"));
        QVERIFY(summary.value(QStringLiteral("evaluations")).toInt() <= 10);
        QVERIFY(summary.value(QStringLiteral("evaluations")).toInt() >= 3);
        QVERIFY(summary.value(QStringLiteral("best_candidate")).toInt() > 0);
        QVERIFY(summary.value(QStringLiteral("best_speedup")).toDouble() > 0.0);
        QVERIFY(summary.contains(QStringLiteral("wall_seconds")));

        const Run list = headless({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--db"), db});
        QCOMPARE(list.exitCode, 0);
        QVERIFY2(list.out.contains("softmax on opencl"), list.out.constData());

        const Run show = headless({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                   QStringLiteral("--db"), db, QStringLiteral("--json")});
        QCOMPARE(show.exitCode, 0);
        const QJsonObject report = QJsonDocument::fromJson(show.out).object();
        QCOMPARE(report.value(QStringLiteral("best_candidate")).toInt(),
                 summary.value(QStringLiteral("best_candidate")).toInt());
        QVERIFY(!report.value(QStringLiteral("best_candidates")).toArray().isEmpty());

        const QString out = dir.filePath(QStringLiteral("best"));
        const Run exported = headless({QStringLiteral("export"), QStringLiteral("--best"), QStringLiteral("--db"), db,
                                       QStringLiteral("--out"), out});
        QVERIFY2(exported.exitCode == 0, exported.err.constData());
        for (const char* f : {"kernel.cl", "launch-plan.json", "result.json", "report.md"})
            QVERIFY2(QFile::exists(out + QLatin1Char('/') + QLatin1String(f)), f);
        QFile plan(out + QStringLiteral("/launch-plan.json"));
        QVERIFY(plan.open(QIODevice::ReadOnly));
        QVERIFY(
            !QJsonDocument::fromJson(plan.readAll()).object().value(QStringLiteral("launches")).toArray().isEmpty());

        // The exported kernel carries its tuned values as defaults, so it is correct on its own.
        const Run again = headless({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                    QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--kernel"),
                                    out + QStringLiteral("/kernel.cl"), QStringLiteral("--no-timing")});
        QVERIFY2(again.exitCode == 0, again.out.constData());

        // Resuming a finished run with a larger budget continues it.
        const Run resumed = headless({QStringLiteral("run"), QStringLiteral("--resume"),
                                      QStringLiteral("--budget-evals"), QStringLiteral("14"), QStringLiteral("--db"),
                                      db, QStringLiteral("--experience"), library, QStringLiteral("--json")});
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        const QJsonObject more = QJsonDocument::fromJson(resumed.out).object();
        QCOMPARE(more.value(QStringLiteral("run")).toInt(), 1);
        QVERIFY(more.value(QStringLiteral("evaluations")).toInt()
                > summary.value(QStringLiteral("evaluations")).toInt());
        QVERIFY(more.value(QStringLiteral("evaluations")).toInt() <= 14);

        // The review queue and the experience library the run filled.
        const Run reviews = headless({QStringLiteral("review"), QStringLiteral("list"), QStringLiteral("--db"), db});
        QCOMPARE(reviews.exitCode, 0);
        const Run listed = headless({QStringLiteral("experience"), QStringLiteral("list"), QStringLiteral("--library"),
                                     library, QStringLiteral("--task"), QStringLiteral("softmax"),
                                     QStringLiteral("--limit"), QStringLiteral("100000"), QStringLiteral("--json")});
        QCOMPARE(listed.exitCode, 0);
        const int insights = static_cast<int>(QJsonDocument::fromJson(listed.out).array().size());
        const QString shared = dir.filePath(QStringLiteral("shared.json"));
        const Run exportedLibrary = headless(
            {QStringLiteral("experience"), QStringLiteral("export"), shared, QStringLiteral("--library"), library});
        QVERIFY2(exportedLibrary.exitCode == 0, exportedLibrary.err.constData());
        const Run imported =
            headless({QStringLiteral("experience"), QStringLiteral("import"), shared, QStringLiteral("--library"),
                      dir.filePath(QStringLiteral("other.kforge-library"))});
        QVERIFY2(imported.exitCode == 0, imported.err.constData());
        QVERIFY2(imported.out.contains(QByteArray("imported ") + QByteArray::number(insights)),
                 imported.out.constData());
        const Run badReview = headless(
            {QStringLiteral("review"), QStringLiteral("accept"), QStringLiteral("999"), QStringLiteral("--db"), db});
        QCOMPARE(badReview.exitCode, 3);
        QVERIFY(badReview.err.contains("not in the review queue"));
    }

    void workerFailureCostsOneEvaluation_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("status");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("diagnostic");
        QTest::newRow("crash") << QStringLiteral("crash") << QStringLiteral("runtime_error")
                               << QStringLiteral("crashed with signal 6")
                               << QStringLiteral("fake: crashing on purpose");
        QTest::newRow("hang") << QStringLiteral("hang") << QStringLiteral("timeout")
                              << QStringLiteral("no answer within 2 s") << QStringLiteral("gave no answer to request");
        QTest::newRow("garbage") << QStringLiteral("garbage") << QStringLiteral("runtime_error")
                                 << QStringLiteral("broke the protocol")
                                 << QStringLiteral("The offending line: \"fake garbage: this line is not JSON xxx");
    }

    void workerFailureCostsOneEvaluation() {
        QFETCH(QString, mode);
        QFETCH(QString, status);
        QFETCH(QString, message);
        QFETCH(QString, diagnostic);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        // Evaluation 3 is the first child's, after the baseline and its confirmation.
        const Run run = headless(fakeRun(db, 8, {QStringLiteral("--timeout"), QStringLiteral("2")}),
                                 fakeOpenCl(dir, QStringLiteral("3:") + mode));
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(run.out).object();
        QCOMPARE(summary.value(QStringLiteral("state")).toString(), QStringLiteral("finished"));
        const auto evaluations = storedEvaluations(db);
        QCOMPARE(summary.value(QStringLiteral("evaluations")).toInt(), evaluations.size());
        QVERIFY(evaluations.size() >= 6); // the run went on after the lost one
        int lost = 0;
        for (const auto& e : evaluations) {
            const QString got = QString::fromStdString(std::string(kforge::protocol::statusName(e.result.status)));
            if (got == QLatin1String("ok"))
                continue;
            ++lost;
            QCOMPARE(got, status);
            QVERIFY2(QString::fromStdString(e.result.message).contains(message), e.result.message.c_str());
            QString diagnostics;
            for (const auto& d : e.result.diagnostics)
                diagnostics += QString::fromStdString(d.message) + QLatin1Char('\n');
            QVERIFY2(diagnostics.contains(diagnostic), qPrintable(diagnostics));
        }
        QCOMPARE(lost, 1);
    }

    void theEndSaysWhatWaitsForReview() {
        // A seed whose tuned form (B 2) is twice as fast, but only on inputs it has seen: the seed
        // is the user's own and is taken, the tuner's kernel waits for a person, and an offline
        // run's summary says so, with the way to look at it.
        QTemporaryDir dir;
        const QString seed = dir.filePath(QStringLiteral("seed.cl"));
        QVERIFY(kforgetest::writeFile(
            seed, "// fake:time_us=100/B\n// fake:fresh_inputs_speed=fail\n// kforge:param B in {1, 2} = 1\n"
                  "// kforge:launch scale grid=(cdiv(N, 64)) block=(64)\n"
                  "__kernel void scale(__global const float* x, __global float* y, int N)\n"
                  "{ const int i = get_global_id(0); if (i < N) y[i] = 2.0f * x[i]; }\n"));
        const QStringList seeded{QStringLiteral("--seed-kernel"), seed};
        const Run json = headless(fakeRun(dir.filePath(QStringLiteral("a.kforge")), 6, seeded), fakeOpenCl(dir));
        QVERIFY2(json.exitCode == 0, json.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(json.out).object();
        const QJsonArray pending = summary.value(QStringLiteral("awaiting_review")).toArray();
        QCOMPARE(pending.size(), 1);
        const QJsonObject waiting = pending.first().toObject();
        QVERIFY(waiting.value(QStringLiteral("candidate")).toInt()
                != summary.value(QStringLiteral("best_candidate")).toInt());
        QVERIFY(waiting.value(QStringLiteral("speedup")).toDouble()
                > summary.value(QStringLiteral("best_speedup")).toDouble());
        QVERIFY2(waiting.value(QStringLiteral("reason")).toString().contains(QStringLiteral("repeated inputs")),
                 json.out.constData());

        QStringList text = fakeRun(dir.filePath(QStringLiteral("b.kforge")), 6, seeded);
        text.removeAll(QStringLiteral("--json"));
        const Run printed = headless(text, fakeOpenCl(dir));
        QVERIFY2(printed.exitCode == 0, printed.err.constData());
        QVERIFY2(printed.out.contains("review: candidate ") && printed.out.contains("waits for a person")
                     && printed.out.contains("repeated inputs") && printed.out.contains("kforge review list --run 1"),
                 printed.out.constData());

        // A run with nothing waiting says nothing of reviews.
        const Run plain = headless(fakeRun(dir.filePath(QStringLiteral("c.kforge")), 6), fakeOpenCl(dir));
        QVERIFY2(plain.exitCode == 0, plain.err.constData());
        QVERIFY(
            QJsonDocument::fromJson(plain.out).object().value(QStringLiteral("awaiting_review")).toArray().isEmpty());
    }

    void workerThatCannotStartFailsTheRun() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        QProcessEnvironment env = fakeOpenCl(dir);
        env.insert(QStringLiteral("KFORGE_FAKE_BACKEND"), QStringLiteral("cuda"));
        const Run run = headless(fakeRun(db, 8), env);
        QCOMPARE(run.exitCode, 3);
        QVERIFY2(run.err.contains("the opencl worker cannot start") && run.err.contains("'cuda' backend"),
                 run.err.constData());
        QVERIFY(storedEvaluations(db).isEmpty()); // nothing counted that was never evaluated
    }

    void secondSessionOfARunIsRefused() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        QProcessEnvironment env = fakeOpenCl(dir);
        env.insert(QStringLiteral("KFORGE_FAKE_MODE"), QStringLiteral("slow")); // 500 ms an evaluation
        QProcess first;
        first.setProcessEnvironment(env);
        first.start(qEnvironmentVariable("KFORGE_HEADLESS_BIN"), fakeRun(db, 12));
        QVERIFY(first.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(storedEvaluations(db).size() >= 2, 60000);
        const Run second = headless({QStringLiteral("run"), QStringLiteral("--resume"), QStringLiteral("--db"), db,
                                     QStringLiteral("--no-experience")},
                                    env);
        QCOMPARE(second.exitCode, 3);
        QVERIFY2(second.err.contains("is in use by pid " + QByteArray::number(first.processId())),
                 second.err.constData());
        QVERIFY(first.waitForFinished(120000));
        QCOMPARE(first.exitCode(), 0);
        // Read-only views never need the lock, and the finished run resumes.
        const Run list = headless({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--db"), db});
        QCOMPARE(list.exitCode, 0);
        const Run resumed = headless({QStringLiteral("run"), QStringLiteral("--resume"),
                                      QStringLiteral("--budget-evals"), QStringLiteral("14"), QStringLiteral("--db"),
                                      db, QStringLiteral("--no-experience"), QStringLiteral("--json")},
                                     fakeOpenCl(dir));
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    }

    // `runs show` says how the tuner found its kernels; the run filled the tuning cache, which
    // `experience forget-tuning` clears and `--no-tuning-cache` leaves alone.
    void tunerStrategiesAndTheTuningCache() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        const QString library = dir.filePath(QStringLiteral("experience.kforge-library"));
        auto withLibrary = [&](const QString& store, QStringList more) {
            QStringList args = fakeRun(store, 16, more);
            args.removeAll(QStringLiteral("--no-experience"));
            return args << QStringLiteral("--experience") << library;
        };
        const Run run = headless(withLibrary(db, {}), fakeOpenCl(dir));
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const Run show =
            headless({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db});
        QCOMPARE(show.exitCode, 0);
        static const QRegularExpression origins(QStringLiteral(R"(origins: .*\d+ tuner \((\d+ \w+(, )?)+\))"));
        QVERIFY2(origins.match(QString::fromUtf8(show.out)).hasMatch(), show.out.constData());
        const Run json = headless({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                   QStringLiteral("--db"), db, QStringLiteral("--json")});
        for (const auto& best :
             QJsonDocument::fromJson(json.out).object().value(QStringLiteral("best_candidates")).toArray())
            if (best.toObject().value(QStringLiteral("origin")).toString() == QLatin1String("tuner"))
                QVERIFY(!best.toObject().value(QStringLiteral("tuner_strategy")).toString().isEmpty());

        const QStringList forget{QStringLiteral("experience"), QStringLiteral("forget-tuning"),
                                 QStringLiteral("--library"), library};
        const Run forgot = headless(forget);
        QCOMPARE(forgot.exitCode, 0);
        static const QRegularExpression some(QStringLiteral(R"(^forgot [1-9]\d* tuning measurements in )"));
        QVERIFY2(some.match(QString::fromUtf8(forgot.out)).hasMatch(), forgot.out.constData());

        const Run without =
            headless(withLibrary(dir.filePath(QStringLiteral("again.kforge")), {QStringLiteral("--no-tuning-cache")}),
                     fakeOpenCl(dir));
        QVERIFY2(without.exitCode == 0, without.err.constData());
        QVERIFY2(headless(forget).out.startsWith("forgot 0 tuning measurements"), "nothing was added");
    }

    void exportWithoutRunsFails() {
        QTemporaryDir dir;
        const Run r = headless({QStringLiteral("export"), QStringLiteral("--best"), QStringLiteral("--db"),
                                dir.filePath(QStringLiteral("none.kforge")), QStringLiteral("--out"),
                                dir.filePath(QStringLiteral("x"))});
        QCOMPARE(r.exitCode, 3);
        QVERIFY(r.err.contains("no such run store"));
    }
};

QTEST_GUILESS_MAIN(TestRunCli)
#include "tst_runcli.moc"
