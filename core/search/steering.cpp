#include "search/steering.h"

#include <QMutexLocker>

#include <algorithm>

namespace kforge::search {

void Steering::post(EngineCommand command) {
    QMutexLocker lock(&m_mutex);
    m_commands.push_back(std::move(command));
}

bool Steering::immediate(EngineCommand::Kind kind) {
    using K = EngineCommand::Kind;
    return kind == K::Pause || kind == K::Resume || kind == K::Stop || kind == K::SetBudget;
}

std::optional<Steering::RunStep> Steering::runStep(const EngineCommand& c, RunState state, bool atBoundary,
                                                   RunConfig& config) {
    using K = EngineCommand::Kind;
    using E = model::EventKind;
    switch (c.kind) {
    case K::Pause:
        if (state != RunState::Running)
            return std::nullopt;
        return RunStep{atBoundary ? RunState::Paused : RunState::Pausing, E::Pause, {}, false};
    case K::Resume:
        if (state != RunState::Paused && state != RunState::Pausing)
            return std::nullopt;
        return RunStep{RunState::Running, E::Resume, {}, state == RunState::Paused};
    case K::Stop:
        if (state == RunState::Stopping)
            return std::nullopt;
        return RunStep{RunState::Stopping, E::Stop, {}, false};
    case K::SetBudget:
        if (c.budgetEvaluations >= 0)
            config.budgetEvaluations = c.budgetEvaluations;
        if (c.budgetSeconds >= 0.0)
            config.budgetSeconds = c.budgetSeconds;
        return RunStep{state,
                       E::Budget,
                       {{QStringLiteral("evaluations"), config.budgetEvaluations},
                        {QStringLiteral("seconds"), config.budgetSeconds}},
                       state == RunState::Running && atBoundary};
    default:
        return std::nullopt;
    }
}

QString Steering::refusal(const EngineCommand& c, const Population& population, int islands) {
    using K = EngineCommand::Kind;
    switch (c.kind) {
    case K::Pin:
    case K::Unpin:
    case K::Veto:
        if (population.contains(c.candidate))
            return {};
        return QStringLiteral("cannot %1 candidate %2: the run has no such candidate")
            .arg(c.kind == K::Pin     ? QStringLiteral("pin")
                 : c.kind == K::Unpin ? QStringLiteral("unpin")
                                      : QStringLiteral("veto"))
            .arg(c.candidate);
    case K::AcceptReview:
    case K::RejectReview: {
        const Entry* e = population.find(c.candidate);
        if (e && !e->review.isEmpty() && e->reviewState == model::ReviewState::Pending)
            return {};
        return QStringLiteral("candidate %1 is not waiting for review").arg(c.candidate);
    }
    case K::Inject: {
        const model::Candidate injected = injectedCandidate(c, islands);
        if (!population.hasKernel(injected.source, injected.params))
            return {};
        return QStringLiteral("not injected: the run already has this kernel with these parameters");
    }
    default:
        return {};
    }
}

model::Candidate Steering::injectedCandidate(const EngineCommand& inject, int islands) {
    model::Candidate c = inject.injected;
    c.origin = model::Origin::Human;
    c.island = std::clamp(c.island, 0, islands - 1);
    if (c.label.isEmpty())
        c.label =
            c.parents.isEmpty() ? QStringLiteral("human") : QStringLiteral("human edit of #%1").arg(c.parents.front());
    return c;
}

std::vector<EngineCommand> Steering::take(bool started, bool atBoundary) {
    QMutexLocker lock(&m_mutex);
    std::vector<EngineCommand> now;
    if (!started)
        return now; // kept for the first boundary
    std::deque<EngineCommand> waiting;
    for (EngineCommand& c : m_commands) {
        if (immediate(c.kind) || atBoundary)
            now.push_back(std::move(c));
        else
            waiting.push_back(std::move(c)); // waits for the end of the generation in flight
    }
    m_commands.swap(waiting);
    return now;
}

std::vector<Steering::FlagChange> Steering::storedActionsAt(int generation) {
    std::vector<FlagChange> changes;
    auto it = m_stored.find(generation);
    if (it == m_stored.end())
        return changes;
    for (const auto& record : it->second) {
        const qint64 id = static_cast<qint64>(record.data.value(QStringLiteral("candidate")).toDouble());
        const auto kind = record.kind == model::EventKind::Veto  ? FlagChange::Kind::Veto
                          : record.kind == model::EventKind::Pin ? FlagChange::Kind::Pin
                                                                 : FlagChange::Kind::Unpin;
        changes.push_back({id, kind});
    }
    m_stored.erase(it);
    return changes;
}

} // namespace kforge::search
