#include "cli/cliio.h"

#include "store/runstore.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QStandardPaths>

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

} // namespace kforge::cli
