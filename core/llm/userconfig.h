#pragma once
// Where the user's own LLM files live: ~/.config/kforge/ (QStandardPaths::GenericConfigLocation
// plus "kforge"), as the README says: llm-endpoints.json, llm-prices.json. Earlier versions read
// ~/.config/kforge/kforge/ instead; a file there is still read, with a warning that says where it
// should move. A file that is almost right (endpoints.json beside llm-endpoints.json, the right
// name in ~/.config or in the data folder) would otherwise be ignored without a word, so it is
// named in a warning too.

#include <QString>
#include <QStringList>

namespace kforge::llm {

// ~/.config/kforge; empty when the platform has no configuration folder.
QString userConfigDir();

struct UserConfigFile {
    QString path;         // the file to read: <dir>/<name>, else <dir>/kforge/<name>; empty when neither exists
    QString expected;     // <dir>/<name>, where the file belongs
    QStringList warnings; // an old location, or near misses, each naming the file and the fix
};

// Looks for `fileName` (described as `what` in warnings, "the LLM endpoints") in `dir` and in the
// older `dir`/kforge; files named like it (without "llm-", singular or plural, '_' for '-') in
// those two folders, and files of its exact name in `strayDirs`, are near misses.
UserConfigFile findUserConfigFile(const QString& dir, const QString& fileName, const QString& what,
                                  const QStringList& strayDirs = {});

// The same in userConfigDir(), with ~/.config, its llm/ subfolder and kforge's data folders as the
// stray folders. Each warning goes to the kforge.llm log once per process. Returns the file to
// read, or an empty string when there is none.
QString userConfigFileToRead(const QString& fileName, const QString& what);

} // namespace kforge::llm
