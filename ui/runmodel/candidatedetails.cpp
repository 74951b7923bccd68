#include "candidatedetails.h"

namespace kforge::ui {

namespace {
constexpr int kCachedCandidates = 256;
}

const store::EvaluationRecord* CandidateDetail::searchEvaluation() const {
    for (const auto& e : evaluations)
        if (e.purpose == model::EvaluationPurpose::Search)
            return &e;
    return nullptr;
}

CandidateDetails::CandidateDetails(QObject* parent) : QObject(parent), m_cache(kCachedCandidates) {
    static const int registered = [] {
        qRegisterMetaType<CandidateDetail>();
        return 0;
    }();
    Q_UNUSED(registered);
}

const CandidateDetail* CandidateDetails::details(qint64 candidate) {
    if (candidate <= 0)
        return nullptr;
    if (const auto* cached = m_cache.object(candidate))
        return cached;
    if (!m_pending.contains(candidate)) {
        m_pending.insert(candidate);
        emit requested(candidate);
    }
    return nullptr;
}

void CandidateDetails::invalidate(qint64 candidate) {
    m_cache.remove(candidate);
}

void CandidateDetails::clear() {
    m_cache.clear();
    m_pending.clear();
}

void CandidateDetails::deliver(qint64 token, const CandidateDetail& detail) {
    if (token != m_token)
        return; // for a run that is no longer open
    m_pending.remove(detail.id);
    m_cache.insert(detail.id, new CandidateDetail(detail));
    emit loaded(detail.id);
}

} // namespace kforge::ui
