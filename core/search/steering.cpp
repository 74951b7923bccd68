#include "search/steering.h"

#include "util/numbers.h"

#include <QJsonArray>
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

namespace {

const std::pair<EngineCommand::Kind, const char*> kQueuedKinds[] = {
    {EngineCommand::Kind::Pin, "pin"},
    {EngineCommand::Kind::Unpin, "unpin"},
    {EngineCommand::Kind::Veto, "veto"},
    {EngineCommand::Kind::Inject, "inject"},
    {EngineCommand::Kind::AcceptReview, "accept_review"},
    {EngineCommand::Kind::RejectReview, "reject_review"},
};

} // namespace

QJsonObject Steering::toJson(const EngineCommand& c) {
    QJsonObject json;
    for (const auto& [kind, name] : kQueuedKinds)
        if (kind == c.kind)
            json.insert(QStringLiteral("kind"), QLatin1String(name));
    json.insert(QStringLiteral("candidate"), c.candidate);
    if (!c.reason.isEmpty())
        json.insert(QStringLiteral("reason"), c.reason);
    if (c.kind == EngineCommand::Kind::Inject) {
        QJsonArray parents;
        for (qint64 p : c.injected.parents)
            parents.append(p);
        QJsonObject params;
        for (const auto& [name, value] : c.injected.params)
            params.insert(QString::fromStdString(name), static_cast<qint64>(value));
        json.insert(QStringLiteral("injected"), QJsonObject{{QStringLiteral("source"), c.injected.source},
                                                            {QStringLiteral("label"), c.injected.label},
                                                            {QStringLiteral("island"), c.injected.island},
                                                            {QStringLiteral("parents"), parents},
                                                            {QStringLiteral("params"), params}});
    }
    return json;
}

spec::Expected<EngineCommand> Steering::fromJson(const QJsonObject& json) {
    EngineCommand c;
    const QString kind = json.value(QStringLiteral("kind")).toString();
    const auto known = std::find_if(std::begin(kQueuedKinds), std::end(kQueuedKinds),
                                    [&](const auto& k) { return kind == QLatin1String(k.second); });
    if (known == std::end(kQueuedKinds))
        return spec::fail("a queued command of kind '" + kind.toStdString()
                          + "' (pin, unpin, veto, inject, accept_review or reject_review)");
    c.kind = known->first;
    c.candidate = json.value(QStringLiteral("candidate")).toInteger();
    c.reason = json.value(QStringLiteral("reason")).toString();
    if (c.kind == EngineCommand::Kind::Inject) {
        const QJsonObject injected = json.value(QStringLiteral("injected")).toObject();
        c.injected.source = injected.value(QStringLiteral("source")).toString();
        if (c.injected.source.trimmed().isEmpty())
            return spec::fail("a queued inject command without a kernel source");
        c.injected.label = injected.value(QStringLiteral("label")).toString();
        c.injected.island = injected.value(QStringLiteral("island")).toInt();
        for (const auto& p : injected.value(QStringLiteral("parents")).toArray())
            c.injected.parents.push_back(p.toInteger());
        const QJsonObject params = injected.value(QStringLiteral("params")).toObject();
        for (auto it = params.begin(); it != params.end(); ++it)
            c.injected.params[it.key().toStdString()] = it.value().toInteger();
        c.injected.origin = model::Origin::Human;
    } else if (c.candidate <= 0) {
        return spec::fail("a queued " + kind.toStdString() + " command without a candidate");
    }
    return c;
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
        const qint64 id =
            util::wholeNumber<qint64>(record.data.value(QStringLiteral("candidate")).toDouble()).value_or(0);
        const auto kind = record.kind == model::EventKind::Veto  ? FlagChange::Kind::Veto
                          : record.kind == model::EventKind::Pin ? FlagChange::Kind::Pin
                                                                 : FlagChange::Kind::Unpin;
        changes.push_back({id, kind});
    }
    m_stored.erase(it);
    return changes;
}

} // namespace kforge::search
