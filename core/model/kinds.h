#pragma once
// The named kinds a run is made of, as enums: where a candidate came from, why it was evaluated,
// where its review stands, the backend a run targets, the state a run is in, the kinds of events in
// a run's log, the kinds of insights in the experience library, the operator a language model
// applied, and how the template tuner found a configuration. Each is stored and exchanged by its
// name (the names are the stored format: never rename one); parsing an unknown name gives nullopt,
// so every reader decides what an unknown name means where it meets one.

#include "sourcescan.h"

#include <QString>

#include <cstddef>
#include <optional>

namespace kforge::model {

// A name table: the one place an enum's stored names are written down.
template <typename E> struct Named {
    E value;
    const char* name;
};

template <typename E, std::size_t N> QString nameIn(const Named<E> (&table)[N], E value) {
    for (const auto& entry : table)
        if (entry.value == value)
            return QString::fromLatin1(entry.name);
    return {};
}

template <typename E, std::size_t N> std::optional<E> parseIn(const Named<E> (&table)[N], const QString& name) {
    for (const auto& entry : table)
        if (name == QLatin1String(entry.name))
            return entry.value;
    return std::nullopt;
}

// Where a candidate came from. Experience: a kernel from the experience library that helped on
// this task in an earlier run.
enum class Origin { Seed, Tuner, Expert, Llm, Human, Experience };
QString originName(Origin origin);
std::optional<Origin> parseOrigin(const QString& name);

// Why a candidate was evaluated: its evaluation in the search, the fresh re-measurement that
// confirms a new best before it is promoted, or the run's last comparison of its best with PyTorch
// eager and torch.compile (not counted against the budget).
enum class EvaluationPurpose { Search, Confirm, Yardstick };
QString purposeName(EvaluationPurpose purpose);
std::optional<EvaluationPurpose> parsePurpose(const QString& name);

// Where a suspicious result stands with the person who reviews it.
enum class ReviewState { Pending, Accepted, Rejected };
QString reviewStateName(ReviewState state);
std::optional<ReviewState> parseReviewState(const QString& name);

// The backend a run targets is the dialect its kernels are written in: "cuda" or "opencl".
using Backend = spec::Dialect;
QString backendName(Backend backend);
std::optional<Backend> parseBackend(const QString& name);
QString backendTitle(Backend backend); // "CUDA", "OpenCL"

enum class RunState { Starting, Running, Pausing, Paused, Stopping, Finished, Stopped, Failed };
QString runStateName(RunState state);
std::optional<RunState> parseRunState(const QString& name);

// The events of a run's log. Unknown: a kind this version does not know (a store written by a
// newer one); its stored name is kept beside it.
enum class EventKind {
    Unknown,
    RunStarted,
    RunResumed,
    RunEnded,
    Ceilings,
    Migration,
    NewBest,
    PromotionRejected,
    ReviewRequested,
    ReviewAccepted,
    ReviewRejected,
    Pin,
    Unpin,
    Veto,
    Inject,
    Pause,
    Resume,
    Stop,
    Budget,
    LlmBudgetReached,
    StrategyRewritten,
    LlmEndpointRetired, // refused the key or out of quota: not called again in the run
};
QString eventKindName(EventKind kind);
std::optional<EventKind> parseEventKind(const QString& name);

// What the experience library learned: a change that helped or hurt, and people's decisions.
enum class InsightKind { Helped, Hurt, HumanPin, HumanVeto, HumanEdit };
QString insightKindName(InsightKind kind);
std::optional<InsightKind> parseInsightKind(const QString& name);

// The operator a language model applied. The meta operator rewrites prompts, never a kernel.
enum class LlmOperator { Init, Mutate, Crossover, Repair, Meta };
QString llmOperatorName(LlmOperator op); // also the name of the operator's prompt template
std::optional<LlmOperator> parseLlmOperator(const QString& name);

// How the template tuner found a configuration: one or two parameters moved from its parent's
// (neighbour), a random one, the best that its model of the times measured so far predicts
// (model), or one measured by an earlier run on the same task, sizes and device (cache).
enum class TunerStrategy { Neighbour, Random, Model, Cache };
QString tunerStrategyName(TunerStrategy strategy);
std::optional<TunerStrategy> parseTunerStrategy(const QString& name);

} // namespace kforge::model
