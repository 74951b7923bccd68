// Workers on a Slurm cluster: the srun command line of a pilot, and a real single-node cluster
// (munged, slurmctld and slurmd that the test starts, tests/common/localslurm.h) whose pilots
// evaluate like local workers, are replaced when a job is cancelled, and are cancelled, pending
// ones too, when the executor shuts down. Then the OpenCL worker on PoCL through a pilot, and a
// whole `kforge run --executor slurm`.

#include "eval/placement.h"
#include "evaluateall.h"
#include "fakerequest.h"
#include "localslurm.h"
#include "task/evalrequest.h"
#include "task/taskcatalog.h"

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

#include <array>
#include <map>

using namespace kforge;
using kforge::protocol::EvaluateResult;
using kforge::protocol::Status;
using namespace std::chrono_literals;

namespace {

constexpr int kWaitMs = 120000; // generous for a loaded machine; never a timing assertion

QString workerPath(const QString& backend) {
    return QDir(qEnvironmentVariable("KFORGE_WORKER_DIR")).filePath(QStringLiteral("kforge-worker-") + backend);
}

std::string thisHost() {
    std::array<char, 256> name{};
    ::gethostname(name.data(), name.size() - 1);
    return name.data();
}

// Submits the requests and waits for every answer; the results by ticket, in the order submitted.
std::map<qint64, EvaluateResult> evaluateAll(eval::Executor& e, const std::vector<protocol::EvaluateRequest>& requests,
                                             std::chrono::milliseconds timeout = 60s) {
    return kforgetest::evaluateAll(e, requests, timeout, kWaitMs);
}

using kforgetest::fakeRequests;

std::unique_ptr<eval::Executor> slurmExecutor(const QString& backend, int pilots, const QString& slurmArgs = {}) {
    eval::Placement placement;
    placement.workers = pilots;
    placement.places = {QStringLiteral("slurm:") + workerPath(backend)};
    placement.slurmArgs = slurmArgs;
    auto executor = eval::makeExecutor(backend, placement, nullptr);
    if (!executor)
        qFatal("%s", executor.error().c_str());
    return std::unique_ptr<eval::Executor>(*executor);
}

bool noJobsLeft() {
    return kforgetest::LocalSlurm::jobs().isEmpty();
}

} // namespace

class TestSlurm : public QObject {
    Q_OBJECT
private:
    kforgetest::LocalSlurm m_slurm;
    QString m_noCluster; // why there is none; empty when it runs

    void needCluster() {
        if (!m_noCluster.isEmpty())
            QFAIL(qPrintable(QStringLiteral("no Slurm cluster: ") + m_noCluster));
    }

private slots:
    void initTestCase() {
        qRegisterMetaType<EvaluateResult>();
        QVERIFY2(QFileInfo(workerPath(QStringLiteral("fake"))).isExecutable(), "run through ctest");
        m_noCluster = m_slurm.start();
    }

    void places() {
        const auto plain = eval::parseWorkerPlace(QStringLiteral("slurm"));
        QVERIFY(plain && plain->kind == eval::WorkerPlace::Kind::Slurm && plain->path.isEmpty());
        QCOMPARE(plain->label(), QStringLiteral("Slurm"));
        const auto withPath = eval::parseWorkerPlace(QStringLiteral("slurm:/opt/kforge/bin/kforge-worker-cuda"));
        QVERIFY(withPath && withPath->path == QLatin1String("/opt/kforge/bin/kforge-worker-cuda"));
        for (const QString& bad : {QStringLiteral("slurm:relative/worker"), QStringLiteral("slurm:/opt/w;reboot"),
                                   QStringLiteral("slurm:")}) {
            const auto p = eval::parseWorkerPlace(bad);
            QVERIFY2(!p, qPrintable(bad));
            QVERIFY2(QString::fromStdString(p.error()).contains(bad), p.error().c_str());
        }
    }

    void whatSlurmSaysOfAJob() {
        // scontrol --oneliner show job <id>: the state in Slurm's word, what the usual ends of a
        // pilot mean, the reason where there is one; whether the job has ended; nothing from an
        // answer that names no state.
        const auto line = [](const char* state, const char* reason) {
            return QByteArray("JobId=17 JobName=kforge-0123 UserId=me(1000) GroupId=me(1000) Priority=1 JobState=")
                   + state + " Reason=" + reason
                   + " Dependency=(null) ExitCode=0:15 RunTime=00:00:03 TimeLimit=01:00:00 NodeList=node3\n";
        };
        auto cancelled = eval::describeSlurmJob(line("CANCELLED", "None"));
        QCOMPARE(cancelled.said, QStringLiteral("Slurm says job 17 is CANCELLED: it was cancelled (scancel, by its "
                                                "owner or an administrator)"));
        QVERIFY(cancelled.ended);
        QCOMPARE(eval::describeSlurmJob(line("TIMEOUT", "TimeLimit")).said,
                 QStringLiteral("Slurm says job 17 is TIMEOUT: it reached its time limit (--time=01:00:00) "
                                "(reason: TimeLimit)"));
        for (const char* state : {"PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}) {
            const auto said = eval::describeSlurmJob(line(state, "None"));
            QVERIFY2(said.said.startsWith(QStringLiteral("Slurm says job 17 is %1: ").arg(QLatin1String(state))),
                     qPrintable(said.said));
            QVERIFY(said.ended);
        }
        const auto failed = eval::describeSlurmJob(line("FAILED", "NonZeroExitCode"));
        QCOMPARE(failed.said, QStringLiteral("Slurm says job 17 is FAILED (reason: NonZeroExitCode)"));
        QVERIFY(failed.ended);
        // On the way to its end: worth saying if nothing better comes, but worth asking again.
        for (const char* state : {"COMPLETING", "RUNNING", "PENDING"}) {
            const auto said = eval::describeSlurmJob(line(state, "None"));
            QCOMPARE(said.said, QStringLiteral("Slurm says job 17 is %1").arg(QLatin1String(state)));
            QVERIFY(!said.ended);
        }
        QVERIFY(eval::describeSlurmJob("slurm_load_jobs error: Invalid job id specified\n").said.isEmpty());
        QVERIFY(eval::describeSlurmJob({}).said.isEmpty());
        QVERIFY(eval::describeSlurmJob("JobId=17 XJobState=RUNNING").said.isEmpty()); // whole names only
    }

    void srunCommandLine() {
        const auto place = eval::parseWorkerPlace(QStringLiteral("slurm"));
        const QString program = QStringLiteral("/opt/kforge/kforge-worker-cuda");
        auto cuda = eval::srunArguments(*place, QStringLiteral("cuda"), program, QStringLiteral("kforge-x"),
                                        QStringLiteral("--partition=gpu --time=4:00:00"));
        QVERIFY2(cuda, cuda ? "" : cuda.error().c_str());
        // One task on one node, named for scancel, a GPU each, the user's options, the worker last.
        for (const char* arg : {"--job-name=kforge-x", "--ntasks=1", "--nodes=1", "--unbuffered", "--gres=gpu:1",
                                "--partition=gpu", "--time=4:00:00"})
            QVERIFY2(cuda->contains(QLatin1String(arg)), arg);
        QCOMPARE(cuda->mid(cuda->size() - 2), (QStringList{QStringLiteral("--"), program}));
        // Options that ask for GPUs themselves replace the default; OpenCL asks for none.
        auto own = eval::srunArguments(*place, QStringLiteral("cuda"), program, QStringLiteral("k"),
                                       QStringLiteral("--gpus-per-task=h100:1"));
        QVERIFY(own && !own->contains(QStringLiteral("--gres=gpu:1")));
        auto opencl = eval::srunArguments(*place, QStringLiteral("opencl"), program, QStringLiteral("k"), {});
        QVERIFY(opencl && !opencl->join(u' ').contains(QStringLiteral("gpu")));
        // What would take the protocol's stdio or the task count is refused, naming the option.
        for (const QString& taken : {QStringLiteral("--pty"), QStringLiteral("--output=log.txt"), QStringLiteral("-n4"),
                                     QStringLiteral("-i /dev/null"), QStringLiteral("--nodes=2")}) {
            auto refused = eval::srunArguments(*place, QStringLiteral("cuda"), program, QStringLiteral("k"), taken);
            QVERIFY2(!refused, qPrintable(taken));
            QVERIFY2(QString::fromStdString(refused.error()).contains(taken.section(u' ', 0, 0)),
                     refused.error().c_str());
        }
    }

    void pilotsEvaluate() {
        // Pilots started with srun evaluate like local workers; each result names the node's host.
        needCluster();
        auto executor = slurmExecutor(QStringLiteral("fake"), 3);
        QCOMPARE(executor->capacity(), 3);
        const auto results = evaluateAll(*executor, fakeRequests(9, QStringLiteral("// fake:sleep_ms=100")));
        QCOMPARE(results.size(), std::size_t{9});
        for (const auto& [ticket, r] : results) {
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
            QCOMPARE(r.host, thisHost());
        }
        // They run as jobs of one name, the run's.
        const QStringList jobs = kforgetest::LocalSlurm::jobs();
        QVERIFY2(!jobs.isEmpty() && jobs.size() <= 3, qPrintable(jobs.join(u'\n')));
        for (const QString& job : jobs)
            QCOMPARE(job.section(u' ', 1, 1), jobs.first().section(u' ', 1, 1));
        QSignalSpy down(executor.get(), &eval::Executor::shutDown);
        executor->shutdown();
        QTRY_COMPARE_WITH_TIMEOUT(down.count(), 1, kWaitMs);
        QTRY_VERIFY2_WITH_TIMEOUT(noJobsLeft(), qPrintable(kforgetest::LocalSlurm::jobs().join(u'\n')), kWaitMs);
    }

    void aCancelledPilotCostsItsEvaluation() {
        // scancel of a pilot while it evaluates: that evaluation fails, naming the node, the job
        // and what Slurm says became of it; a new pilot takes the next ones.
        needCluster();
        auto executor = slurmExecutor(QStringLiteral("fake"), 1);
        QSignalSpy spy(executor.get(), &eval::Executor::evaluated);
        QSignalSpy started(executor.get(), &eval::Executor::evaluationStarted);
        const qint64 ticket = executor->submit(kforgetest::fakeRequest(QStringLiteral("// fake:sleep_ms=60000")), 300s);
        QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kWaitMs);
        const QStringList jobs = kforgetest::LocalSlurm::jobs();
        QCOMPARE(jobs.size(), 1);
        const QString job = jobs.first().section(u' ', 0, 0);
        QCOMPARE(QProcess::execute(QStringLiteral("scancel"), {job}), 0);
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, kWaitMs);
        QCOMPARE(spy.at(0).at(0).toLongLong(), ticket);
        const auto lost = spy.at(0).at(1).value<EvaluateResult>();
        QVERIFY(lost.status != Status::Ok);
        QVERIFY2(QString::fromStdString(lost.message).contains(QStringLiteral("Slurm job %1").arg(job)),
                 lost.message.c_str());
        QString said = QString::fromStdString(lost.message);
        for (const auto& d : lost.diagnostics)
            said += u'\n' + QString::fromStdString(d.message);
        // Slurm's own word, asked of scontrol when the pilot died: slurmstepd's line on the pilot's
        // stderr comes through only when srun relays it before it exits.
        QVERIFY2(
            QString::fromStdString(lost.message).contains(QStringLiteral("Slurm says job %1 is CANCELLED").arg(job)),
            qPrintable(said));
        const auto next = evaluateAll(*executor, fakeRequests(2, QStringLiteral("// plain")));
        QCOMPARE(next.size(), std::size_t{2});
        for (const auto& [nextTicket, r] : next)
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
        executor->shutdown();
        QTRY_VERIFY2_WITH_TIMEOUT(noJobsLeft(), qPrintable(kforgetest::LocalSlurm::jobs().join(u'\n')), kWaitMs);
    }

    void shutdownCancelsPendingPilots() {
        // Pilots that wait in the queue (here: not to begin for an hour) are cancelled with the run.
        needCluster();
        auto executor = slurmExecutor(QStringLiteral("fake"), 2, QStringLiteral("--begin=now+3600"));
        QSignalSpy spy(executor.get(), &eval::Executor::evaluated);
        for (const auto& r : fakeRequests(2, QStringLiteral("// plain")))
            executor->submit(r, 60s);
        QTRY_COMPARE_WITH_TIMEOUT(kforgetest::LocalSlurm::jobs().size(), 2, kWaitMs);
        for (const QString& job : kforgetest::LocalSlurm::jobs())
            QVERIFY2(job.endsWith(QStringLiteral(" PD")), qPrintable(job));
        QSignalSpy down(executor.get(), &eval::Executor::shutDown);
        executor->shutdown();
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs); // both fail as cancelled
        QTRY_COMPARE_WITH_TIMEOUT(down.count(), 1, kWaitMs);
        QTRY_VERIFY2_WITH_TIMEOUT(noJobsLeft(), qPrintable(kforgetest::LocalSlurm::jobs().join(u'\n')), kWaitMs);
    }

    void aBadSlurmRequestDropsThePlace() {
        // srun refuses the pilots (no such partition): the place is given up with Slurm's words.
        needCluster();
        auto executor = slurmExecutor(QStringLiteral("fake"), 1, QStringLiteral("--partition=no-such-partition"));
        QSignalSpy failed(executor.get(), &eval::Executor::workersFailedToStart);
        const auto results = evaluateAll(*executor, fakeRequests(1, QStringLiteral("// plain")));
        QCOMPARE(results.size(), std::size_t{1});
        QVERIFY(results.begin()->second.status != Status::Ok);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kWaitMs);
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("Slurm")) && message.contains(QStringLiteral("partition")),
                 qPrintable(message));
    }

    void openClWorkerOnPocl() {
        // The real OpenCL worker as a pilot: vector_add's baseline, verified and timed on the node.
        needCluster();
        auto bundle = task::TaskCatalog::load(QStringLiteral("vector_add"));
        QVERIFY2(bundle, bundle ? "" : bundle.error().c_str());
        task::EvalSettings settings;
        settings.variant = QStringLiteral("small");
        settings.options.timing = true;
        settings.options.minRepetitions = 2;
        settings.options.maxRepetitions = 4;
        settings.options.warmup = 1;
        auto request = task::makeEvalRequest(*bundle, settings, {}, {});
        QVERIFY2(request, request ? "" : request.error().c_str());
        auto executor = slurmExecutor(QStringLiteral("opencl"), 1);
        const auto results = evaluateAll(*executor, {*request}, 300s);
        QCOMPARE(results.size(), std::size_t{1});
        const EvaluateResult& r = results.begin()->second;
        QVERIFY2(r.status == Status::Ok, r.message.c_str());
        QVERIFY(r.candidateTiming.has_value());
        QCOMPARE(r.host, thisHost());
        executor->shutdown();
        QTRY_VERIFY2_WITH_TIMEOUT(noJobsLeft(), qPrintable(kforgetest::LocalSlurm::jobs().join(u'\n')), kWaitMs);
    }

    void runThroughSlurm() {
        // A whole search from the command line, every evaluation on the cluster.
        needCluster();
        QTemporaryDir dir;
        QProcess run;
        run.setProcessChannelMode(QProcess::SeparateChannels);
        run.start(qEnvironmentVariable("KFORGE_HEADLESS_BIN"), {QStringLiteral("run"),
                                                                QStringLiteral("--task"),
                                                                QStringLiteral("vector_add"),
                                                                QStringLiteral("--backend"),
                                                                QStringLiteral("opencl"),
                                                                QStringLiteral("--variant"),
                                                                QStringLiteral("small"),
                                                                QStringLiteral("--executor"),
                                                                QStringLiteral("slurm"),
                                                                QStringLiteral("--workers"),
                                                                QStringLiteral("2"),
                                                                QStringLiteral("--slurm-args"),
                                                                QStringLiteral("--time=30"),
                                                                QStringLiteral("--budget-evals"),
                                                                QStringLiteral("6"),
                                                                QStringLiteral("--islands"),
                                                                QStringLiteral("1"),
                                                                QStringLiteral("--children"),
                                                                QStringLiteral("3"),
                                                                QStringLiteral("--no-pytorch"),
                                                                QStringLiteral("--no-experience"),
                                                                QStringLiteral("--no-confirm"),
                                                                QStringLiteral("--db"),
                                                                dir.filePath(QStringLiteral("runs.kforge")),
                                                                QStringLiteral("--json")});
        QVERIFY(run.waitForFinished(600000));
        const QByteArray err = run.readAllStandardError();
        QVERIFY2(run.exitCode() == 0, err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(run.readAllStandardOutput()).object();
        QVERIFY2(summary.value(QLatin1String("evaluations")).toInt() >= 6, err.constData());
        QVERIFY2(noJobsLeft() || QTest::qWaitFor(noJobsLeft, kWaitMs), "the run's pilots are cancelled with it");
    }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "tst_slurm.moc"
