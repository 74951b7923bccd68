// The worker pool against kforge-worker-fake, a real process speaking the real protocol, in each
// of its failure modes; and the worker locator's search order and messages.

#include "eval/placement.h"
#include "eval/workerlocator.h"
#include "eval/workerpool.h"
#include "llm/endpoints.h"
#include "util/secretenvironment.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

using kforge::eval::WorkerLocation;
using kforge::eval::WorkerLocator;
using kforge::eval::WorkerPool;
using kforge::protocol::EvaluateRequest;
using kforge::protocol::EvaluateResult;
using kforge::protocol::ProbeResult;
using kforge::protocol::Status;
using namespace std::chrono_literals;

Q_DECLARE_METATYPE(kforge::protocol::Status)

namespace {

// Generous: a loaded CI machine may be slow to start processes. Never a timing assertion.
constexpr int kWaitMs = 30000;

QString fakeWorkerPath() {
    return QDir(qEnvironmentVariable("KFORGE_WORKER_DIR")).filePath(QStringLiteral("kforge-worker-fake"));
}

const kforge::spec::TaskSpec& testTask() {
    static const kforge::spec::TaskSpec task = [] {
        const auto json = nlohmann::json::parse(R"({
            "name": "vector_add", "family": "elementwise", "sizes": {"N": 1024},
            "inputs": [{"name": "x", "dtype": "float32", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}},
                       {"name": "y", "dtype": "float32", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
            "outputs": [{"name": "z", "dtype": "float32", "shape": ["N"], "atol": 1e-6, "rtol": 1e-6}],
            "flops": "N", "bytes": "3 * N * 4",
            "reference": {"opencl": "reference.cl"}, "baseline": {"opencl": "baseline.cl"}})");
        auto parsed = kforge::spec::TaskSpec::fromJson(json, "tst_workerpool");
        if (!parsed)
            qFatal("test task does not parse: %s", parsed.error().c_str());
        return *parsed;
    }();
    return task;
}

EvaluateRequest makeRequest(const QString& candidate, bool withBaseline = false) {
    EvaluateRequest r;
    r.task = testTask();
    r.reference = {"reference", "reference.cl", "// the reference", {}};
    r.candidate = {"candidate", "candidate.cl", candidate.toStdString(), {}};
    if (withBaseline)
        r.baseline = kforge::protocol::KernelInput{"baseline", "baseline.cl", "// the baseline", {}};
    return r;
}

std::optional<EvaluateResult> resultFor(const QSignalSpy& spy, qint64 ticket) {
    for (const auto& args : spy)
        if (args.at(0).toLongLong() == ticket)
            return args.at(1).value<EvaluateResult>();
    return std::nullopt;
}

int resultsFor(const QSignalSpy& spy, qint64 ticket) {
    return static_cast<int>(std::count_if(spy.begin(), spy.end(),
                                          [ticket](const auto& args) { return args.at(0).toLongLong() == ticket; }));
}

QString diagnosticsText(const EvaluateResult& r) {
    QStringList parts;
    for (const auto& d : r.diagnostics)
        parts << QString::fromStdString(d.kind + ": " + d.message);
    return parts.join(u'\n');
}

bool hasWorkerDiagnostic(const EvaluateResult& r, const QString& part) {
    return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [&](const auto& d) {
        return d.kind == "worker" && QString::fromStdString(d.message).contains(part);
    });
}

QString describe(const EvaluateResult& r) {
    return QStringLiteral("status %1, message '%2', diagnostics:\n%3")
        .arg(QString::fromStdString(std::string(kforge::protocol::statusName(r.status))),
             QString::fromStdString(r.message), diagnosticsText(r));
}

bool makeExecutable(const QString& path) {
    QFile file(path);
    if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !file.open(QIODevice::WriteOnly))
        return false;
    file.write("#!/bin/sh\nexit 0\n");
    file.close();
    return file.setPermissions(file.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
}

} // namespace

class TestWorkerPool : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();

    void evaluate_data();
    void evaluate();
    void timingsPassThrough();
    void exitAfterWithQueuedRequest();
    void startFailure_data();
    void startFailure();
    void startFailureIsAnnouncedBeforeResults();
    void fakePosesAsAnyBackend();
    void cancelQueued();
    void cancelRunning();
    void parallelWorkers();
    void exactlyOnePerSubmit();
    void probe();
    void secretVariables_data();
    void secretVariables();
    void workersInheritNoSecrets();
    void shutdownFailsPending();
    void shutDownFollowsOnceTheWorkersExited();
    void destructorStopsBusyWorker();
    void aLostSchedulerJobSaysWhy();
    void aJobOnItsWayOutIsAskedAgain();
    void anIdlePilotsEndIsLoggedWithItsReason();
    void aSilentSchedulerDelaysTheLossOnlyBriefly();
    void shutdownDeliversLossesTheSchedulerHasNotExplained();

    void locate_data();
    void locate();
    void locateMissing();
    void locateBrokenOverride();
    void locateAvailable();
    void locateFakeFromEnvironment();

private:
    QTemporaryDir m_tmp;
};

void TestWorkerPool::initTestCase() {
    QVERIFY2(
        QFileInfo(fakeWorkerPath()).isExecutable(),
        qPrintable(
            QStringLiteral("%1 is missing; run through ctest, which sets KFORGE_WORKER_DIR").arg(fakeWorkerPath())));
    QVERIFY(m_tmp.isValid());
}

void TestWorkerPool::evaluate_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<int>("timeoutMs");
    QTest::addColumn<Status>("status");
    QTest::addColumn<QString>("message");
    QTest::addColumn<QString>("workerDiagnostic"); // a "worker" diagnostic must contain it; "" for none

    QTest::newRow("ok") << "// fake:mode=ok" << kWaitMs << Status::Ok << "fake evaluation"
                        << "";
    QTest::newRow("slow") << "// fake:mode=slow\n// fake:sleep_ms=50" << kWaitMs << Status::Ok << "fake evaluation"
                          << "";
    QTest::newRow("incorrect") << "// fake:mode=incorrect" << kWaitMs << Status::Incorrect << "mismatches"
                               << "";
    QTest::newRow("compile-error") << "// fake:mode=compile-error" << kWaitMs << Status::CompileError
                                   << "does not compile"
                                   << "";
    QTest::newRow("crash") << "// fake:mode=crash" << kWaitMs << Status::RuntimeError << "crashed with signal 6"
                           << "crashing on purpose";
    QTest::newRow("hang") << "// fake:mode=hang" << 500 << Status::Timeout << "no answer within 500 ms"
                          << "gave no answer";
    QTest::newRow("garbage") << "// fake:mode=garbage" << kWaitMs << Status::RuntimeError << "broke the protocol"
                             << "\"fake garbage: this line is not JSON xxx";
    QTest::newRow("wrong-id") << "// fake:mode=wrong-id" << kWaitMs << Status::RuntimeError << "broke the protocol"
                              << "while request";
    QTest::newRow("long line") << "// fake:mode=long-line" << kWaitMs << Status::RuntimeError
                               << "more than 64 MiB without a newline"
                               << "\"fake long line: xxx";
    QTest::newRow("error response") << "// fake:mode=error" << kWaitMs << Status::RuntimeError
                                    << "fake: cannot read this request"
                                    << "";
    QTest::newRow("exit-after") << "// fake:mode=exit-after" << kWaitMs << Status::Ok << "fake evaluation"
                                << "";
}

void TestWorkerPool::evaluate() {
    QFETCH(QString, source);
    QFETCH(int, timeoutMs);
    QFETCH(Status, status);
    QFETCH(QString, message);
    QFETCH(QString, workerDiagnostic);

    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);

    const qint64 first = pool.submit(makeRequest(source), std::chrono::milliseconds(timeoutMs));
    QCOMPARE(spy.count(), 0); // never from inside submit()
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, first).has_value(), kWaitMs);
    const EvaluateResult result = *resultFor(spy, first);
    QVERIFY2(result.status == status, qPrintable(describe(result)));
    QCOMPARE(result.id, first);
    QVERIFY2(QString::fromStdString(result.message).contains(message), qPrintable(describe(result)));
    if (!workerDiagnostic.isEmpty())
        QVERIFY2(hasWorkerDiagnostic(result, workerDiagnostic), qPrintable(describe(result)));
    // Every result says where it ran, as the pool knows it, whether the worker answered or not.
    QCOMPARE(QString::fromStdString(result.host), QSysInfo::machineHostName());
    QCOMPARE(result.deviceIndex, 0);

    // Whatever happened to the worker, the pool goes on.
    const qint64 next = pool.submit(makeRequest(QStringLiteral("// plain")), std::chrono::milliseconds(kWaitMs));
    QVERIFY(next > first);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, next).has_value(), kWaitMs);
    const EvaluateResult nextResult = *resultFor(spy, next);
    QVERIFY2(nextResult.status == Status::Ok, qPrintable(describe(nextResult)));
    QCOMPARE(resultsFor(spy, first), 1);
    QCOMPARE(resultsFor(spy, next), 1);
}

void TestWorkerPool::timingsPassThrough() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    const qint64 ticket = pool.submit(makeRequest(QStringLiteral("// fake:time_us=50"), true), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, kWaitMs);
    const auto result = *resultFor(spy, ticket);
    QVERIFY2(result.status == Status::Ok, qPrintable(describe(result)));
    QVERIFY(result.candidateTiming && result.baselineTiming && result.speedup);
    QCOMPARE(result.candidateTiming->medianUs, 50.0);
    QCOMPARE(result.baselineTiming->medianUs, 200.0);
    QCOMPARE(*result.speedup, 4.0);
    QCOMPARE(result.outputs.size(), std::size_t(1));
}

void TestWorkerPool::exitAfterWithQueuedRequest() {
    // The second request may be written to the worker after its answer and before it exits; it
    // never reads it, and the pool must give it to the next worker instead of failing it.
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy started(&pool, &WorkerPool::evaluationStarted);
    const qint64 first =
        pool.submit(makeRequest(QStringLiteral("// fake:mode=exit-after\n// fake:exit_delay_ms=300")), 30s);
    const qint64 second = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs);
    QVERIFY2(resultFor(spy, first)->status == Status::Ok, qPrintable(describe(*resultFor(spy, first))));
    QVERIFY2(resultFor(spy, second)->status == Status::Ok, qPrintable(describe(*resultFor(spy, second))));
    QCOMPARE(resultsFor(spy, first), 1);
    QCOMPARE(resultsFor(spy, second), 1);
    QVERIFY(started.count() >= 2); // 3 when the second request had to move to a new worker
}

void TestWorkerPool::startFailure_data() {
    QTest::addColumn<QString>("program");
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("startTimeoutMs");
    QTest::addColumn<QString>("message");

    QTest::newRow("bad-hello") << fakeWorkerPath() << QStringList{QStringLiteral("--mode"), QStringLiteral("bad-hello")}
                               << kWaitMs << "protocol 999";
    QTest::newRow("no-hello") << fakeWorkerPath() << QStringList{QStringLiteral("--mode"), QStringLiteral("no-hello")}
                              << 300 << "no hello line within 300 ms";
    QTest::newRow("babble after hello") << fakeWorkerPath()
                                        << QStringList{QStringLiteral("--mode"), QStringLiteral("babble")} << kWaitMs
                                        << "broke the protocol before taking a request";
    QTest::newRow("rejects arguments") << fakeWorkerPath() << QStringList{QStringLiteral("--bogus")} << kWaitMs
                                       << "exited with code 2";
    QTest::newRow("missing program") << QDir(m_tmp.path()).filePath(QStringLiteral("kforge-worker-missing"))
                                     << QStringList{} << kWaitMs << "cannot run it";
    QTest::newRow("another backend's worker")
        << fakeWorkerPath() << QStringList{QStringLiteral("--backend"), QStringLiteral("cuda")} << kWaitMs
        << "a worker for the 'cuda' backend, not 'fake'";
}

void TestWorkerPool::startFailure() {
    QFETCH(QString, program);
    QFETCH(QStringList, arguments);
    QFETCH(int, startTimeoutMs);
    QFETCH(QString, message);

    WorkerPool pool(QStringLiteral("fake"), program, arguments);
    pool.setStartTimeout(std::chrono::milliseconds(startTimeoutMs));
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy gaveUp(&pool, &WorkerPool::workersFailedToStart);

    const qint64 a = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    const qint64 b = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs);
    for (qint64 ticket : {a, b}) {
        const auto result = *resultFor(spy, ticket);
        const QString text = QString::fromStdString(result.message);
        QVERIFY2(result.status == Status::RuntimeError, qPrintable(describe(result)));
        QVERIFY2(text.contains(message), qPrintable(text));
        QVERIFY2(text.contains(program), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("could not be started")), qPrintable(text));
    }
    QTRY_COMPARE_WITH_TIMEOUT(gaveUp.count(), 1, kWaitMs);

    // A later submit tries again, and fails again rather than hanging.
    const qint64 c = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, c).has_value(), kWaitMs);
    QVERIFY(resultFor(spy, c)->status == Status::RuntimeError);

    QSignalSpy probeFailed(&pool, &WorkerPool::probeFailed);
    pool.probe();
    QTRY_COMPARE_WITH_TIMEOUT(probeFailed.count(), 1, kWaitMs);
    QVERIFY2(probeFailed.at(0).at(0).toString().contains(message), qPrintable(probeFailed.at(0).at(0).toString()));
    QCOMPARE(spy.count(), 3);
}

void TestWorkerPool::startFailureIsAnnouncedBeforeResults() {
    // Receivers tell "no worker" (a set-up problem) from evaluations by what comes first.
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath(), {QStringLiteral("--mode"), QStringLiteral("bad-hello")});
    QStringList order;
    connect(&pool, &WorkerPool::workersFailedToStart, this, [&] { order << QStringLiteral("failed to start"); });
    connect(&pool, &WorkerPool::evaluated, this, [&] { order << QStringLiteral("evaluated"); });
    pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(order.size(), 3, kWaitMs);
    QCOMPARE(order, (QStringList{QStringLiteral("failed to start"), QStringLiteral("evaluated"),
                                 QStringLiteral("evaluated")}));
}

void TestWorkerPool::fakePosesAsAnyBackend() {
    // The fake stands in for a real backend's worker; the seeds it used come back as a real one's.
    WorkerPool pool(QStringLiteral("opencl"), fakeWorkerPath(),
                    {QStringLiteral("--backend"), QStringLiteral("opencl")});
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    EvaluateRequest request = makeRequest(QStringLiteral("// plain"));
    request.options.seeds = {5, 6};
    const qint64 given = pool.submit(request, 30s);
    const qint64 drawn = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs);
    QVERIFY2(resultFor(spy, given)->status == Status::Ok, qPrintable(describe(*resultFor(spy, given))));
    QCOMPARE(resultFor(spy, given)->seeds, (std::vector<std::uint64_t>{5, 6}));
    QCOMPARE(resultFor(spy, drawn)->seeds.size(), std::size_t{3});
}

void TestWorkerPool::cancelQueued() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    const qint64 running = pool.submit(makeRequest(QStringLiteral("// fake:mode=slow\n// fake:sleep_ms=200")), 30s);
    const qint64 queued = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    pool.cancel(queued);
    QCOMPARE(spy.count(), 0); // not from inside cancel() either
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs);
    const auto cancelled = *resultFor(spy, queued);
    QVERIFY(cancelled.status == Status::RuntimeError);
    QVERIFY2(QString::fromStdString(cancelled.message).startsWith(QStringLiteral("cancelled")),
             qPrintable(describe(cancelled)));
    QVERIFY2(resultFor(spy, running)->status == Status::Ok, qPrintable(describe(*resultFor(spy, running))));

    pool.cancel(queued); // already answered: nothing happens
    pool.cancel(12345);  // never submitted: nothing happens
    // One more request through the same pool: anything the cancels caused would come first.
    const qint64 after = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, after).has_value(), kWaitMs);
    QCOMPARE(spy.count(), 3);
}

void TestWorkerPool::cancelRunning() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy started(&pool, &WorkerPool::evaluationStarted);
    const qint64 ticket = pool.submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kWaitMs);
    QCOMPARE(started.at(0).at(0).toLongLong(), ticket);
    pool.cancel(ticket);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, kWaitMs);
    const auto result = *resultFor(spy, ticket);
    QVERIFY(result.status == Status::RuntimeError);
    QVERIFY2(QString::fromStdString(result.message).startsWith(QStringLiteral("cancelled")),
             qPrintable(describe(result)));

    const qint64 next = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, next).has_value(), kWaitMs);
    QVERIFY2(resultFor(spy, next)->status == Status::Ok, qPrintable(describe(*resultFor(spy, next))));
}

void TestWorkerPool::parallelWorkers() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath(), {}, 3);
    QCOMPARE(pool.capacity(), 3);
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy started(&pool, &WorkerPool::evaluationStarted);

    // Requests that never finish can only all be running at once if each has its own worker.
    QList<qint64> hanging;
    for (int i = 0; i < 3; ++i)
        hanging << pool.submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 3, kWaitMs);
    QCOMPARE(spy.count(), 0);
    for (qint64 ticket : hanging)
        pool.cancel(ticket);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 3, kWaitMs);

    QList<qint64> tickets;
    for (int i = 0; i < 6; ++i)
        tickets << pool.submit(makeRequest(QStringLiteral("// fake:mode=slow\n// fake:sleep_ms=100")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 9, kWaitMs);
    for (qint64 ticket : tickets)
        QVERIFY2(resultFor(spy, ticket)->status == Status::Ok, qPrintable(describe(*resultFor(spy, ticket))));
}

void TestWorkerPool::exactlyOnePerSubmit() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath(), {}, 2);
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    const QStringList modes{QStringLiteral("ok"),         QStringLiteral("crash"),
                            QStringLiteral("garbage"),    QStringLiteral("hang"),
                            QStringLiteral("wrong-id"),   QStringLiteral("error"),
                            QStringLiteral("exit-after"), QStringLiteral("slow"),
                            QStringLiteral("incorrect"),  QStringLiteral("compile-error"),
                            QStringLiteral("ok"),         QStringLiteral("ok")};
    QList<qint64> tickets;
    for (const QString& mode : modes)
        tickets << pool.submit(makeRequest(QStringLiteral("// fake:mode=%1\n// fake:sleep_ms=20").arg(mode)), 500ms);
    // Tickets are unique and increasing.
    QVERIFY(std::is_sorted(tickets.begin(), tickets.end()));
    QCOMPARE(std::set<qint64>(tickets.begin(), tickets.end()).size(), std::size_t(tickets.size()));
    pool.cancel(tickets.last());

    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), tickets.size(), kWaitMs);
    // A stray second answer would come through a worker before its answer to a later request:
    // one more for each worker, held long enough that both take one.
    const qint64 first = pool.submit(makeRequest(QStringLiteral("// plain\n// fake:sleep_ms=300")), 30s);
    const qint64 second = pool.submit(makeRequest(QStringLiteral("// plain\n// fake:sleep_ms=300")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, first).has_value() && resultFor(spy, second).has_value(), kWaitMs);
    QCOMPARE(spy.count(), tickets.size() + 2);
    for (qint64 ticket : tickets)
        QCOMPARE(resultsFor(spy, ticket), 1);
    QVERIFY(QString::fromStdString(resultFor(spy, tickets.last())->message).startsWith(QStringLiteral("cancelled")));
    QVERIFY(resultFor(spy, tickets.first())->status == Status::Ok);
}

void TestWorkerPool::probe() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy probed(&pool, &WorkerPool::probed);
    QSignalSpy failed(&pool, &WorkerPool::probeFailed);
    pool.probe();
    QTRY_COMPARE_WITH_TIMEOUT(probed.count(), 1, kWaitMs);
    QCOMPARE(failed.count(), 0);
    const auto result = probed.at(0).at(0).value<ProbeResult>();
    QVERIFY(result.available);
    QCOMPARE(result.backend, std::string("fake"));
    QCOMPARE(result.devices.size(), std::size_t(1));
    QCOMPARE(result.devices.front().name, std::string("Fake Device"));

    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    const qint64 ticket = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), kWaitMs);
    QVERIFY(resultFor(spy, ticket)->status == Status::Ok);
}

void TestWorkerPool::secretVariables_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("secret");
    QTest::newRow("openai") << "OPENAI_API_KEY" << true;
    QTest::newRow("anthropic") << "ANTHROPIC_API_KEY" << true;
    QTest::newRow("any _API_KEY") << "VLLM_API_KEY" << true;
    QTest::newRow("APIKEY") << "MISTRAL_APIKEY" << true;
    QTest::newRow("lower case") << "my_api_key" << true;
    QTest::newRow("token word") << "HF_TOKEN" << true;
    QTest::newRow("token inside") << "GITHUB_TOKEN_FOR_CI" << true;
    QTest::newRow("token ending") << "GHTOKEN" << true;
    QTest::newRow("secret") << "AWS_SECRET_ACCESS_KEY" << true;
    QTest::newRow("password") << "PGPASSWORD" << true;
    QTest::newRow("passwd") << "DB_PASSWD" << true;
    QTest::newRow("tokenizers") << "TOKENIZERS_PARALLELISM" << false;
    QTest::newRow("path") << "PATH" << false;
    QTest::newRow("kforge") << "KFORGE_WORKER_HOST_MEMORY" << false;
    QTest::newRow("cuda") << "CUDA_VISIBLE_DEVICES" << false;
    QTest::newRow("python") << "PYTHONPATH" << false;
    QTest::newRow("keyboard") << "KEYBOARD_LAYOUT" << false;
    QTest::newRow("empty") << "" << false;
}

void TestWorkerPool::secretVariables() {
    QFETCH(QString, name);
    QFETCH(bool, secret);
    QCOMPARE(kforge::util::isSecretVariable(name), secret);
}

void TestWorkerPool::workersInheritNoSecrets() {
    // An endpoint whose key variable follows no naming rule: loading it is what makes it secret.
    const QByteArray custom = "KFORGE_TEST_LLM_CREDENTIAL";
    QVERIFY(!kforge::util::isSecretVariable(QString::fromLatin1(custom)));
    auto endpoint = kforge::llm::parseEndpointSpec(
        QStringLiteral("mine=http://127.0.0.1:9/v1,key-env=%1").arg(QString::fromLatin1(custom)));
    QVERIFY2(endpoint.ok(), endpoint.ok() ? "" : endpoint.error().c_str());
    QVERIFY(kforge::util::isSecretVariable(QString::fromLatin1(custom)));

    const QList<QByteArray> secrets{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "KFORGE_TEST_DB_PASSWORD",
                                    custom};
    const QList<QByteArray> kept{"KFORGE_TEST_KEPT", "TOKENIZERS_PARALLELISM"};
    std::map<QByteArray, std::optional<QByteArray>> saved;
    for (const QByteArray& name : secrets + kept) {
        saved[name] =
            qEnvironmentVariableIsSet(name.constData()) ? std::optional(qgetenv(name.constData())) : std::nullopt;
        qputenv(name.constData(), "kforge-test-value");
    }
    const auto restore = qScopeGuard([&] {
        for (const auto& [name, value] : saved)
            value ? qputenv(name.constData(), *value) : qunsetenv(name.constData());
    });

    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    const qint64 ticket = pool.submit(makeRequest(QStringLiteral("// fake:report_env=1")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), kWaitMs);
    const EvaluateResult result = *resultFor(spy, ticket);
    QVERIFY2(result.status == Status::Ok, qPrintable(describe(result)));
    const auto report = std::find_if(result.diagnostics.begin(), result.diagnostics.end(),
                                     [](const auto& d) { return d.kind == "environment"; });
    QVERIFY2(report != result.diagnostics.end(), qPrintable(describe(result)));
    const QStringList seen = QString::fromStdString(report->message).split(QLatin1Char('\n'));
    for (const QByteArray& name : secrets)
        QVERIFY2(!seen.contains(QString::fromLatin1(name)), name.constData());
    for (const QByteArray& name : kept)
        QVERIFY2(seen.contains(QString::fromLatin1(name)), name.constData());
    QVERIFY(seen.contains(QStringLiteral("PATH")));
}

void TestWorkerPool::shutdownFailsPending() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy started(&pool, &WorkerPool::evaluationStarted);
    const qint64 running = pool.submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kWaitMs);
    const qint64 queued = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    pool.shutdown();
    const qint64 late = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 3, kWaitMs);
    for (qint64 ticket : {running, queued, late}) {
        const auto result = *resultFor(spy, ticket);
        QVERIFY(result.status == Status::RuntimeError);
        QVERIFY2(QString::fromStdString(result.message).contains(QStringLiteral("shut down")),
                 qPrintable(describe(result)));
    }
}

void TestWorkerPool::shutDownFollowsOnceTheWorkersExited() {
    WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath(), QStringList{}, 2);
    QSignalSpy spy(&pool, &WorkerPool::evaluated);
    QSignalSpy started(&pool, &WorkerPool::evaluationStarted);
    QSignalSpy shutDown(&pool, &WorkerPool::shutDown);
    pool.submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s); // killed: it does not listen
    const qint64 done = pool.submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, done).has_value(), kWaitMs); // the other worker is idle now
    QCOMPARE(started.count(), 2);
    pool.shutdown();
    QCOMPARE(shutDown.count(), 0); // never from inside shutdown()
    QVERIFY(shutDown.wait(kWaitMs));
    pool.shutdown(); // again: nothing more
    QCoreApplication::processEvents();
    QCOMPARE(shutDown.count(), 1);

    // A pool that never started a worker announces it as well.
    WorkerPool idle(QStringLiteral("fake"), fakeWorkerPath());
    QSignalSpy idleShutDown(&idle, &WorkerPool::shutDown);
    idle.shutdown();
    QVERIFY(idleShutDown.wait(kWaitMs));
}

void TestWorkerPool::destructorStopsBusyWorker() {
    auto pool = std::make_unique<WorkerPool>(QStringLiteral("fake"), fakeWorkerPath(), QStringList{}, 2);
    QSignalSpy started(pool.get(), &WorkerPool::evaluationStarted);
    pool->submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s);
    pool->submit(makeRequest(QStringLiteral("// fake:mode=hang")), 600s);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 2, kWaitMs);
    pool.reset(); // must return: the hanging workers are killed, not waited for
}

void TestWorkerPool::locate_data() {
    QTest::addColumn<QString>("placement"); // where the worker is and what points at it
    QTest::newRow("override variable") << "override";
    QTest::newRow("KFORGE_WORKER_DIR") << "workerDir";
    QTest::newRow("next to the application") << "appDir";
    QTest::newRow("libexec") << "libexec";
    QTest::newRow("lib") << "lib";
    QTest::newRow("override beats the directories") << "override+appDir";
}

void TestWorkerPool::locate() {
    QFETCH(QString, placement);
    QTemporaryDir root;
    QVERIFY(root.isValid());
    const QString appDir = root.filePath(QStringLiteral("bin"));
    QVERIFY(QDir().mkpath(appDir));
    QProcessEnvironment env;

    QString expected;
    if (placement.startsWith(QStringLiteral("override"))) {
        expected = root.filePath(QStringLiteral("elsewhere/my-worker"));
        env.insert(QStringLiteral("KFORGE_WORKER_DEMO"), expected);
    } else if (placement == QStringLiteral("workerDir")) {
        expected = root.filePath(QStringLiteral("workers/kforge-worker-demo"));
        env.insert(QStringLiteral("KFORGE_WORKER_DIR"), root.filePath(QStringLiteral("workers")));
    } else if (placement == QStringLiteral("appDir")) {
        expected = root.filePath(QStringLiteral("bin/kforge-worker-demo"));
    } else if (placement == QStringLiteral("libexec")) {
        expected = root.filePath(QStringLiteral("libexec/kforge/kforge-worker-demo"));
    } else if (placement == QStringLiteral("lib")) {
        expected = root.filePath(QStringLiteral("lib/kforge/kforge-worker-demo"));
    }
    QVERIFY(makeExecutable(expected));
    if (placement.endsWith(QStringLiteral("+appDir")))
        QVERIFY(makeExecutable(root.filePath(QStringLiteral("bin/kforge-worker-demo"))));

    const auto path = WorkerLocator(env, appDir).locate(QStringLiteral("demo"));
    QVERIFY2(path.ok(), path.ok() ? "" : path.error().c_str());
    QCOMPARE(*path, QFileInfo(expected).absoluteFilePath());
}

void TestWorkerPool::locateMissing() {
    QTemporaryDir root;
    QProcessEnvironment env;
    env.insert(QStringLiteral("KFORGE_WORKER_DIR"), root.filePath(QStringLiteral("workers")));
    const QString appDir = root.filePath(QStringLiteral("bin"));
    const WorkerLocator locator(env, appDir);
    const auto path = locator.locate(QStringLiteral("nope"));
    QVERIFY(!path.ok());
    const QString error = QString::fromStdString(path.error());
    for (const QString& part :
         {QStringLiteral("kforge-worker-nope"), QStringLiteral("KFORGE_WORKER_NOPE"),
          QStringLiteral("KFORGE_WORKER_DIR"), root.filePath(QStringLiteral("workers")), appDir,
          root.filePath(QStringLiteral("libexec/kforge")), root.filePath(QStringLiteral("lib/kforge"))})
        QVERIFY2(error.contains(part), qPrintable(QStringLiteral("'%1' not in:\n%2").arg(part, error)));
    QCOMPARE(locator.searchDirectories().size(), 4);
    QVERIFY(!locator.locate(QStringLiteral("../escape")).ok());
}

void TestWorkerPool::locateBrokenOverride() {
    // An override that names nothing runnable is an error, even when a worker exists elsewhere:
    // the user asked for that file.
    QTemporaryDir root;
    const QString appDir = root.filePath(QStringLiteral("bin"));
    QVERIFY(makeExecutable(root.filePath(QStringLiteral("bin/kforge-worker-demo"))));
    QProcessEnvironment env;
    env.insert(QStringLiteral("KFORGE_WORKER_DEMO"), root.filePath(QStringLiteral("nothing-here")));
    const auto path = WorkerLocator(env, appDir).locate(QStringLiteral("demo"));
    QVERIFY(!path.ok());
    const QString error = QString::fromStdString(path.error());
    QVERIFY2(error.contains(QStringLiteral("KFORGE_WORKER_DEMO")), qPrintable(error));
    QVERIFY2(error.contains(root.filePath(QStringLiteral("nothing-here"))), qPrintable(error));
}

void TestWorkerPool::locateAvailable() {
    QTemporaryDir root;
    const QString appDir = root.filePath(QStringLiteral("bin"));
    QVERIFY(makeExecutable(root.filePath(QStringLiteral("bin/kforge-worker-demo"))));
    QVERIFY(makeExecutable(root.filePath(QStringLiteral("lib/kforge/kforge-worker-demo"))));
    QVERIFY(makeExecutable(root.filePath(QStringLiteral("lib/kforge/kforge-worker-second"))));
    QVERIFY(makeExecutable(root.filePath(QStringLiteral("elsewhere/custom"))));
    QFile notExecutable(root.filePath(QStringLiteral("bin/kforge-worker-text")));
    QVERIFY(notExecutable.open(QIODevice::WriteOnly));
    notExecutable.close();

    QProcessEnvironment env;
    env.insert(QStringLiteral("KFORGE_WORKER_THIRD"), root.filePath(QStringLiteral("elsewhere/custom")));
    const QList<WorkerLocation> found = WorkerLocator(env, appDir).available();
    QStringList backends;
    for (const auto& location : found)
        backends << location.backend;
    QCOMPARE(backends, (QStringList{QStringLiteral("demo"), QStringLiteral("second"), QStringLiteral("third")}));
    QCOMPARE(found.at(0).path, root.filePath(QStringLiteral("bin/kforge-worker-demo"))); // the first directory wins
    QCOMPARE(found.at(2).path, root.filePath(QStringLiteral("elsewhere/custom")));
}

void TestWorkerPool::locateFakeFromEnvironment() {
    const auto path = WorkerLocator::find(QStringLiteral("fake"));
    QVERIFY2(path.ok(), path.ok() ? "" : path.error().c_str());
    QCOMPARE(*path, QFileInfo(fakeWorkerPath()).absoluteFilePath());
}

namespace {

// A pool whose worker says it runs as job 4242 of a scheduler, as a Slurm pilot does.
std::unique_ptr<WorkerPool> pilotPool() {
    auto pool = std::make_unique<WorkerPool>(QStringLiteral("fake"), fakeWorkerPath());
    pool->setPlacement(QStringLiteral("Slurm"), std::nullopt);
    pool->setHostsFromWorkers(true);
    pool->setExtraEnvironment({QStringLiteral("SLURM_JOB_ID=4242")});
    return pool;
}

} // namespace

void TestWorkerPool::aLostSchedulerJobSaysWhy() {
    // The pilot dies mid-evaluation without a word of why; the scheduler is asked about its job
    // (the id appended to the query), and its answer joins the failure.
    auto pool = pilotPool();
    pool->setJobStateQuery(
        QStringLiteral("/bin/sh"),
        {QStringLiteral("-c"), QStringLiteral("echo \"JobId=$0 JobName=kforge-x JobState=TIMEOUT Reason=TimeLimit "
                                              "Dependency=(null) RunTime=00:10:00 TimeLimit=00:10:00\"")},
        kforge::eval::describeSlurmJob);
    QSignalSpy spy(pool.get(), &WorkerPool::evaluated);
    const qint64 ticket = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), kWaitMs);
    const EvaluateResult lost = *resultFor(spy, ticket);
    QVERIFY2(lost.status == Status::RuntimeError, qPrintable(describe(lost)));
    const QString said = QStringLiteral("Slurm says job 4242 is TIMEOUT: it reached its time limit (--time=00:10:00)");
    QVERIFY2(QString::fromStdString(lost.message).contains(said), qPrintable(describe(lost)));
    QVERIFY2(QString::fromStdString(lost.message).contains(QStringLiteral("Slurm job 4242")),
             qPrintable(describe(lost)));
    QVERIFY2(lost.diagnostics.size() >= 3, qPrintable(describe(lost)));
    QVERIFY2(QString::fromStdString(lost.diagnostics.at(1).message).startsWith(said), qPrintable(describe(lost)));
    QVERIFY2(hasWorkerDiagnostic(lost, QStringLiteral("crashing on purpose")),
             qPrintable(describe(lost))); // stderr kept
    QCOMPARE(resultsFor(spy, ticket), 1);

    const qint64 next = pool->submit(makeRequest(QStringLiteral("// plain")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, next).has_value(), kWaitMs);
    QVERIFY2(resultFor(spy, next)->status == Status::Ok, qPrintable(describe(*resultFor(spy, next))));
}

void TestWorkerPool::aJobOnItsWayOutIsAskedAgain() {
    // Slurm shows a cancelled job as COMPLETING until its processes are gone: asked again, it says
    // CANCELLED, and that is what the failure says.
    QTemporaryDir dir;
    const QString asked = dir.filePath(QStringLiteral("asked"));
    auto pool = pilotPool();
    pool->setJobStateQuery(
        QStringLiteral("/bin/sh"),
        {QStringLiteral("-c"), QStringLiteral("if [ -e '%1' ]; then echo \"JobId=$0 JobState=CANCELLED Reason=None\"; "
                                              "else touch '%1'; echo \"JobId=$0 JobState=COMPLETING Reason=None\"; fi")
                                   .arg(asked)},
        kforge::eval::describeSlurmJob, 20s);
    QSignalSpy spy(pool.get(), &WorkerPool::evaluated);
    const qint64 ticket = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), kWaitMs);
    const EvaluateResult lost = *resultFor(spy, ticket);
    QVERIFY2(QString::fromStdString(lost.message).contains(QStringLiteral("Slurm says job 4242 is CANCELLED")),
             qPrintable(describe(lost)));
    QVERIFY2(!QString::fromStdString(lost.message).contains(QStringLiteral("COMPLETING")), qPrintable(describe(lost)));

    // A job that never gets there: after the wait, the last word heard.
    pool->setJobStateQuery(QStringLiteral("/bin/sh"),
                           {QStringLiteral("-c"), QStringLiteral("echo \"JobId=$0 JobState=COMPLETING Reason=None\"")},
                           kforge::eval::describeSlurmJob, 1s);
    const qint64 second = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, second).has_value(), kWaitMs);
    QVERIFY2(QString::fromStdString(resultFor(spy, second)->message)
                 .contains(QStringLiteral("Slurm says job 4242 is COMPLETING")),
             qPrintable(describe(*resultFor(spy, second))));
}

namespace {

QStringList g_logged;
QtMessageHandler g_previousHandler = nullptr;

void keepMessage(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    g_logged << message;
    g_previousHandler(type, context, message);
}

} // namespace

void TestWorkerPool::anIdlePilotsEndIsLoggedWithItsReason() {
    // A pilot that ends between evaluations (its time limit, say) costs nothing, but the log says
    // what Slurm says of it: a user sees why pilots keep being replaced.
    auto pool = pilotPool();
    pool->setJobStateQuery(QStringLiteral("/bin/sh"),
                           {QStringLiteral("-c"),
                            QStringLiteral("echo \"JobId=$0 JobState=TIMEOUT Reason=TimeLimit TimeLimit=00:30:00\"")},
                           kforge::eval::describeSlurmJob);
    g_logged.clear();
    g_previousHandler = qInstallMessageHandler(keepMessage);
    const auto restore = qScopeGuard([] { qInstallMessageHandler(g_previousHandler); });
    QSignalSpy spy(pool.get(), &WorkerPool::evaluated);
    const qint64 ticket = pool->submit(makeRequest(QStringLiteral("// fake:mode=exit-after")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), kWaitMs);
    QVERIFY2(resultFor(spy, ticket)->status == Status::Ok, qPrintable(describe(*resultFor(spy, ticket))));
    const auto saidWhy = [] {
        return std::any_of(g_logged.begin(), g_logged.end(), [](const QString& line) {
            return line.contains(QStringLiteral("Slurm job 4242")) && line.contains(QStringLiteral("while idle"))
                   && line.contains(QStringLiteral("(Slurm says job 4242 is TIMEOUT: it reached its time limit"));
        });
    };
    QTRY_VERIFY2_WITH_TIMEOUT(saidWhy(), qPrintable(g_logged.join(u'\n')), kWaitMs);
    QCOMPARE(resultsFor(spy, ticket), 1);
}

void TestWorkerPool::aSilentSchedulerDelaysTheLossOnlyBriefly() {
    // A query that never answers is given up after its wait: the loss goes out as it was.
    auto pool = pilotPool();
    pool->setJobStateQuery(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("exec sleep 30")},
                           kforge::eval::describeSlurmJob, 200ms);
    QSignalSpy spy(pool.get(), &WorkerPool::evaluated);
    const qint64 ticket = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, ticket).has_value(), 20000); // well before the sleep ends
    const EvaluateResult lost = *resultFor(spy, ticket);
    QVERIFY2(lost.status == Status::RuntimeError, qPrintable(describe(lost)));
    QVERIFY2(QString::fromStdString(lost.message).contains(QStringLiteral("crashed with signal")),
             qPrintable(describe(lost)));
    QVERIFY2(!QString::fromStdString(lost.message).contains(QStringLiteral("Slurm says")), qPrintable(describe(lost)));

    // A query that cannot start at all: the same.
    pool->setJobStateQuery(QStringLiteral("/nonexistent/scontrol"), {}, kforge::eval::describeSlurmJob);
    const qint64 second = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(resultFor(spy, second).has_value(), kWaitMs);
    QVERIFY2(resultFor(spy, second)->status == Status::RuntimeError, qPrintable(describe(*resultFor(spy, second))));
}

void TestWorkerPool::shutdownDeliversLossesTheSchedulerHasNotExplained() {
    QTemporaryDir dir;
    const QString asked = dir.filePath(QStringLiteral("asked"));
    auto pool = pilotPool();
    pool->setJobStateQuery(QStringLiteral("/bin/sh"),
                           {QStringLiteral("-c"), QStringLiteral("touch '%1'; exec sleep 30").arg(asked)},
                           kforge::eval::describeSlurmJob, 60s);
    QSignalSpy spy(pool.get(), &WorkerPool::evaluated);
    QSignalSpy down(pool.get(), &WorkerPool::shutDown);
    QElapsedTimer sinceSubmit;
    sinceSubmit.start();
    const qint64 ticket = pool->submit(makeRequest(QStringLiteral("// fake:mode=crash")), 30s);
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(asked), kWaitMs);
    const double untilAsked = static_cast<double>(sinceSubmit.elapsed()) / 1000.0;
    QTest::qWait(1000); // the scheduler keeps it waiting
    QCOMPARE(spy.count(), 0);
    pool->shutdown();
    QTRY_COMPARE_WITH_TIMEOUT(resultsFor(spy, ticket), 1, 20000);
    const EvaluateResult lost = *resultFor(spy, ticket);
    QVERIFY2(lost.status == Status::RuntimeError, qPrintable(describe(lost)));
    // The time it held a worker ended with the worker, before the scheduler was asked: the wait
    // for an answer is not the evaluation's.
    QVERIFY2(lost.wallSeconds <= untilAsked,
             qPrintable(QStringLiteral("%1 s held, asked after %2 s").arg(lost.wallSeconds).arg(untilAsked)));
    QTRY_COMPARE_WITH_TIMEOUT(down.count(), 1, kWaitMs);
}

QTEST_GUILESS_MAIN(TestWorkerPool)
#include "tst_workerpool.moc"
