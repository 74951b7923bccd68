#pragma once
// Finds the worker executable of a backend (kforge-worker-<backend>), the way Hotspot finds
// perfparser: an environment variable naming the program wins, then KFORGE_WORKER_DIR, then the
// folders an installed or a build-tree kforge keeps its workers in. A failed search says where it
// looked and how to point kforge at a worker, so `kforge doctor` and the pool can show it as is.

#include "expected.h"

#include <QList>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace kforge::eval {

// A worker that is present.
struct WorkerLocation {
    QString backend;
    QString path; // absolute
};

class WorkerLocator {
public:
    // The process environment and QCoreApplication::applicationDirPath().
    WorkerLocator();
    // For tests and for tools that locate workers of another installation.
    WorkerLocator(const QProcessEnvironment& environment, QString applicationDir);

    // The worker's absolute path, or what was searched and which variable overrides it.
    spec::Expected<QString> locate(const QString& backend) const;
    // locate() with the process environment and application folder.
    static spec::Expected<QString> find(const QString& backend);

    // Every backend with a worker present: named by an override variable or found in a search
    // directory. Sorted by backend; the first directory wins when several hold the same worker.
    QList<WorkerLocation> available() const;

    // The directories searched, in order (without the per-backend override variable).
    QStringList searchDirectories() const;

    static QString programName(const QString& backend);      // kforge-worker-<backend>
    static QString overrideVariable(const QString& backend); // KFORGE_WORKER_<BACKEND>
    static constexpr const char* kDirectoryVariable = "KFORGE_WORKER_DIR";

private:
    QProcessEnvironment m_environment;
    QString m_applicationDir;
};

} // namespace kforge::eval
