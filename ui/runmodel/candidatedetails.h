#pragma once
// Kernel sources and whole evaluation results, loaded on demand by the run's reader thread and kept
// in a small cache. Views ask for a candidate (details()), show "loading" while it is null, and
// redraw on loaded(). Answers for a run that is no longer open are dropped.

#include "store/runstore.h"

#include <QCache>
#include <QObject>
#include <QSet>

namespace kforge::ui {

struct CandidateDetail {
    qint64 id = 0;
    model::Candidate candidate;                 // with its source
    QList<store::EvaluationRecord> evaluations; // search first, then re-measurements
    std::optional<store::ReviewRecord> review;
    QString error; // why it could not be read; the rest is empty then

    const store::EvaluationRecord* searchEvaluation() const; // null until evaluated
};

class CandidateDetails : public QObject {
    Q_OBJECT
public:
    explicit CandidateDetails(QObject* parent = nullptr);

    // The cached detail, or null after asking for it (loaded() follows).
    const CandidateDetail* details(qint64 candidate);
    // Forgets cached details, e.g. after a new evaluation of the candidate.
    void invalidate(qint64 candidate);
    void clear(); // another run

signals:
    void requested(qint64 candidate); // to the reader (queued)
    void loaded(qint64 candidate);

public slots:
    void deliver(qint64 token, const kforge::ui::CandidateDetail& detail);
    void setToken(qint64 token) { m_token = token; }

private:
    QCache<qint64, CandidateDetail> m_cache;
    QSet<qint64> m_pending;
    qint64 m_token = 0;
};

} // namespace kforge::ui

Q_DECLARE_METATYPE(kforge::ui::CandidateDetail)
