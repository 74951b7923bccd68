#pragma once
// A single-node Slurm cluster for one test or benchmark: munged with a key made for it, slurmctld
// and slurmd from Debian's packages (packaging/install-deps.sh installs them), every file in a
// temporary folder, free ports on 127.0.0.1, and SLURM_CONF set so that srun, scancel and squeue,
// in this process and its children, talk to it. The node offers `cpus` CPUs whatever the machine
// has (SlurmdParameters=config_overrides), so that many pilots fit on a small machine.

#include "localsshd.h" // freePort()

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <pwd.h>
#include <unistd.h>

#include <array>

namespace kforgetest {

class LocalSlurm {
public:
    static constexpr const char* kNode = "kforge0";

    // Empty when the cluster's node is idle and takes jobs; else why it cannot be had here.
    QString start(int cpus = 32) {
        for (const char* program : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd"})
            if (!QFileInfo(QLatin1String(program)).isExecutable())
                return QStringLiteral("no %1 (packaging/install-deps.sh installs munge, slurmctld and slurmd)")
                    .arg(QLatin1String(program));
        if (QStandardPaths::findExecutable(QStringLiteral("srun")).isEmpty())
            return QStringLiteral("no srun on PATH (packaging/install-deps.sh installs slurm-client)");
        if (!m_dir.isValid())
            return QStringLiteral("no temporary folder");
        for (const char* sub : {"state", "spool", "log"})
            QDir(m_dir.path()).mkpath(QLatin1String(sub));

        // munge: a key of our own; the socket in our folder, named in slurm.conf.
        QFile key(path(QStringLiteral("munge.key")));
        QFile random(QStringLiteral("/dev/urandom"));
        if (!key.open(QIODevice::WriteOnly) || !random.open(QIODevice::ReadOnly)
            || key.write(random.read(1024)) != 1024)
            return QStringLiteral("cannot write the munge key");
        key.close();
        key.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        if (QString why = startDaemon(m_munged, QStringLiteral("/usr/sbin/munged"),
                                      {QStringLiteral("-F"), QStringLiteral("--force"),
                                       QStringLiteral("--key-file=") + path(QStringLiteral("munge.key")),
                                       QStringLiteral("--socket=") + path(QStringLiteral("munge.sock")),
                                       QStringLiteral("--pid-file=") + path(QStringLiteral("munged.pid")),
                                       QStringLiteral("--seed-file=") + path(QStringLiteral("munge.seed")),
                                       QStringLiteral("--log-file=") + path(QStringLiteral("log/munged.log"))});
            !why.isEmpty())
            return why;
        if (!QTest::qWaitFor([&] { return QFileInfo::exists(path(QStringLiteral("munge.sock"))); }, 10000))
            return QStringLiteral("munged made no socket: %1").arg(log(QStringLiteral("munged.log")));

        const int controllerPort = freePort();
        const int nodePort = freePort();
        if (controllerPort <= 0 || nodePort <= 0 || controllerPort == nodePort)
            return QStringLiteral("no free ports on 127.0.0.1");
        std::array<char, 256> host{};
        ::gethostname(host.data(), host.size() - 1);
        const QString hostName = QString::fromLocal8Bit(host.data()).section(u'.', 0, 0);
        const passwd* me = ::getpwuid(::getuid());
        const QString user = me ? QString::fromLocal8Bit(me->pw_name) : QStringLiteral("root");
        QFile conf(path(QStringLiteral("slurm.conf")));
        if (!conf.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write slurm.conf");
        conf.write(
            QStringLiteral("ClusterName=kforgetest\n"
                           "SlurmctldHost=%1(127.0.0.1)\n"
                           "SlurmctldPort=%2\nSlurmdPort=%3\n"
                           "SlurmUser=%4\nSlurmdUser=%4\n"
                           "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%5\n"
                           "StateSaveLocation=%6\nSlurmdSpoolDir=%7\n"
                           "SlurmctldPidFile=%8\nSlurmdPidFile=%9\n"
                           "SlurmctldLogFile=%10\nSlurmdLogFile=%11\n"
                           "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                           "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
                           "SwitchType=switch/none\nMpiDefault=none\n"
                           "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                           "SlurmdParameters=config_overrides\nReturnToService=2\n"
                           "KillWait=2\nInactiveLimit=0\nMinJobAge=2\n"
                           "NodeName=%12 NodeHostname=%1 NodeAddr=127.0.0.1 CPUs=%13 State=UNKNOWN\n"
                           "PartitionName=kforge Nodes=%12 Default=YES MaxTime=INFINITE State=UP\n")
                .arg(hostName)
                .arg(controllerPort)
                .arg(nodePort)
                .arg(user, path(QStringLiteral("munge.sock")), path(QStringLiteral("state")),
                     path(QStringLiteral("spool")), path(QStringLiteral("slurmctld.pid")),
                     path(QStringLiteral("slurmd.pid")), path(QStringLiteral("log/slurmctld.log")),
                     path(QStringLiteral("log/slurmd.log")), QLatin1String(kNode))
                .arg(cpus)
                .toUtf8());
        conf.close();
        qputenv("SLURM_CONF", path(QStringLiteral("slurm.conf")).toUtf8());
        m_confSet = true;

        const QString confArg = path(QStringLiteral("slurm.conf"));
        if (QString why = startDaemon(m_slurmctld, QStringLiteral("/usr/sbin/slurmctld"),
                                      {QStringLiteral("-D"), QStringLiteral("-i"), QStringLiteral("-f"), confArg});
            !why.isEmpty())
            return why;
        if (QString why = startDaemon(
                m_slurmd, QStringLiteral("/usr/sbin/slurmd"),
                {QStringLiteral("-D"), QStringLiteral("-f"), confArg, QStringLiteral("-N"), QLatin1String(kNode)});
            !why.isEmpty())
            return why;
        const bool idle = QTest::qWaitFor(
            [&] {
                QProcess sinfo;
                sinfo.start(QStringLiteral("sinfo"),
                            {QStringLiteral("-h"), QStringLiteral("-o"), QStringLiteral("%t")});
                return sinfo.waitForFinished(10000) && sinfo.readAllStandardOutput().trimmed() == "idle";
            },
            60000);
        if (!idle)
            return QStringLiteral("the Slurm node never became idle.\nslurmctld: %1\nslurmd: %2")
                .arg(log(QStringLiteral("slurmctld.log")), log(QStringLiteral("slurmd.log")));
        return {};
    }

    ~LocalSlurm() {
        // Jobs first (their steps are slurmd's children), then the daemons, newest first.
        if (m_slurmctld.state() == QProcess::Running)
            QProcess::execute(QStringLiteral("scancel"), {QStringLiteral("--partition=kforge")});
        for (QProcess* daemon : {&m_slurmd, &m_slurmctld, &m_munged}) {
            if (daemon->state() == QProcess::NotRunning)
                continue;
            daemon->terminate();
            if (!daemon->waitForFinished(10000)) {
                daemon->kill();
                daemon->waitForFinished(5000);
            }
        }
        if (m_confSet)
            qunsetenv("SLURM_CONF");
    }

    // The ids and names of the jobs in the queue, "17 kforge-ab12cd34ef56 R" a line.
    static QStringList jobs() {
        QProcess squeue;
        squeue.start(QStringLiteral("squeue"),
                     {QStringLiteral("-h"), QStringLiteral("-o"), QStringLiteral("%i %j %t")});
        if (!squeue.waitForFinished(10000))
            return {QStringLiteral("squeue did not answer")};
        return QString::fromUtf8(squeue.readAllStandardOutput()).split(u'\n', Qt::SkipEmptyParts);
    }

    QString path(const QString& name) const { return m_dir.filePath(name); }
    // The last lines of one of the daemons' logs, for messages.
    QString log(const QString& name) const {
        QFile f(path(QStringLiteral("log/") + name));
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll().right(1500)) : QStringLiteral("(no log)");
    }

private:
    static QString startDaemon(QProcess& process, const QString& program, const QStringList& args) {
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(program, args);
        if (!process.waitForStarted(10000))
            return QStringLiteral("%1 did not start: %2").arg(program, process.errorString());
        // One that exits at once (a bad configuration) says why on its output.
        if (process.waitForFinished(300))
            return QStringLiteral("%1 exited at once: %2")
                .arg(program, QString::fromUtf8(process.readAll().right(1500)));
        return {};
    }

    QTemporaryDir m_dir;
    QProcess m_munged;
    QProcess m_slurmctld;
    QProcess m_slurmd;
    bool m_confSet = false;
};

} // namespace kforgetest
