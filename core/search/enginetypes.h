#pragma once
// The values the engine and its users exchange across threads: commands in, progress and the final
// summary out. All plain values, copied through queued signals.

#include "model/candidate.h"
#include "store/yardstick.h"

#include <QList>
#include <QMetaType>
#include <QString>

namespace kforge::search {

using model::RunState;
using model::runStateName;

// What people steer with (the GUI and the command line send the same ones). Pin, veto and inject
// take effect at the next generation boundary, in the order they were posted, so a resumed run
// replays them at the same point.
struct EngineCommand {
    enum class Kind { Pause, Resume, Stop, Pin, Unpin, Veto, Inject, SetBudget, AcceptReview, RejectReview };
    Kind kind = Kind::Pause;
    qint64 candidate = 0;          // pin, unpin, veto, accept or reject a review
    QString reason;                // why, for the experience library and the log
    model::Candidate injected;     // inject: source, params, island, parents (the edited kernel), label
    qint64 budgetEvaluations = -1; // set budget: -1 leaves it
    double budgetSeconds = -1.0;
    qint64 queuedId = 0; // made on the stored run and kept in its store until applied (0: posted live)
};

struct RunProgress {
    qint64 runId = 0;
    RunState state = RunState::Starting;
    int generation = 0;
    qint64 evaluations = 0;       // counted against the budget, over all sessions of the run
    qint64 budgetEvaluations = 0; // 0: none
    int inFlight = 0;
    qint64 candidates = 0;
    qint64 evaluated = 0; // candidates with a result
    qint64 correct = 0;
    qint64 bestCandidate = 0; // confirmed best; 0 when none
    double bestSpeedup = 0.0;
    QString speedupBase = QStringLiteral("the baseline"); // what bestSpeedup is over, or "PyTorch eager"
    double elapsedSeconds = 0.0;                          // over all sessions
    double evaluationsPerSecond = 0.0;                    // this session
    double etaSeconds = -1.0;                             // until the budget is spent; -1 when unknown
    int archiveCells = 0;                                 // cells filled in the run-wide archive
    qint64 llmCalls = 0;                                  // over all sessions of the run
    qint64 llmTokens = 0;                                 // reported, plus estimates for calls whose usage never came
    double llmUsd = 0.0;                                  // known costs only
    qint64 llmUnknownCost = 0;                            // calls whose cost is unknown
    int llmPending = 0;
};

// A correct kernel that waits for a person (`kforge review`). An offline run has no one to accept
// it, so its confirmed best may be slower than this.
struct PendingReview {
    qint64 candidate = 0;
    QString label;
    double speedup = 0.0; // over the run's speedup base, in its search evaluation
    QString reason;
};

struct RunSummary {
    qint64 runId = 0;
    QString storePath;
    RunState state = RunState::Finished;
    QString message; // why it ended, for people
    qint64 bestCandidate = 0;
    double bestSpeedup = 0.0; // confirmed, over speedupBase paired in the same evaluation
    QString bestLabel;
    QString speedupBase = QStringLiteral("the baseline"); // or "PyTorch eager" for a task without a baseline kernel
    std::optional<double> bestFractionOfBound;            // of its roofline bound, in its search evaluation
    std::optional<double> bestSplitTf32Fraction; // of a 3xTF32 kernel's third of a TF32 roof, in that evaluation
    store::YardstickFigures pytorch;             // PyTorch eager and torch.compile, at the start and the end
    qint64 evaluations = 0;
    qint64 candidates = 0;
    int generations = 0;
    double wallSeconds = 0.0;
    QList<PendingReview> pendingReviews; // fastest first
};

} // namespace kforge::search

Q_DECLARE_METATYPE(kforge::search::EngineCommand)
Q_DECLARE_METATYPE(kforge::search::RunProgress)
Q_DECLARE_METATYPE(kforge::search::RunSummary)
