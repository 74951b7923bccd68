#pragma once
// Finds tasks: the built-in ones shipped with kforge and the user's own. A task is named by its
// folder name or given as a path to its folder.

#include "taskspec.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace kforge::task {

struct TaskEntry {
    QString name;
    QString dir;
    bool builtIn = false;
};

class TaskCatalog {
public:
    // Folders searched for built-in tasks, in order: $KFORGE_TASKS_DIR, the installed share folder,
    // the source tree (for builds that are not installed).
    static QStringList builtInDirs();
    // The user's own tasks (QStandardPaths' app data folder + "/tasks").
    static QString userDir();

    static QList<TaskEntry> list();

    // Resolves a task name or folder path to its folder, or says where it looked.
    static spec::Expected<QString> resolve(const QString& nameOrPath);
    // Resolves and loads it.
    static spec::Expected<spec::TaskBundle> load(const QString& nameOrPath);
};

} // namespace kforge::task
