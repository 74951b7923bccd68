// End to end on the OpenCL worker (PoCL on the CPU in CI): every built-in task's baseline must be
// correct, and every integrity test kernel must be caught with the status its first line names.

#include "openclworker.h"
#include "task/evalrequest.h"
#include "task/taskcatalog.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <functional>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using namespace kforge;

class TestOpenClEval : public QObject {
    Q_OBJECT
private:
    kforgetest::OpenClWorker m_worker;
    kforgetest::OpenClWorker m_tight; // started with KFORGE_WORKER_HOST_MEMORY=1K (setsMadeOneAtATime)

    protocol::EvaluateRequest request(const QString& taskName, const QString& kernelFile, bool timing,
                                      const std::function<void(task::EvalSettings&)>& adjust = {}) {
        auto bundle = task::TaskCatalog::load(taskName);
        if (!bundle)
            qFatal("%s", bundle.error().c_str());
        task::EvalSettings settings;
        settings.variant = QStringLiteral("small");
        settings.options.timing = timing;
        settings.options.minRepetitions = 2;
        settings.options.maxRepetitions = 4;
        settings.options.warmup = 1;
        if (adjust)
            adjust(settings);
        QString source;
        if (!kernelFile.isEmpty()) {
            QFile f(kernelFile);
            if (!f.open(QIODevice::ReadOnly))
                qFatal("cannot read %s", qPrintable(kernelFile));
            source = QString::fromUtf8(f.readAll());
        }
        auto made = task::makeEvalRequest(*bundle, settings, source, kernelFile);
        if (!made)
            qFatal("%s", made.error().c_str());
        return std::move(*made);
    }

    protocol::EvaluateResult evaluate(const QString& taskName, const QString& kernelFile, bool timing,
                                      const std::function<void(task::EvalSettings&)>& adjust = {},
                                      kforgetest::OpenClWorker* worker = nullptr) {
        QString problem;
        auto answer = (worker ? *worker : m_worker).evaluate(request(taskName, kernelFile, timing, adjust), problem);
        if (!answer)
            qFatal("%s: %s", qPrintable(kernelFile), qPrintable(problem));
        return std::move(*answer);
    }

private slots:
    void initTestCase() {
        // PoCL's buffers are host memory, so its backend reads them back rather than digesting them
        // on the device; these tests ask for the digests, the path every GPU takes (the tests with
        // sets made one at a time below take the read-back path).
        qputenv("KFORGE_DEVICE_DIGESTS", "1");
        if (const QString why = m_worker.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
    }

    void baselinesAreCorrect_data() {
        QTest::addColumn<QString>("task");
        const auto tasks = task::TaskCatalog::list();
        QVERIFY(tasks.size() >= 6);
        for (const auto& t : tasks) {
            auto bundle = task::TaskCatalog::load(t.dir);
            QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str());
            if (t.builtIn && bundle->referenceSource.count("opencl"))
                QTest::newRow(qPrintable(t.name)) << t.name;
        }
    }
    void baselinesAreCorrect() {
        QFETCH(QString, task);
        const auto r = evaluate(task, {}, true);
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        QVERIFY(r.candidateTiming.has_value());
        QVERIFY(r.candidateTiming->count >= 2);
        for (const auto& c : r.checks)
            QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
        for (const auto& o : r.outputs) {
            QCOMPARE(o.mismatches, 0u);
            QVERIFY(o.checked > 0);
        }
        // The task's stress sets were verified too, and are named in the result.
        auto bundle = task::TaskCatalog::load(task);
        QVERIFY(bundle.ok());
        QCOMPARE(r.stressSets.size(), bundle->spec.stress.size());
    }

    void integrityKernelsAreCaught_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("task");
        QTest::addColumn<QString>("status");
        const QDir dir(qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl"));
        // "expected status: A" or "expected status: A or B" (where compilers differ).
        static const QRegularExpression header(
            QStringLiteral("task ([a-z_0-9]+).*expected status: ([a-z_]+(?: or [a-z_]+)?)"));
        for (const QString& name : dir.entryList({QStringLiteral("*.cl")}, QDir::Files, QDir::Name)) {
            QFile f(dir.filePath(name));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const auto m = header.match(QString::fromUtf8(f.readLine()));
            QVERIFY2(m.hasMatch(),
                     qPrintable(name + QStringLiteral(": first line must name the task and the expected status")));
            QTest::newRow(qPrintable(name)) << dir.filePath(name) << m.captured(1) << m.captured(2);
        }
    }
    void integrityKernelsAreCaught() {
        QFETCH(QString, file);
        QFETCH(QString, task);
        QFETCH(QString, status);
        // Timing runs too: caching across calls is caught by the verified timed runs.
        const auto r = evaluate(task, file, true);
        const QString got = QString::fromStdString(std::string(protocol::statusName(r.status)));
        QStringList accepted = status.split(QStringLiteral(" or "));
        for (QString& s : accepted)
            if (s == QLatin1String("pass"))
                s = QStringLiteral("ok");
        const QString expected = accepted.join(QStringLiteral(" or "));
        QVERIFY2(accepted.contains(got), qPrintable(QStringLiteral("%1: expected %2, got %3: %4")
                                                        .arg(file, expected, got, QString::fromStdString(r.message))));
        QVERIFY(!r.message.empty());
        if (r.status != protocol::Status::Ok)
            QVERIFY2(!r.diagnostics.empty(), "a failure must come with diagnostics");
        if (r.status == protocol::Status::Ok) {
            QVERIFY(r.speedup.has_value()); // paired with the baseline in the same call
        } else {
            QVERIFY(!r.speedup.has_value());
        }
    }

    // A worker remembers the inputs and expected outputs of seeds a request gives (to reproduce an
    // evaluation): the second evaluation with them skips the reference, and still catches a wrong kernel.
    void seedCache() {
        const auto given = [](task::EvalSettings& s) { s.options.seeds = {1, 2, 3}; };
        const auto first = evaluate(QStringLiteral("row_sum"), {}, false, given);
        QVERIFY2(first.status == protocol::Status::Ok, first.message.c_str());
        const auto second = evaluate(QStringLiteral("row_sum"), {}, false, given);
        QVERIFY2(second.status == protocol::Status::Ok, second.message.c_str());
        for (const auto& c : second.compile)
            QVERIFY2(c.role != "reference", "the reference ran again although every seed was cached");
        const auto wrong = evaluate(
            QStringLiteral("row_sum"),
            qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/returns_constant.cl"), false, given);
        QCOMPARE(wrong.status, protocol::Status::Incorrect);
    }

    // Seeds nobody gave are drawn fresh for every evaluation, three for verification and one per
    // timed input set, never shared between the two; the result records them, and giving them back
    // repeats the evaluation exactly.
    void seedsAreDrawnFreshAndReproducible() {
        const auto a = evaluate(QStringLiteral("row_sum"), {}, true);
        const auto b = evaluate(QStringLiteral("row_sum"), {}, true);
        QVERIFY2(a.status == protocol::Status::Ok, a.message.c_str());
        QCOMPARE(a.seeds.size(), 3u);
        QCOMPARE(a.timingSeeds.size(), 2u);
        QVERIFY(a.seeds != b.seeds);
        QVERIFY(a.timingSeeds != b.timingSeeds);
        for (auto t : a.timingSeeds)
            QVERIFY(std::find(a.seeds.begin(), a.seeds.end(), t) == a.seeds.end());

        const QString wrongKernel =
            qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/returns_constant.cl");
        const auto wrong = evaluate(QStringLiteral("row_sum"), wrongKernel, false);
        QCOMPARE(wrong.status, protocol::Status::Incorrect);
        const auto again = evaluate(QStringLiteral("row_sum"), wrongKernel, false, [&](task::EvalSettings& s) {
            s.options.seeds = wrong.seeds;
            s.options.timingSeeds = wrong.timingSeeds;
        });
        QCOMPARE(again.seeds, wrong.seeds);
        QCOMPARE(again.outputs.at(0).firstMismatch, wrong.outputs.at(0).firstMismatch);
        QCOMPARE(again.outputs.at(0).firstExpected, wrong.outputs.at(0).firstExpected);
        QCOMPARE(again.message, wrong.message);

        // A timing seed that is also a verification seed would show the timed runs known inputs.
        const auto overlap = evaluate(QStringLiteral("row_sum"), {}, true, [](task::EvalSettings& s) {
            s.options.seeds = {5, 6};
            s.options.timingSeeds = {6};
        });
        QCOMPARE(overlap.status, protocol::Status::RuntimeError);
        QVERIFY2(overlap.message.find("also a verification seed") != std::string::npos, overlap.message.c_str());
    }

    // Kernels written here, for the messages: where a write outside a buffer landed, and which
    // launch of a plan changed an input that a later one restored.
    void integrityMessagesNameTheCulprit_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("message");
        const QString head = QStringLiteral("// kforge:param BLOCK = 64\n");
        QTest::newRow("one past the end")
            << head
                   + QStringLiteral("// kforge:launch vector_add grid=(cdiv(N, BLOCK) + 1) block=(BLOCK)\n"
                                    "__kernel void vector_add(__global const float* x, __global const float* y, "
                                    "__global float* z, int N) {\n"
                                    "    const int i = get_global_id(0);\n"
                                    "    if (i < N) z[i] = x[i] + y[i];\n"
                                    "    if (i == N) z[i] = 1.0f;\n"
                                    "}\n")
            << int(protocol::Status::Incorrect)
            << QStringLiteral("output 'z': the candidate wrote outside the buffer, after its end (the first at element "
                              "1000003 of a buffer of 1000003)");
        QTest::newRow("one before the start")
            << head
                   + QStringLiteral("// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"
                                    "__kernel void vector_add(__global const float* x, __global const float* y, "
                                    "__global float* z, int N) {\n"
                                    "    const int i = get_global_id(0);\n"
                                    "    if (i < N) z[i] = x[i] + y[i];\n"
                                    "    if (i == 0) z[i - 1] = 1.0f;\n"
                                    "}\n")
            << int(protocol::Status::Incorrect)
            << QStringLiteral("output 'z': the candidate wrote outside the buffer, before its start (the nearest at "
                              "element -1, byte -");
        QTest::newRow("input used as scratch, then restored")
            << head
                   + QStringLiteral("// kforge:launch borrow grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"
                                    "// kforge:launch finish grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"
                                    "__kernel void borrow(__global const float* x, __global const float* y, __global "
                                    "float* z, int N) {\n"
                                    "    const int i = get_global_id(0);\n"
                                    "    __global float* w = (__global float*)x;\n"
                                    "    if (i < N) { z[i] = x[i]; w[i] = x[i] + y[i]; }\n"
                                    "}\n"
                                    "__kernel void finish(__global const float* x, __global const float* y, __global "
                                    "float* z, int N) {\n"
                                    "    const int i = get_global_id(0);\n"
                                    "    __global float* w = (__global float*)x;\n"
                                    "    if (i < N) { const float s = x[i]; w[i] = z[i]; z[i] = s; }\n"
                                    "}\n")
            << int(protocol::Status::Rejected) << QStringLiteral("after launch 1 of 2 (borrow, line 2)");
    }
    void integrityMessagesNameTheCulprit() {
        QFETCH(QString, source);
        QFETCH(int, status);
        QFETCH(QString, message);
        QTemporaryDir dir;
        QFile f(dir.filePath(QStringLiteral("kernel.cl")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(source.toUtf8());
        f.close();
        const auto r = evaluate(QStringLiteral("vector_add"), f.fileName(), true);
        QVERIFY2(int(r.status) == status, r.message.c_str());
        QVERIFY2(r.message.find(message.toStdString()) != std::string::npos, r.message.c_str());
    }

    // References computed elsewhere (e.g. by PyTorch) arrive as data files; the worker must use them
    // instead of the reference kernel, and a wrong expected output must make a correct kernel fail.
    void referenceData() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString src = task::TaskCatalog::resolve(QStringLiteral("vector_add")).value();
        for (const QString& f : QDir(src).entryList(QDir::Files))
            QVERIFY(QFile::copy(src + QLatin1Char('/') + f, dir.filePath(f)));
        const int n = 1000;
        QFile json(dir.filePath(QStringLiteral("task.json")));
        QVERIFY(json.open(QIODevice::ReadOnly));
        auto task = nlohmann::json::parse(json.readAll().toStdString());
        json.close();
        task["variants"]["tiny"] = {{"N", n}};
        task["reference_data"] = nlohmann::json::array();
        for (int seed : {1, 2}) {
            // Values unlike anything the seeded generator makes, so the files are really used.
            std::vector<float> x(n), y(n), z(n);
            for (int i = 0; i < n; ++i) {
                x[i] = static_cast<float>(seed * 1000 + i);
                y[i] = 0.5f * static_cast<float>(i);
                z[i] = x[i] + y[i];
            }
            auto write = [&](const QString& name, const std::vector<float>& v) {
                QFile f(dir.filePath(name));
                QVERIFY(f.open(QIODevice::WriteOnly));
                f.write(reinterpret_cast<const char*>(v.data()), static_cast<qint64>(v.size() * sizeof(float)));
            };
            const auto file = [seed](const char* name) {
                return QStringLiteral("%1%2.bin").arg(QLatin1String(name)).arg(seed);
            };
            write(file("x"), x);
            write(file("y"), y);
            if (seed == 2)
                z[17] += 1.0f; // a wrong expectation
            write(file("z"), z);
            task["reference_data"].push_back(
                {{"variant", "tiny"},
                 {"seed", seed},
                 {"inputs", {{"x", file("x").toStdString()}, {"y", file("y").toStdString()}}},
                 {"outputs", {{"z", file("z").toStdString()}}}});
        }
        QVERIFY(json.open(QIODevice::WriteOnly | QIODevice::Truncate));
        json.write(QByteArray::fromStdString(task.dump(2)));
        json.close();

        auto run = [&](std::vector<std::uint64_t> seeds) {
            auto bundle = task::TaskCatalog::load(dir.path());
            [&] { QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str()); }();
            task::EvalSettings settings;
            settings.variant = QStringLiteral("tiny");
            settings.options.seeds = seeds;
            settings.options.timing = false;
            auto request = task::makeEvalRequest(*bundle, settings);
            QString problem;
            auto answer = m_worker.evaluate(std::move(*request), problem);
            if (!answer)
                qFatal("%s", qPrintable(problem));
            return std::move(*answer);
        };
        const auto good = run({1});
        QVERIFY2(good.status == protocol::Status::Ok, good.message.c_str());
        const auto bad = run({1, 2});
        QCOMPARE(bad.status, protocol::Status::Incorrect);
        QCOMPARE(bad.outputs.at(0).mismatches, 1u);
        QCOMPARE(bad.outputs.at(0).firstMismatch.value(), 17u);
        QCOMPARE(bad.outputs.at(0).firstSeed, 2u);
    }

    // A worker whose input sets do not all fit in the host memory it may use (1 KiB here, set
    // through KFORGE_WORKER_HOST_MEMORY: KernelBench's shapes reach gigabytes a tensor) makes each
    // set just before it is used and times on one set; it says so, and catches the same kernels.
    void setsMadeOneAtATime_data() {
        QTest::addColumn<QString>("task");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("status");
        const QString kernels = qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/");
        QTest::newRow("softmax baseline, stress sets")
            << QStringLiteral("softmax") << QString() << QStringLiteral("ok");
        QTest::newRow("returns_constant")
            << QStringLiteral("row_sum") << kernels + QStringLiteral("returns_constant.cl")
            << QStringLiteral("incorrect");
        QTest::newRow("writes_input") << QStringLiteral("vector_add") << kernels + QStringLiteral("writes_input.cl")
                                      << QStringLiteral("rejected");
        QTest::newRow("writes_nothing") << QStringLiteral("vector_add") << kernels + QStringLiteral("writes_nothing.cl")
                                        << QStringLiteral("incorrect");
        QTest::newRow("keeps_results") << QStringLiteral("vector_add") << kernels + QStringLiteral("keeps_results.cl")
                                       << QStringLiteral("incorrect compile_error");
        QTest::newRow("input_scratch_restored")
            << QStringLiteral("softmax") << kernels + QStringLiteral("input_scratch_restored_softmax.cl")
            << QStringLiteral("rejected");
    }
    // Workers on one device take turns at timing (harness/devicelock.h): while another process
    // holds the device to time on it, a worker runs nothing there and says how long it waited.
    void workersWaitWhileAnotherTimes() {
        QTemporaryDir locks;
        qputenv("KFORGE_LOCK_DIR", QFile::encodeName(locks.path()));
        struct Unset {
            ~Unset() { qunsetenv("KFORGE_LOCK_DIR"); }
        } unset;
        kforgetest::OpenClWorker worker;
        if (const QString why = worker.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const auto first = evaluate(QStringLiteral("vector_add"), {}, true, {}, &worker);
        QVERIFY2(first.status == protocol::Status::Ok, first.message.c_str());
        QVERIFY(first.phaseSeconds.count("verification/wait for device"));
        QVERIFY(first.phaseSeconds.count("timing/wait for device"));
        const QStringList files = QDir(locks.path()).entryList({QStringLiteral("kforge-device-*.lock")}, QDir::Files);
        QCOMPARE(files.size(), 1);
        const QString lockPath = locks.filePath(files.front());
        QString turnstilePath = lockPath;
        turnstilePath.replace(QStringLiteral(".lock"), QStringLiteral(".turnstile"));

        // Held as a timer holds it: the turnstile, then the lock itself.
        const int turnstile = ::open(QFile::encodeName(turnstilePath).constData(), O_RDONLY | O_CLOEXEC);
        const int lock = ::open(QFile::encodeName(lockPath).constData(), O_RDONLY | O_CLOEXEC);
        QVERIFY(turnstile >= 0 && lock >= 0);
        QCOMPARE(::flock(turnstile, LOCK_EX), 0);
        QCOMPARE(::flock(lock, LOCK_EX), 0);
        QSignalSpy spy(worker.pool(), &eval::WorkerPool::evaluated);
        worker.pool()->submit(request(QStringLiteral("vector_add"), {}, true), std::chrono::minutes(3));
        QVERIFY2(!spy.wait(1500), "the worker ran while the device was held");
        ::flock(lock, LOCK_UN);
        ::flock(turnstile, LOCK_UN);
        ::close(lock);
        ::close(turnstile);
        QVERIFY(spy.wait(120000));
        const auto r = spy.at(0).at(1).value<protocol::EvaluateResult>();
        QVERIFY2(r.status == protocol::Status::Ok, r.message.c_str());
        QVERIFY(r.phaseSeconds.count("verification/wait for device"));
        QVERIFY(r.phaseSeconds.at("verification/wait for device") >= 1.0); // it waited out the hold
    }

    void setsMadeOneAtATime() {
        QFETCH(QString, task);
        QFETCH(QString, file);
        QFETCH(QString, status);
        qputenv("KFORGE_WORKER_HOST_MEMORY", "1K");
        qputenv("KFORGE_DEVICE_DIGESTS", "0");
        struct Unset {
            ~Unset() {
                qunsetenv("KFORGE_WORKER_HOST_MEMORY");
                qputenv("KFORGE_DEVICE_DIGESTS", "1");
            }
        } unset;
        if (const QString why = m_tight.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const auto r = evaluate(task, file, true, {}, &m_tight);
        const QString got = QString::fromStdString(std::string(protocol::statusName(r.status)));
        QVERIFY2(status.split(u' ').contains(got),
                 qPrintable(got + QStringLiteral(": ") + QString::fromStdString(r.message)));
        bool said = false;
        for (const auto& d : r.diagnostics)
            said = said || d.message.find("made one at a time") != std::string::npos;
        if (r.status != protocol::Status::CompileError)
            QVERIFY2(said, "the result says why its sets were made one at a time");
        if (r.status != protocol::Status::Ok)
            return;
        for (const auto& c : r.checks)
            QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
        QCOMPARE(r.seeds.size(), 3u);
        QCOMPARE(r.timingSeeds.size(), 1u);
        auto bundle = task::TaskCatalog::load(task);
        QVERIFY(bundle.ok());
        QCOMPARE(r.stressSets.size(), bundle->spec.stress.size());
        QVERIFY(r.candidateTiming.has_value());
    }

    void cleanupTestCase() {
        m_worker.stop();
        m_tight.stop();
    }
};

QTEST_GUILESS_MAIN(TestOpenClEval)
#include "tst_opencleval.moc"
