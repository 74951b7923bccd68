#include "store/runexport.h"
#include "store/torchexport.h"
#include "store/yardstick.h"

#include "util/text.h"

#include "diagnose/roofline.h"
#include "eval/resultformat.h"
#include "expression.h"
#include "launchplan.h"
#include "task/taskcatalog.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSaveFile>

#include <algorithm>
#include <map>

namespace kforge::store {

namespace {

using util::q;

// "tuner (model)" for a tuner's kernel that says how the tuner found it; the origin otherwise.
QString originOf(const model::Candidate& c) {
    if (c.tunerStrategy)
        return QStringLiteral("%1 (%2)").arg(model::originName(c.origin), model::tunerStrategyName(*c.tunerStrategy));
    return model::originName(c.origin);
}

Expected<qint64> resolveRun(RunStore& store, qint64 runId) {
    if (runId > 0)
        return runId;
    auto runs = store.runs();
    if (!runs)
        return spec::fail(runs.error());
    if (runs->isEmpty())
        return spec::fail(store.path().toStdString() + ": holds no runs");
    return runs->first().id;
}

struct Loaded {
    RunRecord run;
    QList<model::Candidate> candidates;
    std::map<qint64, const model::Candidate*> byId;
    std::map<qint64, EvaluationRecord> search;  // candidate -> first evaluation
    std::map<qint64, EvaluationRecord> confirm; // candidate -> re-measurement
    QList<EvaluationRecord> evaluations;        // all of them, in order
};

Expected<Loaded> load(RunStore& store, qint64 runId) {
    Loaded l;
    auto id = resolveRun(store, runId);
    if (!id)
        return spec::fail(id.error());
    auto run = store.run(*id);
    if (!run)
        return spec::fail(run.error());
    l.run = *run;
    auto candidates = store.candidates(*id);
    if (!candidates)
        return spec::fail(candidates.error());
    l.candidates = *candidates;
    for (const auto& c : l.candidates)
        l.byId[c.id] = &c;
    auto evaluations = store.evaluations(*id);
    if (!evaluations)
        return spec::fail(evaluations.error());
    for (const auto& e : *evaluations) {
        if (e.purpose == model::EvaluationPurpose::Confirm)
            l.confirm[e.candidateId] = e;
        else if (e.purpose == model::EvaluationPurpose::Search)
            l.search[e.candidateId] = e;
    }
    l.evaluations = *evaluations;
    return l;
}

double speedupOf(const EvaluationRecord& e) {
    return e.result.status == protocol::Status::Ok && e.result.speedup ? *e.result.speedup : 0.0;
}

bool writeFile(const QString& path, const QByteArray& data, QString* error) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size() || !f.commit()) {
        *error = QStringLiteral("%1: cannot be written: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

} // namespace

QJsonObject runToJson(const RunRecord& r) {
    QJsonObject o{{QStringLiteral("id"), r.id},
                  {QStringLiteral("name"), r.name},
                  {QStringLiteral("task"), r.task},
                  {QStringLiteral("task_dir"), r.taskDir},
                  {QStringLiteral("backend"), model::backendName(r.backend)},
                  {QStringLiteral("variant"), r.variant},
                  {QStringLiteral("state"), model::runStateName(r.state)},
                  {QStringLiteral("message"), r.message},
                  {QStringLiteral("created"), r.created.toString(Qt::ISODateWithMs)},
                  {QStringLiteral("updated"), r.updated.toString(Qt::ISODateWithMs)},
                  {QStringLiteral("evaluations"), r.evaluations},
                  {QStringLiteral("generation"), r.generation},
                  {QStringLiteral("wall_seconds"), r.wallSeconds},
                  {QStringLiteral("config"), r.config}};
    if (r.bestCandidate) {
        o.insert(QStringLiteral("best_candidate"), r.bestCandidate);
        o.insert(QStringLiteral("best_speedup"), r.bestSpeedup);
    }
    return o;
}

QString formatRunLine(const RunRecord& r) {
    const QString best = r.bestCandidate
                             ? QStringLiteral("%1x (#%2)").arg(r.bestSpeedup, 0, 'f', 3).arg(r.bestCandidate)
                             : QStringLiteral("no best yet");
    return QStringLiteral("%1  %2  %3  %4  %5 evals  gen %6  %7  %8")
        .arg(r.id, 3)
        .arg(r.name, -22)
        .arg(r.variant, -8)
        .arg(model::runStateName(r.state), -9)
        .arg(r.evaluations)
        .arg(r.generation)
        .arg(best, r.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm")));
}

Expected<RunReport> describeRun(RunStore& store, qint64 runId, int top) {
    auto loaded = load(store, runId);
    if (!loaded)
        return spec::fail(loaded.error());
    const Loaded& l = *loaded;
    RunReport report;
    QString& t = report.text;
    const RunRecord& r = l.run;
    t += QStringLiteral("run %1: %2 (%3 sizes)\n").arg(r.id).arg(r.name, r.variant);
    t += QStringLiteral("state: %1%2\n")
             .arg(model::runStateName(r.state),
                  r.message.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(r.message));
    t += QStringLiteral("task folder: %1\n").arg(r.taskDir);
    t += QStringLiteral("created %1, %2 evaluations, %3 candidates, %4 generations completed, %5 s of wall time\n")
             .arg(r.created.toLocalTime().toString(Qt::ISODate))
             .arg(r.evaluations)
             .arg(l.candidates.size())
             .arg(r.generation + 1)
             .arg(r.wallSeconds, 0, 'f', 1);
    // The run's speedups are all over one yardstick, which its first seed's result names.
    const YardstickFigures pytorch = yardstickFigures(l.evaluations, r.bestCandidate);
    const QString& base = pytorch.speedupBase;
    if (r.bestCandidate) {
        QString fraction;
        if (auto it = l.search.find(r.bestCandidate); it != l.search.end())
            if (const double f = it->second.roofline.value(QStringLiteral("fraction_of_bound")).toDouble(); f > 0)
                fraction = QStringLiteral("; %1% of its roofline bound%2")
                               .arg(f * 100.0, 0, 'f', 1)
                               .arg(diagnose::splitTf32Note(
                                   it->second.roofline.value(QStringLiteral("split_tf32_fraction")).toDouble()));
        t += QStringLiteral("best: candidate %1, %2x over %3 (re-measured)%4\n")
                 .arg(r.bestCandidate)
                 .arg(r.bestSpeedup, 0, 'f', 3)
                 .arg(base, fraction);
    }
    t += pytorch.text();

    std::map<QString, int> statuses;
    std::map<QString, int> origins;
    std::map<QString, int> strategies; // of the tuner's kernels
    for (const auto& c : l.candidates) {
        ++origins[model::originName(c.origin)];
        if (c.tunerStrategy)
            ++strategies[model::tunerStrategyName(*c.tunerStrategy)];
        auto it = l.search.find(c.id);
        ++statuses[it == l.search.end() ? QStringLiteral("not evaluated")
                                        : q(std::string(protocol::statusName(it->second.result.status)))];
    }
    QStringList parts;
    for (const auto& [name, n] : statuses)
        parts << QStringLiteral("%1 %2").arg(n).arg(name);
    t += QStringLiteral("results: %1\n").arg(parts.join(QStringLiteral(", ")));
    parts.clear();
    for (const auto& [name, n] : origins) {
        QStringList how;
        if (name == model::originName(model::Origin::Tuner))
            for (const auto& [strategy, m] : strategies)
                how << QStringLiteral("%1 %2").arg(m).arg(strategy);
        parts << (how.isEmpty() ? QStringLiteral("%1 %2").arg(n).arg(name)
                                : QStringLiteral("%1 %2 (%3)").arg(n).arg(name, how.join(QStringLiteral(", "))));
    }
    t += QStringLiteral("origins: %1\n").arg(parts.join(QStringLiteral(", ")));

    std::vector<const model::Candidate*> ranked;
    for (const auto& c : l.candidates)
        if (auto it = l.search.find(c.id); it != l.search.end() && speedupOf(it->second) > 0.0)
            ranked.push_back(&c);
    std::stable_sort(ranked.begin(), ranked.end(), [&](const model::Candidate* a, const model::Candidate* b) {
        return speedupOf(l.search.at(a->id)) > speedupOf(l.search.at(b->id));
    });
    QJsonArray best;
    if (top > 0 && !ranked.empty()) {
        t += QStringLiteral("\nbest candidates (speedup over %1 in its own evaluation; * = pinned, x = vetoed):\n")
                 .arg(base);
        for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < top; ++i) {
            const auto* c = ranked[i];
            const auto& e = l.search.at(c->id);
            const double us = e.result.candidateTiming ? e.result.candidateTiming->medianUs : 0.0;
            t += QStringLiteral("  #%1%2 %3x  %4 us  island %5  gen %6  %7\n")
                     .arg(c->id, 5)
                     .arg(c->pinned ? QStringLiteral("*") : (c->vetoed ? QStringLiteral("x") : QStringLiteral(" ")))
                     .arg(speedupOf(e), 7, 'f', 3)
                     .arg(us, 9, 'f', 2)
                     .arg(c->island)
                     .arg(c->generation)
                     .arg(c->tunerStrategy
                              ? QStringLiteral("%1 [%2]").arg(c->label, model::tunerStrategyName(*c->tunerStrategy))
                              : c->label);
            QJsonObject entry{{QStringLiteral("candidate"), c->id},
                              {QStringLiteral("speedup"), speedupOf(e)},
                              {QStringLiteral("median_us"), us},
                              {QStringLiteral("island"), c->island},
                              {QStringLiteral("generation"), c->generation},
                              {QStringLiteral("origin"), model::originName(c->origin)},
                              {QStringLiteral("label"), c->label},
                              {QStringLiteral("pinned"), c->pinned},
                              {QStringLiteral("vetoed"), c->vetoed}};
            if (c->tunerStrategy)
                entry.insert(QStringLiteral("tuner_strategy"), model::tunerStrategyName(*c->tunerStrategy));
            best.append(entry);
        }
    }
    auto events = store.events(r.id);
    QJsonArray eventList;
    if (events) {
        int migrations = 0;
        QStringList lines;
        for (const auto& e : *events) {
            if (e.kind == model::EventKind::Migration) {
                ++migrations;
                continue;
            }
            lines << QStringLiteral("  gen %1  %2  %3")
                         .arg(e.generation, 3)
                         .arg(e.kindName, -18)
                         .arg(QString::fromUtf8(QJsonDocument(e.data).toJson(QJsonDocument::Compact)));
            eventList.append(QJsonObject{{QStringLiteral("generation"), e.generation},
                                         {QStringLiteral("kind"), e.kindName},
                                         {QStringLiteral("data"), e.data}});
        }
        t += QStringLiteral("\nevents (%1 migrations not listed):\n%2\n")
                 .arg(migrations)
                 .arg(lines.join(QLatin1Char('\n')));
    }
    // What the language models cost, by operator (kforge llm calls lists every call).
    QJsonObject llm;
    if (auto calls = store.llmCalls(r.id); calls && !calls->isEmpty()) {
        std::map<QString, std::pair<int, int>> byOp; // calls, kernels
        for (const auto& c : *calls) {
            auto& [n, kernels] = byOp[c.op];
            ++n;
            kernels += c.candidateId ? 1 : 0;
        }
        QStringList ops;
        QJsonObject opJson;
        for (const auto& [op, counts] : byOp) {
            ops << QStringLiteral("%1 %2 (%3 kernels)").arg(op).arg(counts.first).arg(counts.second);
            opJson.insert(
                op, QJsonObject{{QStringLiteral("calls"), counts.first}, {QStringLiteral("kernels"), counts.second}});
        }
        const LlmSpend spend = LlmSpend::of(*calls);
        t += QStringLiteral("\nLLM calls: %1; %2\n").arg(ops.join(QStringLiteral(", ")), spend.text());
        llm = spend.toJson();
        llm.insert(QStringLiteral("operators"), opJson);
    }
    report.json = runToJson(r);
    if (!llm.isEmpty())
        report.json.insert(QStringLiteral("llm"), llm);
    report.json.insert(QStringLiteral("best_candidates"), best);
    report.json.insert(QStringLiteral("speedup_base"), base);
    report.json.insert(QStringLiteral("pytorch"), pytorch.toJson());
    report.json.insert(QStringLiteral("events"), eventList);
    report.json.insert(QStringLiteral("candidates"), static_cast<qint64>(l.candidates.size()));
    return report;
}

LlmSpend LlmSpend::of(const QList<LlmCallRecord>& calls) {
    LlmSpend s;
    for (const auto& c : calls) {
        ++s.calls;
        s.inputTokens += c.inputTokens.value_or(0);
        s.outputTokens += c.outputTokens.value_or(0);
        if (c.costUsd)
            s.usd += *c.costUsd;
        else
            ++s.unknownCost;
    }
    return s;
}

QString LlmSpend::text() const {
    return QStringLiteral("%1 input and %2 output tokens reported, $%3 known cost%4")
        .arg(inputTokens)
        .arg(outputTokens)
        .arg(usd, 0, 'f', 4)
        .arg(unknownCost ? QStringLiteral(" (%1 calls of unknown cost)").arg(unknownCost) : QString());
}

QJsonObject LlmSpend::toJson() const {
    return {{QStringLiteral("calls"), calls},
            {QStringLiteral("input_tokens"), inputTokens},
            {QStringLiteral("output_tokens"), outputTokens},
            {QStringLiteral("usd"), usd},
            {QStringLiteral("calls_of_unknown_cost"), unknownCost}};
}

QString bakeParams(const QString& source, const model::ParamValues& params) {
    static const QRegularExpression directive(
        QStringLiteral(R"(^(\s*//\s*kforge:param\s+([A-Za-z_][A-Za-z0-9_]*)\b.*=\s*)(-?\d+)(\s*)$)"),
        QRegularExpression::MultilineOption);
    QString out;
    qsizetype last = 0;
    for (auto it = directive.globalMatch(source); it.hasNext();) {
        const auto m = it.next();
        const auto value = params.find(m.captured(2).toStdString());
        if (value == params.end())
            continue;
        out += source.mid(last, m.capturedStart(3) - last);
        out += QString::number(value->second);
        last = m.capturedEnd(3);
    }
    out += source.mid(last);
    return out;
}

Expected<QStringList> exportCandidate(RunStore& store, qint64 runId, qint64 candidateId, const QString& outDir,
                                      bool torch) {
    auto loaded = load(store, runId);
    if (!loaded)
        return spec::fail(loaded.error());
    const Loaded& l = *loaded;
    const RunRecord& r = l.run;
    const qint64 id = candidateId > 0 ? candidateId : r.bestCandidate;
    if (id == 0)
        return spec::fail(store.path().toStdString() + ": run " + std::to_string(r.id)
                          + " has no confirmed best kernel yet");
    auto found = l.byId.find(id);
    if (found == l.byId.end())
        return spec::fail(store.path().toStdString() + ": run " + std::to_string(r.id) + " has no candidate "
                          + std::to_string(id));
    const model::Candidate& c = *found->second;
    if (!QDir().mkpath(outDir))
        return spec::fail(outDir.toStdString() + ": cannot create the folder");
    const QDir dir(outDir);
    QStringList written;
    QString error;
    const bool cuda = r.backend == model::Backend::Cuda;
    const QString kernelPath =
        dir.filePath(QStringLiteral("kernel.%1").arg(cuda ? QStringLiteral("cu") : QStringLiteral("cl")));
    QString header = QStringLiteral("// Exported by kforge from run %1 (%2), candidate %3: %4\n")
                         .arg(r.id)
                         .arg(r.name)
                         .arg(c.id)
                         .arg(c.label);
    if (!c.params.empty())
        header += QStringLiteral("// Tuned parameter values (now the defaults below): %1\n")
                      .arg(model::formatParams(c.params));
    if (!writeFile(kernelPath, (header + bakeParams(c.source, c.params)).toUtf8(), &error))
        return spec::fail(error.toStdString());
    written << kernelPath;

    // The launch plan at the run's sizes, as the worker resolves it.
    auto bundle = task::TaskCatalog::load(r.taskDir);
    if (!bundle)
        bundle = task::TaskCatalog::load(r.task);
    QJsonObject plan{{QStringLiteral("task"), r.task}, {QStringLiteral("variant"), r.variant}};
    std::optional<spec::Sizes> sizes;
    if (bundle) {
        auto s = bundle->spec.sizesFor(r.variant.toStdString());
        auto kf = spec::KernelFile::parse(c.source.toStdString(), cuda ? spec::Dialect::Cuda : spec::Dialect::OpenCL);
        if (s && kf) {
            sizes = *s;
            auto exported = resolveForExport(*kf, bundle->spec, *s, c.params);
            if (exported) {
                const spec::LaunchPlan* resolved = &exported->plan;
                if (exported->assumedSms > 0) // the grids are sized for that many multiprocessors
                    plan.insert(QStringLiteral("multiprocessors_assumed"), static_cast<double>(exported->assumedSms));
                QJsonObject sizesJson;
                for (const auto& [name, value] : *s)
                    sizesJson.insert(q(name), static_cast<double>(value));
                plan.insert(QStringLiteral("sizes"), sizesJson);
                QJsonObject params;
                for (const auto& [name, value] : resolved->params)
                    params.insert(q(name), static_cast<double>(value));
                plan.insert(QStringLiteral("params"), params);
                QJsonArray scratch;
                for (const auto& sc : resolved->scratch)
                    scratch.append(QJsonObject{{QStringLiteral("name"), q(sc.name)},
                                               {QStringLiteral("dtype"), q(std::string(spec::dtypeName(sc.dtype)))},
                                               {QStringLiteral("count"), static_cast<double>(sc.count)}});
                plan.insert(QStringLiteral("scratch"), scratch);
                QJsonArray launches;
                for (const auto& la : resolved->launches) {
                    QJsonArray args;
                    for (const auto& a : la.args)
                        args.append(q(a.name));
                    auto dims = [](const std::array<std::uint64_t, 3>& d) {
                        return QJsonArray{static_cast<double>(d[0]), static_cast<double>(d[1]),
                                          static_cast<double>(d[2])};
                    };
                    QJsonObject launch{{QStringLiteral("kernel"), q(la.kernel)},
                                       {QStringLiteral("grid"), dims(la.grid)},
                                       {QStringLiteral("block"), dims(la.block)},
                                       {QStringLiteral("shared_bytes"), static_cast<double>(la.smemBytes)},
                                       {QStringLiteral("args"), args}};
                    // Blocks per thread block cluster, only for launches in clusters (cluster=).
                    if (la.clusterBlocks() > 1)
                        launch.insert(QStringLiteral("cluster"), dims(la.cluster));
                    launches.append(launch);
                }
                plan.insert(QStringLiteral("launches"), launches);
                if (!resolved->tensorMaps.empty()) {
                    // What the worker encodes with cuTensorMapEncodeTiled, dimensions innermost first.
                    QJsonArray maps;
                    const auto numbers = [](const auto& v) {
                        QJsonArray a;
                        for (const auto x : v)
                            a.append(static_cast<double>(x));
                        return a;
                    };
                    for (const auto& m : resolved->tensorMaps) {
                        maps.append(QJsonObject{{QStringLiteral("name"), q(m.name)},
                                                {QStringLiteral("buffer"), q(m.bufferName)},
                                                {QStringLiteral("dtype"), q(std::string(spec::dtypeName(m.dtype)))},
                                                {QStringLiteral("dims"), numbers(m.dims)},
                                                {QStringLiteral("byte_strides"), numbers(m.strides)},
                                                {QStringLiteral("box"), numbers(m.box)},
                                                {QStringLiteral("swizzle"), m.swizzle}});
                    }
                    plan.insert(QStringLiteral("tensor_maps"), maps);
                }
            } else {
                plan.insert(QStringLiteral("error"), q(exported.error()));
            }
        }
    } else {
        plan.insert(QStringLiteral("error"), q(bundle.error()));
    }
    const QString planPath = dir.filePath(QStringLiteral("launch-plan.json"));
    if (!writeFile(planPath, QJsonDocument(plan).toJson(QJsonDocument::Indented), &error))
        return spec::fail(error.toStdString());
    written << planPath;

    QJsonObject results{{QStringLiteral("run"), runToJson(r)}, {QStringLiteral("candidate"), c.id}};
    if (auto it = l.search.find(c.id); it != l.search.end())
        results.insert(QStringLiteral("evaluation"), eval::resultToJson(it->second.result));
    if (auto it = l.confirm.find(c.id); it != l.confirm.end())
        results.insert(QStringLiteral("confirmation"), eval::resultToJson(it->second.result));
    const QString resultPath = dir.filePath(QStringLiteral("result.json"));
    if (!writeFile(resultPath, QJsonDocument(results).toJson(QJsonDocument::Indented), &error))
        return spec::fail(error.toStdString());
    written << resultPath;

    // The report: what it is, how it was measured, where it came from.
    QString md;
    md += QStringLiteral("# %1: candidate %2\n\n").arg(r.name).arg(c.id);
    md += QStringLiteral("- task: %1 (%2 sizes), backend %3\n").arg(r.task, r.variant, model::backendName(r.backend));
    md += QStringLiteral("- kernel: `%1`, %2\n").arg(QFileInfo(kernelPath).fileName(), c.label);
    if (!c.params.empty())
        md += QStringLiteral("- parameters: %1\n").arg(model::formatParams(c.params));
    auto timingLine = [&](const char* what, const EvaluationRecord& e) {
        const auto& res = e.result;
        QString line =
            QStringLiteral("- %1: %2").arg(QLatin1String(what), q(std::string(protocol::statusName(res.status))));
        if (res.speedup)
            line += QStringLiteral(", %1x over %2 timed in the same call")
                        .arg(*res.speedup, 0, 'f', 3)
                        .arg(speedupBaseOf(res));
        // Side by side, each speedup over PyTorch says whether it is one ("a tie", "faster", "slower").
        if (res.speedupVsEager && res.speedupBase != "pytorch eager")
            line += QStringLiteral(", %1x over PyTorch eager%2")
                        .arg(*res.speedupVsEager, 0, 'f', 3)
                        .arg(eval::verdictText(res.speedupVsEagerInterval));
        else if (res.speedupVsEager)
            line += eval::verdictText(res.speedupVsEagerInterval);
        if (res.speedupVsCompile)
            line += QStringLiteral(", %1x over torch.compile%2")
                        .arg(*res.speedupVsCompile, 0, 'f', 3)
                        .arg(eval::verdictText(res.speedupVsCompileInterval));
        if (res.candidateTiming && res.baselineTiming)
            line += QStringLiteral(" (median %1 us vs %2 us, %3, %4 runs)")
                        .arg(res.candidateTiming->medianUs, 0, 'f', 2)
                        .arg(res.baselineTiming->medianUs, 0, 'f', 2)
                        .arg(q(res.candidateTiming->method))
                        .arg(res.candidateTiming->count);
        if (!res.device.empty())
            line += QStringLiteral(" on %1").arg(q(res.device));
        return line + QLatin1Char('\n');
    };
    if (auto it = l.search.find(c.id); it != l.search.end()) {
        md += timingLine("evaluation", it->second);
        // Achieved throughput from the task's FLOP and byte formulas.
        const auto& res = it->second.result;
        if (bundle && sizes && res.candidateTiming && res.candidateTiming->medianUs > 0) {
            const auto vars = bundle->spec.variables(*sizes);
            const double seconds = res.candidateTiming->medianUs * 1e-6;
            if (auto flops = spec::Expression::evaluate(bundle->spec.flops, vars); flops && *flops > 0)
                md += QStringLiteral("- achieved: %1 GFLOP/s").arg(*flops / seconds / 1e9, 0, 'f', 1);
            if (auto bytes = spec::Expression::evaluate(bundle->spec.bytes, vars); bytes && *bytes > 0)
                md += QStringLiteral(", %1 GB/s (compulsory traffic)").arg(*bytes / seconds / 1e9, 0, 'f', 1);
            md += QLatin1Char('\n');
        }
        int checks = 0;
        for (const auto& ch : res.checks)
            checks += ch.passed ? 1 : 0;
        md += QStringLiteral("- integrity checks passed: %1 of %2\n").arg(checks).arg(res.checks.size());
    }
    if (auto it = l.confirm.find(c.id); it != l.confirm.end())
        md += timingLine("re-measurement (fresh inputs)", it->second);
    const YardstickFigures pytorch = yardstickFigures(l.evaluations, c.id);
    md += QStringLiteral("\n## Against PyTorch\n\n");
    for (const QString& line : pytorch.text().split(QLatin1Char('\n'), Qt::SkipEmptyParts))
        md += QStringLiteral("- %1\n").arg(line);
    md += QStringLiteral("\n## Lineage\n\n");
    const model::Candidate* cur = &c;
    for (int depth = 0; cur && depth < 64; ++depth) {
        QString sp;
        if (auto it = l.search.find(cur->id); it != l.search.end() && speedupOf(it->second) > 0)
            sp = QStringLiteral(", %1x").arg(speedupOf(it->second), 0, 'f', 3);
        md += QStringLiteral("%1- #%2 %3 (%4, island %5, generation %6%7)\n")
                  .arg(QString(depth * 2, QLatin1Char(' ')))
                  .arg(cur->id)
                  .arg(cur->label, originOf(*cur))
                  .arg(cur->island)
                  .arg(cur->generation)
                  .arg(sp);
        cur = cur->parents.isEmpty() ? nullptr
                                     : (l.byId.count(cur->parents.front()) ? l.byId.at(cur->parents.front()) : nullptr);
    }
    md += QStringLiteral("\nReproduce: `kforge eval --task %1 --backend %2 --variant %3 --kernel %4 --pytorch`\n")
              .arg(r.taskDir, model::backendName(r.backend), r.variant, QFileInfo(kernelPath).fileName());
    if (torch) {
        if (!bundle)
            return spec::fail("--torch needs the run's task: " + bundle.error());
        auto files = torchModuleFiles(*bundle, c, r.backend, QFileInfo(kernelPath).fileName());
        if (!files)
            return spec::fail(files.error());
        for (const auto& [name, data] : *files) {
            if (!writeFile(dir.filePath(name), data, &error))
                return spec::fail(error.toStdString());
            written << dir.filePath(name);
        }
        md += QStringLiteral("\nIn PyTorch: `from model_new import ModelNew` is a drop-in for the task's module "
                             "(KernelBench's convention; the kernel is compiled by NVRTC through CuPy or cuda-python). "
                             "`python3 check.py` compares it with PyTorch on fresh inputs and times it beside PyTorch "
                             "eager and torch.compile.\n");
    }
    const QString reportPath = dir.filePath(QStringLiteral("report.md"));
    if (!writeFile(reportPath, md.toUtf8(), &error))
        return spec::fail(error.toStdString());
    written << reportPath;
    return written;
}

} // namespace kforge::store
