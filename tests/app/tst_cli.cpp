// The kforge command line, run as a user would run it.

#include "headlessrun.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
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
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

// The environment in which kforge's OpenCL worker is the fake one, posing as it.
QProcessEnvironment fakeOpenCl(const QString& mode = QStringLiteral("ok")) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("KFORGE_WORKER_OPENCL"),
               qEnvironmentVariable("KFORGE_WORKER_DIR") + QStringLiteral("/kforge-worker-fake"));
    env.insert(QStringLiteral("KFORGE_FAKE_BACKEND"), QStringLiteral("opencl"));
    env.insert(QStringLiteral("KFORGE_FAKE_MODE"), mode);
    return env;
}

QStringList evalSoftmax(QStringList more = {}) {
    return QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax")} + more;
}

QList<quint64> seedsOf(const QJsonValue& value) {
    QList<quint64> seeds;
    for (const QJsonValue& v : value.toArray())
        seeds << static_cast<quint64>(v.toDouble());
    return seeds;
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
        QVERIFY(e.out.contains("--timing-seeds"));
        QVERIFY(e.out.contains("--no-stress"));
        QVERIFY(e.out.contains("3 the task, the kernel file or the worker cannot be used"));
    }

    void commandHelpNamesTheCommand() {
        // Each command's --help (or -h) says how to call that command, and its description fits a
        // terminal. No command offers Qt's --help-all: the window-system options it lists apply to
        // none of them.
        const QString program = QFileInfo(qEnvironmentVariable("KFORGE_BIN")).fileName();
        for (const char* command : {"eval", "import", "bench", "doctor", "tasks", "run", "runs", "export", "review",
                                    "experience", "llm", "render-views"}) {
            const Run r = kforge({QLatin1String(command), QStringLiteral("--help")});
            QCOMPARE(r.exitCode, 0);
            const QString text = QString::fromUtf8(r.out);
            QVERIFY2(text.startsWith(QStringLiteral("Usage: %1 %2 [options]").arg(program, QLatin1String(command))),
                     qPrintable(text.section(u'\n', 0, 0)));
            QVERIFY2(!text.contains(QStringLiteral("--help-all")), command);
            QCOMPARE(kforge({QLatin1String(command), QStringLiteral("-h")}).out, r.out);
            const Run all = kforge({QLatin1String(command), QStringLiteral("--help-all")});
            QCOMPARE(all.exitCode, 2);
            QVERIFY2(all.err.contains("Unknown option 'help-all' (see "), all.err.constData());
            const QString description = text.section(QStringLiteral("\nOptions:"), 0, 0);
            for (const QString& line : description.split(u'\n'))
                QVERIFY2(line.size() <= 110 || line.trimmed().startsWith(u'/'),
                         qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(command), line)));
        }
    }

    void demoHelpRunsNothing() {
        // `kforge demo --help` explains the demo; it neither opens a window nor starts a search.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
            env.remove(QLatin1String(name));
        const Run r = kforge({QStringLiteral("demo"), QStringLiteral("--help")}, env);
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("Usage: kforge demo\n"), r.out.constData());
        QVERIFY(r.out.contains("softmax"));
        QVERIFY(r.out.contains("tuning cache")); // what makes every demo a whole search
        QVERIFY2(!r.err.contains("running the demo search headless"), r.err.constData());
        QVERIFY(!r.out.contains("best:"));
    }

    void aBadOptionIsAUsageError() {
        // Exit code 1 means "the kernel is not correct" to scripts; a mistyped option is a usage error.
        const Run e = kforge(evalSoftmax({QStringLiteral("--no-such-option")}));
        QCOMPARE(e.exitCode, 2);
        QVERIFY2(e.err.contains("Unknown option 'no-such-option'"), e.err.constData());
        QVERIFY2(e.err.contains("kforge eval --help"), e.err.constData());
        const Run r = kforge({QStringLiteral("run"), QStringLiteral("--task")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("Missing value after '--task'"), r.err.constData());
    }

    void unknownCommand() {
        const Run r = kforge({QStringLiteral("frobnicate")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("unknown command 'frobnicate'"));
    }

    void evalBaselineJson() {
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                              QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.out.constData());
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(r.out, &error);
        QVERIFY2(error.error == QJsonParseError::NoError, "--json must print exactly one JSON object");
        const QJsonObject o = doc.object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("ok"));
        QVERIFY(o[QStringLiteral("timing")].toObject().contains(QStringLiteral("candidate")));
        QCOMPARE(o[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("mismatches")].toInt(), 0);
        // Each output's errors come with the tolerance they were judged by.
        const QJsonObject out = o[QStringLiteral("outputs")].toArray().at(0).toObject();
        QVERIFY(out.contains(QStringLiteral("atol")) && out.contains(QStringLiteral("rtol")));
        const Run text = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                                 QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--no-timing")});
        QVERIFY2(text.out.contains("(tolerance: atol "), text.out.constData());
    }

    void evalIncorrectKernelExitsNonZero() {
        const QString kernel =
            qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/writes_nothing.cl");
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                              QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--kernel"), kernel,
                              QStringLiteral("--no-timing")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.out.contains("incorrect"));
        QVERIFY(r.out.contains("never written"));
    }

    void evalBadInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("no task") << QStringList{QStringLiteral("eval")} << 2 << "needs --task";
        QTest::newRow("unknown task") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"),
                                                     QStringLiteral("nosuchtask")}
                                      << 3 << "no task named 'nosuchtask'";
        QTest::newRow("bad backend") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"),
                                                    QStringLiteral("softmax"), QStringLiteral("--backend"),
                                                    QStringLiteral("metal")}
                                     << 2 << "--backend must be opencl or cuda";
        QTest::newRow("missing kernel file")
            << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                           QStringLiteral("--kernel"), QStringLiteral("/nonexistent/k.cl")}
            << 3 << "/nonexistent/k.cl: cannot be read";
        QTest::newRow("unknown variant") << QStringList{
            QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"), QStringLiteral("--variant"),
            QStringLiteral("huge")} << 3 << "no variant 'huge'";
        QTest::newRow("bad seeds") << QStringList{QStringLiteral("eval"), QStringLiteral("--task"),
                                                  QStringLiteral("softmax"), QStringLiteral("--seeds"),
                                                  QStringLiteral("1,x")}
                                   << 2 << "'x' is not a non-negative integer";
        // Too few rounds give no 95% interval, so no verdict.
        QTest::newRow("too few PyTorch rounds")
            << QStringList{QStringLiteral("eval"),      QStringLiteral("--task"),           QStringLiteral("softmax"),
                           QStringLiteral("--pytorch"), QStringLiteral("--pytorch-rounds"), QStringLiteral("3")}
            << 2 << "--pytorch-rounds: 3 is not between 6 and 1000";
        QTest::newRow("PyTorch rounds without PyTorch")
            << QStringList{QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("softmax"),
                           QStringLiteral("--pytorch-rounds"), QStringLiteral("60")}
            << 2 << "--pytorch-rounds needs --pytorch";
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
        const Run r = kforge(evalSoftmax({QStringLiteral("--json")}), fakeOpenCl(QStringLiteral("crash")));
        QCOMPARE(r.exitCode, 1);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("runtime_error"));
        QVERIFY2(o[QStringLiteral("message")].toString().contains(QStringLiteral("crashed with signal 6")),
                 r.out.constData());
    }

    void evalHangingWorkerTimesOut() {
        const Run r =
            kforge(evalSoftmax({QStringLiteral("--timeout"), QStringLiteral("2")}), fakeOpenCl(QStringLiteral("hang")));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.out.contains("timeout") && r.out.contains("no answer within 2 s"), r.out.constData());
    }

    void evalGarbageFromTheWorkerNamesTheLine() {
        const Run r = kforge(evalSoftmax(), fakeOpenCl(QStringLiteral("garbage")));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.out.contains("broke the protocol"), r.out.constData());
        QVERIFY2(r.out.contains("\"fake garbage: this line is not JSON xxx"), r.out.constData());
    }

    void evalWorkerThatCannotStartExits3_data() {
        QTest::addColumn<QString>("variable");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("another backend's worker") << QStringLiteral("KFORGE_FAKE_BACKEND") << QStringLiteral("cuda")
                                                  << QStringLiteral("could not be started");
        QTest::newRow("no hello") << QStringLiteral("KFORGE_FAKE_MODE") << QStringLiteral("bad-hello")
                                  << QStringLiteral("protocol 999");
        QTest::newRow("not a program") << QStringLiteral("KFORGE_WORKER_OPENCL")
                                       << QStringLiteral("/nonexistent/kforge-worker-opencl")
                                       << QStringLiteral("not an executable file");
    }
    void evalWorkerThatCannotStartExits3() {
        QFETCH(QString, variable);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        QProcessEnvironment env = fakeOpenCl();
        env.insert(variable, value);
        const Run r = kforge(evalSoftmax({QStringLiteral("--json")}), env);
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QVERIFY2(r.out.isEmpty(), r.out.constData()); // no result: nothing was evaluated
    }

    void evalPrintsAndReproducesItsSeeds() {
        const Run drawn = kforge(evalSoftmax({QStringLiteral("--json")}), fakeOpenCl());
        QCOMPARE(drawn.exitCode, 0);
        const QJsonObject first = QJsonDocument::fromJson(drawn.out).object();
        const QList<quint64> seeds = seedsOf(first[QStringLiteral("seeds")]);
        QCOMPARE(seeds.size(), 3);
        QVERIFY(!seedsOf(first[QStringLiteral("timing_seeds")]).isEmpty());
        const Run other = kforge(evalSoftmax({QStringLiteral("--json")}), fakeOpenCl());
        QVERIFY(seedsOf(QJsonDocument::fromJson(other.out).object()[QStringLiteral("seeds")])
                != seeds); // drawn fresh each time

        const Run given =
            kforge(evalSoftmax({QStringLiteral("--seeds"), QStringLiteral("5,6"), QStringLiteral("--timing-seeds"),
                                QStringLiteral("9"), QStringLiteral("--json")}),
                   fakeOpenCl());
        QCOMPARE(given.exitCode, 0);
        const QJsonObject again = QJsonDocument::fromJson(given.out).object();
        QCOMPARE(seedsOf(again[QStringLiteral("seeds")]), (QList<quint64>{5, 6}));
        QCOMPARE(seedsOf(again[QStringLiteral("timing_seeds")]), QList<quint64>{9});
        QVERIFY(again.contains(QStringLiteral("stress_sets")));

        const Run text =
            kforge(evalSoftmax({QStringLiteral("--seeds"), QStringLiteral("5,6"), QStringLiteral("--no-stress")}),
                   fakeOpenCl());
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("--seeds 5,6 --timing-seeds "), text.out.constData());
        QVERIFY2(!text.out.contains("stress inputs"), text.out.constData());
        QVERIFY2(!QJsonDocument::fromJson(
                      kforge(evalSoftmax({QStringLiteral("--no-stress"), QStringLiteral("--json")}), fakeOpenCl()).out)
                      .object()
                      .contains(QStringLiteral("stress_sets")),
                 "--no-stress must leave the stress inputs out");
    }

    // --param runs the kernel with a declared parameter set to one of its choices (really: the
    // launch plan and the -D the worker compiles with follow it), and says which values it ran with.
    void evalWithParams() {
        QTemporaryDir dir;
        const QString kernel = dir.filePath(QStringLiteral("add.cl"));
        QVERIFY(kforgetest::writeFile(
            kernel, "// kforge:param BLOCK in {64, 128, 256} = 256\n"
                    "// kforge:param PER in {1, 2} = 1\n"
                    "// kforge:require BLOCK * PER <= 256\n"
                    "// kforge:launch vector_add grid=(cdiv(N, BLOCK * PER)) block=(BLOCK)\n"
                    "__kernel void vector_add(__global const float* x, __global const float* y, __global float* z,\n"
                    "                         int N) {\n"
                    "#if BLOCK * PER > 256\n"
                    "#error the requirement was not checked\n"
                    "#endif\n"
                    "    for (int k = 0; k < PER; ++k) {\n"
                    "        const int i = get_group_id(0) * BLOCK * PER + k * BLOCK + get_local_id(0);\n"
                    "        if (i < N) z[i] = x[i] + y[i];\n"
                    "    }\n"
                    "}\n"));
        const QStringList add{QStringLiteral("eval"),
                              QStringLiteral("--task"),
                              QStringLiteral("vector_add"),
                              QStringLiteral("--variant"),
                              QStringLiteral("small"),
                              QStringLiteral("--kernel"),
                              kernel,
                              QStringLiteral("--no-timing")};

        const Run text = kforge(add
                                + QStringList{QStringLiteral("--param"), QStringLiteral("BLOCK=64"),
                                              QStringLiteral("--param"), QStringLiteral("PER=2")});
        QVERIFY2(text.exitCode == 0, text.out + text.err);
        QVERIFY2(text.out.contains("params   BLOCK=64, PER=2 (BLOCK, PER set by --param"), text.out.constData());
        const Run defaults = kforge(add);
        QVERIFY2(defaults.out.contains("params   BLOCK=256, PER=1 (the file's defaults)"), defaults.out.constData());
        const Run json =
            kforge(add + QStringList{QStringLiteral("--param"), QStringLiteral("BLOCK=128"), QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        const QJsonObject params = QJsonDocument::fromJson(json.out).object()[QStringLiteral("params")].toObject();
        QCOMPARE(params[QStringLiteral("BLOCK")].toInt(), 128);
        QCOMPARE(params[QStringLiteral("PER")].toInt(), 1);

        // Wrong names, values and combinations are usage errors, said before any worker starts.
        const QList<std::pair<QStringList, QByteArray>> bad{
            {{QStringLiteral("BLOCK=96")},
             "--param: " + kernel.toUtf8()
                 + ": line 1: param BLOCK = 96 is not one of its declared choices {64, 128, 256}"},
            {{QStringLiteral("WIDTH=2")}, "parameter 'WIDTH' is not declared by the kernel (it declares BLOCK, PER;"},
            {{QStringLiteral("PER=2")}, "line 3: require 'BLOCK * PER <= 256' does not hold for BLOCK=256, PER=2"},
            {{QStringLiteral("BLOCK")}, "expected NAME=VALUE with an integer VALUE"},
            {{QStringLiteral("BLOCK=64"), QStringLiteral("BLOCK=128")}, "BLOCK is given twice"},
        };
        for (const auto& [values, mentions] : bad) {
            QStringList args = add;
            for (const QString& v : values)
                args << QStringLiteral("--param") << v;
            const Run r = kforge(args);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(mentions), r.err.constData());
            QVERIFY2(r.out.isEmpty(), r.out.constData());
        }
    }

    void evalCudaWithoutDriver() {
        if (QFile::exists(QStringLiteral("/proc/driver/nvidia/version")))
            QSKIP("an NVIDIA driver is present; this checks the behaviour without one");
        const Run r = kforge({QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                              QStringLiteral("--backend"), QStringLiteral("cuda"), QStringLiteral("--variant"),
                              QStringLiteral("small"), QStringLiteral("--json")});
        if (r.exitCode == 3 && r.err.contains("kforge-worker-cuda"))
            QSKIP("this build has no CUDA worker");
        QCOMPARE(r.exitCode, 1);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[QStringLiteral("status")].toString(), QStringLiteral("runtime_error"));
        QVERIFY2(o[QStringLiteral("message")].toString().contains(QStringLiteral("no NVIDIA driver")),
                 r.out.constData());
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
        // Where tasks and data come from, first the folder KFORGE_TASKS_DIR names.
        const QJsonObject data = o[QStringLiteral("data")].toObject();
        QCOMPARE(data[QStringLiteral("tasks")].toArray().first().toString(),
                 QDir::cleanPath(qEnvironmentVariable("KFORGE_TASKS_DIR")));
        QVERIFY(!data[QStringLiteral("resources")].toArray().isEmpty());
        const Run text = kforge({QStringLiteral("doctor")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("OpenCL backend"));
        QVERIFY(text.out.contains("CUDA backend"));
        QVERIFY(text.out.contains("  tasks: " + QDir::cleanPath(qEnvironmentVariable("KFORGE_TASKS_DIR")).toUtf8()));
    }

    void renderViewsWithoutADisplay() {
        // A short run on the fake worker, then its views drawn where there is no display: the
        // offscreen platform, every view a PNG, and none of the platform's warnings about window
        // calls it cannot honour (one per window call; nothing a user can act on).
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        const Run run =
            kforge({QStringLiteral("run"), QStringLiteral("--task"),
                    QStringLiteral(KFORGE_ENGINE_TEST_DATA "/tasks/fake_scale"), QStringLiteral("--islands"),
                    QStringLiteral("1"), QStringLiteral("--budget-evals"), QStringLiteral("6"),
                    QStringLiteral("--no-experts"), QStringLiteral("--no-experience"), QStringLiteral("--db"), db},
                   fakeOpenCl());
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        // A headless session (a container, ssh, CI) often has no XDG_RUNTIME_DIR either.
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_RUNTIME_DIR"})
            env.remove(QLatin1String(name));
        const QString out = dir.filePath(QStringLiteral("views"));
        const Run views = kforge({QStringLiteral("render-views"), db, QStringLiteral("--out"), out,
                                  QStringLiteral("--experience"), dir.filePath(QStringLiteral("none.kforge-library"))},
                                 env);
        QVERIFY2(views.exitCode == 0, views.err.constData());
        const QStringList pngs = QDir(out).entryList({QStringLiteral("*.png")}, QDir::Files);
        QVERIFY2(pngs.size() >= 10, qPrintable(pngs.join(u' ')));
        QVERIFY2(!views.err.contains("This plugin does not support"), views.err.constData());
        QVERIFY2(!views.err.contains("XDG_RUNTIME_DIR"), views.err.constData());
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
