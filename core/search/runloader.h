#pragma once
// Everything a run needs before its first generation, loaded in one place: the store (and the
// run's lock), the configuration (a resumed run's stored one, with new budgets applied), the
// task, the diagnosis rules, the behaviour space, the expert kernels and the experience library;
// for a resumed run, also what it stored (candidates, results, reviews, human actions), to
// replay. Problems that do not stop the run come back as notices.

#include "search/descriptors.h"
#include "search/enginetypes.h"
#include "search/runconfig.h"

#include "diagnose/diagnosis.h"
#include "eval/executor.h"
#include "experience/experiencelibrary.h"
#include "propose/expertlibrary.h"
#include "store/runstore.h"

#include <QStringList>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace kforge::search {

// Builds the executor for a run in the engine's thread; the default is the local one
// (eval::localExecutor: kforge-worker-<backend> processes on this machine). Tests pass one that
// runs the fake worker.
using ExecutorFactory = std::function<spec::Expected<eval::Executor*>(const RunConfig& config, QObject* parent)>;

struct EngineSetup {
    QString storePath;
    RunConfig config;              // for a new run
    qint64 resumeRun = -1;         // -1: a new run; 0: the newest run in the store; otherwise that run
    qint64 budgetEvaluations = -1; // when resuming: a new evaluation budget (-1 keeps the stored one)
    double budgetSeconds = -1.0;
    double llmBudgetUsd = -1.0; // when resuming: new LLM budgets (-1 keeps the stored ones)
    double llmBudgetTokens = -1.0;
    // When resuming: where the workers run now (a host may be gone, or a GPU server new); unset
    // keeps the stored places, devices and worker count.
    std::optional<QStringList> workerPlaces;
    std::optional<QString> devices;
    std::optional<QString> slurmArgs;
    int workers = 0; // 0 keeps the stored count
    ExecutorFactory executorFactory;
    QStringList expertRoots; // empty: ExpertLibrary::defaultRoots()
    bool useExperts = true;
    // The experience library the run learns into and starts from; empty: the user's default.
    QString experiencePath;
    bool useExperience = true;
    // Whether the tuners start from, and add to, the experience library's tuning cache.
    bool useTuningCache = true;

    bool resuming() const { return resumeRun >= 0; }
};

// What a resumed run stored, to replay through the same code.
struct StoredRun {
    int generation = -1; // the last generation completed
    double wallSeconds = 0.0;
    std::vector<model::Candidate> candidates;   // flags cleared: they replay from the events
    std::map<int, std::vector<qint64>> batches; // by generation
    std::map<std::pair<qint64, model::EvaluationPurpose>, protocol::EvaluateResult> results;
    std::map<qint64, diagnose::Roofline> roofline; // of search evaluations that were timed
    std::map<qint64, diagnose::Findings> findings;
    std::map<qint64, model::ReviewState> reviews;
    std::map<int, std::vector<store::EventRecord>> humanEvents; // pin, unpin, veto by generation
    qint64 evaluations = 0;
};

struct LoadedRun {
    std::unique_ptr<store::RunStore> store;
    std::unique_ptr<store::RunLock> lock; // held from here to the end of the session
    store::RunRecord run;                 // created (new run) or read (resumed)
    RunConfig config;
    spec::TaskBundle task;
    spec::Sizes sizes;
    std::optional<diagnose::Diagnosis> diagnosis;
    DescriptorSpace space;
    QList<propose::Expert> experts;
    std::vector<model::Candidate> seedKernels; // the configuration's seed_kernels, read (new runs only)
    std::unique_ptr<experience::ExperienceLibrary> experience;
    std::optional<StoredRun> stored; // when resuming
    QStringList notices;
};

// Opens (or creates) the run that `setup` asks for. A new run is created in the store only once
// everything it needs has loaded.
spec::Expected<LoadedRun> loadRun(const EngineSetup& setup);

} // namespace kforge::search
