#include "search/runbudget.h"

#include <algorithm>
#include <climits>

namespace kforge::search {

void RunBudget::resume(qint64 evaluations, double wallSeconds) {
    m_evaluations = evaluations;
    m_priorSeconds = wallSeconds;
}

void RunBudget::startSession() {
    m_session.start();
    m_sessionEvaluations = 0;
}

void RunBudget::counted() {
    ++m_evaluations;
    ++m_sessionEvaluations;
}

double RunBudget::sessionSeconds() const {
    return m_session.isValid() ? m_session.elapsed() / 1000.0 : 0.0;
}

double RunBudget::elapsedSeconds() const {
    return m_priorSeconds + sessionSeconds();
}

double RunBudget::sessionRate() const {
    const double session = sessionSeconds();
    return session > 0.5 ? m_sessionEvaluations / session : 0.0;
}

int RunBudget::left(const RunConfig& config, qint64 inFlight) const {
    if (config.budgetEvaluations <= 0)
        return INT_MAX;
    const qint64 reserve = config.confirmBest ? 1 : 0;
    const qint64 left = config.budgetEvaluations - m_evaluations - inFlight - reserve;
    return static_cast<int>(std::clamp<qint64>(left, 0, INT_MAX));
}

std::optional<QString> RunBudget::spent(const RunConfig& config, qint64 inFlight) const {
    if (config.budgetEvaluations > 0 && left(config, inFlight) <= 0) {
        // Short of the budget only by what is still running and the evaluation kept back for
        // re-measuring the best, which the message names so that "39 of 40" is not a puzzle.
        QString why = QStringLiteral("%1 of %2").arg(m_evaluations).arg(config.budgetEvaluations);
        if (inFlight > 0)
            why += QStringLiteral(", %1 in flight").arg(inFlight);
        if (config.confirmBest && m_evaluations + inFlight < config.budgetEvaluations)
            why += QStringLiteral(", the last kept for re-measuring the best");
        return QStringLiteral("evaluation budget reached (%1)").arg(why);
    }
    if (config.budgetSeconds > 0.0 && elapsedSeconds() >= config.budgetSeconds)
        return QStringLiteral("time budget reached (%1 s)").arg(config.budgetSeconds);
    return std::nullopt;
}

double RunBudget::etaSeconds(const RunConfig& config) const {
    const double rate = sessionRate();
    if (config.budgetEvaluations <= 0 || rate <= 0.0)
        return -1.0;
    return static_cast<double>(std::max<qint64>(0, config.budgetEvaluations - m_evaluations)) / rate;
}

} // namespace kforge::search
