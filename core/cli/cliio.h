#pragma once
// Output helpers of the headless commands: results to stdout, messages to stderr.

#include "expected.h"

#include <QString>
#include <QStringList>
#include <QTextStream>

#include <memory>

class QCommandLineParser;

namespace kforge::store {
class RunStore;
}
namespace kforge::llm {
struct LlmSettings;
}

namespace kforge::cli {

QTextStream& out();
QTextStream& err();
// Prints "kforge: <message>" to stderr and returns `code`.
int fail(int code, const QString& message);

// -h, --help for a command. Not QCommandLineParser::addHelpOption(): its --help-all lists Qt's
// window-system options (-platform, -style, ...), which no command takes.
void addHelpOption(QCommandLineParser& p);
// QCommandLineParser::process(args) for `kforge <command>`, whose --help names the command in its
// usage line ("Usage: kforge eval [options]"). Help and bad options exit, as process() does.
void process(QCommandLineParser& p, const QStringList& args, const QString& command);

// Every command that reads runs takes the store the same way (--db FILE).
QString defaultStorePath();
void addStoreOption(QCommandLineParser& p);
QString storePath(const QCommandLineParser& p);
// A path that does not exist is an error rather than an empty store. Commands that only read open
// it for reading: that never changes the file (an older schema is not upgraded in place) and works
// on a read-only file or folder; `forWriting` (review decisions) opens and upgrades it as a run does.
spec::Expected<std::unique_ptr<store::RunStore>> openExistingStore(const QString& path, bool forWriting = false);

// --pytorch-rounds of `kforge eval` and `kforge run`, read into `rounds` when it is set: false with
// `error` set when it is not a whole number or protocol::pytorchRoundsProblem() refuses it.
bool readPyTorchRounds(const QCommandLineParser& p, int& rounds, QString& error);

// The --llm* options of `kforge run`, and the settings they make (endpoints resolved from the
// built-in presets, the user's file and --llm-endpoint). False with `error` set on bad input.
void addLlmOptions(QCommandLineParser& p);
bool applyLlmOptions(const QCommandLineParser& p, llm::LlmSettings& settings, QString& error);

int evalCommand(const QStringList& args);
int importCommand(const QStringList& args);
int benchCommand(const QStringList& args);
int doctorCommand(const QStringList& args);
int tasksCommand(const QStringList& args);
int runCommand(const QStringList& args);
int runsCommand(const QStringList& args);
int exportCommand(const QStringList& args);
int reviewCommand(const QStringList& args);
int experienceCommand(const QStringList& args);
int llmCommand(const QStringList& args);

} // namespace kforge::cli
