#pragma once
// A run's figures against PyTorch, the yardstick its users compare with: PyTorch eager and
// torch.compile timed on the same shapes and device as the kernels, once beside the run's first
// seed at its start and once beside its best at its end (the evaluation of purpose "yardstick").
// Where PyTorch was not timed, `note` says why instead of a number being shown.

#include "store/runstore.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace kforge::store {

struct YardstickFigures {
    // At the start, beside the first seed (the baseline where the task has one).
    std::optional<double> startEagerUs;
    std::optional<double> startCompileUs;
    std::optional<double> seedVsEager; // the first seed's speedup over eager (below 1: slower)
    std::optional<double> seedSpeedup; // its speedup over speedupBase in that same evaluation
    // At the end, beside the best.
    std::optional<double> bestUs;
    std::optional<double> bestVsEager;
    std::optional<double> bestVsCompile;
    // How sure those two are, where the best was timed side by side (protocol::RatioInterval).
    std::optional<protocol::RatioInterval> bestVsEagerInterval;
    std::optional<protocol::RatioInterval> bestVsCompileInterval;
    std::optional<double> bestFractionOfBound; // in that same evaluation
    // A float32 kernel on TF32 tensor cores: of the third of that roof a 3xTF32 kernel can reach
    // (diagnose::Roofline::splitTf32Fraction), in that same evaluation.
    std::optional<double> bestSplitTf32Fraction;
    QString note; // what PyTorch was, or why it was not timed
    // What the run's speedups are over: "the baseline", or "PyTorch eager" for a task without a
    // baseline kernel (read from the first seed's result).
    QString speedupBase = QStringLiteral("the baseline");

    bool timed() const { return startEagerUs || bestVsEager; }
    // A candidate's speedup over PyTorch eager from its speedup over the run's yardstick: itself for
    // a task measured against eager; otherwise through the first seed, which was timed beside both
    // (the candidate over the seed, times the seed over eager). Nothing where eager was not timed.
    std::optional<double> overEager(double speedup) const;
    // One line for people: "1.21x over PyTorch eager, 0.998x over torch.compile (a tie, 95% interval
    // 0.993x-1.004x over 20 paired rounds)" (at the end, beside the best); or the note when nothing
    // was timed.
    QString headline() const;
    // The lines of a report (start and end, with times).
    QString text() const;
    QJsonObject toJson() const;
};

// What a result's speedup is over, for people: "the baseline" or "PyTorch eager".
QString speedupBaseOf(const protocol::EvaluateResult& result);

// From the first seed's search result and the best's yardstick result (either may be missing),
// and the latter's roofline.
YardstickFigures yardstickFigures(const protocol::EvaluateResult* start, const protocol::EvaluateResult* final,
                                  const QJsonObject& finalRoofline = {});
// The same from a run's stored evaluations: the first search evaluation that timed PyTorch (or the
// first at all), and the last yardstick evaluation of `bestCandidate`.
YardstickFigures yardstickFigures(const QList<EvaluationRecord>& evaluations, qint64 bestCandidate);

} // namespace kforge::store
