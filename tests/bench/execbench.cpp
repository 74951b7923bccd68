// kforge-execbench: how evaluations per second grow with the number of workers, through each
// executor: worker processes on this machine (WorkerPool), workers reached over SSH (an
// ExecutorGroup with one ssh:// place) on an sshd on 127.0.0.1 that the benchmark starts, and Slurm
// pilots on a single-node cluster it starts too (munged, slurmctld, slurmd: tests/common). The
// workers are the fake worker at a fixed evaluation time (`// fake:sleep_ms`), so the figures are
// the executors' own overhead and scaling, not a device's. Workers start and answer once before
// the clock starts, as in a search. Prints a table: N, candidates/s, and the ratio to N times one
// worker's rate (the target is >= 0.9 up to 16).
//   kforge-execbench [--sleep-ms 200] [--max 16]

#include "eval/executorgroup.h"
#include "eval/placement.h"
#include "eval/workerpool.h"
#include "fakerequest.h"
#include "localslurm.h"
#include "localsshd.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QSysInfo>

#include <cstdio>
#include <functional>
#include <memory>

using namespace kforge;
using namespace std::chrono_literals;

namespace {

// Evaluates `n` requests; the number that came back ok, and the seconds it took.
std::pair<int, double> evaluate(eval::Executor& e, int n, int sleepMs, int& serial) {
    QSignalSpy spy(&e, &eval::Executor::evaluated);
    QElapsedTimer clock;
    clock.start();
    for (int i = 0; i < n; ++i)
        e.submit(kforgetest::fakeRequest(QStringLiteral("// fake:sleep_ms=%1\n// %2").arg(sleepMs).arg(serial++)),
                 120s);
    (void)QTest::qWaitFor([&] { return spy.count() >= n; }, 600000);
    const double seconds = static_cast<double>(clock.nsecsElapsed()) / 1e9;
    int ok = 0;
    for (const auto& args : spy)
        ok += args.at(1).value<protocol::EvaluateResult>().status == protocol::Status::Ok;
    return {ok, seconds};
}

struct Row {
    int workers = 0;
    int candidates = 0;
    int ok = 0;
    double rate = 0;
};

// Rates for 1, 2, 4, ... `max` workers through executors `make(N)` makes.
std::vector<Row> scale(const std::function<std::unique_ptr<eval::Executor>(int)>& make, int max, int sleepMs,
                       int& serial) {
    std::vector<Row> rows;
    for (int n = 1; n <= max; n *= 2) {
        auto executor = make(n);
        // Every worker started and warm: requests long enough that all N are busy at once (workers
        // over SSH log in a few at a time).
        evaluate(*executor, n, std::max(sleepMs, 3000), serial);
        Row r;
        r.workers = n;
        r.candidates = std::max(32, 8 * n);
        const auto [ok, seconds] = evaluate(*executor, r.candidates, sleepMs, serial);
        r.ok = ok;
        r.rate = r.candidates / seconds;
        rows.push_back(r);
        executor->shutdown();
        QSignalSpy down(executor.get(), &eval::Executor::shutDown);
        (void)QTest::qWaitFor([&] { return down.count() > 0; }, 30000);
    }
    return rows;
}

void print(const char* title, const std::vector<Row>& rows) {
    std::printf(
        "\n### %s\n\n| workers | candidates | ok | candidates/s | x (N x one worker) |\n|---|---|---|---|---|\n",
        title);
    const double one = rows.empty() ? 0.0 : rows.front().rate;
    for (const Row& r : rows)
        std::printf("| %d | %d | %d | %.2f | %.3f |\n", r.workers, r.candidates, r.ok, r.rate,
                    one > 0 ? r.rate / (one * r.workers) : 0.0);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    qRegisterMetaType<protocol::EvaluateResult>();
    int sleepMs = 200;
    int max = 16;
    const QStringList args = app.arguments();
    for (int i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == QLatin1String("--sleep-ms"))
            sleepMs = args[i + 1].toInt();
        else if (args[i] == QLatin1String("--max"))
            max = args[i + 1].toInt();
    }
    QString dir = qEnvironmentVariable("KFORGE_WORKER_DIR");
    if (dir.isEmpty())
        dir = QCoreApplication::applicationDirPath();
    const QString fake = QDir(dir).filePath(QStringLiteral("kforge-worker-fake"));
    if (!QFileInfo(fake).isExecutable()) {
        std::printf("kforge-execbench: no fake worker at %s\n", qPrintable(fake));
        return 2;
    }
    std::printf("# Executor scaling: fake workers at %d ms an evaluation, %s, %d cores, %s UTC\n", sleepMs,
                qPrintable(QSysInfo::prettyProductName()), QThread::idealThreadCount(),
                qPrintable(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyy-MM-dd HH:mm"))));
    int serial = 0;
    print(
        "Local worker processes (WorkerPool)",
        scale([&](int n) { return std::make_unique<eval::WorkerPool>(QStringLiteral("fake"), fake, QStringList{}, n); },
              max, sleepMs, serial));

    // One executor for one place, as `kforge run --worker PLACE --workers n` makes it.
    const auto through = [](const QString& place) {
        return [place](int n) {
            eval::Placement placement;
            placement.workers = n;
            placement.places = {place};
            auto executor = eval::makeExecutor(QStringLiteral("fake"), placement, nullptr);
            if (!executor)
                qFatal("%s", executor.error().c_str());
            return std::unique_ptr<eval::Executor>(*executor);
        };
    };
    kforgetest::LocalSshd sshd;
    if (const QString why = sshd.start(); !why.isEmpty())
        std::printf("\nWorkers over SSH: not measured (%s)\n", qPrintable(why));
    else
        print("Workers over SSH to 127.0.0.1 (ExecutorGroup, one ssh:// place)",
              scale(through(QStringLiteral("ssh://127.0.0.1:%1%2").arg(sshd.port()).arg(fake)), max, sleepMs, serial));
    kforgetest::LocalSlurm slurm;
    if (const QString why = slurm.start(std::max(32, 2 * max)); !why.isEmpty())
        std::printf("\nSlurm pilots: not measured (%s)\n", qPrintable(why));
    else
        print("Slurm pilots on one node (ExecutorGroup, one slurm place: srun jobs)",
              scale(through(QStringLiteral("slurm:") + fake), max, sleepMs, serial));
    return 0;
}
