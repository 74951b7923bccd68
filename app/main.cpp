// kforge: the workbench (GUI by default) and its headless commands.

#include "doctor.h"
#include "evalrequest.h"
#include "logging.h"
#include "mainwindow.h"
#include "resultformat.h"
#include "taskcatalog.h"
#include "workerlocator.h"
#include "workerpool.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QJsonDocument>
#include <QTextStream>
#include <QTimer>

#include <cstdio>
#include <memory>

using namespace kforge;

namespace {

// Exit codes of the headless commands.
enum Exit { ExitCorrect = 0, ExitNotCorrect = 1, ExitUsage = 2, ExitSetup = 3 };

const QString kDemoTask = QStringLiteral("softmax");

QTextStream& out() {
    static QTextStream s(stdout);
    return s;
}

QTextStream& err() {
    static QTextStream s(stderr);
    return s;
}

int fail(int code, const QString& message) {
    err() << "kforge: " << message << Qt::endl;
    return code;
}

bool hasDisplay() {
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           || !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

struct EvalArgs {
    QString task;
    QString kernel;
    task::EvalSettings settings;
    bool json = false;
    int timeoutSeconds = 300;
};

// Runs one evaluation in a worker and prints it. Returns the process exit code.
int runEval(const EvalArgs& a) {
    auto bundle = task::TaskCatalog::load(a.task);
    if (!bundle)
        return fail(ExitSetup, QString::fromStdString(bundle.error()));
    QString source;
    if (!a.kernel.isEmpty()) {
        QFile f(a.kernel);
        if (!f.open(QIODevice::ReadOnly))
            return fail(ExitSetup, QStringLiteral("%1: cannot be read: %2").arg(a.kernel, f.errorString()));
        source = QString::fromUtf8(f.readAll());
        if (source.trimmed().isEmpty())
            return fail(ExitSetup, QStringLiteral("%1: the kernel file is empty").arg(a.kernel));
    }
    auto request = task::makeEvalRequest(*bundle, a.settings, source, a.kernel);
    if (!request)
        return fail(ExitSetup, QString::fromStdString(request.error()));
    auto worker = eval::WorkerLocator::find(a.settings.backend);
    if (!worker)
        return fail(ExitSetup, QString::fromStdString(worker.error()));

    if (!a.json)
        err() << "kforge: evaluating " << (a.kernel.isEmpty() ? QStringLiteral("the baseline") : a.kernel) << " on task "
              << QString::fromStdString(bundle->spec.name) << " (" << a.settings.variant << " sizes) with " << a.settings.backend
              << "..." << Qt::endl;

    eval::WorkerPool pool(a.settings.backend, *worker, {}, 1);
    int code = ExitNotCorrect;
    QObject::connect(&pool, &eval::WorkerPool::evaluated, &pool, [&](qint64, const protocol::EvaluateResult& r) {
        if (a.json)
            out() << QJsonDocument(eval::resultToJson(r)).toJson(QJsonDocument::Indented);
        else
            out() << eval::formatResultText(r, QString::fromStdString(bundle->spec.name), a.settings.backend);
        out().flush();
        code = r.status == protocol::Status::Ok ? ExitCorrect : ExitNotCorrect;
        QCoreApplication::exit(0);
    });
    pool.submit(std::move(*request), std::chrono::seconds(a.timeoutSeconds));
    QCoreApplication::exec();
    return code;
}

int evalCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Evaluates one kernel on a task in a sandboxed worker: compile, verify against the task's reference on several\n"
        "seeds with integrity checks, and time it paired with the task's baseline. Without --kernel the task's\n"
        "baseline itself is evaluated. Exit code 0 only if the kernel is correct."));
    p.addHelpOption();
    p.addOption({QStringLiteral("task"), QStringLiteral("Task folder or built-in task name."), QStringLiteral("DIR")});
    p.addOption({QStringLiteral("kernel"), QStringLiteral("Candidate kernel file (device code + // kforge: launch plan)."), QStringLiteral("FILE")});
    p.addOption({QStringLiteral("backend"), QStringLiteral("opencl or cuda (default opencl)."), QStringLiteral("B"), QStringLiteral("opencl")});
    p.addOption({QStringLiteral("variant"), QStringLiteral("Size variant of the task (default: its default sizes)."), QStringLiteral("NAME"), QStringLiteral("default")});
    p.addOption({QStringLiteral("seeds"), QStringLiteral("Comma-separated verification seeds (default 1,2,3)."), QStringLiteral("LIST")});
    p.addOption({QStringLiteral("device"), QStringLiteral("Device index within the backend (default 0)."), QStringLiteral("N"), QStringLiteral("0")});
    p.addOption({QStringLiteral("no-timing"), QStringLiteral("Verify only; do not time.")});
    p.addOption({QStringLiteral("no-baseline"), QStringLiteral("Do not time the baseline alongside the kernel.")});
    p.addOption({QStringLiteral("timeout"), QStringLiteral("Seconds before the worker is stopped (default 300)."), QStringLiteral("S"), QStringLiteral("300")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.")});
    p.process(args);

    EvalArgs a;
    a.task = p.value(QStringLiteral("task"));
    if (a.task.isEmpty())
        return fail(ExitUsage, QStringLiteral("eval needs --task DIR (a task folder or a built-in task name; see `kforge tasks`)"));
    a.kernel = p.value(QStringLiteral("kernel"));
    a.settings.backend = p.value(QStringLiteral("backend"));
    if (a.settings.backend != QLatin1String("opencl") && a.settings.backend != QLatin1String("cuda"))
        return fail(ExitUsage, QStringLiteral("--backend must be opencl or cuda, not '%1'").arg(a.settings.backend));
    a.settings.variant = p.value(QStringLiteral("variant"));
    a.settings.options.timing = !p.isSet(QStringLiteral("no-timing"));
    a.settings.pairWithBaseline = !p.isSet(QStringLiteral("no-baseline"));
    bool ok = false;
    a.settings.options.device = p.value(QStringLiteral("device")).toInt(&ok);
    if (!ok || a.settings.options.device < 0)
        return fail(ExitUsage, QStringLiteral("--device must be a non-negative integer"));
    a.timeoutSeconds = p.value(QStringLiteral("timeout")).toInt(&ok);
    if (!ok || a.timeoutSeconds <= 0)
        return fail(ExitUsage, QStringLiteral("--timeout must be a positive number of seconds"));
    if (p.isSet(QStringLiteral("seeds"))) {
        a.settings.options.seeds.clear();
        for (const QString& s : p.value(QStringLiteral("seeds")).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const qulonglong seed = s.trimmed().toULongLong(&ok);
            if (!ok)
                return fail(ExitUsage, QStringLiteral("--seeds: '%1' is not a non-negative integer").arg(s));
            a.settings.options.seeds.push_back(seed);
        }
        if (a.settings.options.seeds.empty())
            return fail(ExitUsage, QStringLiteral("--seeds needs at least one seed"));
    }
    a.json = p.isSet(QStringLiteral("json"));
    return runEval(a);
}

int doctorCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Lists the backends and devices kforge can use, and how to get what is missing."));
    p.addHelpOption();
    p.addOption({QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.")});
    p.process(args);
    doctor::Doctor d;
    QObject::connect(&d, &doctor::Doctor::finished, &d, [&](const QJsonObject& report) {
        if (p.isSet(QStringLiteral("json")))
            out() << QJsonDocument(report).toJson(QJsonDocument::Indented);
        else
            out() << doctor::Doctor::formatText(report);
        out().flush();
        QCoreApplication::exit(0);
    });
    d.run();
    return QCoreApplication::exec();
}

int tasksCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Lists the built-in and user tasks."));
    p.addHelpOption();
    p.process(args);
    const auto tasks = task::TaskCatalog::list();
    for (const auto& t : tasks) {
        auto bundle = spec::loadTaskDir(t.dir.toStdString());
        out() << QStringLiteral("%1  %2  %3\n")
                     .arg(t.name, -12)
                     .arg(t.builtIn ? QStringLiteral("built-in") : QStringLiteral("user    "),
                          bundle ? QString::fromStdString(bundle->spec.title) : QStringLiteral("INVALID: ") + QString::fromStdString(bundle.error()));
    }
    if (tasks.isEmpty())
        out() << "no tasks found (searched " << task::TaskCatalog::builtInDirs().join(QStringLiteral(", ")) << ")\n";
    return 0;
}

void printUsage() {
    out() << "usage: kforge [command] [options]\n\n"
             "Without a command kforge opens the workbench window.\n\n"
             "commands:\n"
             "  eval     evaluate one kernel on a task (kforge eval --help)\n"
             "  doctor   list backends and devices, and how to get what is missing\n"
             "  tasks    list the built-in and user tasks\n"
             "  demo     open the workbench on the built-in demo task; without a display, evaluate it headless\n"
             "options:\n"
             "  --version  print the version\n"
             "  --help     print this help\n";
}

int runGui(int argc, char** argv, bool demo) {
    QApplication app(argc, argv);
    app.setOrganizationName(QStringLiteral("kforge"));
    app.setApplicationName(QStringLiteral("kforge"));
    app.setApplicationVersion(QStringLiteral(KFORGE_VERSION));
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
        printUsage();
        return 0;
    }
    const bool demo = command == QLatin1String("demo");
    if (command.isEmpty() || demo) {
        if (hasDisplay())
            return runGui(argc, argv, demo);
        QCoreApplication app(argc, argv);
        err() << "kforge: no display found (DISPLAY and WAYLAND_DISPLAY are unset): running the demo headless instead of "
                 "opening the window"
              << Qt::endl;
        EvalArgs a;
        a.task = kDemoTask;
        return runEval(a);
    }

    QCoreApplication app(argc, argv);
    app.setOrganizationName(QStringLiteral("kforge"));
    app.setApplicationName(QStringLiteral("kforge"));
    app.setApplicationVersion(QStringLiteral(KFORGE_VERSION));
    QStringList args = app.arguments();
    args.removeAt(1); // the command; QCommandLineParser sees "kforge --options..."
    if (command == QLatin1String("eval"))
        return evalCommand(args);
    if (command == QLatin1String("doctor"))
        return doctorCommand(args);
    if (command == QLatin1String("tasks"))
        return tasksCommand(args);
    printUsage();
    return fail(ExitUsage, QStringLiteral("unknown command '%1'").arg(command));
}
