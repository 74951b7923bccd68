#pragma once
// The evolutionary search engine. Lives in its own thread (RenderDoc's replay thread, Hotspot's
// parser job) and owns the run store connection and the executor. Generation by generation it
// asks the proposers for children on every island, evaluates them in the executor, places the
// correct ones in the islands' MAP-Elites archives, migrates elites around the ring of islands,
// and promotes a new best only after a fresh, paired re-measurement confirms it.
//
// Determinism: a generation's results are processed in candidate order once all have arrived,
// and every random choice draws from an engine seeded by (run seed, generation, island), so the
// same seed and the same evaluation results give the same run. A resumed run replays its stored
// generations through the same code (stored candidates and results instead of proposals and
// workers) and goes on from the generation that was in flight, losing only its unfinished
// evaluations.
//
// Users steer with commands posted from any thread (post()); progress comes back batched through
// queued signals, a few times a second at most.
//
// The engine orchestrates; the decisions are policies beside it, each tested on its own:
// Offspring (where children come from), parentselector, IslandModel, promotion and judgement,
// Curation (pins, vetoes, reviews), LlmChildren, RunLearning, TuningMemory (what the tuners learn
// from the times, across runs too), Steering, Evaluations (in flight, and the device's ceilings),
// and RunLoader/RunRecorder for what is read and written.

#include "search/curation.h"
#include "search/enginetypes.h"
#include "search/evaluations.h"
#include "search/islandmodel.h"
#include "search/learning.h"
#include "search/llmchildren.h"
#include "search/offspring.h"
#include "search/population.h"
#include "search/promotion.h"
#include "search/runbudget.h"
#include "search/runloader.h"
#include "search/runrecorder.h"
#include "search/steering.h"
#include "search/tuningmemory.h"

#include "propose/llmproposer.h"

#include <QObject>

#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

class QTimer;

namespace kforge::search {

class Engine : public QObject {
    Q_OBJECT
public:
    using ExecutorFactory = search::ExecutorFactory;
    using Setup = EngineSetup;

    explicit Engine(Setup setup, QObject* parent = nullptr);
    ~Engine() override;

    // Thread-safe: queues a command for the engine thread.
    void post(EngineCommand command);

    static spec::Expected<eval::Executor*> defaultExecutor(const RunConfig& config, QObject* parent);

public slots:
    // Opens the store, loads the task and starts (or resumes) the run. Call in the engine thread.
    void start();

signals:
    void started(qint64 runId, const QString& storePath);
    void progressed(const kforge::search::RunProgress& progress);
    void generationCompleted(int generation);
    void bestChanged(qint64 candidate, double speedup);
    // Something people should know that does not stop the run (an expert file that failed to load).
    void notice(const QString& message);
    // Exactly once per start(); state Finished, Stopped or Failed.
    void finished(const kforge::search::RunSummary& summary);
    // After finished(): the executor has stopped its workers (politely where they listen), so
    // the engine's thread may end and the engine be deleted. Exactly once per start().
    void released();

private:
    // Setup.
    spec::Status open();
    spec::Status connectExecutor();
    spec::Status openLlm();
    // Steering made on the run while it was stored, posted to apply at the first boundary.
    spec::Status postQueuedCommands();
    void replayStored(StoredRun stored);
    void fail(const QString& message);

    // The generation loop.
    void scheduleNextGeneration();
    void nextGeneration();
    std::vector<qint64> propose(int generation);
    qint64 addCandidate(model::Candidate candidate); // registers a new one; returns its id
    void adopt(Entry& entry);                        // what proposing it taught the proposers

    // LLM children: sent while proposing, evaluated when their answers arrive.
    void onLlmProposed(const propose::LlmProposal& proposal);
    void finishOnLlmBudget(); // the hard stop, recorded with what was spent

    // Results.
    void onResult(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result);
    void maybeCompleteGeneration();
    void completeGeneration();
    void integrate(Entry& entry);
    void migrate();
    void considerPromotion();
    void onConfirmation(qint64 candidate, const protocol::EvaluateResult& result);
    void finishGeneration();
    void finish(RunState state, QString message);
    // A run that ends well ends with its best timed beside PyTorch eager and torch.compile (where the
    // task has a PyTorch form and the run was not told otherwise); finished follows its answer.
    bool wantsYardstick() const;
    QString speedupBase() const; // what the run's speedups are over
    void finishWithYardstick(const QString& message);
    void finishStopped(); // what a stop ends with once nothing is in flight

    // Steering.
    void drainCommands();
    void apply(const EngineCommand& command);
    void bestMoved(); // the confirmed best changed: into the run record and out to the views
    QList<store::ArchiveMemberRecord> archives() const; // as the store keeps them

    // Records.
    int inFlight() const;   // evaluations and language-model calls
    int budgetLeft() const; // evaluations that may still be started; INT_MAX without a budget
    void fillRunRecord();
    bool writeRun();
    void scheduleProgress();
    RunProgress progress() const;

    Setup m_setup;
    RunConfig m_config;
    std::unique_ptr<store::RunStore> m_store;
    std::unique_ptr<store::RunLock> m_runLock; // held from start() to finish()
    store::RunRecord m_run;
    RunRecorder m_record; // every write the run depends on
    spec::TaskBundle m_task;
    DescriptorSpace m_space;
    std::optional<diagnose::Diagnosis> m_diagnosis;
    spec::Sizes m_sizes;
    bool m_waitingForKeys = false; // of the LLM endpoints
    bool m_waitingForLlm = false;  // a generation waits for an LLM call in flight to settle
    QList<propose::Expert> m_experts;
    std::unique_ptr<experience::ExperienceLibrary> m_experience;
    eval::Executor* m_executor = nullptr;
    Evaluations* m_evals = nullptr; // what is in flight there
    LlmChildren m_llm;              // empty when the run uses no language model

    Population m_population;
    IslandModel m_islands;
    Offspring m_offspring;
    RunLearning m_learning;
    TuningMemory m_tuning;
    Steering m_steering;
    Promotions m_promotions;
    Curation m_curation; // pins, vetoes and reviews

    // Replay of a stored run: what it stored, consumed as its generations replay.
    StoredRun m_stored;

    // The generation in flight.
    int m_generation = -1;
    int m_completedGeneration = -1;
    std::vector<qint64> m_batch;
    int m_outstanding = 0;                    // results the generation still waits for
    std::vector<model::Candidate> m_injected; // waiting for the next generation

    RunState m_state = RunState::Starting;
    RunBudget m_budget;
    qint64 m_evaluatedCount = 0; // candidates with a search result, kept for the progress ticks
    qint64 m_correctCount = 0;
    QTimer* m_progressTimer = nullptr;
    bool m_finished = false;
    bool m_finalPending = false; // the best's last comparison with PyTorch is in flight
    QString m_finalMessage;      // how the run ends once it has answered
    std::optional<protocol::EvaluateResult> m_final;
};

} // namespace kforge::search
