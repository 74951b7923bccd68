#include "search/promotion.h"

#include "search/roofverdict.h"

namespace kforge::search {

QString reviewReason(const Entry& entry, const diagnose::Ceilings& ceilings, const RunConfig& config) {
    // A result whose timing relies on having seen its inputs before (a cache of answers, work
    // skipped on repeated data) is caught by the worker's fresh_inputs_speed check; its outputs
    // were right, so a person decides.
    if (entry.result)
        for (const auto& check : entry.result->checks)
            if (check.name == "fresh_inputs_speed" && !check.passed)
                return QStringLiteral("it is markedly faster on repeated inputs than on fresh ones%1")
                    .arg(check.detail.empty() ? QString()
                                              : QStringLiteral(" (%1)").arg(QString::fromStdString(check.detail)));
    if (const auto roofs = judgeRoofs(entry.roofline, ceilings, config.reviewCeiling, config.rejectCeiling,
                                      config.memoryReviewCeiling);
        roofs.kind != RoofVerdict::Kind::Plausible)
        return roofs
            .reason; // an impossible result was rejected when it arrived; a replayed one may still be accepted by hand
    if (config.reviewSpeedup > 0.0 && entry.fitness.speedup > config.reviewSpeedup)
        return QStringLiteral("%1x over the baseline is more than %2x: check that it really does the work")
            .arg(entry.fitness.speedup, 0, 'f', 1)
            .arg(config.reviewSpeedup);
    return {};
}

std::optional<QString> impossibleTiming(const std::optional<diagnose::Roofline>& roofline,
                                        const diagnose::Ceilings& ceilings, const RunConfig& config) {
    const auto roofs =
        judgeRoofs(roofline, ceilings, config.reviewCeiling, config.rejectCeiling, config.memoryReviewCeiling);
    if (roofs.kind != RoofVerdict::Kind::Impossible)
        return std::nullopt;
    return roofs.reason;
}

diagnose::Finding impossibleTimingFinding(const QString& reason) {
    diagnose::Finding f;
    f.rule = QStringLiteral("above_roof");
    f.kind = QStringLiteral("integrity");
    f.severity = QStringLiteral("error");
    f.message = QStringLiteral("impossible timing: %1").arg(reason);
    return f;
}

double promotionThreshold(const Best& best) {
    return best.candidate ? best.speedup * kPromotionMargin : 0.0;
}

std::optional<qint64> promotionCandidate(const Population& population, const std::vector<qint64>& considered,
                                         const std::map<qint64, double>& confirmed, const Best& best) {
    const Entry* pick = nullptr;
    for (qint64 id : considered) {
        const Entry& e = population.at(id);
        if (!e.fitness.correct || e.candidate.vetoed || confirmed.count(id) || e.awaitingReview())
            continue;
        if (!pick || e.fitness.betterThan(pick->fitness))
            pick = &e;
    }
    if (!pick || pick->fitness.speedup <= promotionThreshold(best))
        return std::nullopt;
    return pick->candidate.id;
}

bool confirmsPromotion(const model::Fitness& remeasured, const Best& best) {
    return remeasured.correct && remeasured.speedup > promotionThreshold(best);
}

Best bestConfirmed(const std::map<qint64, double>& confirmed, const Population& population) {
    Best best;
    for (const auto& [id, speedup] : confirmed) {
        if (population.at(id).candidate.vetoed)
            continue;
        if (!best.candidate || speedup > best.speedup)
            best = {id, speedup};
    }
    return best;
}

std::optional<qint64> Promotions::next(const Population& population, const std::vector<qint64>& batch) {
    std::vector<qint64> considered = batch;
    considered.insert(considered.end(), m_accepted.begin(), m_accepted.end());
    m_accepted.clear();
    return promotionCandidate(population, considered, m_confirmed, m_best);
}

Promotions::Verdict Promotions::confirm(qint64 candidate, const protocol::EvaluateResult& remeasured,
                                        const Population& population) {
    const Entry& e = population.at(candidate);
    const model::Fitness confirmed = model::fitnessOf(remeasured);
    Verdict v;
    v.data = {{QStringLiteral("candidate"), candidate},
              {QStringLiteral("first_speedup"), e.fitness.speedup},
              {QStringLiteral("confirmed_speedup"), confirmed.speedup},
              {QStringLiteral("status"), QString::fromStdString(std::string(protocol::statusName(remeasured.status)))},
              {QStringLiteral("label"), e.candidate.label}};
    if (confirmsPromotion(confirmed, m_best)) {
        m_confirmed[candidate] = confirmed.speedup;
        v.event = model::EventKind::NewBest;
        v.bestChanged = recompute(population);
    } else {
        v.data.insert(QStringLiteral("previous_best"), m_best.speedup);
    }
    return v;
}

bool Promotions::recompute(const Population& population) {
    const qint64 before = m_best.candidate;
    m_best = bestConfirmed(m_confirmed, population);
    return m_best.candidate != before;
}

} // namespace kforge::search
