#include "experience/harvester.h"

#include "util/textdiff.h"

#include <QRegularExpression>

namespace kforge::experience {

QString HarvestContext::originOf(qint64 candidate) const {
    return QStringLiteral("%1#run%2/candidate%3").arg(storePath).arg(runId).arg(candidate);
}

std::optional<RunCandidate> parseOrigin(const QString& origin) {
    static const QRegularExpression kOrigin(QStringLiteral("^(.*)#run(\\d+)/candidate(\\d+)$"));
    const auto match = kOrigin.match(origin);
    if (!match.hasMatch())
        return std::nullopt;
    bool runOk = false, candidateOk = false;
    RunCandidate out{match.captured(1), match.captured(2).toLongLong(&runOk),
                     match.captured(3).toLongLong(&candidateOk)};
    if (!runOk || !candidateOk)
        return std::nullopt;
    return out;
}

std::optional<Insight> changeInsight(const KernelOutcome& parent, const KernelOutcome& child,
                                     const HarvestContext& context) {
    if (child.origin == model::Origin::Seed || child.origin == model::Origin::Experience || !child.evaluated)
        return std::nullopt;
    if (!parent.fitness.correct || parent.fitness.speedup <= 0.0)
        return std::nullopt;
    Insight insight;
    const double ratio = child.fitness.correct ? child.fitness.speedup / parent.fitness.speedup : 0.0;
    if (child.fitness.correct && ratio >= kClearChange)
        insight.kind = model::InsightKind::Helped;
    else if (!child.fitness.correct || (ratio > 0.0 && ratio <= 1.0 / kClearChange))
        insight.kind = model::InsightKind::Hurt; // broken, or clearly slower
    else
        return std::nullopt;
    insight.family = context.family;
    insight.task = context.task;
    insight.backend = context.backend;
    insight.transformation = child.label;
    insight.bottleneck = parent.bottleneck;
    insight.speedup = ratio;
    insight.before = parent.source;
    insight.after = child.source;
    insight.diff = util::unifiedDiff(insight.before, insight.after, QStringLiteral("#%1").arg(parent.id),
                                     QStringLiteral("#%1").arg(child.id));
    if (child.fitness.correct) {
        insight.summary =
            QStringLiteral("On %1 (%2%3), %4 made the kernel %5x %6 than %7 (#%8 -> #%9).")
                .arg(context.task, context.backend,
                     child.device.isEmpty() ? QString() : QStringLiteral(", ") + child.device, child.label)
                .arg(ratio >= 1.0 ? ratio : 1.0 / ratio, 0, 'f', 2)
                .arg(ratio >= 1.0 ? QStringLiteral("faster") : QStringLiteral("slower"), parent.label)
                .arg(parent.id)
                .arg(child.id);
        if (!insight.bottleneck.isEmpty())
            insight.summary += QStringLiteral(" The parent was %1-bound.").arg(insight.bottleneck);
    } else {
        insight.summary = QStringLiteral("On %1 (%2), %3 broke the kernel: %4.")
                              .arg(context.task, context.backend, child.label, child.message);
    }
    insight.origin = context.originOf(child.id);
    return insight;
}

Insight humanInsight(HumanAction action, const KernelOutcome& kernel, const QString& before, const QString& reason,
                     const HarvestContext& context) {
    Insight insight;
    insight.kind = action == HumanAction::Pin    ? model::InsightKind::HumanPin
                   : action == HumanAction::Veto ? model::InsightKind::HumanVeto
                                                 : model::InsightKind::HumanEdit;
    insight.family = context.family;
    insight.task = context.task;
    insight.backend = context.backend;
    insight.reason = reason;
    insight.after = kernel.source;
    if (action == HumanAction::Edit) {
        insight.transformation = kernel.label.isEmpty() ? QStringLiteral("a hand edit") : kernel.label;
        insight.before = before;
        insight.diff = util::unifiedDiff(insight.before, insight.after);
    } else {
        insight.transformation = kernel.label;
        insight.speedup = kernel.fitness.speedup;
        insight.bottleneck = kernel.bottleneck;
    }
    insight.summary = QStringLiteral("A person %1 %2 on %3 (%4)%5")
                          .arg(action == HumanAction::Pin    ? QStringLiteral("pinned")
                               : action == HumanAction::Veto ? QStringLiteral("vetoed")
                                                             : QStringLiteral("wrote"),
                               insight.transformation, insight.task, insight.backend,
                               reason.isEmpty() ? QStringLiteral(".") : QStringLiteral(": ") + reason);
    insight.origin = context.originOf(kernel.id);
    return insight;
}

} // namespace kforge::experience
