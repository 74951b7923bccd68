#pragma once
// An sshd on 127.0.0.1 for one test or benchmark: its own host key, a client key it accepts, a free
// port, and KFORGE_SSH_ARGS set so that kforge's ssh workers use that key. Header-only, for the
// tests and benchmarks that need it (packaging/install-deps.sh installs openssh-server).

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kforgetest {

// A port on 127.0.0.1 that nothing listens on now: bound to port 0, noted, let go.
inline int freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

// An sshd on 127.0.0.1 for this test alone: its own host key, a client key it accepts, a free port.
class LocalSshd {
public:
    // Empty when the server accepts connections; else why it cannot be had here.
    QString start() {
        if (!QFileInfo::exists(QStringLiteral("/usr/sbin/sshd")))
            return QStringLiteral("no /usr/sbin/sshd (packaging/install-deps.sh installs openssh-server)");
        if (!m_dir.isValid())
            return QStringLiteral("no temporary folder");
        const auto keygen = [&](const QString& name) {
            return QProcess::execute(QStringLiteral("ssh-keygen"),
                                     {QStringLiteral("-q"), QStringLiteral("-t"), QStringLiteral("ed25519"),
                                      QStringLiteral("-N"), QString(), QStringLiteral("-f"), path(name)})
                   == 0;
        };
        if (!keygen(QStringLiteral("host_key")) || !keygen(QStringLiteral("client_key")))
            return QStringLiteral("ssh-keygen failed");
        QFile::copy(path(QStringLiteral("client_key.pub")), path(QStringLiteral("authorized_keys")));
        m_port = freePort();
        if (m_port <= 0)
            return QStringLiteral("no free port on 127.0.0.1");
        QFile config(path(QStringLiteral("sshd_config")));
        if (!config.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write sshd_config");
        config.write(QStringLiteral("Port %1\nListenAddress 127.0.0.1\nHostKey %2\nAuthorizedKeysFile %3\n"
                                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                                    "StrictModes no\nPermitRootLogin prohibit-password\nPidFile %4\n")
                         .arg(m_port)
                         .arg(path(QStringLiteral("host_key")), path(QStringLiteral("authorized_keys")),
                              path(QStringLiteral("sshd.pid")))
                         .toUtf8());
        config.close();
        QDir().mkpath(QStringLiteral("/run/sshd")); // privilege separation, when run as root
        m_sshd.setProcessChannelMode(QProcess::MergedChannels);
        m_sshd.start(QStringLiteral("/usr/sbin/sshd"), {QStringLiteral("-D"), QStringLiteral("-e"),
                                                        QStringLiteral("-f"), path(QStringLiteral("sshd_config"))});
        if (!m_sshd.waitForStarted(10000))
            return QStringLiteral("sshd did not start");
        // Ready once a connection is accepted.
        const bool up = QTest::qWaitFor(
            [&] {
                QProcess check;
                check.start(QStringLiteral("ssh"),
                            clientArguments()
                                + QStringList{QStringLiteral("-p"), QString::number(m_port),
                                              QStringLiteral("127.0.0.1"), QStringLiteral("true")});
                return check.waitForFinished(10000) && check.exitCode() == 0;
            },
            20000);
        if (!up)
            return QStringLiteral("sshd on port %1 accepts no connection: %2")
                .arg(m_port)
                .arg(QString::fromUtf8(m_sshd.readAll().right(800)));
        qputenv("KFORGE_SSH_ARGS", clientArguments().join(u' ').toUtf8());
        return {};
    }
    ~LocalSshd() {
        qunsetenv("KFORGE_SSH_ARGS");
        if (m_sshd.state() != QProcess::NotRunning) {
            m_sshd.terminate();
            if (!m_sshd.waitForFinished(5000))
                m_sshd.kill();
        }
    }
    QStringList clientArguments() const {
        return {QStringLiteral("-i"), path(QStringLiteral("client_key")),
                QStringLiteral("-o"), QStringLiteral("StrictHostKeyChecking=no"),
                QStringLiteral("-o"), QStringLiteral("UserKnownHostsFile=/dev/null"),
                QStringLiteral("-o"), QStringLiteral("LogLevel=ERROR"),
                QStringLiteral("-o"), QStringLiteral("BatchMode=yes")};
    }
    int port() const { return m_port; }
    QString path(const QString& name) const { return m_dir.filePath(name); }

private:
    QTemporaryDir m_dir;
    QProcess m_sshd;
    int m_port = 0;
};

} // namespace kforgetest
