#pragma once
// The commands people steer a run with, between the threads that post them and the engine's
// boundaries: pause, resume, stop and budget changes apply at once; pin, unpin, veto, inject and
// review decisions wait for the end of the generation in flight, in the order they were posted,
// so a resumed run replays them at the same point. Also holds a resumed run's stored pins and
// vetoes until the generation they were made in has been replayed.

#include "search/enginetypes.h"
#include "search/population.h"
#include "search/runconfig.h"

#include "store/runstore.h"

#include <QMutex>

#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace kforge::search {

class Steering {
public:
    // Thread-safe.
    void post(EngineCommand command);

    // The commands to apply now. Before the run has started nothing is taken; inside a generation
    // only the immediate ones are, the others wait (in order) for the boundary.
    std::vector<EngineCommand> take(bool started, bool atBoundary);
    static bool immediate(EngineCommand::Kind kind); // pause, resume, stop, set budget: the run-level commands

    // What a run-level command changes: the run's state, what its log records, and whether a
    // generation may start now (a paused run resumed, a budget raised at a boundary).
    struct RunStep {
        RunState state = RunState::Running;
        model::EventKind event = model::EventKind::Unknown;
        QJsonObject data;
        bool reschedule = false;
    };
    // The step a run-level command makes from `state`; nullopt when it changes nothing (pause
    // while paused, stop while stopping). A budget command sets `config`'s budgets.
    static std::optional<RunStep> runStep(const EngineCommand& command, RunState state, bool atBoundary,
                                          RunConfig& config);
    // Why a command about a candidate (pin, unpin, veto, review decision, inject) cannot apply to
    // the run's population, for people; empty when it can.
    static QString refusal(const EngineCommand& command, const Population& population, int islands);
    // The candidate an inject command adds: a person's kernel on an island of the run, labelled
    // "human edit of #<parent>" (or "human") unless the command names it.
    static model::Candidate injectedCandidate(const EngineCommand& inject, int islands);

    // Steering made on a stored run, as its store keeps it until the run resumes: pin, unpin, veto,
    // inject and review decisions (the run-level commands are never queued).
    static QJsonObject toJson(const EngineCommand& command);
    static spec::Expected<EngineCommand> fromJson(const QJsonObject& json);

    // A resumed run's pin, unpin and veto events, by the generation they were made in.
    void setStoredActions(std::map<int, std::vector<store::EventRecord>> actions) { m_stored = std::move(actions); }
    struct FlagChange {
        qint64 candidate = 0;
        enum class Kind { Pin, Unpin, Veto } kind = Kind::Pin;
    };
    // The stored actions of `generation`, once: to apply when its replay completes.
    std::vector<FlagChange> storedActionsAt(int generation);

private:
    QMutex m_mutex;
    std::deque<EngineCommand> m_commands;
    std::map<int, std::vector<store::EventRecord>> m_stored;
};

} // namespace kforge::search
