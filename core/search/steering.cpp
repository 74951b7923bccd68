#include "search/steering.h"

#include <QMutexLocker>

namespace kforge::search {

void Steering::post(EngineCommand command) {
    QMutexLocker lock(&m_mutex);
    m_commands.push_back(std::move(command));
}

bool Steering::immediate(EngineCommand::Kind kind) {
    using K = EngineCommand::Kind;
    return kind == K::Pause || kind == K::Resume || kind == K::Stop || kind == K::SetBudget;
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
        const auto kind = record.kind == QLatin1String("veto")  ? FlagChange::Kind::Veto
                          : record.kind == QLatin1String("pin") ? FlagChange::Kind::Pin
                                                                : FlagChange::Kind::Unpin;
        changes.push_back({id, kind});
    }
    m_stored.erase(it);
    return changes;
}

} // namespace kforge::search
