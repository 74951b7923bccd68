#include "util/resourcelocator.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace kforge::util {

QStringList ResourceLocator::dirs() {
    QStringList candidates;
    const QString env = qEnvironmentVariable("KFORGE_RESOURCES_DIR");
    if (!env.isEmpty())
        candidates << env;
    const QString app = QCoreApplication::applicationDirPath();
    if (!app.isEmpty())
        candidates << QDir::cleanPath(app + QStringLiteral("/" KFORGE_BIN_TO_DATA "/resources"));
#ifdef KFORGE_SOURCE_RESOURCES_DIR
    candidates << QStringLiteral(KFORGE_SOURCE_RESOURCES_DIR);
#endif
    QStringList existing;
    for (const QString& d : candidates)
        if (QFileInfo(d).isDir() && !existing.contains(QDir::cleanPath(d)))
            existing << QDir::cleanPath(d);
    return existing;
}

QString ResourceLocator::notFound(const QString& relative, const QString& what) {
    const QStringList searched = dirs();
    return QStringLiteral("the built-in %1 (%2) could not be found; looked in %3. Set KFORGE_RESOURCES_DIR to "
                          "kforge's resources folder.")
        .arg(what, relative,
             searched.isEmpty() ? QStringLiteral("no existing resource folder") : searched.join(QStringLiteral(", ")));
}

QString ResourceLocator::find(const QString& relative) {
    for (const QString& d : dirs()) {
        QString path = d + QLatin1Char('/') + relative;
        if (QFileInfo::exists(path))
            return path;
    }
    return {};
}

QString ResourceLocator::userDir() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
}

} // namespace kforge::util
