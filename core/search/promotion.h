#pragma once
// Which correct results a person must look at before they count (the review policy), which are
// rejected outright for impossible timing, and when a new best is promoted: only a candidate that
// beats the confirmed best by more than measurement noise is re-measured, and only a
// re-measurement that still beats it promotes it.

#include "search/population.h"
#include "search/runconfig.h"

#include "diagnose/roofline.h"

#include <QJsonObject>
#include <QString>

#include <map>
#include <optional>
#include <vector>

namespace kforge::search {

// Why a correct result needs a person before it enters an archive, or empty: it is markedly
// faster on repeated inputs than on fresh ones, close to (or, when replayed, above) a measured
// roof, or above the run's review speedup.
QString reviewReason(const Entry& entry, const diagnose::Ceilings& ceilings, const RunConfig& config);
// Why a timed result is physically impossible (above a measured roof), or nothing.
std::optional<QString> impossibleTiming(const std::optional<diagnose::Roofline>& roofline,
                                        const diagnose::Ceilings& ceilings, const RunConfig& config);
// The finding stored with a result rejected for impossible timing.
diagnose::Finding impossibleTimingFinding(const QString& reason);

// A speedup must beat the current best by more than measurement noise to be worth re-measuring.
inline constexpr double kPromotionMargin = 1.005;

struct Best {
    qint64 candidate = 0; // 0: none yet
    double speedup = 0.0;
};

// The speedup a candidate must exceed to be promoted over `best`.
double promotionThreshold(const Best& best);
// The best of `considered` that is correct, not vetoed, not confirmed before, not waiting for
// review and above the threshold: the one to re-measure.
std::optional<qint64> promotionCandidate(const Population& population, const std::vector<qint64>& considered,
                                         const std::map<qint64, double>& confirmed, const Best& best);
// Whether a re-measurement confirms the candidate as the new best.
bool confirmsPromotion(const model::Fitness& remeasured, const Best& best);
// The best confirmed candidate that is not vetoed.
Best bestConfirmed(const std::map<qint64, double>& confirmed, const Population& population);

// The run's promotions: the candidates whose re-measurement confirmed them, the confirmed best, and
// the review decisions to consider at the end of the generation they were made in.
class Promotions {
public:
    const Best& best() const { return m_best; }
    void reviewAccepted(qint64 candidate) { m_accepted.push_back(candidate); }

    // The candidate to re-measure after a generation (its batch and the reviews accepted since),
    // if any; the accepted reviews are considered once.
    std::optional<qint64> next(const Population& population, const std::vector<qint64>& batch);

    // What a re-measurement decided: new_best (the best may have changed) or promotion_rejected,
    // with the event's data.
    struct Verdict {
        model::EventKind event = model::EventKind::PromotionRejected;
        QJsonObject data;
        bool bestChanged = false;
    };
    Verdict confirm(qint64 candidate, const protocol::EvaluateResult& remeasured, const Population& population);
    // The best again after a veto; true when it changed.
    bool recompute(const Population& population);

private:
    std::map<qint64, double> m_confirmed; // candidate -> confirmed speedup
    Best m_best;
    std::vector<qint64> m_accepted;
};

} // namespace kforge::search
