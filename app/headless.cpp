// kforge-headless: kforge's headless commands without any GUI library, for GPU servers and
// containers that have QtCore but no display stack.

#include "cli/cli.h"
#include "cli/cliio.h"
#include "protocol.h"

#include <QCoreApplication>

#include <cstdio>

using namespace kforge;

int main(int argc, char** argv) {
    const QString command = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
    if (command == QLatin1String("--version") || command == QLatin1String("-v")) {
        std::printf("kforge %s (worker protocol %d)\n", KFORGE_VERSION, protocol::kVersion);
        return 0;
    }
    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KFORGE_VERSION));
    if (command.isEmpty() || command == QLatin1String("--help") || command == QLatin1String("-h")
        || command == QLatin1String("help")) {
        cli::out() << cli::usage(false);
        return command.isEmpty() ? cli::ExitUsage : 0;
    }
    QStringList args = QCoreApplication::arguments();
    args.removeAt(1);
    if (auto code = cli::dispatch(command, args))
        return *code;
    cli::out() << cli::usage(false);
    return cli::fail(cli::ExitUsage, QStringLiteral("unknown command '%1'").arg(command));
}
