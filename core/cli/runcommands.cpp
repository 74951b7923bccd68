// kforge run, runs and export: the search without a window.

#include "cli/cli.h"
#include "cli/cliio.h"

#include "diagnose/roofline.h"
#include "experience/experiencelibrary.h"
#include "search/engine.h"
#include "store/runexport.h"
#include "store/runstore.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>
#include <QStandardPaths>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <unistd.h>

namespace kforge::cli {

namespace {

QString formatDuration(double seconds) {
    if (seconds < 0)
        return QStringLiteral("?");
    const qint64 s = std::llround(seconds);
    if (s < 60)
        return QStringLiteral("%1s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1m%2s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1h%2m").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString progressLine(const search::RunProgress& p) {
    QString budget = p.budgetEvaluations > 0 ? QStringLiteral("/%1").arg(p.budgetEvaluations) : QString();
    QString best = p.bestCandidate ? QStringLiteral("%1x over %2 (#%3)")
                                         .arg(p.bestSpeedup, 0, 'f', 3)
                                         .arg(p.speedupBase.section(QLatin1Char(' '), -1))
                                         .arg(p.bestCandidate)
                                   : QStringLiteral("-");
    return QStringLiteral("gen %1  evals %2%3  correct %4/%5  cells %6  best %7  %8/s  elapsed %9  eta %10")
               .arg(p.generation)
               .arg(p.evaluations)
               .arg(budget)
               .arg(p.correct)
               .arg(p.evaluated)
               .arg(p.archiveCells)
               .arg(best)
               .arg(p.evaluationsPerSecond, 0, 'f', 2)
               .arg(formatDuration(p.elapsedSeconds), formatDuration(p.etaSeconds))
           + (p.llmCalls > 0 || p.llmPending > 0
                  ? QStringLiteral("  llm %1 calls %2 tokens $%3%4")
                        .arg(p.llmCalls)
                        .arg(p.llmTokens)
                        .arg(p.llmUsd, 0, 'f', 4)
                        .arg(p.llmUnknownCost ? QStringLiteral(" (+%1 unknown)").arg(p.llmUnknownCost) : QString())
                  : QString());
}

QJsonObject summaryJson(const search::RunSummary& s) {
    QJsonObject o{{QStringLiteral("run"), s.runId},
                  {QStringLiteral("store"), s.storePath},
                  {QStringLiteral("state"), search::runStateName(s.state)},
                  {QStringLiteral("message"), s.message},
                  {QStringLiteral("evaluations"), s.evaluations},
                  {QStringLiteral("candidates"), s.candidates},
                  {QStringLiteral("generations"), s.generations},
                  {QStringLiteral("wall_seconds"), s.wallSeconds}};
    o.insert(QStringLiteral("speedup_base"), s.speedupBase);
    o.insert(QStringLiteral("pytorch"), s.pytorch.toJson());
    if (s.bestCandidate) {
        o.insert(QStringLiteral("best_candidate"), s.bestCandidate);
        o.insert(QStringLiteral("best_speedup"), s.bestSpeedup);
        o.insert(QStringLiteral("best_label"), s.bestLabel);
        o.insert(QStringLiteral("best_fraction_of_bound"),
                 s.bestFractionOfBound ? QJsonValue(*s.bestFractionOfBound) : QJsonValue());
        if (s.bestSplitTf32Fraction)
            o.insert(QStringLiteral("best_split_tf32_fraction"), *s.bestSplitTf32Fraction);
    } else {
        o.insert(QStringLiteral("best_candidate"), QJsonValue());
        o.insert(QStringLiteral("best_speedup"), QJsonValue());
    }
    QJsonArray pending;
    for (const auto& r : s.pendingReviews)
        pending.append(QJsonObject{{QStringLiteral("candidate"), r.candidate},
                                   {QStringLiteral("label"), r.label},
                                   {QStringLiteral("speedup"), r.speedup},
                                   {QStringLiteral("reason"), r.reason}});
    o.insert(QStringLiteral("awaiting_review"), pending);
    return o;
}

// "review: ..." when correct kernels wait for a person: the run's best may be slower than they are,
// and an offline run has no one to say so. Empty when none waits.
QString pendingReviewText(const search::RunSummary& s) {
    if (s.pendingReviews.isEmpty())
        return {};
    const search::PendingReview& r = s.pendingReviews.first();
    // One arg() call each, so that a '%' in a label or a reason is never taken for a marker.
    const QString who =
        QStringLiteral("candidate %1 (%2), %3x over %4 in its evaluation")
            .arg(QString::number(r.candidate), r.label, QString::number(r.speedup, 'f', 3), s.speedupBase);
    const QString head = s.pendingReviews.size() == 1
                             ? QStringLiteral("review: %1, waits for a person").arg(who)
                             : QStringLiteral("review: %1 kernels wait for a person, the fastest %2")
                                   .arg(s.pendingReviews.size())
                                   .arg(who);
    return QStringLiteral("%1: %2\n  (kforge review list --run %3 --db FILE; accepted, it joins the search when the "
                          "run is resumed)\n")
        .arg(head, r.reason, QString::number(s.runId));
}

// SIGINT/SIGTERM ask the engine to stop (in-flight evaluations are cancelled; the run stays
// resumable); a second signal leaves at once. The handler only writes to a pipe.
int g_signalPipe[2] = {-1, -1};

void onSignal(int) {
    const char c = 1;
    [[maybe_unused]] auto n = ::write(g_signalPipe[1], &c, 1);
}

bool parsePositive(const QCommandLineParser& p, const QString& name, qint64 min, qint64& target, QString& error) {
    if (!p.isSet(name))
        return true;
    bool ok = false;
    const qint64 v = p.value(name).toLongLong(&ok);
    if (!ok || v < min) {
        error =
            QStringLiteral("--%1 must be an integer of at least %2, not '%3'").arg(name).arg(min).arg(p.value(name));
        return false;
    }
    target = v;
    return true;
}

// Non-negative numbers given as --name: each option that is set lands in its target.
bool parseNonNegative(const QCommandLineParser& p, std::initializer_list<std::pair<QString, double*>> options,
                      QString& error) {
    for (const auto& [name, target] : options) {
        if (!p.isSet(name))
            continue;
        bool ok = false;
        const double v = p.value(name).toDouble(&ok);
        if (!ok || v < 0) {
            error = QStringLiteral("--%1 must be a non-negative number").arg(name);
            return false;
        }
        *target = v;
    }
    return true;
}

} // namespace

int runCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Evolves kernels for a task without a window. Islands of candidates evolve apart and exchange their best by\n"
        "migration; a MAP-Elites archive keeps the best kernel of each kind (memory hierarchy, compute style,\n"
        "parallel granularity). The expert library seeds the islands and the template tuner searches the kernels'\n"
        "declared parameters; with --llm, language models also mutate, cross over and repair kernels, guided by\n"
        "their diagnostics (see `kforge llm --help` for endpoints and keys). Every candidate is compiled,\n"
        "verified against the task's reference and timed paired with the task's baseline in a sandboxed worker;\n"
        "a new best is re-measured before it is promoted. Everything goes into the run store (--db), and a run\n"
        "that was interrupted continues with --resume; one run is used by one session at a time (a second\n"
        "--resume of it is refused). A store that cannot be written (disk full, locked, read-only) stops the run,\n"
        "resumable, with exit code 3. Ctrl-C stops the run cleanly (it can be resumed).\n"
        "Exit code: 0 the run finished its budget or search space, 2 a usage error, 3 the task, store or worker\n"
        "cannot be used (or failed during the run), 4 stopped."));
    addHelpOption(p);
    p.addOption({QStringLiteral("task"), QStringLiteral("Task folder or built-in task name (see `kforge tasks`)."),
                 QStringLiteral("DIR")});
    p.addOption({QStringLiteral("backend"), QStringLiteral("opencl or cuda (default opencl)."), QStringLiteral("B"),
                 QStringLiteral("opencl")});
    p.addOption({QStringLiteral("variant"), QStringLiteral("Size variant of the task (default: its default sizes)."),
                 QStringLiteral("NAME"), QStringLiteral("default")});
    p.addOption({QStringLiteral("islands"), QStringLiteral("Number of islands (default 4)."), QStringLiteral("N")});
    p.addOption({QStringLiteral("children"), QStringLiteral("Children per island and generation (default 4)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("migration-interval"),
                 QStringLiteral("Generations between migrations, 0 for none (default 3)."), QStringLiteral("N")});
    p.addOption({QStringLiteral("budget-evals"),
                 QStringLiteral("Evaluations to spend, re-measurements included; 0 for no limit (default 200)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("budget-time"),
                 QStringLiteral("Wall-clock seconds to spend, checked between generations; 0 for no limit."),
                 QStringLiteral("S")});
    p.addOption({QStringLiteral("seed"),
                 QStringLiteral("Random seed; the same seed and results give the same run (default 1)."),
                 QStringLiteral("S")});
    p.addOption({QStringLiteral("workers"),
                 QStringLiteral("Worker processes (default 1). Several can share a GPU: they take turns at it for "
                                "each timed run, so timings stay as repeatable, and on an H200 4 evaluate 1.9x as "
                                "many small candidates as one; on a CPU OpenCL device they compete for the cores "
                                "the kernels run on."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("device"), QStringLiteral("Device index within the backend (default 0)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("worker"),
                 QStringLiteral("Where workers run (repeatable; default: this machine): local, "
                                "ssh://[user@]host[:port][/path/to/kforge-worker-<backend>], reached with OpenSSH "
                                "in batch mode (keys or an agent; KFORGE_SSH_ARGS adds ssh options), or "
                                "slurm[:/path/to/worker-on-the-nodes] (see --executor). Each place "
                                "gets --workers workers; a place that cannot be reached is left out and the "
                                "run goes on with the others. With --resume, replaces the stored places "
                                "(as --devices and --workers do theirs)."),
                 QStringLiteral("PLACE")});
    p.addOption({QStringLiteral("executor"),
                 QStringLiteral("local (default) or slurm: with slurm, --workers pilot workers run as Slurm jobs "
                                "(srun, one task each, a GPU each for CUDA) that live for the run, take evaluations "
                                "as they come and are replaced when Slurm preempts or cancels them; stopping the "
                                "run cancels them. The same as --worker slurm."),
                 QStringLiteral("NAME")});
    p.addOption({QStringLiteral("slurm-args"),
                 QStringLiteral("srun options for Slurm pilots, e.g. \"--partition=gpu --time=4:00:00 "
                                "--account=lab\" (a CUDA pilot asks for --gres=gpu:1 unless these ask for GPUs)."),
                 QStringLiteral("ARGS")});
    p.addOption({QStringLiteral("devices"),
                 QStringLiteral("The devices that get --workers workers each, on this machine and on each "
                                "ssh:// place: all, or a list such as 0,1 (CUDA workers are pinned with "
                                "CUDA_VISIBLE_DEVICES; default: --device alone)."),
                 QStringLiteral("LIST")});
    p.addOption({QStringLiteral("timeout"),
                 QStringLiteral("Seconds before an evaluation's worker is stopped (default 300), plus 30 s per "
                                "GiB beyond the first that one set of the task's inputs and outputs holds."),
                 QStringLiteral("S")});
    p.addOption({QStringLiteral("no-experts"),
                 QStringLiteral("Do not seed from the expert library (start from the baseline only).")});
    p.addOption({QStringLiteral("no-confirm"), QStringLiteral("Promote a new best without re-measuring it first.")});
    p.addOption({QStringLiteral("seed-kernel"),
                 QStringLiteral("Start from this kernel file too (repeatable). A task without a baseline kernel (one "
                                "imported from PyTorch) needs a seed, an expert kernel or a language model."),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("no-pytorch"),
                 QStringLiteral("Do not time the task's PyTorch form (eager and torch.compile) at the start and beside "
                                "the best at the end. A task without a baseline kernel still times eager: it is the "
                                "yardstick of its speedups.")});
    p.addOption({QStringLiteral("pytorch-rounds"),
                 QStringLiteral("Rounds of each comparison with PyTorch (default 20, %1 to %2): more narrow the "
                                "interval that tells a speedup near 1x from a tie.")
                     .arg(protocol::kMinPyTorchRounds)
                     .arg(protocol::kMaxPyTorchRounds),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("experience"),
                 QStringLiteral("Experience library to start from and learn into (default %1).")
                     .arg(experience::ExperienceLibrary::defaultPath()),
                 QStringLiteral("FILE")});
    p.addOption(
        {QStringLiteral("no-experience"), QStringLiteral("Neither start from nor add to an experience library.")});
    p.addOption({QStringLiteral("no-tuning-cache"),
                 QStringLiteral("The tuner neither starts from nor adds to the experience library's tuning cache "
                                "(the times earlier runs measured for the same task, sizes, device and kernel "
                                "template; `kforge experience forget-tuning` clears it).")});
    p.addOption({QStringLiteral("review-ceiling"),
                 QStringLiteral("Compute throughput above this share of the measured compute roof that binds the task "
                                "waits for review instead of being accepted (default 0.9; 0: never)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("memory-review-ceiling"),
                 QStringLiteral("Memory throughput above this share of the measured DRAM bandwidth waits for review "
                                "(default 1.03: a kernel more than 3% faster than the measurement; well-tuned "
                                "memory-bound kernels reach 90-98% of it, the best up to 102%; 0: never)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("reject-ceiling"),
                 QStringLiteral("Throughput above this multiple of that roof is impossible: the kernel is rejected "
                                "(default 1.1, at least 1; the margin is the roof's own measurement error)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("review-speedup"),
                 QStringLiteral("Also send a speedup over the task's baseline above this to review (default 0: never; "
                                "a large speedup over a naive baseline is normal)."),
                 QStringLiteral("X")});
    p.addOption({QStringLiteral("descriptors"),
                 QStringLiteral("A behaviour-descriptor file instead of the built-in one."), QStringLiteral("FILE")});
    addStoreOption(p);
    addLlmOptions(p);
    p.addOption(
        {QStringLiteral("resume"), QStringLiteral("Continue a stored run: --resume (the newest) or --resume=ID.")});
    p.addOption({QStringLiteral("run"),
                 QStringLiteral("With --resume: the run to continue (default: the newest in the store)."),
                 QStringLiteral("ID")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Print one JSON object at the end instead of text.")});
    p.addOption({QStringLiteral("quiet"), QStringLiteral("No progress lines.")});
    process(p, args, QStringLiteral("run"));

    search::Engine::Setup setup;
    setup.storePath = storePath(p);
    search::RunConfig& c = setup.config;
    QString error;
    const bool resume = p.isSet(QStringLiteral("resume"));
    // --executor slurm is one more place: --worker slurm.
    QStringList places = p.values(QStringLiteral("worker"));
    if (p.isSet(QStringLiteral("executor"))) {
        const QString executor = p.value(QStringLiteral("executor"));
        if (executor == QLatin1String("slurm")) {
            if (!places.contains(QStringLiteral("slurm")))
                places << QStringLiteral("slurm");
        } else if (executor != QLatin1String("local")) {
            return fail(ExitUsage, QStringLiteral("--executor must be local or slurm, not '%1'").arg(executor));
        }
    }
    if (p.isSet(QStringLiteral("slurm-args"))
        && !std::any_of(places.begin(), places.end(), [](const QString& place) { return place.startsWith(u"slurm"); })
        && !resume)
        return fail(ExitUsage, QStringLiteral("--slurm-args needs --executor slurm (or --worker slurm)"));
    if (!resume) {
        c.task = p.value(QStringLiteral("task"));
        if (c.task.isEmpty())
            return fail(
                ExitUsage,
                QStringLiteral(
                    "run needs --task DIR (a task folder or a built-in task name; see `kforge tasks`), or --resume"));
        const auto backend = model::parseBackend(p.value(QStringLiteral("backend")));
        if (!backend)
            return fail(ExitUsage, QStringLiteral("run configuration: backend must be opencl or cuda, not '%1'")
                                       .arg(p.value(QStringLiteral("backend"))));
        c.backend = *backend;
        c.variant = p.value(QStringLiteral("variant"));
        qint64 v = 0;
        if (!parsePositive(p, QStringLiteral("islands"), 1, v = c.islands, error))
            return fail(ExitUsage, error);
        c.islands = static_cast<int>(v);
        if (!parsePositive(p, QStringLiteral("children"), 1, v = c.childrenPerIsland, error))
            return fail(ExitUsage, error);
        c.childrenPerIsland = static_cast<int>(v);
        if (!parsePositive(p, QStringLiteral("migration-interval"), 0, v = c.migrationInterval, error))
            return fail(ExitUsage, error);
        c.migrationInterval = static_cast<int>(v);
        if (!parsePositive(p, QStringLiteral("budget-evals"), 0, c.budgetEvaluations, error))
            return fail(ExitUsage, error);
        if (!parsePositive(p, QStringLiteral("workers"), 1, v = c.workers, error))
            return fail(ExitUsage, error);
        c.workers = static_cast<int>(v);
        if (!parsePositive(p, QStringLiteral("device"), 0, v = c.device, error))
            return fail(ExitUsage, error);
        c.device = static_cast<int>(v);
        c.workerPlaces = places;
        c.slurmArgs = p.value(QStringLiteral("slurm-args"));
        c.devices = p.value(QStringLiteral("devices"));
        if (!parsePositive(p, QStringLiteral("timeout"), 1, v = static_cast<qint64>(c.evalTimeoutSeconds), error))
            return fail(ExitUsage, error);
        c.evalTimeoutSeconds = static_cast<double>(v);
        if (p.isSet(QStringLiteral("seed"))) {
            bool ok = false;
            c.seed = p.value(QStringLiteral("seed")).toULongLong(&ok);
            if (!ok)
                return fail(ExitUsage, QStringLiteral("--seed must be a non-negative integer, not '%1'")
                                           .arg(p.value(QStringLiteral("seed"))));
        }
        c.confirmBest = !p.isSet(QStringLiteral("no-confirm"));
        c.pytorch = !p.isSet(QStringLiteral("no-pytorch"));
        if (!readPyTorchRounds(p, c.pytorchRounds, error))
            return fail(ExitUsage, error);
        for (const QString& file : p.values(QStringLiteral("seed-kernel")))
            c.seedKernels << QFileInfo(file).absoluteFilePath();
        c.descriptors = p.value(QStringLiteral("descriptors"));
        if (!parseNonNegative(p,
                              {{QStringLiteral("review-speedup"), &c.reviewSpeedup},
                               {QStringLiteral("review-ceiling"), &c.reviewCeiling},
                               {QStringLiteral("memory-review-ceiling"), &c.memoryReviewCeiling},
                               {QStringLiteral("reject-ceiling"), &c.rejectCeiling}},
                              error))
            return fail(ExitUsage, error);
        if (!applyLlmOptions(p, c.llm, error))
            return fail(ExitUsage, error);
        if (auto valid = c.validate(); !valid)
            return fail(ExitUsage, QString::fromStdString(valid.error()));
        setup.useExperts = !p.isSet(QStringLiteral("no-experts"));
    } else {
        setup.resumeRun = 0;
        if (p.isSet(QStringLiteral("run"))) {
            if (!parsePositive(p, QStringLiteral("run"), 1, setup.resumeRun, error))
                return fail(ExitUsage, error);
        }
        if (!QFileInfo::exists(setup.storePath))
            return fail(ExitSetup, QStringLiteral("%1: no such run store to resume").arg(setup.storePath));
        if (p.isSet(QStringLiteral("budget-evals"))
            && !parsePositive(p, QStringLiteral("budget-evals"), 0, setup.budgetEvaluations, error))
            return fail(ExitUsage, error);
        // Where the workers run may change between sessions: a host gone, a GPU server new.
        if (p.isSet(QStringLiteral("worker")) || p.isSet(QStringLiteral("executor")))
            setup.workerPlaces = places;
        if (p.isSet(QStringLiteral("slurm-args")))
            setup.slurmArgs = p.value(QStringLiteral("slurm-args"));
        if (p.isSet(QStringLiteral("devices")))
            setup.devices = p.value(QStringLiteral("devices"));
        if (p.isSet(QStringLiteral("workers"))) {
            qint64 n = 0;
            if (!parsePositive(p, QStringLiteral("workers"), 1, n, error))
                return fail(ExitUsage, error);
            setup.workers = static_cast<int>(n);
        }
        // A run stopped by its LLM budget continues with a larger one.
        if (!parseNonNegative(p,
                              {{QStringLiteral("llm-budget-usd"), &setup.llmBudgetUsd},
                               {QStringLiteral("llm-budget-tokens"), &setup.llmBudgetTokens}},
                              error))
            return fail(ExitUsage, error);
        setup.useExperts = !p.isSet(QStringLiteral("no-experts"));
    }
    if (p.isSet(QStringLiteral("budget-time"))) {
        bool ok = false;
        const double s = p.value(QStringLiteral("budget-time")).toDouble(&ok);
        if (!ok || s < 0)
            return fail(ExitUsage, QStringLiteral("--budget-time must be a non-negative number of seconds"));
        if (resume)
            setup.budgetSeconds = s;
        else
            c.budgetSeconds = s;
    }
    QDir().mkpath(QFileInfo(setup.storePath).absolutePath());
    setup.useExperience = !p.isSet(QStringLiteral("no-experience"));
    setup.experiencePath = p.value(QStringLiteral("experience"));
    setup.useTuningCache = !p.isSet(QStringLiteral("no-tuning-cache"));

    const bool json = p.isSet(QStringLiteral("json"));
    const bool quiet = p.isSet(QStringLiteral("quiet"));
    const bool tty = ::isatty(STDERR_FILENO) != 0;

    QThread thread;
    thread.setObjectName(QStringLiteral("kforge-engine"));
    auto* engine = new search::Engine(std::move(setup));
    engine->moveToThread(&thread);
    QObject::connect(&thread, &QThread::finished, engine, &QObject::deleteLater);

    int code = ExitSetup;
    QString lastLine;
    QObject::connect(engine, &search::Engine::started, qApp, [&](qint64 runId, const QString& path) {
        if (!json)
            err() << "kforge: run " << runId << " in " << path << Qt::endl;
    });
    QObject::connect(engine, &search::Engine::notice, qApp,
                     [&](const QString& message) { err() << "kforge: " << message << Qt::endl; });
    QObject::connect(engine, &search::Engine::progressed, qApp, [&](const search::RunProgress& progress) {
        if (quiet || json)
            return;
        const QString line = progressLine(progress);
        if (tty) {
            err() << '\r' << line << QStringLiteral("\x1b[K");
            err().flush();
        } else if (line.section(QStringLiteral("  "), 0, 1) != lastLine.section(QStringLiteral("  "), 0, 1)) {
            err() << line << Qt::endl; // one line per change of generation or evaluations
        }
        lastLine = line;
    });
    QObject::connect(engine, &search::Engine::finished, qApp, [&](const search::RunSummary& s) {
        if (tty && !quiet && !json)
            err() << Qt::endl;
        if (json) {
            out() << QJsonDocument(summaryJson(s)).toJson(QJsonDocument::Indented);
        } else {
            out() << QStringLiteral("run %1 %2: %3\n").arg(s.runId).arg(search::runStateName(s.state), s.message);
            if (s.bestCandidate) {
                out() << QStringLiteral("best: candidate %1 (%2), %3x over %4, verified and re-measured%5\n")
                             .arg(s.bestCandidate)
                             .arg(s.bestLabel)
                             .arg(s.bestSpeedup, 0, 'f', 3)
                             .arg(s.speedupBase)
                             .arg(s.bestFractionOfBound
                                      ? QStringLiteral("; %1% of its roofline bound%2")
                                            .arg(*s.bestFractionOfBound * 100.0, 0, 'f', 1)
                                            .arg(diagnose::splitTf32Note(s.bestSplitTf32Fraction.value_or(0.0)))
                                      : QString());
            }
            out() << pendingReviewText(s);
            if (s.evaluations > 0)
                out() << s.pytorch.text();
            out() << QStringLiteral("%1 evaluations, %2 candidates, %3 generations, %4 of wall time\n")
                         .arg(s.evaluations)
                         .arg(s.candidates)
                         .arg(s.generations)
                         .arg(formatDuration(s.wallSeconds));
            out() << QStringLiteral(
                         "store: %1 (kforge runs show %2 --db FILE; kforge export --best --db FILE --out DIR)\n")
                         .arg(s.storePath)
                         .arg(s.runId);
        }
        out().flush();
        switch (s.state) {
        case search::RunState::Finished:
            code = ExitCorrect;
            break;
        case search::RunState::Stopped:
            code = ExitInterrupted;
            break;
        default:
            code = ExitSetup;
            if (!json)
                err() << "kforge: " << s.message << Qt::endl;
        }
    });
    // The thread ends once the workers have stopped (politely where they listen).
    QObject::connect(engine, &search::Engine::released, qApp, [&] {
        thread.quit();
        QCoreApplication::exit(0);
    });

    // Signals: stop the run; it can be resumed.
    if (::pipe(g_signalPipe) == 0) {
        std::signal(SIGINT, onSignal);
        std::signal(SIGTERM, onSignal);
    }
    auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, qApp);
    int signalCount = 0;
    QObject::connect(notifier, &QSocketNotifier::activated, qApp, [&] {
        char buf[16];
        [[maybe_unused]] auto n = ::read(g_signalPipe[0], buf, sizeof buf);
        if (++signalCount > 1)
            std::_Exit(ExitInterrupted);
        err() << Qt::endl
              << "kforge: stopping (the run can be resumed with --resume; press Ctrl-C again to quit at once)"
              << Qt::endl;
        search::EngineCommand stop;
        stop.kind = search::EngineCommand::Kind::Stop;
        engine->post(stop);
    });

    thread.start();
    QMetaObject::invokeMethod(engine, &search::Engine::start, Qt::QueuedConnection);
    QCoreApplication::exec();
    thread.quit();
    thread.wait();
    delete notifier;
    return code;
}

int runsCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Lists the runs in a run store (`kforge runs list`) or shows one (`kforge runs show ID`)."));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list or show"));
    p.addPositionalArgument(QStringLiteral("id"), QStringLiteral("For show: the run id (default: the newest)."),
                            QStringLiteral("[ID]"));
    addStoreOption(p);
    p.addOption({QStringLiteral("json"), QStringLiteral("Print JSON instead of text.")});
    p.addOption({QStringLiteral("top"),
                 QStringLiteral("For show: how many of the best candidates to list (default 10)."), QStringLiteral("N"),
                 QStringLiteral("10")});
    process(p, args, QStringLiteral("runs"));
    const QStringList pos = p.positionalArguments();
    const QString action = pos.value(0, QStringLiteral("list"));
    const QString path = storePath(p);
    auto store = openExistingStore(path);
    if (!store)
        return fail(ExitSetup, QString::fromStdString(store.error()));
    const bool json = p.isSet(QStringLiteral("json"));

    if (action == QLatin1String("list")) {
        auto runs = (*store)->runs();
        if (!runs)
            return fail(ExitSetup, QString::fromStdString(runs.error()));
        if (json) {
            QJsonArray a;
            for (const auto& r : *runs)
                a.append(store::runToJson(r));
            out() << QJsonDocument(a).toJson(QJsonDocument::Indented);
            return 0;
        }
        if (runs->isEmpty())
            out() << "no runs in " << path << "\n";
        for (const auto& r : *runs)
            out() << store::formatRunLine(r) << "\n";
        return 0;
    }
    if (action != QLatin1String("show"))
        return fail(ExitUsage, QStringLiteral("runs: unknown action '%1' (list or show)").arg(action));
    qint64 id = 0;
    if (pos.size() > 1) {
        bool ok = false;
        id = pos[1].toLongLong(&ok);
        if (!ok || id <= 0)
            return fail(ExitUsage, QStringLiteral("runs show: '%1' is not a run id").arg(pos[1]));
    }
    bool ok = false;
    const int top = p.value(QStringLiteral("top")).toInt(&ok);
    if (!ok || top < 0)
        return fail(ExitUsage, QStringLiteral("--top must be a non-negative integer"));
    auto report = store::describeRun(**store, id, top);
    if (!report)
        return fail(ExitSetup, QString::fromStdString(report.error()));
    if (json)
        out() << QJsonDocument(report->json).toJson(QJsonDocument::Indented);
    else
        out() << report->text;
    return 0;
}

int exportCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Writes a run's best kernel (or any candidate) to a folder: the kernel file with its tuned parameter values\n"
        "as defaults (so `kforge eval --kernel` reproduces it), the launch plan resolved at the run's sizes, and a\n"
        "report with its verification, timing and lineage."));
    addHelpOption(p);
    p.addOption({QStringLiteral("best"), QStringLiteral("Export the run's confirmed best kernel.")});
    p.addOption({QStringLiteral("torch"),
                 QStringLiteral("Also write model_new.py (ModelNew, a drop-in PyTorch module that runs the CUDA kernel "
                                "through NVRTC with CuPy or cuda-python), reference.py and check.py (compares ModelNew "
                                "with PyTorch on fresh inputs and times it beside eager and torch.compile).")});
    p.addOption({QStringLiteral("candidate"), QStringLiteral("Export this candidate instead."), QStringLiteral("ID")});
    p.addOption(
        {QStringLiteral("run"), QStringLiteral("The run (default: the newest in the store)."), QStringLiteral("ID")});
    addStoreOption(p);
    p.addOption(
        {QStringLiteral("out"), QStringLiteral("Folder to write into (created if needed)."), QStringLiteral("DIR")});
    process(p, args, QStringLiteral("export"));
    if (!p.isSet(QStringLiteral("best")) && !p.isSet(QStringLiteral("candidate")))
        return fail(ExitUsage, QStringLiteral("export needs --best or --candidate ID"));
    if (!p.isSet(QStringLiteral("out")))
        return fail(ExitUsage, QStringLiteral("export needs --out DIR"));
    const QString path = storePath(p);
    auto store = openExistingStore(path);
    if (!store)
        return fail(ExitSetup, QString::fromStdString(store.error()));
    qint64 runId = 0;
    QString error;
    if (!parsePositive(p, QStringLiteral("run"), 1, runId, error))
        return fail(ExitUsage, error);
    qint64 candidate = 0;
    if (!parsePositive(p, QStringLiteral("candidate"), 1, candidate, error))
        return fail(ExitUsage, error);
    auto written = store::exportCandidate(**store, runId, candidate, p.value(QStringLiteral("out")),
                                          p.isSet(QStringLiteral("torch")));
    if (!written)
        return fail(ExitSetup, QString::fromStdString(written.error()));
    for (const QString& f : *written)
        out() << f << "\n";
    return 0;
}

} // namespace kforge::cli

namespace kforge::cli {

int reviewCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "The review queue of a run: results that are suspicious rather than certainly wrong (throughput above 90% of\n"
        "the measured roof that binds the task, markedly faster on repeated inputs than on fresh ones) wait here\n"
        "instead of being accepted; results above the roof itself are impossible and rejected outright. A kernel\n"
        "waiting for review is not a parent: accepted, it joins the archive and the search; rejected, it is vetoed.\n"
        "  kforge review list [--run ID]\n"
        "  kforge review accept CANDIDATE [--note TEXT]   (it joins the search when the run is resumed)\n"
        "  kforge review reject CANDIDATE [--note TEXT]"));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, accept or reject"));
    p.addPositionalArgument(QStringLiteral("candidate"), QStringLiteral("For accept and reject: the candidate id."),
                            QStringLiteral("[ID]"));
    addStoreOption(p);
    p.addOption(
        {QStringLiteral("run"), QStringLiteral("The run (default: the newest in the store)."), QStringLiteral("ID")});
    p.addOption({QStringLiteral("note"), QStringLiteral("Why: kept with the decision."), QStringLiteral("TEXT")});
    process(p, args, QStringLiteral("review"));
    const QStringList pos = p.positionalArguments();
    const QString action = pos.value(0, QStringLiteral("list"));
    const QString path = storePath(p);
    auto store = openExistingStore(path, action != QLatin1String("list"));
    if (!store)
        return fail(ExitSetup, QString::fromStdString(store.error()));
    qint64 runId = 0;
    QString error;
    if (!parsePositive(p, QStringLiteral("run"), 1, runId, error))
        return fail(ExitUsage, error);
    if (runId == 0) {
        auto runs = (*store)->runs();
        if (!runs || runs->isEmpty())
            return fail(ExitSetup, QStringLiteral("%1: holds no runs").arg(path));
        runId = runs->first().id;
    }
    if (action == QLatin1String("list")) {
        auto reviews = (*store)->reviews(runId);
        if (!reviews)
            return fail(ExitSetup, QString::fromStdString(reviews.error()));
        if (reviews->isEmpty())
            out() << "run " << runId << ": nothing waits for review\n";
        for (const auto& r : *reviews)
            out() << QStringLiteral("#%1  %2  %3%4\n")
                         .arg(r.candidateId, 5)
                         .arg(model::reviewStateName(r.state), -8)
                         .arg(r.reason, r.note.isEmpty() ? QString() : QStringLiteral("  (%1)").arg(r.note));
        return 0;
    }
    if (action != QLatin1String("accept") && action != QLatin1String("reject"))
        return fail(ExitUsage, QStringLiteral("review: unknown action '%1' (list, accept or reject)").arg(action));
    bool ok = false;
    const qint64 candidate = pos.value(1).toLongLong(&ok);
    if (!ok || candidate <= 0)
        return fail(ExitUsage, QStringLiteral("review %1 needs a candidate id").arg(action));
    if (auto decided = (*store)->decideReview(runId, candidate, action == QLatin1String("accept"),
                                              p.value(QStringLiteral("note")));
        !decided)
        return fail(ExitSetup, QString::fromStdString(decided.error()));
    out() << "candidate " << candidate << (action == QLatin1String("accept") ? " accepted" : " rejected")
          << "; a resumed run takes the decision into account\n";
    return 0;
}

int experienceCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "The experience library: what runs and people taught kforge (which changes helped or hurt which kind of\n"
        "task, with the code before and after, and every pin, edit and veto with its reason).\n"
        "  kforge experience list [--task T] [--family F] [--backend B] [--text WORDS] [--limit N]\n"
        "  kforge experience export FILE      share it with a team\n"
        "  kforge experience import FILE      add someone else's (duplicates are skipped)\n"
        "  kforge experience forget-tuning [--task T]\n"
        "                                     clear the tuning cache: the times the tuner measured, kept per task,\n"
        "                                     sizes, device and kernel template so that later runs start from them"));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, export, import or forget-tuning"));
    p.addPositionalArgument(QStringLiteral("file"), QStringLiteral("For export and import: the JSON file."),
                            QStringLiteral("[FILE]"));
    p.addOption({QStringLiteral("library"),
                 QStringLiteral("The library (default %1).").arg(experience::ExperienceLibrary::defaultPath()),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("task"),
                 QStringLiteral("Rank insights of this task first; with forget-tuning, forget only this task's."),
                 QStringLiteral("T")});
    p.addOption(
        {QStringLiteral("family"), QStringLiteral("Rank insights of this task family first."), QStringLiteral("F")});
    p.addOption(
        {QStringLiteral("backend"), QStringLiteral("Rank insights of this backend first."), QStringLiteral("B")});
    p.addOption({QStringLiteral("bottleneck"),
                 QStringLiteral("Rank insights about this bottleneck first (memory, compute, latency)."),
                 QStringLiteral("K")});
    p.addOption(
        {QStringLiteral("text"), QStringLiteral("Only insights matching these words."), QStringLiteral("WORDS")});
    p.addOption({QStringLiteral("limit"), QStringLiteral("How many to list (default 20)."), QStringLiteral("N"),
                 QStringLiteral("20")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Print JSON.")});
    process(p, args, QStringLiteral("experience"));
    const QStringList pos = p.positionalArguments();
    const QString action = pos.value(0, QStringLiteral("list"));
    const QString path = p.isSet(QStringLiteral("library")) ? p.value(QStringLiteral("library"))
                                                            : experience::ExperienceLibrary::defaultPath();
    QDir().mkpath(QFileInfo(path).absolutePath());
    auto library = experience::ExperienceLibrary::open(path);
    if (!library)
        return fail(ExitSetup, QString::fromStdString(library.error()));
    if (action == QLatin1String("export") || action == QLatin1String("import")) {
        if (pos.size() < 2)
            return fail(ExitUsage, QStringLiteral("experience %1 needs a FILE").arg(action));
        if (action == QLatin1String("export")) {
            if (auto done = (*library)->exportJson(pos[1]); !done)
                return fail(ExitSetup, QString::fromStdString(done.error()));
            out() << "exported " << *(*library)->count() << " insights to " << pos[1] << "\n";
        } else {
            auto added = (*library)->importJson(pos[1]);
            if (!added)
                return fail(ExitSetup, QString::fromStdString(added.error()));
            out() << "imported " << *added << " new insights from " << pos[1] << "\n";
        }
        return 0;
    }
    if (action == QLatin1String("forget-tuning")) {
        const QString task = p.value(QStringLiteral("task"));
        auto forgotten = (*library)->forgetTuning(task);
        if (!forgotten)
            return fail(ExitSetup, QString::fromStdString(forgotten.error()));
        out() << "forgot " << *forgotten << " tuning measurements"
              << (task.isEmpty() ? QString() : QStringLiteral(" of %1").arg(task)) << " in " << path << "\n";
        return 0;
    }
    if (action != QLatin1String("list"))
        return fail(
            ExitUsage,
            QStringLiteral("experience: unknown action '%1' (list, export, import or forget-tuning)").arg(action));
    experience::Query query;
    query.task = p.value(QStringLiteral("task"));
    query.family = p.value(QStringLiteral("family"));
    query.backend = p.value(QStringLiteral("backend"));
    query.bottleneck = p.value(QStringLiteral("bottleneck"));
    query.text = p.value(QStringLiteral("text"));
    bool ok = false;
    const int limit = p.value(QStringLiteral("limit")).toInt(&ok);
    if (!ok || limit < 1)
        return fail(ExitUsage, QStringLiteral("--limit must be a positive integer"));
    auto found = (*library)->search(query, limit);
    if (!found)
        return fail(ExitSetup, QString::fromStdString(found.error()));
    if (p.isSet(QStringLiteral("json"))) {
        QJsonArray a;
        for (const auto& i : *found)
            a.append(i.toJson());
        out() << QJsonDocument(a).toJson(QJsonDocument::Indented);
        return 0;
    }
    if (found->isEmpty())
        out() << "no insights in " << path
              << (query.text.isEmpty() ? QString() : QStringLiteral(" matching '%1'").arg(query.text)) << "\n";
    for (const auto& i : *found) {
        const QString speedup = i.speedup > 0 ? QStringLiteral("%1x").arg(i.speedup, 0, 'f', 2) : QStringLiteral("-");
        out() << QStringLiteral("#%1  %2  %3/%4 on %5  %6  %7\n")
                     .arg(i.id, 4)
                     .arg(model::insightKindName(i.kind), -10)
                     .arg(i.family, i.task, i.backend, speedup, i.transformation);
        if (!i.summary.isEmpty())
            out() << QStringLiteral("      %1\n").arg(i.summary);
    }
    return 0;
}

} // namespace kforge::cli
