#pragma once
// For the command-line tests: runs kforge-headless ($KFORGE_HEADLESS_BIN) with arguments and
// collects what it said, and writes the files (kernels, tasks) they hand it.

#include <QByteArray>
#include <QFile>
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

// Writes `bytes` as the whole of the file at `path`; false if it could not be written.
inline bool writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

} // namespace kforgetest
