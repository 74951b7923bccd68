// kforge eval, doctor and tasks.

#include "cli.h"
#include "cliio.h"

#include "doctor.h"
#include "evalrequest.h"
#include "resultformat.h"
#include "taskcatalog.h"
#include "workerlocator.h"
#include "workerpool.h"

#include <QCoreApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QJsonDocument>

namespace kforge::cli {

namespace {

const QString kDemoTask = QStringLiteral("softmax");

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

} // namespace

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

int demoHeadless(const QString& storePath) {
    err() << "kforge: no display found (DISPLAY and WAYLAND_DISPLAY are unset): running the demo search headless instead "
             "of opening the window"
          << Qt::endl;
    // The same short search the window's demo starts: the baseline, the expert library and the
    // tuner on two islands, on OpenCL (PoCL on the CPU where there is no GPU).
    return *dispatch(QStringLiteral("run"), {QStringLiteral("kforge"), QStringLiteral("--task"), kDemoTask, QStringLiteral("--backend"),
                                              QStringLiteral("opencl"), QStringLiteral("--variant"), QStringLiteral("medium"), QStringLiteral("--islands"), QStringLiteral("2"),
                                              QStringLiteral("--children"), QStringLiteral("4"), QStringLiteral("--budget-evals"),
                                              QStringLiteral("40"), QStringLiteral("--db"), storePath});
}

} // namespace kforge::cli
