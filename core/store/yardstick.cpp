#include "store/yardstick.h"

#include "diagnose/roofline.h"
#include "eval/resultformat.h"
#include "util/text.h"

#include <QStringList>

namespace kforge::store {

namespace {

using util::q;

// The statistic the worker's speedups use: means in KernelBench's timing mode, medians otherwise.
double headlineUs(const protocol::EvaluateResult& r, const protocol::TimingStats& t) {
    return r.timingMode == "kernelbench" ? t.meanUs : t.medianUs;
}

QString times(double x) {
    return QStringLiteral("%1x").arg(x, 0, 'f', x < 10.0 ? 3 : 2);
}

} // namespace

QString speedupBaseOf(const protocol::EvaluateResult& result) {
    return result.speedupBase == "pytorch eager" ? QStringLiteral("PyTorch eager") : QStringLiteral("the baseline");
}

YardstickFigures yardstickFigures(const protocol::EvaluateResult* start, const protocol::EvaluateResult* final,
                                  const QJsonObject& finalRoofline) {
    YardstickFigures f;
    if (start) {
        if (start->eagerTiming)
            f.startEagerUs = headlineUs(*start, *start->eagerTiming);
        if (start->compileTiming)
            f.startCompileUs = headlineUs(*start, *start->compileTiming);
        f.seedVsEager = start->speedupVsEager;
        if (start->status == protocol::Status::Ok)
            f.seedSpeedup = start->speedup;
        f.speedupBase = speedupBaseOf(*start);
        f.note = q(start->pytorchNote);
    }
    if (final && final->status == protocol::Status::Ok) {
        if (final->candidateTiming)
            f.bestUs = headlineUs(*final, *final->candidateTiming);
        f.bestVsEager = final->speedupVsEager;
        f.bestVsCompile = final->speedupVsCompile;
        f.bestVsEagerInterval = final->speedupVsEagerInterval;
        f.bestVsCompileInterval = final->speedupVsCompileInterval;
        if (const double fraction = finalRoofline.value(QStringLiteral("fraction_of_bound")).toDouble(); fraction > 0)
            f.bestFractionOfBound = fraction;
        if (const double split = finalRoofline.value(QStringLiteral("split_tf32_fraction")).toDouble(); split > 0)
            f.bestSplitTf32Fraction = split;
        if (!final->pytorchNote.empty())
            f.note = q(final->pytorchNote);
    } else if (final) {
        f.note = QStringLiteral("the best's last comparison with PyTorch failed: %1").arg(q(final->message));
    }
    if (f.note.isEmpty() && !f.timed())
        f.note = QStringLiteral("PyTorch was not timed");
    return f;
}

YardstickFigures yardstickFigures(const QList<EvaluationRecord>& evaluations, qint64 bestCandidate) {
    const EvaluationRecord* start = nullptr; // the first that timed PyTorch
    const EvaluationRecord* noted = nullptr; // else the first that says why not
    const EvaluationRecord* final = nullptr;
    for (const auto& e : evaluations) {
        if (e.purpose == model::EvaluationPurpose::Search) {
            if (!start && e.result.eagerTiming)
                start = &e;
            if (!noted && !e.result.pytorchNote.empty())
                noted = &e;
        } else if (e.purpose == model::EvaluationPurpose::Yardstick && e.candidateId == bestCandidate) {
            final = &e;
        }
    }
    if (!start)
        start = noted;
    return yardstickFigures(start ? &start->result : nullptr, final ? &final->result : nullptr,
                            final ? final->roofline : QJsonObject());
}

std::optional<double> YardstickFigures::overEager(double speedup) const {
    if (speedup <= 0.0)
        return std::nullopt;
    if (speedupBase == QLatin1String("PyTorch eager"))
        return speedup;
    if (seedVsEager && seedSpeedup && *seedSpeedup > 0.0)
        return speedup / *seedSpeedup * *seedVsEager;
    return std::nullopt;
}

QString YardstickFigures::headline() const {
    QStringList parts;
    if (bestVsEager)
        parts << QStringLiteral("%1 over PyTorch eager%2")
                     .arg(times(*bestVsEager), eval::verdictText(bestVsEagerInterval));
    if (bestVsCompile)
        parts << QStringLiteral("%1 over torch.compile%2")
                     .arg(times(*bestVsCompile), eval::verdictText(bestVsCompileInterval));
    if (parts.isEmpty())
        return startEagerUs ? QStringLiteral("PyTorch timed at the start only (the run did not end with a comparison)")
                            : QStringLiteral("no speedup over PyTorch: %1").arg(note);
    if (bestFractionOfBound)
        parts << QStringLiteral("%1% of its roofline bound%2")
                     .arg(*bestFractionOfBound * 100.0, 0, 'f', 1)
                     .arg(diagnose::splitTf32Note(bestSplitTf32Fraction.value_or(0.0)));
    return parts.join(QStringLiteral(", "));
}

QString YardstickFigures::text() const {
    QString t;
    const auto us = [](const std::optional<double>& v) {
        return v ? QStringLiteral("%1 us").arg(*v, 0, 'f', 2) : QStringLiteral("-");
    };
    if (startEagerUs || startCompileUs)
        t += QStringLiteral("pytorch at the start: eager %1, torch.compile %2%3\n")
                 .arg(us(startEagerUs), us(startCompileUs),
                      seedVsEager ? QStringLiteral(" (first seed %1 over eager)").arg(times(*seedVsEager)) : QString());
    if (bestVsEager || bestVsCompile)
        t += QStringLiteral("pytorch at the end, beside the best (%1): %2\n").arg(us(bestUs), headline());
    if (!timed())
        t += QStringLiteral("pytorch: %1\n").arg(headline());
    else if (!note.isEmpty())
        t += QStringLiteral("pytorch: %1\n").arg(note);
    return t;
}

QJsonObject YardstickFigures::toJson() const {
    QJsonObject o;
    const auto put = [&o](const char* key, const std::optional<double>& v) {
        o.insert(QLatin1String(key), v ? QJsonValue(*v) : QJsonValue());
    };
    put("start_eager_us", startEagerUs);
    put("start_compile_us", startCompileUs);
    put("seed_speedup_vs_eager", seedVsEager);
    put("best_us", bestUs);
    put("best_speedup_vs_eager", bestVsEager);
    put("best_speedup_vs_compile", bestVsCompile);
    const auto interval = [&o](const char* key, const std::optional<protocol::RatioInterval>& i) {
        o.insert(QLatin1String(key),
                 i ? QJsonValue(QJsonObject{{QStringLiteral("low"), i->low},
                                            {QStringLiteral("high"), i->high},
                                            {QStringLiteral("rounds"), i->rounds},
                                            {QStringLiteral("verdict"), QLatin1String(i->verdict())}})
                   : QJsonValue());
    };
    interval("best_speedup_vs_eager_interval", bestVsEagerInterval);
    interval("best_speedup_vs_compile_interval", bestVsCompileInterval);
    put("best_fraction_of_bound", bestFractionOfBound);
    put("best_split_tf32_fraction", bestSplitTf32Fraction);
    o.insert(QStringLiteral("note"), note);
    return o;
}

} // namespace kforge::store
