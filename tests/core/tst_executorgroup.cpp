// Workers in several places as one executor: the --worker and --devices arguments, the group's
// distribution of work, a place that drops out while the run goes on, and workers reached over a
// real OpenSSH connection to an sshd on 127.0.0.1 that the test starts with keys made for it.

#include "eval/executorgroup.h"
#include "eval/placement.h"
#include "eval/workerpool.h"
#include "evaluateall.h"
#include "fakerequest.h"
#include "localsshd.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <set>

#include <signal.h>
#include <unistd.h>

using namespace kforge;
using kforge::eval::ExecutorGroup;
using kforge::eval::WorkerPool;
using kforge::protocol::EvaluateResult;
using kforge::protocol::Status;
using namespace std::chrono_literals;

namespace {

constexpr int kWaitMs = 60000; // generous for a loaded machine; never a timing assertion

// The ssh clients this process started (its children named "ssh"), by pid.
std::vector<pid_t> childSshClients() {
    std::vector<pid_t> found;
    for (const QString& entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool number = false;
        const pid_t pid = entry.toInt(&number);
        if (!number)
            continue;
        QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
        if (!stat.open(QIODevice::ReadOnly))
            continue;
        // "pid (comm) state ppid ...": the name may hold spaces, so split after its last ')'.
        const QByteArray line = stat.readAll();
        const qsizetype close = line.lastIndexOf(')');
        const QByteArray comm = line.mid(line.indexOf('(') + 1, close - line.indexOf('(') - 1);
        const QList<QByteArray> rest = line.mid(close + 2).split(' ');
        if (comm == "ssh" && rest.size() > 1 && rest[1].toInt() == ::getpid())
            found.push_back(pid);
    }
    return found;
}

QString fakeWorkerPath() {
    return QDir(qEnvironmentVariable("KFORGE_WORKER_DIR")).filePath(QStringLiteral("kforge-worker-fake"));
}

// Submits `n` fake requests and waits for every answer; the results by ticket.
std::map<qint64, EvaluateResult> evaluateAll(eval::Executor& e, int n, const QString& source) {
    return kforgetest::evaluateAll(e, kforgetest::fakeRequests(n, source), 30s, kWaitMs);
}

} // namespace

class TestExecutorGroup : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        qRegisterMetaType<EvaluateResult>();
        QVERIFY2(QFileInfo(fakeWorkerPath()).isExecutable(),
                 qPrintable(fakeWorkerPath() + QStringLiteral(" is missing; run through ctest")));
    }

    void workerPlaces_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("label"); // empty: must be refused
        QTest::addColumn<QString>("error");
        QTest::newRow("local") << "local"
                               << "this machine"
                               << "";
        QTest::newRow("host") << "ssh://gpu1"
                              << "gpu1"
                              << "";
        QTest::newRow("user, port, path") << "ssh://me@gpu1.lab:2222/opt/kforge/kforge-worker-cuda"
                                          << "me@gpu1.lab:2222"
                                          << "";
        QTest::newRow("ipv6") << "ssh://[::1]:22"
                              << "::1:22"
                              << "";
        QTest::newRow("no scheme") << "gpu1"
                                   << ""
                                   << "expected \"local\", ssh://";
        QTest::newRow("no host") << "ssh://"
                                 << ""
                                 << "no host";
        QTest::newRow("bad port") << "ssh://gpu1:99999"
                                  << ""
                                  << "not a port";
        QTest::newRow("option as host") << "ssh://-oProxyCommand=x"
                                        << ""
                                        << "not a host name";
        QTest::newRow("shell in path") << "ssh://gpu1/opt/w;rm -rf x"
                                       << ""
                                       << "may hold only";
        QTest::newRow("folder as path") << "ssh://gpu1/opt/"
                                        << ""
                                        << "must name a file";
    }
    void workerPlaces() {
        QFETCH(QString, text);
        QFETCH(QString, label);
        QFETCH(QString, error);
        const auto p = eval::parseWorkerPlace(text);
        if (label.isEmpty()) {
            QVERIFY(!p);
            QVERIFY2(QString::fromStdString(p.error()).contains(error), p.error().c_str());
            QVERIFY2(QString::fromStdString(p.error()).contains(text), "the message names the argument");
            return;
        }
        QVERIFY2(p, p ? "" : p.error().c_str());
        QCOMPARE(p->label(), label);
    }

    void sshCommandLine() {
        const auto p = eval::parseWorkerPlace(QStringLiteral("ssh://me@gpu1:2222/opt/kforge-worker-cuda"));
        QVERIFY(p);
        const QStringList args = eval::sshArguments(*p, QStringLiteral("cuda"));
        QVERIFY(args.contains(QStringLiteral("BatchMode=yes"))); // never a password prompt
        QCOMPARE(args.at(args.indexOf(QStringLiteral("-p")) + 1), QStringLiteral("2222"));
        // The destination comes after "--", so nothing in it is read as an option; the worker last.
        QCOMPARE(args.mid(args.size() - 3), (QStringList{QStringLiteral("--"), QStringLiteral("me@gpu1"),
                                                         QStringLiteral("/opt/kforge-worker-cuda")}));
        const auto bare = eval::parseWorkerPlace(QStringLiteral("ssh://gpu1"));
        QCOMPARE(eval::sshArguments(*bare, QStringLiteral("opencl")).last(), QStringLiteral("kforge-worker-opencl"));
    }

    void deviceLists() {
        QCOMPARE(*eval::parseDevices(QStringLiteral("all"), 3), (std::vector<int>{0, 1, 2}));
        QCOMPARE(*eval::parseDevices(QStringLiteral("1, 0,1"), 2), (std::vector<int>{1, 0}));
        QVERIFY(!eval::parseDevices(QStringLiteral("all"), 0));
        const auto missing = eval::parseDevices(QStringLiteral("0,4"), 2);
        QVERIFY(!missing);
        QVERIFY2(QString::fromStdString(missing.error()).contains(QStringLiteral("no device 4")),
                 missing.error().c_str());
        QVERIFY(!eval::parseDevices(QStringLiteral("0,x"), -1));
    }

    void workSpreadsOverMembers() {
        // Two places of two workers each: every request is answered once, both places take work,
        // and each result says where it ran.
        ExecutorGroup group(QStringLiteral("fake"));
        for (const QString& host : {QStringLiteral("alpha"), QStringLiteral("beta")}) {
            auto* pool = new WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, 2);
            pool->setPlacement(host, host == QLatin1String("alpha") ? 0 : 1);
            group.add(pool, host);
        }
        QCOMPARE(group.capacity(), 4);
        const auto results = evaluateAll(group, 12, QStringLiteral("// fake:sleep_ms=150"));
        QCOMPARE(results.size(), std::size_t{12});
        std::set<std::string> hosts;
        for (const auto& [ticket, r] : results) {
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
            QCOMPARE(r.id, ticket);
            hosts.insert(r.host);
            QCOMPARE(r.deviceIndex, r.host == "alpha" ? 0 : 1);
        }
        QCOMPARE(hosts, (std::set<std::string>{"alpha", "beta"}));
    }

    void aPlaceThatFailsIsLeftOut() {
        // One place whose workers cannot start: it drops out with a message naming it, what it
        // held fails with that name, and everything else is evaluated by the other.
        ExecutorGroup group(QStringLiteral("fake"));
        auto* good = new WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, 2);
        group.add(good, QStringLiteral("good"));
        auto* ghost = new WorkerPool(QStringLiteral("fake"), QStringLiteral("/nonexistent/kforge-worker-fake"), {}, 2);
        ghost->setPlacement(QStringLiteral("ghost"), std::nullopt);
        ghost->setMaxStartFailures(2);
        group.add(ghost, QStringLiteral("ghost"));
        QSignalSpy degraded(&group, &eval::Executor::degraded);
        QSignalSpy failed(&group, &eval::Executor::workersFailedToStart);
        const auto results = evaluateAll(group, 10, QStringLiteral("// fake:sleep_ms=50"));
        QCOMPARE(results.size(), std::size_t{10});
        int ok = 0;
        for (const auto& [ticket, r] : results) {
            if (r.status == Status::Ok)
                ++ok;
            else
                QVERIFY2(QString::fromStdString(r.message).contains(QStringLiteral("ghost")), r.message.c_str());
        }
        QVERIFY(ok >= 8); // at most what the lost place held (its two places) failed
        QTRY_COMPARE_WITH_TIMEOUT(degraded.count(), 1, kWaitMs);
        QVERIFY2(degraded.at(0).at(0).toString().contains(QStringLiteral("ghost")),
                 qPrintable(degraded.at(0).at(0).toString()));
        QCOMPARE(failed.count(), 0);
        QCOMPARE(group.liveMembers(), 1);
        // The device's ceilings and probe come from the place that is left.
        QSignalSpy ceilings(&group, &eval::Executor::ceilingsMeasured);
        group.requestCeilings(0);
        QTRY_COMPARE_WITH_TIMEOUT(ceilings.count(), 1, kWaitMs);
        // Later work goes to the place that is left.
        const auto later = evaluateAll(group, 3, QStringLiteral("// plain"));
        for (const auto& [ticket, r] : later)
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
    }

    void aHostWithoutADeviceIsLeftOut() {
        // A remote host whose worker starts but finds no device (no NVIDIA driver there): its
        // workers are checked before they take work, so the place drops out, naming the host and
        // the problem, and no evaluation is lost to it.
        ExecutorGroup group(QStringLiteral("fake"));
        group.add(new WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, 1), QStringLiteral("good"));
        auto* driverless = new WorkerPool(QStringLiteral("fake"), fakeWorkerPath(),
                                          {QStringLiteral("--mode"), QStringLiteral("no-device")}, 2);
        driverless->setPlacement(QStringLiteral("gpu9"), std::nullopt);
        driverless->setCheckDevices(true);
        driverless->setMaxStartFailures(2);
        group.add(driverless, QStringLiteral("gpu9"));
        QSignalSpy degraded(&group, &eval::Executor::degraded);
        const auto results = evaluateAll(group, 8, QStringLiteral("// fake:sleep_ms=50"));
        QCOMPARE(results.size(), std::size_t{8});
        for (const auto& [ticket, r] : results) {
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
            QCOMPARE(r.host, QSysInfo::machineHostName().toStdString());
        }
        QTRY_COMPARE_WITH_TIMEOUT(degraded.count(), 1, kWaitMs);
        const QString lost = degraded.at(0).at(0).toString();
        QVERIFY2(lost.contains(QStringLiteral("gpu9")) && lost.contains(QStringLiteral("no NVIDIA driver")),
                 qPrintable(lost));
    }

    void ceilingsFromEveryPlace() {
        // Every place is asked (each may hold another GPU model): one answer each, the failure
        // naming its place; the probe goes to the next place when the first cannot answer.
        ExecutorGroup group(QStringLiteral("fake"));
        auto* ghost = new WorkerPool(QStringLiteral("fake"), QStringLiteral("/nonexistent/kforge-worker-fake"));
        ghost->setMaxStartFailures(1);
        group.add(ghost, QStringLiteral("ghost"));
        group.add(new WorkerPool(QStringLiteral("fake"), fakeWorkerPath()), QStringLiteral("good"));
        QSignalSpy ceilings(&group, &eval::Executor::ceilingsMeasured);
        QSignalSpy failed(&group, &eval::Executor::ceilingsFailed);
        QSignalSpy probed(&group, &eval::Executor::probed);
        QCOMPARE(group.requestCeilings(0), 2);
        group.probe();
        QTRY_COMPARE_WITH_TIMEOUT(ceilings.count(), 1, kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kWaitMs);
        QVERIFY2(failed.at(0).at(0).toString().startsWith(QStringLiteral("ghost: ")),
                 qPrintable(failed.at(0).at(0).toString()));
        QTRY_COMPARE_WITH_TIMEOUT(probed.count(), 1, kWaitMs);
        // A place given up is not asked again.
        QCOMPARE(group.requestCeilings(0), 1);
        QTRY_COMPARE_WITH_TIMEOUT(ceilings.count(), 2, kWaitMs);
    }

    void noPlaceLeft() {
        ExecutorGroup group(QStringLiteral("fake"));
        auto* ghost = new WorkerPool(QStringLiteral("fake"), QStringLiteral("/nonexistent/kforge-worker-fake"));
        ghost->setMaxStartFailures(1);
        group.add(ghost, QStringLiteral("ghost"));
        QSignalSpy failed(&group, &eval::Executor::workersFailedToStart);
        const auto results = evaluateAll(group, 2, QStringLiteral("// plain"));
        QCOMPARE(results.size(), std::size_t{2});
        for (const auto& [ticket, r] : results)
            QVERIFY(r.status != Status::Ok);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kWaitMs);
        // Nothing is left to take new work: it fails at once, saying why.
        const auto after = evaluateAll(group, 1, QStringLiteral("// plain"));
        QVERIFY2(
            QString::fromStdString(after.begin()->second.message).contains(QStringLiteral("no fake worker is left")),
            after.begin()->second.message.c_str());
    }

    void oneWorkerPoolPerDevice() {
        // --devices 0,1 on this machine: one pool per device, requests naming it, results too.
        eval::Placement placement;
        placement.workers = 1;
        placement.devices = QStringLiteral("0,1");
        auto executor = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY2(executor, executor ? "" : executor.error().c_str());
        std::unique_ptr<eval::Executor> owned(*executor);
        QCOMPARE(owned->capacity(), 2);
        const auto results = evaluateAll(*owned, 6, QStringLiteral("// fake:sleep_ms=100"));
        std::set<int> devices;
        for (const auto& [ticket, r] : results) {
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
            devices.insert(r.deviceIndex);
        }
        QCOMPARE(devices, (std::set<int>{0, 1}));
        placement.devices = QStringLiteral("0,x");
        const auto bad = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY(!bad && QString::fromStdString(bad.error()).contains(QStringLiteral("--devices")));
    }

    void workersStartAFewAtATime() {
        // As SSH pools do (a server takes only so many logins at once): every request is still
        // answered, by as many workers as the pool has.
        WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath(), {}, 6);
        pool.setMaxStarting(2);
        const auto results = evaluateAll(pool, 12, QStringLiteral("// fake:sleep_ms=100"));
        QCOMPARE(results.size(), std::size_t{12});
        for (const auto& [ticket, r] : results)
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
    }

    void pinnedWorkersSeeTheirVariable() {
        WorkerPool pool(QStringLiteral("fake"), fakeWorkerPath());
        pool.setExtraEnvironment({QStringLiteral("CUDA_VISIBLE_DEVICES=3")});
        const auto results = evaluateAll(pool, 1, QStringLiteral("// fake:report_env=1"));
        const EvaluateResult& r = results.begin()->second;
        bool named = false;
        for (const auto& d : r.diagnostics)
            named = named
                    || QString::fromStdString(d.message).split(u'\n').contains(QStringLiteral("CUDA_VISIBLE_DEVICES"));
        QVERIFY2(named, "the worker inherited CUDA_VISIBLE_DEVICES");
    }

    void devicesOfAnSshHost() {
        // --worker ssh://host --devices: one pool per device of the remote host; "all" asks the
        // worker there for its devices (the fake worker has one).
        kforgetest::LocalSshd sshd;
        if (const QString why = sshd.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const QString host = QStringLiteral("127.0.0.1:%1").arg(sshd.port());
        eval::Placement placement;
        placement.workers = 1;
        placement.places = {QStringLiteral("ssh://") + host + fakeWorkerPath()};
        placement.devices = QStringLiteral("0,1");
        auto two = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY2(two, two ? "" : two.error().c_str());
        std::unique_ptr<eval::Executor> owned(*two);
        QCOMPARE(owned->capacity(), 2);
        std::set<int> devices;
        for (const auto& [ticket, r] : evaluateAll(*owned, 6, QStringLiteral("// fake:sleep_ms=100"))) {
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
            QCOMPARE(QString::fromStdString(r.host), host);
            devices.insert(r.deviceIndex);
        }
        QCOMPARE(devices, (std::set<int>{0, 1}));
        placement.devices = QStringLiteral("all");
        auto all = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY2(all, all ? "" : all.error().c_str());
        std::unique_ptr<eval::Executor> allOwned(*all);
        QCOMPARE(allOwned->capacity(), 1);
        placement.places = {QStringLiteral("ssh://") + host + QStringLiteral("/nonexistent/kforge-worker-fake")};
        const auto unreachable = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY(!unreachable);
        QVERIFY2(QString::fromStdString(unreachable.error()).contains(host), unreachable.error().c_str());
    }

    void workersOverSsh() {
        // A real sshd on 127.0.0.1: workers reached through OpenSSH evaluate like local ones; a
        // remote worker that crashes costs its evaluation and is restarted over a new connection;
        // a wrong remote path and a host that does not resolve each drop out with a message that
        // names them, while the place that works goes on.
        kforgetest::LocalSshd sshd;
        if (const QString why = sshd.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const QString here = QStringLiteral("ssh://127.0.0.1:%1").arg(sshd.port());
        eval::Placement placement;
        placement.workers = 2;
        placement.places = {here + fakeWorkerPath(), here + QStringLiteral("/nonexistent/kforge-worker-fake"),
                            QStringLiteral("ssh://no-such-host.invalid")};
        auto executor = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
        QVERIFY2(executor, executor ? "" : executor.error().c_str());
        std::unique_ptr<eval::Executor> owned(*executor);
        QSignalSpy degraded(owned.get(), &eval::Executor::degraded);
        const auto results = evaluateAll(*owned, 10, QStringLiteral("// fake:sleep_ms=50"));
        QCOMPARE(results.size(), std::size_t{10});
        int ok = 0;
        for (const auto& [ticket, r] : results)
            if (r.status == Status::Ok) {
                ++ok;
                QCOMPARE(QString::fromStdString(r.host), QStringLiteral("127.0.0.1:%1").arg(sshd.port()));
            }
        QVERIFY2(ok >= 6, qPrintable(QString::number(ok)));
        QTRY_COMPARE_WITH_TIMEOUT(degraded.count(), 2, kWaitMs);
        const QString lost = degraded.at(0).at(0).toString() + u'\n' + degraded.at(1).at(0).toString();
        QVERIFY2(lost.contains(QStringLiteral("no-such-host.invalid")), qPrintable(lost));
        QVERIFY2(lost.contains(QStringLiteral("127.0.0.1")), qPrintable(lost));

        // The connections drop (their ssh killed) mid-evaluation: those evaluations fail, naming
        // the host; new connections take the next ones.
        {
            QSignalSpy spy(owned.get(), &eval::Executor::evaluated);
            QSignalSpy started(owned.get(), &eval::Executor::evaluationStarted);
            for (int i = 0; i < 2; ++i) // both workers busy
                owned->submit(kforgetest::fakeRequest(QStringLiteral("// fake:sleep_ms=60000\n// %1").arg(i)), 120s);
            QTRY_COMPARE_WITH_TIMEOUT(started.count(), 2, kWaitMs);
            const std::vector<pid_t> clients = childSshClients();
            // Two connections carry the evaluations (a place given up may still be ending others).
            QVERIFY(clients.size() >= 2);
            for (const pid_t pid : clients)
                ::kill(pid, SIGKILL); // the test's own ssh clients
            QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, kWaitMs);
            for (const auto& args : spy) {
                const auto dropped = args.at(1).value<EvaluateResult>();
                QVERIFY(dropped.status != Status::Ok);
                QVERIFY2(QString::fromStdString(dropped.message).contains(QStringLiteral("127.0.0.1")),
                         dropped.message.c_str());
            }
        }
        const auto after = evaluateAll(*owned, 2, QStringLiteral("// after the drop"));
        for (const auto& [ticket, r] : after)
            QVERIFY2(r.status == Status::Ok, r.message.c_str());

        // The remote worker crashes: that evaluation fails, naming the host; the next one runs.
        const auto crashed = evaluateAll(*owned, 1, QStringLiteral("// fake:mode=crash"));
        const EvaluateResult& c = crashed.begin()->second;
        QVERIFY(c.status != Status::Ok);
        QVERIFY2(QString::fromStdString(c.message).contains(QStringLiteral("127.0.0.1")), c.message.c_str());
        const auto next = evaluateAll(*owned, 2, QStringLiteral("// plain"));
        for (const auto& [ticket, r] : next)
            QVERIFY2(r.status == Status::Ok, r.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestExecutorGroup)
#include "tst_executorgroup.moc"
