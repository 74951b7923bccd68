#include "search/curation.h"

namespace kforge::search {

void Curation::attach(Context context, std::map<qint64, model::ReviewState> storedReviews) {
    m_c = context;
    m_reviews = std::move(storedReviews);
}

QString Curation::place(Entry& entry, const diagnose::Ceilings& ceilings, const RunConfig& config) {
    if (!entry.fitness.correct || entry.candidate.vetoed)
        return {};
    // The task's own baseline is the reference point, never suspicious.
    entry.review = entry.candidate.origin == model::Origin::Seed ? QString() : reviewReason(entry, ceilings, config);
    QString notice;
    if (!entry.review.isEmpty()) {
        const qint64 id = entry.candidate.id;
        auto known = m_reviews.find(id);
        if (known == m_reviews.end()) {
            if (!m_c.record->written(m_c.store->requestReview(m_c.runId, id, entry.review),
                                     QStringLiteral("the review request of candidate %1").arg(id)))
                return {};
            known = m_reviews.emplace(id, model::ReviewState::Pending).first;
            m_c.record->buffer(model::EventKind::ReviewRequested,
                               {{QStringLiteral("candidate"), id}, {QStringLiteral("reason"), entry.review}});
            notice = QStringLiteral("candidate %1 waits for review: %2").arg(id).arg(entry.review);
        }
        entry.reviewState = known->second;
        if (entry.reviewState != model::ReviewState::Accepted)
            return notice;
    }
    admit(entry);
    return notice;
}

void Curation::admit(const Entry& entry) {
    const auto& parents = entry.candidate.parents;
    m_c.islands->admit(entry.candidate.id, *entry.cell, entry.fitness, entry.candidate.island,
                       entry.candidate.origin == model::Origin::Seed,
                       parents.isEmpty() ? std::nullopt : std::optional<qint64>(parents.front()));
}

bool Curation::apply(const EngineCommand& c, int generation) {
    using K = EngineCommand::Kind;
    QJsonObject data{{QStringLiteral("candidate"), c.candidate}};
    if (!c.reason.isEmpty())
        data.insert(QStringLiteral("reason"), c.reason);
    switch (c.kind) {
    case K::Pin:
    case K::Unpin:
        setPinned(c.candidate, c.kind == K::Pin);
        m_c.record->event(generation, c.kind == K::Pin ? model::EventKind::Pin : model::EventKind::Unpin, data);
        if (c.kind == K::Pin)
            m_c.learning->learnHumanAction(experience::HumanAction::Pin, c, *m_c.population);
        return false;
    case K::Veto: {
        const bool moved = veto(c.candidate);
        m_c.record->event(generation, model::EventKind::Veto, data);
        m_c.learning->learnHumanAction(experience::HumanAction::Veto, c, *m_c.population);
        return moved;
    }
    case K::AcceptReview:
    case K::RejectReview: {
        const bool accepted = c.kind == K::AcceptReview;
        if (!m_c.record->written(m_c.store->decideReview(m_c.runId, c.candidate, accepted, c.reason),
                                 QStringLiteral("the review of candidate %1").arg(c.candidate)))
            return false;
        Entry& e = m_c.population->at(c.candidate);
        e.reviewState = accepted ? model::ReviewState::Accepted : model::ReviewState::Rejected;
        m_reviews[c.candidate] = e.reviewState;
        m_c.record->event(generation, accepted ? model::EventKind::ReviewAccepted : model::EventKind::ReviewRejected,
                          data);
        if (!accepted)
            return veto(c.candidate);
        admit(e);                                    // an elite and a parent from now on
        m_c.promotions->reviewAccepted(c.candidate); // and considered for promotion after this generation
        return false;
    }
    default:
        return false;
    }
}

bool Curation::replay(const std::vector<Steering::FlagChange>& changes) {
    bool moved = false;
    for (const auto& change : changes) {
        if (!m_c.population->contains(change.candidate))
            continue;
        if (change.kind == Steering::FlagChange::Kind::Veto)
            moved = veto(change.candidate) || moved;
        else
            setPinned(change.candidate, change.kind == Steering::FlagChange::Kind::Pin);
    }
    return moved;
}

void Curation::setPinned(qint64 candidate, bool pinned) {
    m_c.population->setPinned(candidate, pinned);
    const auto& c = m_c.population->at(candidate).candidate;
    m_c.record->written(m_c.store->setCandidateFlags(m_c.runId, candidate, c.pinned, c.vetoed),
                        QStringLiteral("the flags of candidate %1").arg(candidate));
}

void Curation::remeasured(qint64 candidate) {
    refill(m_c.islands->rescore(candidate, m_c.population->at(candidate).fitness));
}

void Curation::refill(const std::vector<Place>& places) {
    for (const Place& place : places) {
        for (const auto& [id, e] : m_c.population->entries()) {
            // The island's own kernels, the baseline every island starts from, and the migrants
            // it once took in.
            const bool ofIsland = e.candidate.origin == model::Origin::Seed
                                  || m_c.islands->clamp(e.candidate.island) == place.island
                                  || m_c.islands->arrived(place.island, id);
            if (ofIsland && e.cell == place.cell && e.fitness.correct && !e.candidate.vetoed && !e.awaitingReview())
                m_c.islands->offer(place, id, e.fitness);
        }
    }
}

bool Curation::veto(qint64 candidate) {
    m_c.population->setVetoed(candidate);
    refill(m_c.islands->remove(candidate));
    m_c.record->written(m_c.store->setCandidateFlags(m_c.runId, candidate, false, true),
                        QStringLiteral("the veto of candidate %1").arg(candidate));
    return m_c.promotions->recompute(*m_c.population);
}

} // namespace kforge::search
