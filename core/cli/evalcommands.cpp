// kforge eval, doctor and tasks.

#include "cli/cli.h"
#include "cli/cliio.h"

#include "doctor/doctor.h"
#include "eval/resultformat.h"
#include "eval/workerlocator.h"
#include "eval/workerpool.h"
#include "kernelfile.h"
#include "sourcescan.h"
#include "task/evalrequest.h"
#include "task/taskcatalog.h"
#include "taskspec.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <map>

namespace kforge::cli {

namespace {

const QString kDemoTask = QStringLiteral("softmax");

struct EvalArgs {
    QString task;
    QString kernel;
    task::EvalSettings settings;
    std::map<std::string, std::int64_t> params; // --param NAME=VALUE
    bool json = false;
    int timeoutSeconds = 300;
};

QString joinSeeds(const std::vector<std::uint64_t>& seeds) {
    QStringList parts;
    for (std::uint64_t seed : seeds)
        parts << QString::number(seed);
    return parts.join(QLatin1Char(','));
}

// What reproduces this evaluation's inputs; empty when the worker reported no seeds.
QString seedsLine(const protocol::EvaluateResult& r) {
    if (r.seeds.empty() && r.timingSeeds.empty())
        return {};
    QString line =
        QStringLiteral("  seeds    verification %1").arg(r.seeds.empty() ? QStringLiteral("-") : joinSeeds(r.seeds));
    if (!r.timingSeeds.empty())
        line += QStringLiteral(", timing %1").arg(joinSeeds(r.timingSeeds));
    if (!r.stressSets.empty()) {
        QStringList sets;
        for (const auto& set : r.stressSets)
            sets << QString::fromStdString(set);
        line += QStringLiteral(", stress inputs %1").arg(sets.join(QStringLiteral(", ")));
    }
    QString again;
    if (!r.seeds.empty())
        again += QStringLiteral(" --seeds ") + joinSeeds(r.seeds);
    if (!r.timingSeeds.empty())
        again += QStringLiteral(" --timing-seeds ") + joinSeeds(r.timingSeeds);
    return line + QStringLiteral("\n           (the same inputs again:%1)\n").arg(again);
}

bool parseSeeds(const QString& option, const QString& text, std::vector<std::uint64_t>& seeds, QString& error) {
    seeds.clear();
    for (const QString& s : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qulonglong seed = s.trimmed().toULongLong(&ok);
        if (!ok) {
            error = QStringLiteral("--%1: '%2' is not a non-negative integer").arg(option, s);
            return false;
        }
        seeds.push_back(seed);
    }
    if (seeds.empty()) {
        error = QStringLiteral("--%1 needs at least one seed").arg(option);
        return false;
    }
    return true;
}

// "--param NAME=VALUE", repeatable: the names and values, each name once.
bool parseParams(const QStringList& items, std::map<std::string, std::int64_t>& params, QString& error) {
    static const QRegularExpression shape(QStringLiteral("^([A-Za-z_][A-Za-z0-9_]*)=(-?[0-9]+)$"));
    for (const QString& item : items) {
        const auto m = shape.match(item.trimmed());
        if (!m.hasMatch()) {
            error = QStringLiteral("--param '%1': expected NAME=VALUE with an integer VALUE, e.g. --param BLOCK=256")
                        .arg(item);
            return false;
        }
        bool ok = false;
        const qlonglong value = m.captured(2).toLongLong(&ok);
        const std::string name = m.captured(1).toStdString();
        if (!ok) {
            error = QStringLiteral("--param '%1': the value is out of range").arg(item);
            return false;
        }
        if (!params.emplace(name, value).second) {
            error = QStringLiteral("--param: %1 is given twice").arg(m.captured(1));
            return false;
        }
    }
    return true;
}

// "  params   BLOCK=64, VW=8 (BLOCK set by --param)": the values the kernel ran with.
QString paramsLine(const std::map<std::string, std::int64_t>& values, const std::map<std::string, std::int64_t>& set) {
    if (values.empty())
        return {};
    QStringList all, given;
    for (const auto& [name, value] : values)
        all << QStringLiteral("%1=%2").arg(QString::fromStdString(name)).arg(value);
    for (const auto& [name, value] : set)
        given << QString::fromStdString(name);
    return QStringLiteral("  params   %1 (%2)\n")
        .arg(all.join(QStringLiteral(", ")),
             given.isEmpty() ? QStringLiteral("the file's defaults")
                             : given.join(QStringLiteral(", ")) + QStringLiteral(" set by --param, the rest defaults"));
}

// Runs one evaluation in a worker and prints it. Returns the process exit code.
int runEval(const EvalArgs& a) {
    auto bundle = task::TaskCatalog::load(a.task);
    if (!bundle)
        return fail(ExitSetup, QString::fromStdString(bundle.error()));
    QString source;
    if (!a.kernel.isEmpty()) {
        // Checked as task files are: a regular file (a FIFO or a device would block or never end)
        // of at most the size a kernel can have, of UTF-8 text.
        auto text = spec::readTextFile(a.kernel.toStdString());
        if (!text)
            return fail(ExitSetup, QString::fromStdString(text.error()));
        source = QString::fromStdString(*text);
        if (source.trimmed().isEmpty())
            return fail(ExitSetup, QStringLiteral("%1: the kernel file is empty").arg(a.kernel));
    }
    auto request = task::makeEvalRequest(*bundle, a.settings, source, a.kernel);
    if (!request)
        return fail(ExitSetup, QString::fromStdString(request.error()));
    const auto kf = spec::KernelFile::parse(request->candidate.source, a.settings.backend == QLatin1String("cuda")
                                                                           ? spec::Dialect::Cuda
                                                                           : spec::Dialect::OpenCL);
    if (!a.params.empty()) {
        // Checked as the worker will check them, but before one starts. A file that does not parse
        // is left to the worker to report, as without --param.
        if (auto st = kf ? kf->checkOverrides(a.params) : spec::success(); !st)
            return fail(ExitUsage,
                        QStringLiteral("--param: %1: %2")
                            .arg(QString::fromStdString(request->candidate.file), QString::fromStdString(st.error())));
        request->candidate.params = a.params;
    }
    // Every parameter's value in this evaluation, defaults included (empty where the kernel
    // declares none, or its file does not parse: the worker then says why).
    std::map<std::string, std::int64_t> paramValues;
    if (kf)
        for (const auto& d : kf->params)
            paramValues[d.name] = a.params.count(d.name) ? a.params.at(d.name) : d.value;
    auto worker = eval::WorkerLocator::find(a.settings.backend);
    if (!worker)
        return fail(ExitSetup, QString::fromStdString(worker.error()));

    if (!a.json)
        err() << "kforge: evaluating " << (a.kernel.isEmpty() ? QStringLiteral("the baseline") : a.kernel)
              << " on task " << QString::fromStdString(bundle->spec.name) << " (" << a.settings.variant
              << " sizes) with " << a.settings.backend << "..." << Qt::endl;

    eval::WorkerPool pool(a.settings.backend, *worker, {}, 1);
    int code = ExitNotCorrect;
    bool done = false;
    // A worker that cannot start says nothing about the kernel: exit 3, like any other unusable
    // set-up, and print no result. The pool reports it before failing the queued request.
    QObject::connect(&pool, &eval::WorkerPool::workersFailedToStart, &pool, [&](const QString& message) {
        if (done)
            return;
        done = true;
        code = fail(ExitSetup, message);
        QCoreApplication::exit(0);
    });
    QObject::connect(&pool, &eval::WorkerPool::evaluated, &pool, [&](qint64, const protocol::EvaluateResult& r) {
        if (done)
            return;
        done = true;
        if (a.json) {
            QJsonObject o = eval::resultToJson(r); // with "seeds" and "timing_seeds"
            if (!paramValues.empty()) {
                QJsonObject params;
                for (const auto& [name, value] : paramValues)
                    params.insert(QString::fromStdString(name), static_cast<qint64>(value));
                o.insert(QStringLiteral("params"), params);
            }
            out() << QJsonDocument(o).toJson(QJsonDocument::Indented);
        } else {
            out() << eval::formatResultText(r, QString::fromStdString(bundle->spec.name), a.settings.backend)
                  << paramsLine(paramValues, a.params) << seedsLine(r);
        }
        out().flush();
        code = r.status == protocol::Status::Ok ? ExitCorrect : ExitNotCorrect;
        QCoreApplication::exit(0);
    });
    const auto timeout = task::evaluationTimeout(*request, a.timeoutSeconds);
    pool.submit(std::move(*request), timeout);
    QCoreApplication::exec();
    return code;
}

} // namespace

int evalCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Evaluates one kernel on a task in a sandboxed worker: compile, verify against the task's reference on "
        "several\n"
        "seeds (drawn fresh from a secure random source for every evaluation, plus the task's stress inputs) with\n"
        "integrity checks, and time it paired with the task's baseline on inputs it was not verified with. Without\n"
        "--kernel the task's baseline itself is evaluated. The seeds used are printed (\"seeds\" and \"timing_seeds\"\n"
        "with --json); --seeds and --timing-seeds give them again to reproduce an evaluation.\n"
        "Exit code: 0 the kernel is correct, 1 it is not (or the worker crashed or hung on it), 2 a usage error,\n"
        "3 the task, the kernel file or the worker cannot be used (not found, or it could not be started)."));
    addHelpOption(p);
    p.addOption({QStringLiteral("task"), QStringLiteral("Task folder or built-in task name."), QStringLiteral("DIR")});
    p.addOption({QStringLiteral("kernel"),
                 QStringLiteral("Candidate kernel file (device code + // kforge: launch plan)."),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("backend"), QStringLiteral("opencl or cuda (default opencl)."), QStringLiteral("B"),
                 QStringLiteral("opencl")});
    p.addOption({QStringLiteral("variant"), QStringLiteral("Size variant of the task (default: its default sizes)."),
                 QStringLiteral("NAME"), QStringLiteral("default")});
    p.addOption({QStringLiteral("seeds"),
                 QStringLiteral("Comma-separated verification seeds to reproduce (default: drawn fresh)."),
                 QStringLiteral("LIST")});
    p.addOption({QStringLiteral("timing-seeds"),
                 QStringLiteral("Comma-separated seeds of the timed runs' inputs to reproduce (default: drawn fresh)."),
                 QStringLiteral("LIST")});
    p.addOption(
        {QStringLiteral("no-stress"),
         QStringLiteral("Leave out the task's stress inputs (rows of identical values, large magnitudes...).")});
    p.addOption({QStringLiteral("device"), QStringLiteral("Device index within the backend (default 0)."),
                 QStringLiteral("N"), QStringLiteral("0")});
    p.addOption({QStringLiteral("no-timing"), QStringLiteral("Verify only; do not time.")});
    p.addOption({QStringLiteral("no-baseline"), QStringLiteral("Do not time the baseline alongside the kernel.")});
    p.addOption({QStringLiteral("timeout"),
                 QStringLiteral("Seconds before the worker is stopped (default 300), plus 30 s per GiB beyond "
                                "the first that one set of the task's inputs and outputs holds."),
                 QStringLiteral("S"), QStringLiteral("300")});
    p.addOption({QStringLiteral("pytorch"),
                 QStringLiteral("Also time the task's PyTorch form, eager and under torch.compile, on the same inputs "
                                "and device, and report the kernel's speedup over each (needs a Python with "
                                "PyTorch, see kforge import --help). On CUDA the verified kernel is timed beside "
                                "them in a PyTorch process of its own, so that the speedups come from one "
                                "process.")});
    p.addOption({QStringLiteral("pytorch-rounds"),
                 QStringLiteral("With --pytorch: rounds of the comparison (default 20, %1 to %2); each times the "
                                "kernel, eager and torch.compile once, after the same cache flush. More rounds "
                                "narrow the interval that says whether a speedup near 1x is a tie.")
                     .arg(protocol::kMinPyTorchRounds)
                     .arg(protocol::kMaxPyTorchRounds),
                 QStringLiteral("N"), QStringLiteral("20")});
    p.addOption({QStringLiteral("reference"),
                 QStringLiteral("kernel: the task's reference kernel (the default where it has one); torch: its "
                                "PyTorch form, computed by PyTorch in float64."),
                 QStringLiteral("FORM"), QStringLiteral("kernel")});
    p.addOption({QStringLiteral("param"),
                 QStringLiteral("Set the kernel's parameter NAME (a // kforge:param of its file) to VALUE, one of "
                                "its declared choices, instead of its default; repeat for several."),
                 QStringLiteral("NAME=VALUE")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.")});
    process(p, args, QStringLiteral("eval"));

    EvalArgs a;
    a.task = p.value(QStringLiteral("task"));
    if (a.task.isEmpty())
        return fail(
            ExitUsage,
            QStringLiteral("eval needs --task DIR (a task folder or a built-in task name; see `kforge tasks`)"));
    a.kernel = p.value(QStringLiteral("kernel"));
    a.settings.backend = p.value(QStringLiteral("backend"));
    if (a.settings.backend != QLatin1String("opencl") && a.settings.backend != QLatin1String("cuda"))
        return fail(ExitUsage, QStringLiteral("--backend must be opencl or cuda, not '%1'").arg(a.settings.backend));
    a.settings.variant = p.value(QStringLiteral("variant"));
    const QString reference = p.value(QStringLiteral("reference"));
    if (reference != QLatin1String("kernel") && reference != QLatin1String("torch"))
        return fail(ExitUsage, QStringLiteral("--reference must be kernel or torch, not '%1'").arg(reference));
    a.settings.torchReference = reference == QLatin1String("torch");
    a.settings.options.pytorch = p.isSet(QStringLiteral("pytorch"));
    a.settings.options.timing = !p.isSet(QStringLiteral("no-timing"));
    a.settings.pairWithBaseline = !p.isSet(QStringLiteral("no-baseline"));
    bool ok = false;
    a.settings.options.device = p.value(QStringLiteral("device")).toInt(&ok);
    if (!ok || a.settings.options.device < 0)
        return fail(ExitUsage, QStringLiteral("--device must be a non-negative integer"));
    if (QString error; !readPyTorchRounds(p, a.settings.options.pytorchRounds, error))
        return fail(ExitUsage, error);
    if (p.isSet(QStringLiteral("pytorch-rounds")) && !a.settings.options.pytorch)
        return fail(ExitUsage, QStringLiteral("--pytorch-rounds needs --pytorch"));
    a.timeoutSeconds = p.value(QStringLiteral("timeout")).toInt(&ok);
    if (!ok || a.timeoutSeconds <= 0)
        return fail(ExitUsage, QStringLiteral("--timeout must be a positive number of seconds"));
    QString error;
    for (const auto& [name, target] : {std::pair{QStringLiteral("seeds"), &a.settings.options.seeds},
                                       std::pair{QStringLiteral("timing-seeds"), &a.settings.options.timingSeeds}}) {
        if (p.isSet(name) && !parseSeeds(name, p.value(name), *target, error))
            return fail(ExitUsage, error);
    }
    if (!parseParams(p.values(QStringLiteral("param")), a.params, error))
        return fail(ExitUsage, error);
    a.settings.options.stress = !p.isSet(QStringLiteral("no-stress"));
    a.json = p.isSet(QStringLiteral("json"));
    return runEval(a);
}

int doctorCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Lists the backends and devices kforge can use, and how to get what is missing."));
    addHelpOption(p);
    p.addOption({QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.")});
    process(p, args, QStringLiteral("doctor"));
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
    addHelpOption(p);
    process(p, args, QStringLiteral("tasks"));
    const auto tasks = task::TaskCatalog::list();
    for (const auto& t : tasks) {
        auto bundle = spec::loadTaskDir(t.dir.toStdString());
        out() << QStringLiteral("%1  %2  %3\n")
                     .arg(t.name, -12)
                     .arg(t.builtIn ? QStringLiteral("built-in") : QStringLiteral("user    "),
                          bundle ? QString::fromStdString(bundle->spec.title)
                                 : QStringLiteral("INVALID: ") + QString::fromStdString(bundle.error()));
    }
    if (tasks.isEmpty())
        out() << "no tasks found (searched " << task::TaskCatalog::builtInDirs().join(QStringLiteral(", ")) << ")\n";
    return 0;
}

QString demoHelp(const QString& storeFolder) {
    return QStringLiteral(
               "Usage: kforge demo\n"
               "Opens the workbench and runs a short search of the built-in %1 task (its medium sizes) on OpenCL:\n"
               "the baseline, the expert library and the template tuner on two islands of four children, 40\n"
               "evaluations. Without a GPU, OpenCL runs on the CPU through PoCL.\n"
               "Without a display (DISPLAY and WAYLAND_DISPLAY unset) it runs the same search headless, prints the "
               "best\n"
               "kernel and its speedup, and writes every view of the run as PNG files beside the run.\n"
               "Each demo searches afresh: it starts from the experience library's kernels but neither reads nor\n"
               "adds to its tuning cache, so a second demo is not cut short by what the first one measured.\n"
               "Each demo is a new run store in %2\n"
               "(open one with `kforge RUN.kforge`, list it with `kforge runs --db RUN.kforge`).\n")
        .arg(kDemoTask, storeFolder);
}

int demoHeadless(const QString& storePath) {
    err()
        << "kforge: no display found (DISPLAY and WAYLAND_DISPLAY are unset): running the demo search headless instead "
           "of opening the window"
        << Qt::endl;
    // The same short search the window's demo starts: the baseline, the expert library and the
    // tuner on two islands, on OpenCL (PoCL on the CPU where there is no GPU), without the tuning cache.
    return *dispatch(QStringLiteral("run"),
                     {QStringLiteral("kforge"), QStringLiteral("--task"), kDemoTask, QStringLiteral("--backend"),
                      QStringLiteral("opencl"), QStringLiteral("--variant"), QStringLiteral("medium"),
                      QStringLiteral("--islands"), QStringLiteral("2"), QStringLiteral("--children"),
                      QStringLiteral("4"), QStringLiteral("--budget-evals"), QStringLiteral("40"),
                      QStringLiteral("--no-tuning-cache"), QStringLiteral("--db"), storePath});
}

} // namespace kforge::cli
