#pragma once
// What a run has spent of its budget, over all its sessions: evaluations (counted once stored) and
// wall time; and from that, what may still be started, whether the budget is spent, and the pace.

#include "search/runconfig.h"

#include <QElapsedTimer>
#include <QString>

#include <optional>

namespace kforge::search {

class RunBudget {
public:
    // What earlier sessions of the run spent (a resumed run), and the start of this session.
    void resume(qint64 evaluations, double wallSeconds);
    void startSession();
    void counted(); // one evaluation stored

    qint64 evaluations() const { return m_evaluations; }
    double elapsedSeconds() const; // over all sessions
    double sessionRate() const;    // evaluations per second in this session; 0 in its first half second

    // Evaluations that may still be started, given those in flight (INT_MAX without a limit). One
    // stays in reserve for the re-measurement that a new best needs.
    int left(const RunConfig& config, qint64 inFlight) const;
    // Why no further generation may start, if so.
    std::optional<QString> spent(const RunConfig& config, qint64 inFlight) const;
    double etaSeconds(const RunConfig& config) const; // until the evaluation budget is spent; -1: unknown

private:
    double sessionSeconds() const;

    qint64 m_evaluations = 0;
    qint64 m_sessionEvaluations = 0;
    double m_priorSeconds = 0.0;
    QElapsedTimer m_session;
};

} // namespace kforge::search
