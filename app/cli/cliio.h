#pragma once
// Output helpers of the headless commands: results to stdout, messages to stderr.

#include <QString>
#include <QTextStream>

namespace kforge::cli {

QTextStream& out();
QTextStream& err();
// Prints "kforge: <message>" to stderr and returns `code`.
int fail(int code, const QString& message);

int evalCommand(const QStringList& args);
int doctorCommand(const QStringList& args);
int tasksCommand(const QStringList& args);
int runCommand(const QStringList& args);
int runsCommand(const QStringList& args);
int exportCommand(const QStringList& args);
int reviewCommand(const QStringList& args);
int experienceCommand(const QStringList& args);

} // namespace kforge::cli
