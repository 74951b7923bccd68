#include "eval/placement.h"

#include "eval/executorgroup.h"
#include "eval/workerlocator.h"
#include "eval/workerpool.h"

#include <QProcess>
#include <QRegularExpression>
#include <QSet>

namespace kforge::eval {

QString WorkerPlace::label() const {
    if (!ssh)
        return QStringLiteral("this machine");
    return (user.isEmpty() ? QString() : user + u'@') + host + (port ? u':' + QString::number(port) : QString());
}

spec::Expected<WorkerPlace> parseWorkerPlace(const QString& text) {
    const auto bad = [&](const QString& why) {
        return spec::fail(QStringLiteral("--worker %1: %2").arg(text, why).toStdString());
    };
    WorkerPlace p;
    if (text == QLatin1String("local"))
        return p;
    if (!text.startsWith(QLatin1String("ssh://")))
        return bad(QStringLiteral("expected \"local\" or ssh://[user@]host[:port][/path/to/worker]"));
    p.ssh = true;
    QString rest = text.mid(6);
    if (const qsizetype slash = rest.indexOf(u'/'); slash >= 0) {
        p.path = rest.mid(slash);
        rest = rest.left(slash);
        // The path reaches the remote shell as a word: only characters that need no quoting.
        static const QRegularExpression safePath(QStringLiteral(R"(^/[A-Za-z0-9._+/-]*[A-Za-z0-9._+-]$)"));
        if (!safePath.match(p.path).hasMatch())
            return bad(QStringLiteral("the worker path '%1' may hold only letters, digits and . _ + - / "
                                      "(and must name a file)")
                           .arg(p.path));
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

// How many devices the local worker program can use, from its --probe; -1 when it cannot say.
int localDeviceCount(const QString& program, QString& problem) {
    QProcess p;
    p.start(program, {QStringLiteral("--probe")});
    if (!p.waitForFinished(60000) || p.exitStatus() != QProcess::NormalExit) {
        p.kill();
        problem = QStringLiteral("%1 --probe did not answer").arg(program);
        return -1;
    }
    auto probe = protocol::decodeResponse(p.readAllStandardOutput().trimmed().toStdString());
    const auto* result = probe ? std::get_if<protocol::ProbeResult>(&*probe) : nullptr;
    if (!result) {
        problem = QStringLiteral("%1 --probe gave no device list").arg(program);
        return -1;
    }
    return result->available ? static_cast<int>(result->devices.size()) : 0;
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
        if (place.ssh) {
            auto* pool =
                new WorkerPool(backend, QStringLiteral("ssh"), sshArguments(place, backend), placement.workers);
            pool->setPlacement(place.label(), std::nullopt);
            // A connection and a remote worker take longer to say hello than a local one, and an
            // SSH server takes only so many connections at once that have not yet logged in.
            pool->setStartTimeout(std::chrono::seconds(45));
            pool->setMaxStarting(4);
            group->add(pool, place.label());
            continue;
        }
        auto program = WorkerLocator::find(backend);
        if (!program)
            return spec::Error{program.error()};
        if (placement.devices.isEmpty()) {
            auto* pool = new WorkerPool(backend, *program, {}, placement.workers);
            group->add(pool, place.label());
            continue;
        }
        QString problem;
        const int available = placement.devices == QLatin1String("all") ? localDeviceCount(*program, problem) : -1;
        if (available < 0 && placement.devices == QLatin1String("all"))
            return spec::fail(QStringLiteral("--devices all: %1").arg(problem).toStdString());
        auto devices = parseDevices(placement.devices, available);
        if (!devices)
            return spec::Error{devices.error()};
        for (const int d : *devices) {
            auto* pool = new WorkerPool(backend, *program, {}, placement.workers);
            const QString name = QStringLiteral("this machine, device %1").arg(d);
            if (backend == QLatin1String("cuda")) {
                // The worker sees only its GPU, as device 0; results name it by its index here.
                // Where this process is itself limited to some GPUs, device d is the d-th of those.
                const QStringList visible =
                    qEnvironmentVariable("CUDA_VISIBLE_DEVICES").split(u',', Qt::SkipEmptyParts);
                const QString gpu = d < visible.size() ? visible[d].trimmed() : QString::number(d);
                pool->setExtraEnvironment({QStringLiteral("CUDA_VISIBLE_DEVICES=") + gpu});
                pool->setPlacement({}, d);
                group->add(pool, name, 0);
            } else {
                pool->setPlacement({}, d);
                group->add(pool, name, d);
            }
        }
    }
    Executor* executor = group.release();
    executor->setParent(parent);
    return executor;
}

} // namespace kforge::eval
