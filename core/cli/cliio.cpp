#include "cli/cliio.h"

#include "cli/cli.h"
#include "protocol.h"
#include "store/runstore.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QFileInfo>
#include <QStandardPaths>

#include <cstdlib>

namespace kforge::cli {

QTextStream& out() {
    static QTextStream s(stdout);
    return s;
}

QTextStream& err() {
    static QTextStream s(stderr);
    return s;
}

int fail(int code, const QString& message) {
    err() << "kforge: " << message << Qt::endl;
    return code;
}

void addHelpOption(QCommandLineParser& p) {
    p.addOption({{QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Displays this help.")});
}

void process(QCommandLineParser& p, const QStringList& args, const QString& command) {
    // A usage error exits with ExitUsage: process() would exit with 1, which `eval` and `run` use for
    // a kernel that is not correct.
    const QString program = QFileInfo(QCoreApplication::arguments().value(0)).fileName();
    if (!p.parse(args)) {
        QString error = p.errorText(); // "Unknown option 'x'." ends in a full stop; the pointer follows it
        if (error.endsWith(QLatin1Char('.')))
            error.chop(1);
        fail(ExitUsage, QStringLiteral("%1 (see `%2 %3 --help`)").arg(error, program, command));
        std::exit(ExitUsage);
    }
    if (p.isSet(QStringLiteral("help"))) {
        // QCommandLineParser's usage line names the program as it was started and not the command:
        // "Usage: /usr/bin/kforge [options]" becomes "Usage: kforge eval [options]".
        QString text = p.helpText();
        const QString usage = QStringLiteral("Usage: ");
        const qsizetype options = text.indexOf(QStringLiteral(" [options]"));
        const qsizetype lineEnd = text.indexOf(QLatin1Char('\n'));
        if (text.startsWith(usage) && options > 0 && (lineEnd < 0 || options < lineEnd))
            text.replace(usage.size(), options - usage.size(), program + QLatin1Char(' ') + command);
        out() << text;
        out().flush();
        std::exit(ExitCorrect);
    }
}

QString defaultStorePath() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/runs.kforge");
}

void addStoreOption(QCommandLineParser& p) {
    p.addOption({QStringLiteral("db"), QStringLiteral("Run store file (default %1).").arg(defaultStorePath()),
                 QStringLiteral("FILE")});
}

QString storePath(const QCommandLineParser& p) {
    return p.isSet(QStringLiteral("db")) ? p.value(QStringLiteral("db")) : defaultStorePath();
}

spec::Expected<std::unique_ptr<store::RunStore>> openExistingStore(const QString& path, bool forWriting) {
    if (!QFileInfo::exists(path))
        return spec::fail(path.toStdString()
                          + ": no such run store (start one with `kforge run --task NAME --db FILE`)");
    return store::RunStore::open(path, forWriting ? store::OpenMode::ReadWrite : store::OpenMode::ReadOnly);
}

bool readPyTorchRounds(const QCommandLineParser& p, int& rounds, QString& error) {
    const QString name = QStringLiteral("pytorch-rounds");
    if (!p.isSet(name))
        return true;
    bool ok = false;
    const int value = p.value(name).toInt(&ok);
    if (!ok) {
        error = QStringLiteral("--pytorch-rounds must be a whole number, not '%1'").arg(p.value(name));
        return false;
    }
    if (const std::string problem = protocol::pytorchRoundsProblem(value); !problem.empty()) {
        error = QStringLiteral("--pytorch-rounds: %1").arg(QString::fromStdString(problem));
        return false;
    }
    rounds = value;
    return true;
}

} // namespace kforge::cli
