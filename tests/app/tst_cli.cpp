// The kforge command line, run as a user would run it.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run kforge(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(qEnvironmentVariable("KFORGE_BIN"), args);
    if (!p.waitForFinished(240000))
        qFatal("kforge %s did not finish", qPrintable(args.join(QLatin1Char(' '))));
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(), p.readAllStandardError()};
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void version() {
        const Run r = kforge({QStringLiteral("--version")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.startsWith("kforge " KFORGE_VERSION));
    }

    void help() {
        const Run r = kforge({QStringLiteral("--help")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("eval"));
        QVERIFY(r.out.contains("doctor"));
        const Run e = kforge({QStringLiteral("eval"), QStringLiteral("--help")});
        QCOMPARE(e.exitCode, 0);
        QVERIFY(e.out.contains("--kernel"));
    }

    void unknownCommand() {
        const Run r = kforge({QStringLiteral("frobnicate")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("unknown command 'frobnicate'"));
    }

    void evalBaselineJson() {
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"), QStringLiteral("--variant"),
                              QStringLiteral("small"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.out.constData());
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(r.out, &error);
        QVERIFY2(error.error == QJsonParseError::NoError, "--json must print exactly one JSON object");
        const QJsonObject o = doc.object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("ok"));
        QVERIFY(o[QStringLiteral("timing")].toObject().contains(QStringLiteral("candidate")));
        QCOMPARE(o[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("mismatches")].toInt(), 0);
    }

    void evalIncorrectKernelExitsNonZero() {
        const QString kernel = qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/writes_nothing.cl");
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"), QStringLiteral("--variant"),
                              QStringLiteral("small"), QStringLiteral("--kernel"), kernel, QStringLiteral("--no-timing")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.out.contains("incorrect"));
        QVERIFY(r.out.contains("never written"));
    }

    void evalBadInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("no task") << QStringList{QStringLiteral("eval")} << 2 << "needs --task";
        QTest::newRow("unknown task") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("nosuchtask")} << 3
                                      << "no task named 'nosuchtask'";
        QTest::newRow("bad backend") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                                    QStringLiteral("--backend"), QStringLiteral("metal")}
                                     << 2 << "--backend must be opencl or cuda";
        QTest::newRow("missing kernel file") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                                            QStringLiteral("--kernel"), QStringLiteral("/nonexistent/k.cl")}
                                             << 3 << "/nonexistent/k.cl: cannot be read";
        QTest::newRow("unknown variant") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                                        QStringLiteral("--variant"), QStringLiteral("huge")}
                                         << 3 << "no variant 'huge'";
        QTest::newRow("bad seeds") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                                                  QStringLiteral("--seeds"), QStringLiteral("1,x")}
                                   << 2 << "'x' is not a non-negative integer";
    }
    void evalBadInput() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, mentions);
        const Run r = kforge(args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
    }

    void evalBrokenTaskNamesFileAndField() {
        QTemporaryDir dir;
        QFile f(dir.filePath(QStringLiteral("task.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"name": "broken", "family": "x", "sizes": {"N": -4}})");
        f.close();
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), dir.path()});
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains("task.json: sizes.N: must be a positive integer"), r.err.constData());
    }

    void evalCrashingWorkerIsReported() {
        // A worker that dies mid-request costs that evaluation only, with a clear message.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("KFORGE_WORKER_OPENCL"), qEnvironmentVariable("KFORGE_WORKER_DIR") + QStringLiteral("/kforge-worker-fake"));
        env.insert(QStringLiteral("KFORGE_FAKE_MODE"), QStringLiteral("crash"));
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--json")}, env);
        QCOMPARE(r.exitCode, 1);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("runtime_error"));
        QVERIFY(!o[QStringLiteral("message")].toString().isEmpty());
    }

    void evalCudaWithoutDriver() {
        if (QFile::exists(QStringLiteral("/proc/driver/nvidia/version")))
            QSKIP("an NVIDIA driver is present; this checks the behaviour without one");
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"), QStringLiteral("--backend"),
                              QStringLiteral("cuda"), QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--json")});
        if (r.exitCode == 3 && r.err.contains("kforge-worker-cuda"))
            QSKIP("this build has no CUDA worker");
        QCOMPARE(r.exitCode, 1);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("runtime_error"));
        QVERIFY2(o[QStringLiteral("message")].toString().contains(QStringLiteral("no NVIDIA driver")), r.out.constData());
    }

    void doctorWithoutGpu() {
        const Run r = kforge({QStringLiteral("doctor"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonObject backends = o[QStringLiteral("backends")].toObject();
        QVERIFY(backends.contains(QStringLiteral("opencl")));
        QVERIFY(backends.contains(QStringLiteral("cuda")));
        const QJsonObject cuda = backends[QStringLiteral("cuda")].toObject();
        if (!cuda[QStringLiteral("available")].toBool())
            QVERIFY2(!cuda[QStringLiteral("problems")].toArray().isEmpty(), "what is missing must be said");
        const Run text = kforge({QStringLiteral("doctor")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("OpenCL backend"));
        QVERIFY(text.out.contains("CUDA backend"));
    }

    void tasksList() {
        const Run r = kforge({QStringLiteral("tasks")});
        QCOMPARE(r.exitCode, 0);
        for (const char* name : {"vector_add", "softmax", "row_sum", "layernorm", "sgemm", "bias_gelu"})
            QVERIFY2(r.out.contains(name), name);
        QVERIFY(!r.out.contains("INVALID"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
