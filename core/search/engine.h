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

#include "search/archive.h"
#include "model/candidate.h"
#include "search/descriptors.h"
#include "diagnose/diagnosis.h"
#include "search/enginetypes.h"
#include "experience/experiencelibrary.h"
#include "propose/expertlibrary.h"
#include "propose/llmproposer.h"
#include "search/runconfig.h"
#include "store/runstore.h"
#include "propose/tuner.h"

#include <QElapsedTimer>
#include <QMutex>
#include <QObject>
#include <QStringList>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

class QTimer;

namespace kforge::eval {
class Executor;
}

namespace kforge::search {

class Engine : public QObject {
    Q_OBJECT
public:
    // Builds the executor for a run in the engine's thread; the default is the local one
    // (eval::localExecutor: kforge-worker-<backend> processes on this machine). Tests pass one
    // that runs the fake worker.
    using ExecutorFactory = std::function<spec::Expected<eval::Executor*>(const RunConfig& config, QObject* parent)>;

    struct Setup {
        QString storePath;
        RunConfig config;        // for a new run
        qint64 resumeRun = -1;   // -1: a new run; 0: the newest run in the store; otherwise that run
        qint64 budgetEvaluations = -1; // when resuming: a new evaluation budget (-1 keeps the stored one)
        double budgetSeconds = -1.0;
        double llmBudgetUsd = -1.0;    // when resuming: new LLM budgets (-1 keeps the stored ones)
        double llmBudgetTokens = -1.0;
        ExecutorFactory executorFactory;
        QStringList expertRoots; // empty: ExpertLibrary::defaultRoots()
        bool useExperts = true;
        // The experience library the run learns into and starts from; empty: the user's default.
        QString experiencePath;
        bool useExperience = true;
    };

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

private:
    struct Entry {
        model::Candidate candidate;
        QString templateKey; // the source without its parameter values
        std::optional<protocol::EvaluateResult> result; // the search evaluation
        model::Fitness fitness;
        std::optional<model::Cell> cell;
        QJsonObject roofline;   // of the search evaluation; empty when not timed
        QJsonArray findings;    // of the search evaluation
        QString review;         // why it waits for a person; empty when it does not
        model::ReviewState reviewState = model::ReviewState::Pending; // while `review` is set
    };
    struct Island {
        Archive archive;
        std::map<model::Cell, double> curiosity; // recent success of children of the cell's elite
        std::set<QString> expertsTried;   // expert file paths seeded or proposed here
    };
    struct Pending {
        qint64 candidate = 0;
        model::EvaluationPurpose purpose = model::EvaluationPurpose::Search;
    };

    // Setup.
    spec::Status open();
    spec::Status loadStoredRun();
    void fail(const QString& message);

    // The generation loop.
    void scheduleNextGeneration();
    void nextGeneration();
    std::vector<qint64> propose(int generation);
    std::vector<qint64> proposeSeeds();
    std::optional<model::Candidate> proposeChild(int island, int generation, std::mt19937_64& rng);
    std::optional<model::Candidate> proposeExpert(int island, int generation);
    // LLM children: sent now, evaluated when their answers arrive (onLlmProposed).
    bool proposeLlm(int island, int generation, std::mt19937_64& rng);
    void proposePersonas(const std::vector<qint64>& seeds); // generation 0: each expert persona's first kernel
    void onLlmProposed(const propose::LlmProposal& proposal);
    llm::KernelContext contextOf(const Entry& entry) const;
    void creditLlmChildren();
    void finishOnLlmBudget(); // the hard stop, recorded with what was spent
    void maybeCompleteGeneration();
    qint64 addCandidate(model::Candidate candidate); // registers a new one; returns its id
    void adopt(Entry& entry);                 // what proposing it taught the proposers
    void evaluate(qint64 candidate, model::EvaluationPurpose purpose);
    void onEvaluated(qint64 ticket, const protocol::EvaluateResult& result);
    void onCeilings(const diagnose::Ceilings& ceilings, const QString& problem);
    // Findings and the roofline point of a fresh result, as stored with it.
    std::pair<QJsonArray, QJsonObject> analyse(const protocol::EvaluateResult& result) const;
    QString suspicion(const Entry& entry) const; // why a correct result needs a person, or empty
    // Why a timed result is physically impossible (above a measured roof), or nothing.
    std::optional<QString> impossibility(const QJsonObject& roofline) const;
    void onResult(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result);
    void completeGeneration();
    model::Cell cellOf(const model::Candidate& candidate, const protocol::EvaluateResult& result) const;
    void integrate(Entry& entry);
    void admit(Entry& entry); // into the archives of its island (every island for seeds)
    static bool awaitingReview(const Entry& e) { return !e.review.isEmpty() && e.reviewState != model::ReviewState::Accepted; }
    void migrate();
    void considerPromotion();
    void onConfirmation(qint64 candidate, const protocol::EvaluateResult& result);
    void finishGeneration();
    void harvest();                       // insights from the generation just completed
    void learnHumanAction(const EngineCommand& command, const QString& kind);
    QString bakedSource(const Entry& entry) const;
    std::vector<qint64> experienceSeeds(int firstIsland); // added to generation 0
    void finish(RunState state, QString message);

    // Steering.
    void drainCommands();
    void apply(const EngineCommand& command, bool replaying);
    void applyStoredHumanEvents(int generation);
    void setPinned(qint64 candidate, bool pinned);
    void setVetoed(qint64 candidate);
    void recomputeBest();

    // Helpers.
    // A parent from the island's elites and the pinned kernels; `tunable`: only those whose
    // template still has untried configurations.
    std::optional<qint64> selectParent(int island, std::mt19937_64& rng, bool tunable);
    std::mt19937_64 rngFor(int generation, int island) const;
    propose::Tuner* tunerFor(const Entry& entry);
    model::ParamValues completeParams(const QString& source, const model::ParamValues& params, QString* templateKey);
    // Whether the run already has this kernel with these (completed) parameter values.
    bool hasKernel(const QString& source, const model::ParamValues& params);
    double elapsedSeconds() const;
    int budgetLeft() const; // evaluations that may still be started; INT_MAX without a budget
    void event(const QString& kind, const QJsonObject& data);
    void fillRunRecord();
    bool writeRun();
    // Every write the run depends on goes through here: a store that cannot be written (disk full,
    // held locked by another program past the busy timeout, read-only, an I/O error) stops the run
    // at once, resumable, instead of letting it go on with results the store does not have.
    template <typename T>
    bool written(const spec::Expected<T>& outcome, const QString& what);
    QString storeFailureMessage(const QString& what, const QString& error) const;
    void scheduleProgress();
    RunProgress progress() const;

    Setup m_setup;
    RunConfig m_config;
    std::unique_ptr<store::RunStore> m_store;
    std::unique_ptr<store::RunLock> m_runLock; // held from start() to finish()
    store::RunRecord m_run;
    spec::TaskBundle m_task;
    spec::Dialect m_dialect = spec::Dialect::OpenCL;
    DescriptorSpace m_space;
    std::optional<diagnose::Diagnosis> m_diagnosis;
    diagnose::Ceilings m_ceilings;
    spec::Sizes m_sizes;
    bool m_waitingForCeilings = false;
    QList<propose::Expert> m_experts;
    std::unique_ptr<experience::ExperienceLibrary> m_experience;
    eval::Executor* m_executor = nullptr;
    propose::LlmProposer* m_llm = nullptr; // null when the run uses no language model
    int m_llmPending = 0;                  // LLM children of this generation still awaited
    std::set<qint64> m_repaired;           // failed kernels an LLM was already asked to repair

    std::map<qint64, Entry> m_entries;
    std::set<QString> m_keys;
    std::map<QString, std::unique_ptr<propose::Tuner>> m_tuners; // by template key
    std::vector<Island> m_islands;
    std::set<qint64> m_pinned;
    std::map<qint64, double> m_confirmed; // candidate -> confirmed speedup
    qint64 m_bestCandidate = 0;
    double m_bestSpeedup = 0.0;
    qint64 m_nextId = 1;

    // Replay of a stored run.
    int m_storedGeneration = -1; // last generation the store says was completed
    std::map<int, std::vector<qint64>> m_storedBatches;
    std::map<std::pair<qint64, model::EvaluationPurpose>, protocol::EvaluateResult> m_known;
    std::map<qint64, QJsonObject> m_knownRoofline; // of stored search evaluations
    std::map<qint64, QJsonArray> m_knownFindings;
    std::map<qint64, model::ReviewState> m_knownReviews;  // candidate -> stored review state
    std::map<int, std::vector<store::EventRecord>> m_storedHumanEvents;

    // The generation in flight.
    int m_generation = -1;
    int m_completedGeneration = -1;
    std::vector<qint64> m_batch;
    std::map<qint64, Pending> m_tickets;
    int m_outstanding = 0; // results the generation still waits for
    std::vector<std::pair<QString, QJsonObject>> m_generationEvents;
    std::vector<model::Candidate> m_injected; // waiting for the next generation
    std::vector<qint64> m_reviewAccepted; // accepted since the last promotion check

    RunState m_state = RunState::Starting;
    qint64 m_evaluations = 0;
    qint64 m_sessionEvaluations = 0;
    qint64 m_evaluatedCount = 0; // candidates with a search result, kept for the progress ticks
    qint64 m_correctCount = 0;
    double m_priorWallSeconds = 0.0;
    QElapsedTimer m_session;
    QTimer* m_progressTimer = nullptr;
    bool m_finished = false;
    bool m_storeBroken = false; // a write failed; the run is stopping and writes nothing more it depends on

    QMutex m_commandsMutex;
    std::deque<EngineCommand> m_commands;
};

} // namespace kforge::search
