// kforge: the workbench (GUI by default) and its headless commands.

#include "cli.h"
#include "cliio.h"
#include "mainwindow.h"
#include "protocol.h"

#include <QApplication>

#include <cstdio>

using namespace kforge;

namespace {

const QString kDemoTask = QStringLiteral("softmax");

bool hasDisplay() {
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           || !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

void setIdentity() {
    QCoreApplication::setOrganizationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KFORGE_VERSION));
}

int runGui(int argc, char** argv, bool demo) {
    QApplication app(argc, argv);
    setIdentity();
    ui::MainWindow window;
    window.show();
    if (demo)
        window.evaluateBaseline(kDemoTask);
    return QApplication::exec();
}

} // namespace

int main(int argc, char** argv) {
    const QString command = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
    if (command == QLatin1String("--version") || command == QLatin1String("-v")) {
        std::printf("kforge %s (worker protocol %d)\n", KFORGE_VERSION, protocol::kVersion);
        return 0;
    }
    if (command == QLatin1String("--help") || command == QLatin1String("-h") || command == QLatin1String("help")) {
        QCoreApplication app(argc, argv);
        cli::out() << cli::usage(true);
        return 0;
    }
    const bool demo = command == QLatin1String("demo");
    if (command.isEmpty() || demo) {
        if (hasDisplay())
            return runGui(argc, argv, demo);
        QCoreApplication app(argc, argv);
        setIdentity();
        return cli::demoHeadless();
    }

    QCoreApplication app(argc, argv);
    setIdentity();
    QStringList args = QCoreApplication::arguments();
    args.removeAt(1); // the command; QCommandLineParser sees "kforge --options..."
    if (auto code = cli::dispatch(command, args))
        return *code;
    cli::out() << cli::usage(true);
    return cli::fail(cli::ExitUsage, QStringLiteral("unknown command '%1'").arg(command));
}
