// End to end on the OpenCL worker (PoCL on the CPU in CI): every built-in task's baseline must be
// correct, and every integrity test kernel must be caught with the status its first line names.

#include "evalrequest.h"
#include "taskcatalog.h"
#include "workerlocator.h"
#include "workerpool.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using namespace kforge;

class TestOpenClEval : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<eval::WorkerPool> m_pool;

    protocol::EvaluateResult evaluate(const QString& taskName, const QString& kernelFile, bool timing) {
        auto bundle = task::TaskCatalog::load(taskName);
        if (!bundle)
            qFatal("%s", bundle.error().c_str());
        task::EvalSettings settings;
        settings.variant = QStringLiteral("small");
        settings.options.timing = timing;
        settings.options.minRepetitions = 2;
        settings.options.maxRepetitions = 4;
        settings.options.warmup = 1;
        QString source;
        if (!kernelFile.isEmpty()) {
            QFile f(kernelFile);
            if (!f.open(QIODevice::ReadOnly))
                qFatal("cannot read %s", qPrintable(kernelFile));
            source = QString::fromUtf8(f.readAll());
        }
        auto request = task::makeEvalRequest(*bundle, settings, source, kernelFile);
        if (!request)
            qFatal("%s", request.error().c_str());
        QSignalSpy spy(m_pool.get(), &eval::WorkerPool::evaluated);
        const qint64 ticket = m_pool->submit(std::move(*request), std::chrono::minutes(3));
        if (!spy.wait(200000))
            qFatal("no result for %s", qPrintable(kernelFile));
        [&] { QCOMPARE(spy.at(0).at(0).toLongLong(), ticket); }();
        return spy.at(0).at(1).value<protocol::EvaluateResult>();
    }

private slots:
    void initTestCase() {
        auto worker = eval::WorkerLocator::find(QStringLiteral("opencl"));
        if (!worker)
            QSKIP(qPrintable(QStringLiteral("no OpenCL worker in this build: ") + QString::fromStdString(worker.error())));
        m_pool = std::make_unique<eval::WorkerPool>(QStringLiteral("opencl"), *worker);
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
    }

    void integrityKernelsAreCaught_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("task");
        QTest::addColumn<QString>("status");
        const QDir dir(qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl"));
        // "expected status: A" or "expected status: A or B" (where compilers differ).
        static const QRegularExpression header(QStringLiteral("task ([a-z_0-9]+).*expected status: ([a-z_]+(?: or [a-z_]+)?)"));
        for (const QString& name : dir.entryList({QStringLiteral("*.cl")}, QDir::Files, QDir::Name)) {
            QFile f(dir.filePath(name));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const auto m = header.match(QString::fromUtf8(f.readLine()));
            QVERIFY2(m.hasMatch(), qPrintable(name + QStringLiteral(": first line must name the task and the expected status")));
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
        QVERIFY2(accepted.contains(got), qPrintable(QStringLiteral("%1: expected %2, got %3: %4").arg(file, expected, got, QString::fromStdString(r.message))));
        QVERIFY(!r.message.empty());
        if (r.status != protocol::Status::Ok)
            QVERIFY2(!r.diagnostics.empty(), "a failure must come with diagnostics");
        if (r.status == protocol::Status::Ok) {
            QVERIFY(r.speedup.has_value()); // paired with the baseline in the same call
        } else {
            QVERIFY(!r.speedup.has_value());
        }
    }

    // A worker remembers each seed's inputs and expected outputs: the second evaluation of a task
    // skips the reference, and still catches a wrong kernel.
    void seedCache() {
        const auto first = evaluate(QStringLiteral("row_sum"), {}, false);
        QVERIFY2(first.status == protocol::Status::Ok, first.message.c_str());
        const auto second = evaluate(QStringLiteral("row_sum"), {}, false);
        QVERIFY2(second.status == protocol::Status::Ok, second.message.c_str());
        for (const auto& c : second.compile)
            QVERIFY2(c.role != "reference", "the reference ran again although every seed was cached");
        const auto wrong = evaluate(QStringLiteral("row_sum"),
                                    qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/opencl/returns_constant.cl"), false);
        QCOMPARE(wrong.status, protocol::Status::Incorrect);
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
            const QString s = QString::number(seed);
            write(QStringLiteral("x") + s + QStringLiteral(".bin"), x);
            write(QStringLiteral("y") + s + QStringLiteral(".bin"), y);
            if (seed == 2)
                z[17] += 1.0f; // a wrong expectation
            write(QStringLiteral("z") + s + QStringLiteral(".bin"), z);
            task["reference_data"].push_back({{"variant", "tiny"}, {"seed", seed},
                                              {"inputs", {{"x", "x" + s.toStdString() + ".bin"}, {"y", "y" + s.toStdString() + ".bin"}}},
                                              {"outputs", {{"z", "z" + s.toStdString() + ".bin"}}}});
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
            QSignalSpy spy(m_pool.get(), &eval::WorkerPool::evaluated);
            m_pool->submit(std::move(*request), std::chrono::minutes(2));
            [&] { QVERIFY(spy.wait(120000)); }();
            return spy.at(0).at(1).value<protocol::EvaluateResult>();
        };
        const auto good = run({1});
        QVERIFY2(good.status == protocol::Status::Ok, good.message.c_str());
        const auto bad = run({1, 2});
        QCOMPARE(bad.status, protocol::Status::Incorrect);
        QCOMPARE(bad.outputs.at(0).mismatches, 1u);
        QCOMPARE(bad.outputs.at(0).firstMismatch.value(), 17u);
        QCOMPARE(bad.outputs.at(0).firstSeed, 2u);
    }

    void cleanupTestCase() { m_pool.reset(); }
};

QTEST_GUILESS_MAIN(TestOpenClEval)
#include "tst_opencleval.moc"
