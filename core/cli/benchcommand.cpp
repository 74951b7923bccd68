// kforge bench kernelbench: many KernelBench problems imported and searched, one after another,
// and a table of what came of each: correct or not, the best kernel's speedups over PyTorch eager
// and torch.compile (timed beside it at the end of its run), its fraction of the roofline bound,
// and KernelBench's fast_p. Every problem runs in its own `kforge import` and `kforge run` process
// (this binary), so a problem that crashes or hangs costs that problem, never the table.

#include "cli/cliio.h"

#include "model/kinds.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSaveFile>

#include <algorithm>
#include <optional>

namespace kforge::cli {

namespace {

constexpr int ExitUsage = 2;
constexpr int ExitSetup = 3;

struct Problem {
    int level = 0;
    QString file;
    QString stem; // "19_ReLU"
};

struct Outcome {
    Problem problem;
    QString state; // "correct", "incorrect", "nothing to search from", "import failed", "run failed"
    QString seed;  // the seed kernel file, if any
    bool correct = false;
    std::optional<double> vsEager, vsCompile, fraction;
    double bestUs = 0.0;
    QString note;
};

int problemNumber(const QString& stem) {
    return stem.section(QLatin1Char('_'), 0, 0).toInt();
}

// The problem files under DIR: DIR/levelN, DIR/KernelBench/levelN, or .py files in DIR itself.
QList<Problem> findProblems(const QString& root, int level) {
    QList<Problem> problems;
    const auto add = [&problems](const QDir& dir, int lvl) {
        for (const QFileInfo& f : dir.entryInfoList({QStringLiteral("*.py")}, QDir::Files, QDir::Name))
            problems.push_back({lvl, f.absoluteFilePath(), f.completeBaseName()});
    };
    bool levels = false;
    for (int l = 1; l <= 4; ++l) {
        if (level && l != level)
            continue;
        for (const QString& sub : {QStringLiteral("level%1"), QStringLiteral("KernelBench/level%1")}) {
            const QDir dir(QDir(root).filePath(sub.arg(l)));
            if (dir.exists()) {
                add(dir, l);
                levels = true;
                break;
            }
        }
    }
    if (!levels)
        add(QDir(root), level);
    std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
        return a.level != b.level ? a.level < b.level : problemNumber(a.stem) < problemNumber(b.stem);
    });
    return problems;
}

// --problems 19,23,40_LayerNorm: by number or by file name.
bool selected(const Problem& p, const QStringList& wanted) {
    if (wanted.isEmpty())
        return true;
    return std::any_of(wanted.begin(), wanted.end(), [&p](const QString& w) {
        bool number = false;
        const int n = w.toInt(&number);
        return number ? n == problemNumber(p.stem) : w == p.stem || w + QStringLiteral(".py") == p.stem;
    });
}

struct Ran {
    int exitCode = -1;
    QByteArray out;
    QString lastError; // the last line it wrote to stderr
};

Ran runSelf(const QStringList& args, int timeoutSeconds) {
    QProcess p;
    p.start(QCoreApplication::applicationFilePath(), args);
    Ran r;
    if (!p.waitForStarted(30000)) {
        r.lastError = p.errorString();
        return r;
    }
    if (!p.waitForFinished(timeoutSeconds > 0 ? timeoutSeconds * 1000 : -1)) {
        p.terminate(); // it stops its run politely; the run stays resumable
        if (!p.waitForFinished(30000))
            p.kill();
        p.waitForFinished(5000);
        r.lastError = QStringLiteral("took longer than %1 s and was stopped").arg(timeoutSeconds);
        r.out = p.readAllStandardOutput();
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    const QStringList lines = QString::fromUtf8(p.readAllStandardError()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    r.lastError = lines.isEmpty() ? QString() : lines.last().trimmed();
    if (r.lastError.startsWith(QLatin1String("kforge: ")))
        r.lastError = r.lastError.mid(8);
    return r;
}

std::optional<double> number(const QJsonValue& v) {
    return v.isDouble() ? std::optional<double>(v.toDouble()) : std::nullopt;
}

QString times(const std::optional<double>& x) {
    return x ? QStringLiteral("%1x").arg(*x, 0, 'f', 3) : QStringLiteral("-");
}

// KernelBench's fast_p: the share of all problems whose kernel is correct and more than p times
// as fast as the yardstick (fast_0: the share correct).
double fastP(const QList<Outcome>& outcomes, double p, bool compile) {
    if (outcomes.isEmpty())
        return 0.0;
    const auto n = std::count_if(outcomes.begin(), outcomes.end(), [&](const Outcome& o) {
        const auto& x = compile ? o.vsCompile : o.vsEager;
        return o.correct && (p == 0.0 || (x && *x > p));
    });
    return static_cast<double>(n) / static_cast<double>(outcomes.size());
}

QString table(const QList<Outcome>& outcomes, const QString& header) {
    QString t = header;
    t += QStringLiteral("\n| level | problem | result | seed | best us | vs eager | vs torch.compile | of roofline "
                        "bound | note |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const Outcome& o : outcomes)
        t += QStringLiteral("| %1 | %2 | %3 | %4 | %5 | %6 | %7 | %8 | %9 |\n")
                 .arg(o.problem.level)
                 .arg(o.problem.stem, o.state, o.seed.isEmpty() ? QStringLiteral("-") : QFileInfo(o.seed).fileName())
                 .arg(o.bestUs > 0 ? QString::number(o.bestUs, 'f', 2) : QStringLiteral("-"))
                 .arg(times(o.vsEager), times(o.vsCompile))
                 .arg(o.fraction ? QStringLiteral("%1%").arg(*o.fraction * 100.0, 0, 'f', 1) : QStringLiteral("-"))
                 .arg(QString(o.note).replace(QLatin1Char('|'), QLatin1Char('/')));
    t += QStringLiteral("\n| fast_p over | fast_0 (correct) | fast_1 | fast_1.5 | fast_2 |\n|---|---|---|---|---|\n");
    for (const bool compile : {false, true})
        t += QStringLiteral("| %1 | %2 | %3 | %4 | %5 |\n")
                 .arg(compile ? QStringLiteral("torch.compile") : QStringLiteral("PyTorch eager"))
                 .arg(fastP(outcomes, 0.0, compile), 0, 'f', 2)
                 .arg(fastP(outcomes, 1.0, compile), 0, 'f', 2)
                 .arg(fastP(outcomes, 1.5, compile), 0, 'f', 2)
                 .arg(fastP(outcomes, 2.0, compile), 0, 'f', 2);
    return t;
}

bool save(const QString& path, const QByteArray& data) {
    QSaveFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size() && f.commit();
}

} // namespace

int benchCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "kforge bench kernelbench DIR: imports KernelBench problems (DIR holds level1/, level2/... or the\n"
        "repository's KernelBench/ folder, or the problem files themselves), searches each one, and writes a table:\n"
        "correctness, the best kernel's speedup over PyTorch eager and over torch.compile (timed beside it on the\n"
        "same GPU at the end of its run), its fraction of the roofline bound, and KernelBench's fast_p (the share of\n"
        "problems correct and more than p times as fast). A problem with no seed kernel, no expert kernel that binds\n"
        "to it and no language model has nothing to search from: the table says so. Each problem runs in its own\n"
        "process; the runs are kept in OUT/runs.kforge, the tasks in OUT/tasks."));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("suite"), QStringLiteral("kernelbench"));
    p.addPositionalArgument(QStringLiteral("dir"), QStringLiteral("The KernelBench problems."));
    p.addOption({QStringLiteral("level"), QStringLiteral("Only this level (default: every level found)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("problems"),
                 QStringLiteral("Only these problems, by number or file name, comma-separated (e.g. 19,23,40)."),
                 QStringLiteral("LIST")});
    p.addOption(
        {QStringLiteral("budget-evals"), QStringLiteral("Evaluations per problem (default 40)."), QStringLiteral("N")});
    p.addOption({QStringLiteral("seeds"),
                 QStringLiteral("A folder of seed kernels named after the problems (19_ReLU.cu): each problem starts "
                                "from its own."),
                 QStringLiteral("DIR")});
    p.addOption({QStringLiteral("seed-kernel"), QStringLiteral("Start every selected problem from this kernel."),
                 QStringLiteral("FILE")});
    p.addOption({QStringLiteral("backend"), QStringLiteral("cuda (default) or opencl."), QStringLiteral("NAME"),
                 QStringLiteral("cuda")});
    p.addOption({QStringLiteral("out"), QStringLiteral("Where tasks, runs and the table go (default kernelbench-out)."),
                 QStringLiteral("DIR"), QStringLiteral("kernelbench-out")});
    p.addOption({QStringLiteral("timeout"),
                 QStringLiteral("Seconds one problem's search may take before it is stopped (default 1800)."),
                 QStringLiteral("S")});
    p.addOption(
        {QStringLiteral("run-option"),
         QStringLiteral("Pass this option on to every `kforge run` (repeatable), e.g. --run-option=--llm-model=M."),
         QStringLiteral("OPT")});
    process(p, args, QStringLiteral("bench"));

    const QStringList pos = p.positionalArguments();
    if (pos.size() != 2 || pos.front() != QLatin1String("kernelbench"))
        return fail(ExitUsage, QStringLiteral("usage: kforge bench kernelbench DIR [options] (kforge bench --help)"));
    const QString& root = pos.at(1);
    if (!QFileInfo(root).isDir())
        return fail(ExitSetup, QStringLiteral("%1: no such folder").arg(root));
    const auto backend = model::parseBackend(p.value(QStringLiteral("backend")));
    if (!backend)
        return fail(
            ExitUsage,
            QStringLiteral("--backend must be cuda or opencl, not '%1'").arg(p.value(QStringLiteral("backend"))));
    const auto positive = [&p](const QString& name, int fallback) -> std::optional<int> {
        if (!p.isSet(name))
            return fallback;
        bool ok = false;
        const int v = p.value(name).toInt(&ok);
        return ok && v > 0 ? std::optional<int>(v) : std::nullopt;
    };
    const auto level = positive(QStringLiteral("level"), 0);
    const auto budget = positive(QStringLiteral("budget-evals"), 40);
    const auto timeout = positive(QStringLiteral("timeout"), 1800);
    if (!level || !budget || !timeout)
        return fail(ExitUsage, QStringLiteral("--level, --budget-evals and --timeout take positive whole numbers"));
    const QStringList wanted = p.value(QStringLiteral("problems")).split(QLatin1Char(','), Qt::SkipEmptyParts);
    QList<Problem> problems;
    for (const Problem& pr : findProblems(root, *level))
        if (selected(pr, wanted))
            problems.push_back(pr);
    if (problems.isEmpty())
        return fail(ExitSetup, QStringLiteral("%1: no KernelBench problem files (*.py) match").arg(root));
    const QString seedKernel = p.value(QStringLiteral("seed-kernel"));
    if (!seedKernel.isEmpty() && !QFileInfo(seedKernel).isFile())
        return fail(ExitSetup, QStringLiteral("--seed-kernel %1: no such file").arg(seedKernel));

    const QDir out(p.value(QStringLiteral("out")));
    if (!QDir().mkpath(out.filePath(QStringLiteral("tasks"))))
        return fail(ExitSetup, QStringLiteral("%1: cannot create the folder").arg(out.path()));
    const QString db = out.absoluteFilePath(QStringLiteral("runs.kforge"));
    const QString ext = *backend == model::Backend::Cuda ? QStringLiteral(".cu") : QStringLiteral(".cl");

    QList<Outcome> outcomes;
    int index = 0;
    for (const Problem& pr : problems) {
        ++index;
        Outcome o;
        o.problem = pr;
        err() << QStringLiteral("[%1/%2] level %3 %4: ").arg(index).arg(problems.size()).arg(pr.level).arg(pr.stem)
              << Qt::flush;
        const QString taskDir = out.absoluteFilePath(QStringLiteral("tasks/level%1/%2").arg(pr.level).arg(pr.stem));
        if (!QFileInfo::exists(taskDir + QStringLiteral("/task.json"))) {
            const Ran imported = runSelf(
                {QStringLiteral("import"), pr.file, QStringLiteral("--out"), taskDir, QStringLiteral("--name"),
                 QString(pr.stem).replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]")), QStringLiteral("_"))},
                600);
            if (imported.exitCode != 0) {
                o.state = QStringLiteral("import failed");
                o.note = imported.lastError;
                err() << o.state << ": " << o.note << Qt::endl;
                outcomes.push_back(o);
                continue;
            }
        }
        if (!seedKernel.isEmpty())
            o.seed = QFileInfo(seedKernel).absoluteFilePath();
        else if (p.isSet(QStringLiteral("seeds")))
            if (const QFileInfo f(QDir(p.value(QStringLiteral("seeds"))).filePath(pr.stem + ext)); f.isFile())
                o.seed = f.absoluteFilePath();
        QStringList runArgs{
            QStringLiteral("run"),       QStringLiteral("--task"),     taskDir,
            QStringLiteral("--backend"), model::backendName(*backend), QStringLiteral("--budget-evals"),
            QString::number(*budget),    QStringLiteral("--db"),       db,
            QStringLiteral("--json"),    QStringLiteral("--quiet"),    QStringLiteral("--no-experience")};
        if (!o.seed.isEmpty())
            runArgs << QStringLiteral("--seed-kernel") << o.seed;
        runArgs << p.values(QStringLiteral("run-option"));
        const Ran ran = runSelf(runArgs, *timeout);
        const QJsonObject summary = QJsonDocument::fromJson(ran.out).object();
        const QString message = summary.value(QStringLiteral("message")).toString();
        if (summary.isEmpty()) {
            o.state = QStringLiteral("run failed");
            o.note = ran.lastError;
        } else if (message.startsWith(QLatin1String("nothing to search from"))) {
            o.state = QStringLiteral("nothing to search from");
            o.note = QStringLiteral("no seed kernel, no expert kernel binds to it, no language model");
        } else if (summary.value(QStringLiteral("best_candidate")).isDouble()) {
            o.correct = true;
            o.state = QStringLiteral("correct");
            const QJsonObject torch = summary.value(QStringLiteral("pytorch")).toObject();
            o.vsEager = number(torch.value(QStringLiteral("best_speedup_vs_eager")));
            o.vsCompile = number(torch.value(QStringLiteral("best_speedup_vs_compile")));
            o.fraction = number(summary.value(QStringLiteral("best_fraction_of_bound")));
            o.bestUs = torch.value(QStringLiteral("best_us")).toDouble();
            o.note = QStringLiteral("run %1, %2 evaluations; %3")
                         .arg(summary.value(QStringLiteral("run")).toInteger())
                         .arg(summary.value(QStringLiteral("evaluations")).toInteger())
                         .arg(torch.value(QStringLiteral("note")).toString());
        } else {
            o.state = QStringLiteral("incorrect");
            o.note = message;
        }
        err() << o.state;
        if (o.correct)
            err() << QStringLiteral(", %1 over eager, %2 over torch.compile").arg(times(o.vsEager), times(o.vsCompile));
        err() << Qt::endl;
        outcomes.push_back(o);
    }

    const QString header = QStringLiteral("# KernelBench with kforge (%1, %2 evaluations per problem)\n")
                               .arg(model::backendName(*backend))
                               .arg(*budget);
    const QString text = table(outcomes, header);
    QJsonArray rows;
    for (const Outcome& o : outcomes) {
        const auto put = [](const std::optional<double>& v) { return v ? QJsonValue(*v) : QJsonValue(); };
        rows.append(QJsonObject{{QStringLiteral("level"), o.problem.level},
                                {QStringLiteral("problem"), o.problem.stem},
                                {QStringLiteral("result"), o.state},
                                {QStringLiteral("correct"), o.correct},
                                {QStringLiteral("seed"), o.seed},
                                {QStringLiteral("best_us"), o.bestUs > 0 ? QJsonValue(o.bestUs) : QJsonValue()},
                                {QStringLiteral("speedup_vs_eager"), put(o.vsEager)},
                                {QStringLiteral("speedup_vs_compile"), put(o.vsCompile)},
                                {QStringLiteral("fraction_of_bound"), put(o.fraction)},
                                {QStringLiteral("note"), o.note}});
    }
    QJsonObject fast;
    for (const bool compile : {false, true}) {
        QJsonObject f;
        for (const double pp : {0.0, 1.0, 1.5, 2.0})
            f.insert(QStringLiteral("fast_%1").arg(pp), fastP(outcomes, pp, compile));
        fast.insert(compile ? QStringLiteral("torch_compile") : QStringLiteral("eager"), f);
    }
    const QJsonObject json{{QStringLiteral("backend"), model::backendName(*backend)},
                           {QStringLiteral("budget_evaluations"), *budget},
                           {QStringLiteral("problems"), rows},
                           {QStringLiteral("fast_p"), fast},
                           {QStringLiteral("runs"), db}};
    const QString mdPath = out.absoluteFilePath(QStringLiteral("kernelbench.md"));
    const QString jsonPath = out.absoluteFilePath(QStringLiteral("kernelbench.json"));
    if (!save(mdPath, text.toUtf8()) || !save(jsonPath, QJsonDocument(json).toJson(QJsonDocument::Indented)))
        return fail(ExitSetup, QStringLiteral("%1: cannot write the table").arg(out.path()));
    cli::out() << text << QStringLiteral("\ntable: %1 (and %2); runs: %3\n").arg(mdPath, jsonPath, db);
    return std::none_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.correct; }) ? 1 : 0;
}

} // namespace kforge::cli
