#include "llm/userconfig.h"

#include "util/logging.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFileInfo>
#include <QMutex>
#include <QMutexLocker>
#include <QSet>
#include <QStandardPaths>

namespace kforge::llm {

namespace {

// Older versions used QStandardPaths::AppConfigLocation with organisation and application both
// "kforge": one folder deeper than the documented one.
const QString kOldSubfolder = QStringLiteral("kforge");

// The names a person might give the file by mistake: "llm-endpoints.json" gives endpoints.json,
// llm-endpoint.json, llm_endpoints.json, endpoint.json, llm_endpoint.json.
QStringList nearMissNames(const QString& fileName) {
    const QFileInfo info(fileName);
    const QString suffix = info.suffix().isEmpty() ? QString() : QLatin1Char('.') + info.suffix();
    QString stem = info.completeBaseName();
    QStringList stems;
    for (const QString& base : {stem, stem.startsWith(QLatin1String("llm-")) ? stem.mid(4) : QString()}) {
        if (base.isEmpty())
            continue;
        const QString other = base.endsWith(QLatin1Char('s')) ? base.chopped(1) : base + QLatin1Char('s');
        for (const QString& s : {base, other}) {
            stems << s;
            if (s.contains(QLatin1Char('-')))
                stems << QString(s).replace(QLatin1Char('-'), QLatin1Char('_'));
        }
    }
    QStringList out;
    for (const QString& s : stems)
        if (s + suffix != fileName && !out.contains(s + suffix))
            out << s + suffix;
    return out;
}

bool isFile(const QString& path) {
    return QFileInfo(path).isFile();
}

} // namespace

QString userConfigDir() {
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
    return base.isEmpty() ? QString() : QDir(base).filePath(QStringLiteral("kforge"));
}

UserConfigFile findUserConfigFile(const QString& dir, const QString& fileName, const QString& what,
                                  const QStringList& strayDirs) {
    UserConfigFile out;
    if (dir.isEmpty())
        return out;
    const QDir home(dir);
    const QString oldDir = home.filePath(kOldSubfolder);
    out.expected = home.filePath(fileName);
    const QString old = QDir(oldDir).filePath(fileName);
    if (isFile(out.expected)) {
        out.path = out.expected;
        if (isFile(old))
            out.warnings << QStringLiteral("%1 is not read: %2 is read instead. Move what the old file adds into "
                                           "%2 and delete the old one.")
                                .arg(old, out.expected);
    } else if (isFile(old)) {
        out.path = old;
        out.warnings << QStringLiteral("%1 is read from an old location: move it to %2.").arg(old, out.expected);
    }
    QStringList seen{QFileInfo(out.expected).absoluteFilePath(), QFileInfo(old).absoluteFilePath()};
    auto nearMiss = [&](const QString& path) {
        const QString absolute = QFileInfo(path).absoluteFilePath();
        if (!isFile(path) || seen.contains(absolute))
            return;
        seen << absolute;
        out.warnings << QStringLiteral("%1 is not read: %2 belong in %3.").arg(path, what, out.expected);
    };
    for (const QString& folder : {dir, oldDir})
        for (const QString& name : nearMissNames(fileName))
            nearMiss(QDir(folder).filePath(name));
    for (const QString& folder : strayDirs)
        if (!folder.isEmpty())
            nearMiss(QDir(folder).filePath(fileName));
    return out;
}

QString userConfigFileToRead(const QString& fileName, const QString& what) {
    const QString dir = userConfigDir();
    QStringList strays;
    if (!dir.isEmpty())
        strays << QFileInfo(dir).path() << QDir(dir).filePath(QStringLiteral("llm"));
    for (const QString& data :
         {util::ResourceLocator::userDir(),
          QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/kforge")})
        if (!data.isEmpty() && !strays.contains(data))
            strays << data << QDir(data).filePath(QStringLiteral("llm"));
    const UserConfigFile file = findUserConfigFile(dir, fileName, what, strays);
    // Endpoints and prices are loaded more than once a run; say each thing once.
    static QMutex mutex;
    static QSet<QString> said;
    const QMutexLocker lock(&mutex);
    for (const QString& warning : file.warnings)
        if (!said.contains(warning)) {
            said.insert(warning);
            qCWarning(lcLlm).noquote() << warning;
        }
    return file.path;
}

} // namespace kforge::llm
