#pragma once
// Runs kforge-headless ($KFORGE_HEADLESS_BIN) with arguments and collects what it said, for the
// command-line tests.

#include <QByteArray>
#include <QProcess>
#include <QStringList>

namespace kforgetest {

struct HeadlessRun {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

inline HeadlessRun runHeadless(const QStringList& args,
                               const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(qEnvironmentVariable("KFORGE_HEADLESS_BIN"), args);
    if (!p.waitForFinished(600000))
        qFatal("kforge %s did not finish", qPrintable(args.join(QLatin1Char(' '))));
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace kforgetest
