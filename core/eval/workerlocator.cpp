#include "eval/workerlocator.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <algorithm>

namespace kforge::eval {

namespace {

const QString kOverridePrefix = QStringLiteral("KFORGE_WORKER_");

bool isExecutableFile(const QString& path) {
    const QFileInfo info(path);
    return info.isFile() && info.isExecutable();
}

bool isBackendName(const QString& backend) {
    return !backend.isEmpty() && std::all_of(backend.begin(), backend.end(), [](QChar c) {
        return (c.isLetterOrNumber() && c.unicode() < 128) || c == u'-' || c == u'_';
    });
}

QString currentApplicationDir() {
    // Without an application object Qt can only guess (and warns), so search no program folders.
    return QCoreApplication::instance() ? QCoreApplication::applicationDirPath() : QString();
}

} // namespace

WorkerLocator::WorkerLocator() : WorkerLocator(QProcessEnvironment::systemEnvironment(), currentApplicationDir()) {}

WorkerLocator::WorkerLocator(const QProcessEnvironment& environment, QString applicationDir)
    : m_environment(environment), m_applicationDir(std::move(applicationDir)) {}

QString WorkerLocator::programName(const QString& backend) {
    return QStringLiteral("kforge-worker-") + backend;
}

QString WorkerLocator::overrideVariable(const QString& backend) {
    QString name = backend.toUpper();
    name.replace(u'-', u'_');
    return kOverridePrefix + name;
}

QStringList WorkerLocator::searchDirectories() const {
    QStringList dirs;
    const QString workerDir = m_environment.value(QString::fromLatin1(kDirectoryVariable));
    if (!workerDir.isEmpty())
        dirs << QDir::cleanPath(workerDir);
    if (!m_applicationDir.isEmpty()) {
        // The build tree keeps workers beside the app; this build's install rules put them in
        // KFORGE_BIN_TO_WORKERS (CMAKE_INSTALL_LIBEXECDIR), other packages under libexec or lib.
        dirs << QDir::cleanPath(m_applicationDir)
             << QDir::cleanPath(m_applicationDir + QStringLiteral("/" KFORGE_BIN_TO_WORKERS))
             << QDir::cleanPath(m_applicationDir + QStringLiteral("/../libexec/kforge"))
             << QDir::cleanPath(m_applicationDir + QStringLiteral("/../lib/kforge"));
    }
    dirs.removeDuplicates();
    return dirs;
}

spec::Expected<QString> WorkerLocator::find(const QString& backend) {
    return WorkerLocator().locate(backend);
}

spec::Expected<QString> WorkerLocator::locate(const QString& backend) const {
    if (!isBackendName(backend))
        return spec::fail(
            QStringLiteral("'%1' is not a backend name (letters, digits, - and _ only)").arg(backend).toStdString());

    const QString program = programName(backend);
    const QString variable = overrideVariable(backend);
    const QString overridePath = m_environment.value(variable);
    if (!overridePath.isEmpty()) {
        // An explicit choice that does not work is reported rather than silently replaced by
        // whatever else is installed: the user meant that file.
        if (isExecutableFile(overridePath))
            return QFileInfo(overridePath).absoluteFilePath();
        return spec::fail(QStringLiteral("%1 is set to '%2', which is not an executable file. Point it at a built %3, "
                                         "or unset it to search the usual places.")
                              .arg(variable, overridePath, program)
                              .toStdString());
    }

    const QStringList dirs = searchDirectories();
    for (const QString& dir : dirs) {
        const QString candidate = QDir(dir).filePath(program);
        if (isExecutableFile(candidate))
            return QFileInfo(candidate).absoluteFilePath();
    }

    QStringList searched;
    searched << QStringLiteral("  $%1 (not set)").arg(variable);
    if (m_environment.value(QString::fromLatin1(kDirectoryVariable)).isEmpty())
        searched << QStringLiteral("  $%1 (not set)").arg(QString::fromLatin1(kDirectoryVariable));
    for (const QString& dir : dirs)
        searched << QStringLiteral("  ") + dir;
    return spec::fail(
        QStringLiteral("%1 was not found. Searched:\n%2\nSet %3 to the worker's full path, or %4 to the "
                       "folder that holds it (is the %5 backend built?).")
            .arg(program, searched.join(u'\n'), variable, QString::fromLatin1(kDirectoryVariable), backend)
            .toStdString());
}

QList<WorkerLocation> WorkerLocator::available() const {
    QList<WorkerLocation> found;
    auto known = [&found](const QString& backend) {
        return std::any_of(found.cbegin(), found.cend(), [&](const WorkerLocation& l) { return l.backend == backend; });
    };

    const QStringList keys = m_environment.keys();
    for (const QString& key : keys) {
        if (!key.startsWith(kOverridePrefix) || key == QString::fromLatin1(kDirectoryVariable))
            continue;
        const QString backend = key.mid(kOverridePrefix.size()).toLower();
        if (!isBackendName(backend) || known(backend))
            continue;
        if (auto path = locate(backend))
            found << WorkerLocation{backend, *path};
    }

    const QString prefix = programName(QString());
    const QStringList dirs = searchDirectories();
    for (const QString& dir : dirs) {
        const QStringList names = QDir(dir).entryList({prefix + u'*'}, QDir::Files | QDir::Executable, QDir::Name);
        for (const QString& name : names) {
            const QString backend = name.mid(prefix.size());
            if (!isBackendName(backend) || known(backend))
                continue;
            // locate() again so that the order of precedence is exactly the one submit-time uses.
            if (auto path = locate(backend))
                found << WorkerLocation{backend, *path};
        }
    }

    std::sort(found.begin(), found.end(),
              [](const WorkerLocation& a, const WorkerLocation& b) { return a.backend < b.backend; });
    return found;
}

} // namespace kforge::eval
