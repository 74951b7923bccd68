#pragma once
// Finds kforge's data files (resources/: search descriptors, expert kernels, later prompt
// templates and skills) on disk, so that an expert can change or add one without recompiling.

#include <QString>
#include <QStringList>

namespace kforge::util {

class ResourceLocator {
public:
    // Folders searched, in order: $KFORGE_RESOURCES_DIR, the installed share folder
    // (<prefix>/share/kforge/resources), the source tree's resources/ (for uninstalled builds).
    static QStringList dirs();
    // The first existing file or folder at `relative` under dirs(); empty when there is none.
    static QString find(const QString& relative);
    // What to tell users when find(relative) found nothing: "the built-in <what> (<relative>) could
    // not be found; looked in ...; set KFORGE_RESOURCES_DIR ...".
    static QString notFound(const QString& relative, const QString& what);
    // The user's own data folder (QStandardPaths' app data location).
    static QString userDir();
};

} // namespace kforge::util
