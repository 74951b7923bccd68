#include "eval/placement.h"

#include "eval/executorgroup.h"
#include "eval/workerlocator.h"
#include "eval/workerpool.h"

#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QStandardPaths>
#include <QUuid>

namespace kforge::eval {

QString WorkerPlace::label() const {
    if (kind == Kind::Local)
        return QStringLiteral("this machine");
    if (kind == Kind::Slurm)
        return QStringLiteral("Slurm");
    return (user.isEmpty() ? QString() : user + u'@') + host + (port ? u':' + QString::number(port) : QString());
}

spec::Expected<WorkerPlace> parseWorkerPlace(const QString& text) {
    const auto bad = [&](const QString& why) {
        return spec::fail(QStringLiteral("--worker %1: %2").arg(text, why).toStdString());
    };
    // The path reaches the remote shell (or srun) as a word: only characters that need no quoting.
    const auto checkPath = [&](const QString& path) {
        static const QRegularExpression safePath(QStringLiteral(R"(^/[A-Za-z0-9._+/-]*[A-Za-z0-9._+-]$)"));
        return safePath.match(path).hasMatch();
    };
    const QString pathRule = QStringLiteral("the worker path '%1' may hold only letters, digits and . _ + - / "
                                            "(and must name a file)");
    WorkerPlace p;
    if (text == QLatin1String("local"))
        return p;
    if (text == QLatin1String("slurm") || text.startsWith(QLatin1String("slurm:"))) {
        p.kind = WorkerPlace::Kind::Slurm;
        p.path = text.mid(6);
        if (text.size() > 5 && !checkPath(p.path))
            return bad(pathRule.arg(p.path));
        return p;
    }
    if (!text.startsWith(QLatin1String("ssh://")))
        return bad(QStringLiteral("expected \"local\", ssh://[user@]host[:port][/path/to/worker] or "
                                  "slurm[:/path/to/worker]"));
    p.kind = WorkerPlace::Kind::Ssh;
    QString rest = text.mid(6);
    if (const qsizetype slash = rest.indexOf(u'/'); slash >= 0) {
        p.path = rest.mid(slash);
        rest = rest.left(slash);
        if (!checkPath(p.path))
            return bad(pathRule.arg(p.path));
    }
    if (const qsizetype at = rest.lastIndexOf(u'@'); at >= 0) {
        p.user = rest.left(at);
        rest = rest.mid(at + 1);
        static const QRegularExpression safeUser(QStringLiteral(R"(^[A-Za-z0-9._][A-Za-z0-9._-]*$)"));
        if (!safeUser.match(p.user).hasMatch())
            return bad(QStringLiteral("'%1' is not a user name").arg(p.user));
    }
    if (const qsizetype colon = rest.lastIndexOf(u':'); colon >= 0 && !rest.endsWith(u']')) {
        bool ok = false;
        const int port = rest.mid(colon + 1).toInt(&ok);
        if (!ok || port < 1 || port > 65535)
            return bad(QStringLiteral("'%1' is not a port (1 to 65535)").arg(rest.mid(colon + 1)));
        p.port = port;
        rest = rest.left(colon);
    }
    // A host name, an IPv4 address or a bracketed IPv6 one; never anything ssh would read as an option.
    static const QRegularExpression safeHost(QStringLiteral(R"(^([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])$)"));
    if (rest.isEmpty())
        return bad(QStringLiteral("no host"));
    if (!safeHost.match(rest).hasMatch())
        return bad(QStringLiteral("'%1' is not a host name or address").arg(rest));
    p.host = rest.startsWith(u'[') ? rest.mid(1, rest.size() - 2) : rest;
    return p;
}

QStringList sshArguments(const WorkerPlace& place, const QString& backend) {
    QStringList args{QStringLiteral("-T"),
                     QStringLiteral("-o"),
                     QStringLiteral("BatchMode=yes"),
                     QStringLiteral("-o"),
                     QStringLiteral("ConnectTimeout=15"),
                     QStringLiteral("-o"),
                     QStringLiteral("ServerAliveInterval=10"),
                     QStringLiteral("-o"),
                     QStringLiteral("ServerAliveCountMax=3")};
    if (place.port)
        args << QStringLiteral("-p") << QString::number(place.port);
    args << QProcess::splitCommand(qEnvironmentVariable("KFORGE_SSH_ARGS"));
    args << QStringLiteral("--") << (place.user.isEmpty() ? place.host : place.user + u'@' + place.host);
    args << (place.path.isEmpty() ? QStringLiteral("kforge-worker-") + backend : place.path);
    return args;
}

spec::Expected<QStringList> srunArguments(const WorkerPlace& place, const QString& backend, const QString& program,
                                          const QString& jobName, const QString& slurmArgs) {
    const QStringList extra = QProcess::splitCommand(slurmArgs);
    bool asksForGpus = false;
    for (const QString& arg : extra) {
        const QString name = arg.section(u'=', 0, 0);
        // Short options may carry their value attached: -n4, -oout.txt.
        const bool shortOption = arg.size() >= 2 && arg[0] == u'-' && arg[1] != u'-';
        static const QStringList taken{QStringLiteral("--pty"),       QStringLiteral("--input"),
                                       QStringLiteral("--output"),    QStringLiteral("--error"),
                                       QStringLiteral("--ntasks"),    QStringLiteral("--nodes"),
                                       QStringLiteral("--multi-prog")};
        if (taken.contains(name) || (shortOption && QStringLiteral("ioenN").contains(arg[1])))
            return spec::fail(QStringLiteral("--slurm-args: '%1' is kforge's to set: each pilot is one task on one "
                                             "node whose stdin and stdout carry the worker protocol")
                                  .arg(arg)
                                  .toStdString());
        asksForGpus = asksForGpus || name == QLatin1String("--gres") || name.startsWith(QLatin1String("--gpus"))
                      || (shortOption && arg[1] == u'G');
    }
    QStringList args{QStringLiteral("--job-name=") + jobName, QStringLiteral("--ntasks=1"), QStringLiteral("--nodes=1"),
                     QStringLiteral("--unbuffered")};
    if (backend == QLatin1String("cuda") && !asksForGpus)
        args << QStringLiteral("--gres=gpu:1");
    args << extra << QStringLiteral("--") << (place.path.isEmpty() ? program : place.path);
    return args;
}

WorkerPool::SchedulerJobState describeSlurmJob(const QByteArray& answer) {
    // One line of Name=value fields; values hold no spaces, except a few (Command, WorkDir, the
    // comment) that we do not read. Several lines (a job array, a heterogeneous job): the first.
    const QString line = QString::fromUtf8(answer).section(u'\n', 0, 0).trimmed();
    const auto field = [&line](QLatin1String name) {
        for (const QString& word : line.split(u' ', Qt::SkipEmptyParts))
            if (word.startsWith(name) && word.size() > name.size() && word[name.size()] == u'=')
                return word.mid(name.size() + 1);
        return QString();
    };
    const QString state = field(QLatin1String("JobState"));
    if (state.isEmpty())
        return {};
    static const QStringList ends{
        QStringLiteral("COMPLETED"),     QStringLiteral("CANCELLED"), QStringLiteral("FAILED"),
        QStringLiteral("TIMEOUT"),       QStringLiteral("PREEMPTED"), QStringLiteral("NODE_FAIL"),
        QStringLiteral("OUT_OF_MEMORY"), QStringLiteral("BOOT_FAIL"), QStringLiteral("DEADLINE")};
    QString sentence = QStringLiteral("Slurm says job %1 is %2").arg(field(QLatin1String("JobId")), state);
    const QString limit = field(QLatin1String("TimeLimit"));
    QString meaning;
    if (state == QLatin1String("CANCELLED"))
        meaning = QStringLiteral("it was cancelled (scancel, by its owner or an administrator)");
    else if (state == QLatin1String("TIMEOUT"))
        meaning = QStringLiteral("it reached its time limit")
                  + (limit.isEmpty() ? QString() : QStringLiteral(" (--time=%1)").arg(limit));
    else if (state == QLatin1String("PREEMPTED"))
        meaning = QStringLiteral("a job of higher priority took its resources");
    else if (state == QLatin1String("NODE_FAIL"))
        meaning = QStringLiteral("its node failed");
    else if (state == QLatin1String("OUT_OF_MEMORY"))
        meaning = QStringLiteral("it used more memory than it asked for (--mem)");
    else if (state == QLatin1String("DEADLINE"))
        meaning = QStringLiteral("it reached its deadline (--deadline)");
    if (!meaning.isEmpty())
        sentence += QStringLiteral(": ") + meaning;
    if (const QString reason = field(QLatin1String("Reason")); !reason.isEmpty() && reason != QLatin1String("None"))
        sentence += QStringLiteral(" (reason: %1)").arg(reason);
    return {sentence, ends.contains(state)};
}

spec::Expected<std::vector<int>> parseDevices(const QString& text, int available) {
    std::vector<int> devices;
    if (text == QLatin1String("all")) {
        if (available <= 0)
            return spec::fail("--devices all: the worker reports no usable device on this machine");
        for (int d = 0; d < available; ++d)
            devices.push_back(d);
        return devices;
    }
    QSet<int> seen;
    for (const QString& part : text.split(u',')) {
        bool ok = false;
        const int d = part.trimmed().toInt(&ok);
        if (!ok || d < 0)
            return spec::fail(QStringLiteral("--devices %1: '%2' is not a device index (expected \"all\" or a "
                                             "list such as 0,1)")
                                  .arg(text, part)
                                  .toStdString());
        if (available >= 0 && d >= available)
            return spec::fail(QStringLiteral("--devices %1: there is no device %2 (this machine has %3)")
                                  .arg(text)
                                  .arg(d)
                                  .arg(available)
                                  .toStdString());
        if (!seen.contains(d))
            devices.push_back(d);
        seen.insert(d);
    }
    return devices;
}

namespace {

// How many devices a worker program can use, from its --probe (`command` ends with the program,
// run here or through ssh); -1 when it cannot say.
int deviceCount(const QStringList& command, QString& problem) {
    QProcess p;
    p.start(command.first(), command.mid(1) << QStringLiteral("--probe"));
    const QString program =
        command.first() == QLatin1String("ssh") ? command.last() + QStringLiteral(" (over ssh)") : command.last();
    if (!p.waitForFinished(60000) || p.exitStatus() != QProcess::NormalExit) {
        p.kill();
        problem = QStringLiteral("%1 --probe did not answer").arg(program);
        return -1;
    }
    auto probe = protocol::decodeResponse(p.readAllStandardOutput().trimmed().toStdString());
    const auto* result = probe ? std::get_if<protocol::ProbeResult>(&*probe) : nullptr;
    if (!result) {
        const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed().section(u'\n', -1);
        problem = QStringLiteral("%1 --probe gave no device list%2")
                      .arg(program, err.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(err));
        return -1;
    }
    if (!result->available || result->devices.empty()) {
        QStringList why;
        for (const auto& w : result->problems)
            why << QString::fromStdString(w);
        problem = QStringLiteral("the worker reports no usable device%1")
                      .arg(why.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(why.join(QStringLiteral("; "))));
        return -1;
    }
    return static_cast<int>(result->devices.size());
}

} // namespace

spec::Expected<Executor*> makeExecutor(const QString& backend, const Placement& placement, QObject* parent) {
    if (placement.places.isEmpty() && placement.devices.isEmpty())
        return localExecutor(backend, placement.workers, parent);

    std::vector<WorkerPlace> places;
    for (const QString& text : placement.places) {
        auto p = parseWorkerPlace(text);
        if (!p)
            return spec::Error{p.error()};
        places.push_back(*p);
    }
    if (places.empty())
        places.push_back({}); // --devices alone: this machine

    auto group = std::make_unique<ExecutorGroup>(backend);
    for (const WorkerPlace& place : places) {
        if (place.kind == WorkerPlace::Kind::Slurm) {
            const QString srun = QStandardPaths::findExecutable(QStringLiteral("srun"));
            const QString scancel = QStandardPaths::findExecutable(QStringLiteral("scancel"));
            if (srun.isEmpty() || scancel.isEmpty())
                return spec::fail("--worker slurm: srun and scancel are not on PATH (run kforge where Slurm's "
                                  "commands are, e.g. a login node, or install Slurm's client)");
            QString program = place.path;
            if (program.isEmpty()) {
                auto found = WorkerLocator::find(backend);
                if (!found)
                    return spec::Error{found.error()};
                program = *found;
            }
            // One name for the run's pilots: the name scancel cancels them by.
            const QString jobName = QStringLiteral("kforge-") + QUuid::createUuid().toString(QUuid::Id128).left(12);
            auto args = srunArguments(place, backend, program, jobName, placement.slurmArgs);
            if (!args)
                return spec::Error{args.error()};
            auto* pool = new WorkerPool(backend, srun, *args, placement.workers);
            pool->setPlacement(place.label(), std::nullopt);
            pool->setHostsFromWorkers(true);
            pool->setCheckDevices(true);
            pool->setStartTimeout(std::chrono::milliseconds::zero()); // queued as long as Slurm says
            pool->setCleanupCommand(scancel, {QStringLiteral("--name=") + jobName});
            // A pilot that Slurm ends (cancelled, out of time, preempted) may die before it relays
            // why; scontrol still knows for a few minutes after the job's end.
            if (const QString scontrol = QStandardPaths::findExecutable(QStringLiteral("scontrol"));
                !scontrol.isEmpty())
                pool->setJobStateQuery(scontrol,
                                       {QStringLiteral("--oneliner"), QStringLiteral("show"), QStringLiteral("job")},
                                       describeSlurmJob);
            // A pilot's GPU is the only one it sees (Slurm sets CUDA_VISIBLE_DEVICES): device 0.
            if (backend == QLatin1String("cuda"))
                group->add(pool, place.label(), 0);
            else
                group->add(pool, place.label());
            continue;
        }
        const bool ssh = place.kind == WorkerPlace::Kind::Ssh;
        // The command that starts one worker: ssh and its arguments, or the local program.
        QStringList command;
        if (ssh) {
            command = QStringList{QStringLiteral("ssh")} + sshArguments(place, backend);
        } else {
            auto program = WorkerLocator::find(backend);
            if (!program)
                return spec::Error{program.error()};
            command = {*program};
        }
        const auto makePool = [&](const QStringList& startCommand, std::optional<int> device) {
            auto* pool = new WorkerPool(backend, startCommand.first(), startCommand.mid(1), placement.workers);
            pool->setPlacement(ssh ? place.label() : QString(), device);
            if (ssh) {
                // A connection and a remote worker take longer to say hello than a local one, and
                // an SSH server takes only so many connections at once that have not yet logged in.
                pool->setStartTimeout(std::chrono::seconds(45));
                pool->setMaxStarting(4);
                pool->setCheckDevices(true);
            }
            return pool;
        };
        if (placement.devices.isEmpty()) {
            group->add(makePool(command, std::nullopt), place.label());
            continue;
        }
        QString problem;
        const bool all = placement.devices == QLatin1String("all");
        const int available = all ? deviceCount(command, problem) : -1;
        if (available < 0 && all)
            return spec::fail(QStringLiteral("--devices all on %1: %2").arg(place.label(), problem).toStdString());
        auto devices = parseDevices(placement.devices, available);
        if (!devices)
            return spec::Error{devices.error()};
        for (const int d : *devices) {
            const QString name = QStringLiteral("%1, device %2").arg(place.label()).arg(d);
            if (backend != QLatin1String("cuda")) {
                group->add(makePool(command, d), name, d); // the requests name the device
                continue;
            }
            // The worker sees only its GPU, as device 0; results name it by its index there.
            if (ssh) {
                // Through the remote shell: `env CUDA_VISIBLE_DEVICES=d worker` (d is a number).
                QStringList pinned = command;
                pinned.insert(pinned.size() - 1, QStringLiteral("env"));
                pinned.insert(pinned.size() - 1, QStringLiteral("CUDA_VISIBLE_DEVICES=%1").arg(d));
                group->add(makePool(pinned, d), name, 0);
                continue;
            }
            // Where this process is itself limited to some GPUs, device d is the d-th of those.
            const QStringList visible = qEnvironmentVariable("CUDA_VISIBLE_DEVICES").split(u',', Qt::SkipEmptyParts);
            const QString gpu = d < visible.size() ? visible[d].trimmed() : QString::number(d);
            auto* pool = makePool(command, d);
            pool->setExtraEnvironment({QStringLiteral("CUDA_VISIBLE_DEVICES=") + gpu});
            group->add(pool, name, 0);
        }
    }
    Executor* executor = group.release();
    executor->setParent(parent);
    return executor;
}

} // namespace kforge::eval
