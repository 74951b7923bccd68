#include "task/taskcatalog.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace kforge::task {

QStringList TaskCatalog::builtInDirs() {
    QStringList dirs;
    const QString env = qEnvironmentVariable("KFORGE_TASKS_DIR");
    if (!env.isEmpty())
        dirs << env;
    const QString app = QCoreApplication::applicationDirPath();
    if (!app.isEmpty())
        dirs << QDir::cleanPath(app + QStringLiteral("/" KFORGE_BIN_TO_DATA "/tasks"));
#ifdef KFORGE_SOURCE_TASKS_DIR
    dirs << QStringLiteral(KFORGE_SOURCE_TASKS_DIR);
#endif
    QStringList existing;
    for (const QString& d : dirs)
        if (QFileInfo(d).isDir() && !existing.contains(QDir::cleanPath(d)))
            existing << QDir::cleanPath(d);
    return existing;
}

QString TaskCatalog::userDir() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/tasks");
}

QList<TaskEntry> TaskCatalog::list() {
    QList<TaskEntry> entries;
    QStringList seen;
    auto scan = [&](const QString& root, bool builtIn) {
        const QDir dir(root);
        for (const QString& name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            if (seen.contains(name) || !QFileInfo::exists(dir.filePath(name + QStringLiteral("/task.json"))))
                continue;
            seen << name;
            entries.append({name, dir.filePath(name), builtIn});
        }
    };
    for (const QString& d : builtInDirs())
        scan(d, true);
    scan(userDir(), false);
    return entries;
}

spec::Expected<QString> TaskCatalog::resolve(const QString& nameOrPath) {
    const QFileInfo direct(nameOrPath);
    if (direct.isDir()) {
        if (!QFileInfo::exists(direct.absoluteFilePath() + QStringLiteral("/task.json")))
            return spec::fail(nameOrPath.toStdString() + ": this folder has no task.json");
        return direct.absoluteFilePath();
    }
    QStringList searched = builtInDirs();
    searched << userDir();
    for (const QString& root : searched) {
        const QString candidate = root + QLatin1Char('/') + nameOrPath;
        if (QFileInfo::exists(candidate + QStringLiteral("/task.json")))
            return QDir::cleanPath(candidate);
    }
    QStringList names;
    for (const TaskEntry& e : list())
        names << e.name;
    return spec::fail("no task named '" + nameOrPath.toStdString() + "' (searched "
                      + searched.join(QStringLiteral(", ")).toStdString() + "; known tasks: "
                      + (names.isEmpty() ? std::string("none") : names.join(QStringLiteral(", ")).toStdString()) + ")");
}

spec::Expected<spec::TaskBundle> TaskCatalog::load(const QString& nameOrPath) {
    auto dir = resolve(nameOrPath);
    if (!dir)
        return spec::Error{dir.error()};
    return spec::loadTaskDir(dir->toStdString());
}

} // namespace kforge::task
