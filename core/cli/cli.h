#pragma once
// The headless commands (eval, doctor, tasks, run, runs, export), shared by the workbench binary
// and by kforge-headless, which links no GUI library and so runs on bare GPU servers.

#include <QString>
#include <QStringList>

#include <optional>

namespace kforge::cli {

// Exit codes of the headless commands.
enum Exit { ExitCorrect = 0, ExitNotCorrect = 1, ExitUsage = 2, ExitSetup = 3, ExitInterrupted = 4 };

// Runs `command` with `args` (args[0] is the program name, the command itself removed).
// Returns nothing when there is no such command. Needs a QCoreApplication.
std::optional<int> dispatch(const QString& command, const QStringList& args);

// The demo search of the built-in demo task, headless, into `storePath` (for `kforge demo` without a
// display); the window's demo runs the same search.
int demoHeadless(const QString& storePath);
// `kforge demo --help`; the demo's run stores go into `storeFolder`.
QString demoHelp(const QString& storeFolder);

// The usage text; `gui` adds the workbench's own lines.
QString usage(bool gui);

} // namespace kforge::cli
