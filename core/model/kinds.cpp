#include "model/kinds.h"

namespace kforge::model {

namespace {

constexpr Named<Origin> kOrigins[] = {
    {Origin::Seed, "seed"}, {Origin::Tuner, "tuner"}, {Origin::Expert, "expert"},
    {Origin::Llm, "llm"},   {Origin::Human, "human"}, {Origin::Experience, "experience"},
};

constexpr Named<EvaluationPurpose> kPurposes[] = {{EvaluationPurpose::Search, "search"},
                                                  {EvaluationPurpose::Confirm, "confirm"},
                                                  {EvaluationPurpose::Yardstick, "yardstick"}};

constexpr Named<ReviewState> kReviewStates[] = {
    {ReviewState::Pending, "pending"}, {ReviewState::Accepted, "accepted"}, {ReviewState::Rejected, "rejected"}};

constexpr Named<Backend> kBackends[] = {{Backend::Cuda, "cuda"}, {Backend::OpenCL, "opencl"}};

constexpr Named<RunState> kRunStates[] = {
    {RunState::Starting, "starting"}, {RunState::Running, "running"},
    {RunState::Pausing, "pausing"},   {RunState::Paused, "paused"},
    {RunState::Stopping, "stopping"}, {RunState::Finished, "finished"},
    {RunState::Stopped, "stopped"},   {RunState::Failed, "failed"},
    {RunState::Starting, "created"}, // what stores of earlier versions say of a run not yet started
};

constexpr Named<EventKind> kEventKinds[] = {
    {EventKind::RunStarted, "run_started"},
    {EventKind::RunResumed, "run_resumed"},
    {EventKind::RunEnded, "run_ended"},
    {EventKind::Ceilings, "ceilings"},
    {EventKind::Migration, "migration"},
    {EventKind::NewBest, "new_best"},
    {EventKind::PromotionRejected, "promotion_rejected"},
    {EventKind::ReviewRequested, "review_requested"},
    {EventKind::ReviewAccepted, "review_accepted"},
    {EventKind::ReviewRejected, "review_rejected"},
    {EventKind::Pin, "pin"},
    {EventKind::Unpin, "unpin"},
    {EventKind::Veto, "veto"},
    {EventKind::Inject, "inject"},
    {EventKind::Pause, "pause"},
    {EventKind::Resume, "resume"},
    {EventKind::Stop, "stop"},
    {EventKind::Budget, "budget"},
    {EventKind::LlmBudgetReached, "llm_budget_reached"},
    {EventKind::StrategyRewritten, "strategy_rewritten"},
    {EventKind::LlmEndpointRetired, "llm_endpoint_retired"},
};

constexpr Named<InsightKind> kInsightKinds[] = {
    {InsightKind::Helped, "helped"},        {InsightKind::Hurt, "hurt"},
    {InsightKind::HumanPin, "human_pin"},   {InsightKind::HumanVeto, "human_veto"},
    {InsightKind::HumanEdit, "human_edit"},
};

constexpr Named<LlmOperator> kOperators[] = {
    {LlmOperator::Init, "init"},     {LlmOperator::Mutate, "mutate"}, {LlmOperator::Crossover, "crossover"},
    {LlmOperator::Repair, "repair"}, {LlmOperator::Meta, "meta"},
};

constexpr Named<TunerStrategy> kTunerStrategies[] = {
    {TunerStrategy::Neighbour, "neighbour"},
    {TunerStrategy::Random, "random"},
    {TunerStrategy::Model, "model"},
    {TunerStrategy::Cache, "cache"},
};

} // namespace

// Each enum's two functions over its table.
#define KFORGE_NAMES(Enum, table, nameFunction, parseFunction)                                                         \
    QString nameFunction(Enum value) {                                                                                 \
        return nameIn(table, value);                                                                                   \
    }                                                                                                                  \
    std::optional<Enum> parseFunction(const QString& name) {                                                           \
        return parseIn(table, name);                                                                                   \
    }

KFORGE_NAMES(Origin, kOrigins, originName, parseOrigin)
KFORGE_NAMES(EvaluationPurpose, kPurposes, purposeName, parsePurpose)
KFORGE_NAMES(ReviewState, kReviewStates, reviewStateName, parseReviewState)
KFORGE_NAMES(Backend, kBackends, backendName, parseBackend)
KFORGE_NAMES(RunState, kRunStates, runStateName, parseRunState)
KFORGE_NAMES(EventKind, kEventKinds, eventKindName, parseEventKind)
KFORGE_NAMES(InsightKind, kInsightKinds, insightKindName, parseInsightKind)
KFORGE_NAMES(LlmOperator, kOperators, llmOperatorName, parseLlmOperator)
KFORGE_NAMES(TunerStrategy, kTunerStrategies, tunerStrategyName, parseTunerStrategy)

#undef KFORGE_NAMES

QString backendTitle(Backend backend) {
    return backend == Backend::Cuda ? QStringLiteral("CUDA") : QStringLiteral("OpenCL");
}

} // namespace kforge::model
