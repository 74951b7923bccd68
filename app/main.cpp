// kforge: the workbench (GUI by default) and its headless commands.

#include "cli/cli.h"
#include "cli/cliio.h"
#include "mainwindow.h"
#include "protocol.h"
#include "theme.h"
#include "viewrenderer.h"
#include "workerthread.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <cstdio>
#include <cstring>

using namespace kforge;

namespace {

const QString kDemoTask = QStringLiteral("softmax");

bool hasDisplay() {
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           || !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

QtMessageHandler g_previousHandler = nullptr;

// The offscreen platform warns for every window call it cannot honour (raise, size hints,
// reparenting) while the views are drawn, and a headless session (a container, ssh, CI) has no
// XDG_RUNTIME_DIR, for which Qt picks a private folder itself: nothing a user can act on, so
// those lines are dropped.
void quietOffscreenWarnings(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (type == QtWarningMsg
        && (message.startsWith(QLatin1String("This plugin does not support"))
            || message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR not set"))))
        return;
    g_previousHandler(type, context, message);
}

// Draws windows offscreen: the headless demo and render-views where there is no display.
void useOffscreenPlatform() {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    g_previousHandler = qInstallMessageHandler(quietOffscreenWarnings); // Qt's own when none was set
}

void setIdentity() {
    QCoreApplication::setOrganizationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationName(QStringLiteral("kforge"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KFORGE_VERSION));
    // The installed desktop entry's name: Wayland compositors match the window to its icon by it.
    QGuiApplication::setDesktopFileName(QStringLiteral(KFORGE_APP_ID));
}

// Where a demo run is stored: a new file per demo, beside the user's other runs.
QString demoStorePath() {
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
        .filePath(QStringLiteral("runs/demo-%1-%2.kforge")
                      .arg(kDemoTask, QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
}

// kforge [demo | RUN-FILE]
int runGui(int argc, char** argv, bool demo, const QString& runFile) {
    QApplication app(argc, argv);
    setIdentity();
    if (const auto chosen = ui::theme::savedChoice(); chosen != ui::theme::Choice::System)
        ui::theme::apply(chosen);
    ui::MainWindow window;
    window.setExperienceLibrary({});
    window.show();
    if (demo)
        window.startDemo(kDemoTask, demoStorePath());
    else if (!runFile.isEmpty())
        window.openStoreFile(runFile);
    const int code = QApplication::exec();
    // The event loop is over: let the reader and any engine still stopping its workers end.
    ui::joinWorkerThreads();
    return code;
}

// kforge render-views: every view of a stored run as PNG files; works without a display.
int renderViews(int argc, char** argv) {
    if (!hasDisplay())
        useOffscreenPlatform();
    QApplication app(argc, argv);
    setIdentity();
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Renders every view of a stored run to PNG files: the window, candidates, heatmap,\n"
                       "islands, progress, roofline, lineage, diagnostics, LLM log, events, experience and code."));
    cli::addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("run-file"), QStringLiteral("The run store (.kforge)."));
    cli::addStoreOption(p);
    p.addOption(
        {QStringLiteral("run"), QStringLiteral("The run (default: the newest in the store)."), QStringLiteral("ID")});
    p.addOption({QStringLiteral("candidate"), QStringLiteral("The candidate the views show (default: the best)."),
                 QStringLiteral("ID")});
    p.addOption(
        {QStringLiteral("out"), QStringLiteral("The folder to write the PNG files to."), QStringLiteral("DIR")});
    p.addOption({QStringLiteral("experience"), QStringLiteral("The experience library to show (default: yours)."),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("theme"),
                 QStringLiteral("The colours: system (the platform's palette), light or dark (default: the "
                                "workbench's View > Theme choice)."),
                 QStringLiteral("THEME")});
    QStringList args = QCoreApplication::arguments();
    args.removeAt(1);
    cli::process(p, args, QStringLiteral("render-views"));
    ui::RenderOptions o;
    o.storePath = p.positionalArguments().value(0, p.isSet(QStringLiteral("db")) ? cli::storePath(p) : QString());
    if (o.storePath.isEmpty())
        return cli::fail(cli::ExitUsage,
                         QStringLiteral("render-views needs a run file (kforge render-views RUN.kforge --out DIR)"));
    o.outDir = p.value(QStringLiteral("out"));
    if (o.outDir.isEmpty())
        return cli::fail(cli::ExitUsage, QStringLiteral("render-views needs --out DIR"));
    bool ok = true;
    if (p.isSet(QStringLiteral("run")))
        o.run = p.value(QStringLiteral("run")).toLongLong(&ok);
    if (ok && p.isSet(QStringLiteral("candidate")))
        o.candidate = p.value(QStringLiteral("candidate")).toLongLong(&ok);
    if (!ok)
        return cli::fail(cli::ExitUsage, QStringLiteral("--run and --candidate take a number"));
    o.experiencePath = p.value(QStringLiteral("experience"));
    const QString themeName = p.value(QStringLiteral("theme"));
    const auto chosen = themeName.isEmpty() ? ui::theme::savedChoice() : ui::theme::choiceFromName(themeName);
    if (!chosen)
        return cli::fail(cli::ExitUsage,
                         QStringLiteral("--theme takes system, light or dark, not '%1'").arg(themeName));
    if (*chosen != ui::theme::Choice::System)
        ui::theme::apply(*chosen);
    auto written = ui::renderViews(o);
    if (!written)
        return cli::fail(cli::ExitSetup, QString::fromStdString(written.error()));
    for (const QString& file : *written)
        cli::out() << file << '\n';
    cli::out().flush();
    return 0;
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
    if (command == QLatin1String("render-views"))
        return renderViews(argc, argv);
    const bool demo = command == QLatin1String("demo");
    const bool runFile = command.endsWith(QLatin1String(".kforge"));
    if (demo && argc > 2 && (std::strcmp(argv[2], "--help") == 0 || std::strcmp(argv[2], "-h") == 0)) {
        QCoreApplication app(argc, argv);
        setIdentity();
        cli::out() << cli::demoHelp(QFileInfo(demoStorePath()).absolutePath());
        return 0;
    }
    if (command.isEmpty() || demo || runFile) {
        if (hasDisplay())
            return runGui(argc, argv, demo, runFile ? command : QString());
        if (runFile)
            return cli::fail(
                cli::ExitUsage,
                QStringLiteral("no display to show %1 (try: kforge render-views %1 --out DIR)").arg(command));
        // Headless: the demo search, then every view of its run as PNG files (offscreen).
        useOffscreenPlatform();
        QApplication app(argc, argv);
        setIdentity();
        const QString store = demoStorePath();
        QDir().mkpath(QFileInfo(store).absolutePath());
        const int code = cli::demoHeadless(store);
        if (code != cli::ExitCorrect)
            return code;
        ui::RenderOptions views;
        views.storePath = store;
        views.outDir = store.chopped(7) + QStringLiteral("-views");
        auto written = ui::renderViews(views);
        if (!written)
            return cli::fail(
                cli::ExitSetup,
                QStringLiteral("cannot render the views: %1").arg(QString::fromStdString(written.error())));
        cli::out() << QStringLiteral("views of the run (what the window shows): %1/*.png\n").arg(views.outDir);
        return 0;
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
