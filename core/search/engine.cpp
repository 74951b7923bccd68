#include "search/engine.h"

#include "task/evalrequest.h"
#include "eval/executor.h"
#include "util/logging.h"
#include "search/roofverdict.h"
#include "store/runexport.h"
#include "util/textdiff.h"
#include "task/taskcatalog.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QMutexLocker>
#include <QTimer>

#include <algorithm>
#include <climits>
#include <cmath>

namespace kforge::search {

namespace {

constexpr auto kSearch = model::EvaluationPurpose::Search;
constexpr auto kConfirm = model::EvaluationPurpose::Confirm;

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// A speedup must beat the current best by more than measurement noise to be worth re-measuring.
constexpr double kPromotionMargin = 1.005;

std::uint64_t mix(std::uint64_t x) {
    // splitmix64: spreads (seed, generation, island) over the whole state space.
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// What changed between a parent's parameters and a child's, for the child's label.
QString paramChange(const model::ParamValues& from, const model::ParamValues& to) {
    QStringList parts;
    for (const auto& [name, value] : to) {
        auto it = from.find(name);
        if (it == from.end() || it->second != value)
            parts << QStringLiteral("%1=%2").arg(q(name)).arg(value);
    }
    return parts.isEmpty() ? QStringLiteral("(same)") : parts.join(QLatin1Char(' '));
}

} // namespace

QString runStateName(RunState state) {
    switch (state) {
    case RunState::Starting: return QStringLiteral("starting");
    case RunState::Running: return QStringLiteral("running");
    case RunState::Pausing: return QStringLiteral("pausing");
    case RunState::Paused: return QStringLiteral("paused");
    case RunState::Stopping: return QStringLiteral("stopping");
    case RunState::Finished: return QStringLiteral("finished");
    case RunState::Stopped: return QStringLiteral("stopped");
    case RunState::Failed: return QStringLiteral("failed");
    }
    return QStringLiteral("unknown");
}

Engine::Engine(Setup setup, QObject* parent) : QObject(parent), m_setup(std::move(setup)) {
    qRegisterMetaType<kforge::search::RunProgress>();
    qRegisterMetaType<kforge::search::RunSummary>();
    qRegisterMetaType<kforge::search::EngineCommand>();
    m_config = m_setup.config;
}

Engine::~Engine() = default;

void Engine::post(EngineCommand command) {
    {
        QMutexLocker lock(&m_commandsMutex);
        m_commands.push_back(std::move(command));
    }
    QMetaObject::invokeMethod(this, &Engine::drainCommands, Qt::QueuedConnection);
}

spec::Expected<eval::Executor*> Engine::defaultExecutor(const RunConfig& config, QObject* parent) {
    return eval::localExecutor(config.backend, config.workers, parent);
}

// ---------------------------------------------------------------------------------------------
// Setup

void Engine::start() {
    m_session.start();
    m_progressTimer = new QTimer(this);
    m_progressTimer->setSingleShot(true);
    m_progressTimer->setInterval(250);
    connect(m_progressTimer, &QTimer::timeout, this, [this] { emit progressed(progress()); });

    if (auto opened = open(); !opened) {
        fail(q(opened.error()));
        return;
    }
    m_state = RunState::Running;
    writeRun();
    emit started(m_run.id, m_store->path());
    scheduleProgress();
    if (!m_waitingForCeilings)
        scheduleNextGeneration();
}

void Engine::onCeilings(const diagnose::Ceilings& ceilings, const QString& problem) {
    if (!m_waitingForCeilings || m_finished)
        return;
    m_waitingForCeilings = false;
    m_ceilings = ceilings;
    if (m_llm)
        m_llm->setDevice(ceilings.device, ceilings.summary());
    QJsonObject data = ceilings.toJson();
    if (!problem.isEmpty()) {
        data.insert(QStringLiteral("problem"), problem);
        emit notice(QStringLiteral("no device ceilings (%1): roofline data will hold achieved throughput only").arg(problem));
    }
    if (!written(m_store->insertEvent(m_run.id, std::max(0, m_completedGeneration), QStringLiteral("ceilings"), data),
                 QStringLiteral("the device's ceilings")))
        return;
    scheduleNextGeneration();
}

std::pair<QJsonArray, QJsonObject> Engine::analyse(const protocol::EvaluateResult& result) const {
    std::optional<diagnose::Roofline> roofline;
    if (auto r = diagnose::computeRoofline(m_task.spec, m_sizes, result, m_ceilings))
        roofline = *r;
    QJsonArray findings;
    if (m_diagnosis)
        for (const auto& f : m_diagnosis->diagnose(result, m_task.spec, m_sizes, roofline))
            findings.append(f.toJson());
    return {findings, roofline ? roofline->toJson() : QJsonObject()};
}


QString Engine::suspicion(const Entry& entry) const {
    // A result whose timing relies on having seen its inputs before (a cache of answers, work
    // skipped on repeated data) is caught by the worker's fresh_inputs_speed check; its outputs
    // were right, so a person decides.
    if (entry.result)
        for (const auto& check : entry.result->checks)
            if (check.name == "fresh_inputs_speed" && !check.passed)
                return QStringLiteral("it is markedly faster on repeated inputs than on fresh ones%1")
                    .arg(check.detail.empty() ? QString() : QStringLiteral(" (%1)").arg(q(check.detail)));
    if (const auto roofs = judgeRoofs(entry.roofline, m_ceilings, m_config.reviewCeiling, m_config.rejectCeiling);
        roofs.kind != RoofVerdict::Kind::Plausible)
        return roofs.reason; // an impossible result was rejected when it arrived; a replayed one may still be accepted by hand
    if (m_config.reviewSpeedup > 0.0 && entry.fitness.speedup > m_config.reviewSpeedup)
        return QStringLiteral("%1x over the baseline is more than %2x: check that it really does the work")
            .arg(entry.fitness.speedup, 0, 'f', 1)
            .arg(m_config.reviewSpeedup);
    return {};
}

std::optional<QString> Engine::impossibility(const QJsonObject& roofline) const {
    const auto roofs = judgeRoofs(roofline, m_ceilings, m_config.reviewCeiling, m_config.rejectCeiling);
    if (roofs.kind != RoofVerdict::Kind::Impossible)
        return std::nullopt;
    return roofs.reason;
}

spec::Status Engine::open() {
    auto store = store::RunStore::open(m_setup.storePath);
    if (!store)
        return spec::fail(store.error());
    m_store = std::move(*store);

    const bool resuming = m_setup.resumeRun >= 0;
    if (resuming) {
        qint64 id = m_setup.resumeRun;
        if (id == 0) {
            auto runs = m_store->runs();
            if (!runs)
                return spec::fail(runs.error());
            if (runs->isEmpty())
                return spec::fail(m_setup.storePath.toStdString() + ": holds no run to resume");
            id = runs->first().id;
        }
        auto run = m_store->run(id);
        if (!run)
            return spec::fail(run.error());
        // Before anything of the run is touched: a second session would replay and extend it
        // beside the first, recording every generation twice.
        auto lock = store::RunLock::acquire(m_setup.storePath, id);
        if (!lock)
            return spec::fail(lock.error());
        m_runLock = std::move(*lock);
        m_run = *run;
        auto config = RunConfig::fromJson(m_run.config);
        if (!config)
            return spec::fail(m_setup.storePath.toStdString() + ": run " + std::to_string(id) + ": " + config.error());
        m_config = *config;
        if (m_setup.budgetEvaluations >= 0)
            m_config.budgetEvaluations = m_setup.budgetEvaluations;
        if (m_setup.budgetSeconds >= 0.0)
            m_config.budgetSeconds = m_setup.budgetSeconds;
        if (m_setup.llmBudgetUsd >= 0.0)
            m_config.llm.budgetUsd = m_setup.llmBudgetUsd;
        if (m_setup.llmBudgetTokens >= 0.0)
            m_config.llm.budgetTokens = static_cast<qint64>(m_setup.llmBudgetTokens);
        m_run.config = m_config.toJson();
    } else if (auto valid = m_config.validate(); !valid) {
        return valid;
    }

    // The task: by the folder it was loaded from when resuming (it may not be a built-in one).
    auto taskDir = task::TaskCatalog::resolve(resuming && !m_run.taskDir.isEmpty() ? m_run.taskDir : m_config.task);
    if (!taskDir && resuming)
        taskDir = task::TaskCatalog::resolve(m_config.task);
    if (!taskDir)
        return spec::fail(taskDir.error());
    auto bundle = spec::loadTaskDir(taskDir->toStdString());
    if (!bundle)
        return spec::fail(bundle.error());
    m_task = std::move(*bundle);
    const std::string backend = m_config.backend.toStdString();
    if (!m_task.baselineSource.count(backend))
        return spec::fail("task " + m_task.spec.name + " has no " + backend + " baseline to start from (its task.json names none)");
    if (m_config.variant != QLatin1String("default") && !m_task.spec.variants.count(m_config.variant.toStdString()))
        return spec::fail("task " + m_task.spec.name + " has no size variant '" + m_config.variant.toStdString() + "'");
    m_dialect = m_config.backend == QLatin1String("cuda") ? spec::Dialect::Cuda : spec::Dialect::OpenCL;
    if (auto sizes = m_task.spec.sizesFor(m_config.variant.toStdString()))
        m_sizes = *sizes;
    if (auto diagnosis = diagnose::Diagnosis::builtIn())
        m_diagnosis = std::move(*diagnosis);
    else
        emit notice(QStringLiteral("diagnosis rules: %1 (evaluations get no findings)").arg(q(diagnosis.error())));

    auto space = m_config.descriptors.isEmpty() ? DescriptorSpace::builtIn() : DescriptorSpace::load(m_config.descriptors);
    if (!space)
        return spec::fail(space.error());
    m_space = *space;

    if (m_setup.useExperts) {
        const auto library = propose::ExpertLibrary::load(m_setup.expertRoots.isEmpty() ? propose::ExpertLibrary::defaultRoots()
                                                                                        : m_setup.expertRoots);
        for (const QString& problem : library.problems())
            emit notice(QStringLiteral("expert library: %1").arg(problem));
        m_experts = library.forTask(q(m_task.spec.name), m_config.backend);
    }
    if (m_setup.useExperience) {
        const QString path = m_setup.experiencePath.isEmpty() ? experience::ExperienceLibrary::defaultPath() : m_setup.experiencePath;
        QDir().mkpath(QFileInfo(path).absolutePath());
        if (auto library = experience::ExperienceLibrary::open(path))
            m_experience = std::move(*library);
        else
            emit notice(QStringLiteral("experience library: %1 (the run neither starts from it nor adds to it)").arg(q(library.error())));
    }
    m_islands.assign(static_cast<size_t>(m_config.islands), Island{});

    if (resuming) {
        if (auto loaded = loadStoredRun(); !loaded)
            return loaded;
    } else {
        m_run.name = QStringLiteral("%1 on %2").arg(q(m_task.spec.name), m_config.backend);
        m_run.task = q(m_task.spec.name);
        m_run.taskDir = *taskDir;
        m_run.backend = m_config.backend;
        m_run.variant = m_config.variant;
        m_run.config = m_config.toJson();
        m_run.state = runStateName(RunState::Starting);
        auto id = m_store->createRun(m_run);
        if (!id)
            return spec::fail(id.error());
        auto lock = store::RunLock::acquire(m_setup.storePath, *id);
        if (!lock)
            return spec::fail(lock.error());
        m_runLock = std::move(*lock);
        m_run.id = *id;
        m_run.generation = -1;
    }

    auto executor = m_setup.executorFactory ? m_setup.executorFactory(m_config, this) : defaultExecutor(m_config, this);
    if (!executor)
        return spec::fail(executor.error());
    m_executor = *executor;
    connect(m_executor, &eval::Executor::evaluated, this, &Engine::onEvaluated);
    connect(m_executor, &eval::Executor::workersFailedToStart, this,
            [this](const QString& message) { fail(QStringLiteral("the %1 worker cannot start: %2").arg(m_config.backend, message)); });
    // The roofline needs the device's ceilings before the first result arrives.
    connect(m_executor, &eval::Executor::ceilingsMeasured, this, [this](const protocol::CeilingsResult& c) {
        onCeilings(diagnose::Ceilings::fromWorker(c.ceilings, q(c.device)), {});
    });
    connect(m_executor, &eval::Executor::ceilingsFailed, this, [this](const QString& message) { onCeilings({}, message); });
    m_waitingForCeilings = true;
    // Measured again at every run's start, with the device idle: the workers keep the highest
    // measurement of each roof, so one disturbed measurement cannot make honest kernels look
    // impossible for good.
    m_executor->requestCeilings(m_config.device, /*refresh=*/true);

    if (m_config.llm.enabled()) {
        propose::LlmProposer::Context context;
        context.task = &m_task;
        context.variant = m_config.variant;
        context.sizes = m_sizes;
        context.backend = m_config.backend;
        context.islands = m_config.islands;
        context.dialect = m_dialect;
        context.store = m_store.get();
        context.runId = m_run.id;
        context.experience = m_experience.get();
        m_llm = new propose::LlmProposer(m_config.llm, context, this);
        connect(m_llm, &propose::LlmProposer::proposed, this, &Engine::onLlmProposed);
        connect(m_llm, &propose::LlmProposer::notice, this, &Engine::notice);
        if (auto opened = m_llm->open(); !opened)
            return opened;
    }

    QJsonObject data{{QStringLiteral("backend"), m_config.backend}, {QStringLiteral("experts"), static_cast<int>(m_experts.size())}};
    // Written at once: the generation's buffered events are skipped while stored ones replay.
    if (auto stored = m_store->insertEvent(m_run.id, std::max(0, m_run.generation), resuming ? QStringLiteral("run_resumed") : QStringLiteral("run_started"), data); !stored)
        return spec::fail(stored.error());
    return spec::success();
}

spec::Status Engine::loadStoredRun() {
    auto candidates = m_store->candidates(m_run.id);
    if (!candidates)
        return spec::fail(candidates.error());
    auto evaluations = m_store->evaluations(m_run.id);
    if (!evaluations)
        return spec::fail(evaluations.error());
    auto events = m_store->events(m_run.id);
    if (!events)
        return spec::fail(events.error());

    m_storedGeneration = m_run.generation;
    m_priorWallSeconds = m_run.wallSeconds;
    for (model::Candidate c : *candidates) {
        // Flags are replayed from the events, at the generation they were set.
        c.pinned = false;
        c.vetoed = false;
        m_storedBatches[c.generation].push_back(c.id);
        m_nextId = std::max(m_nextId, c.id + 1);
        Entry e;
        e.candidate = std::move(c);
        completeParams(e.candidate.source, e.candidate.params, &e.templateKey);
        m_keys.insert(e.candidate.key);
        m_entries.emplace(e.candidate.id, std::move(e));
    }
    for (const auto& record : *evaluations) {
        m_known[{record.candidateId, record.purpose}] = record.result;
        if (record.purpose == kSearch) {
            m_knownRoofline[record.candidateId] = record.roofline;
            m_knownFindings[record.candidateId] = record.findings;
        }
        ++m_evaluations;
    }
    if (auto reviews = m_store->reviews(m_run.id)) {
        for (const auto& r : *reviews)
            m_knownReviews[r.candidateId] = r.state;
    }
    for (const auto& record : *events) {
        static const QStringList human{QStringLiteral("pin"), QStringLiteral("unpin"), QStringLiteral("veto")};
        if (human.contains(record.kind))
            m_storedHumanEvents[record.generation].push_back(record);
    }
    // Evaluations whose generation never completed are kept but the generation is not re-proposed.
    return spec::success();
}

void Engine::fail(const QString& message) {
    qCWarning(lcSearch) << "run failed:" << message;
    finish(RunState::Failed, message);
}

// ---------------------------------------------------------------------------------------------
// The generation loop

void Engine::scheduleNextGeneration() {
    QMetaObject::invokeMethod(this, &Engine::nextGeneration, Qt::QueuedConnection);
}

void Engine::nextGeneration() {
    if (m_finished || m_generation > m_completedGeneration || m_waitingForCeilings)
        return;
    drainCommands();
    if (m_finished)
        return;
    if (m_state == RunState::Stopping) {
        finish(RunState::Stopped, QStringLiteral("stopped by the user"));
        return;
    }
    if (m_state == RunState::Pausing || m_state == RunState::Paused) {
        if (m_state == RunState::Pausing) {
            m_state = RunState::Paused;
            writeRun();
            scheduleProgress();
        }
        return;
    }

    const int generation = m_completedGeneration + 1;
    const bool stored = m_storedBatches.count(generation) > 0;
    if (!stored) {
        if (m_config.budgetEvaluations > 0 && budgetLeft() <= 0) {
            finish(RunState::Finished, QStringLiteral("evaluation budget reached (%1 of %2)").arg(m_evaluations).arg(m_config.budgetEvaluations));
            return;
        }
        if (m_config.budgetSeconds > 0.0 && elapsedSeconds() >= m_config.budgetSeconds) {
            finish(RunState::Finished, QStringLiteral("time budget reached (%1 s)").arg(m_config.budgetSeconds));
            return;
        }
        // A hard stop: no call may take the run over its token or money budget.
        if (m_llm && m_llm->budgetReached()) {
            finishOnLlmBudget();
            return;
        }
    }

    m_generation = generation;
    if (stored) {
        m_batch = m_storedBatches[generation];
        for (qint64 id : m_batch)
            adopt(m_entries.at(id));
    } else {
        m_batch = propose(generation);
    }
    if (m_batch.empty() && m_llmPending == 0) {
        if (m_llm && m_llm->budgetReached()) {
            finishOnLlmBudget();
            return;
        }
        finish(RunState::Finished, QStringLiteral("nothing left to try: every configuration of every kernel on every island has been evaluated"));
        return;
    }
    m_outstanding = static_cast<int>(m_batch.size());
    const std::vector<qint64> batch = m_batch;
    for (qint64 id : batch)
        evaluate(id, kSearch);
    scheduleProgress();
}

std::vector<qint64> Engine::propose(int generation) {
    std::vector<model::Candidate> children;
    if (generation == 0) {
        std::vector<qint64> ids = proposeSeeds();
        proposePersonas(ids);
        return ids;
    }
    for (model::Candidate& c : m_injected) {
        c.generation = generation;
        children.push_back(std::move(c));
    }
    m_injected.clear();
    const int limit = budgetLeft();
    std::vector<qint64> ids;
    {
        store::RunStore::Transaction tx(*m_store);
        if (!written(tx.begun(), QStringLiteral("the candidates of generation %1").arg(generation)))
            return {};
        for (model::Candidate& c : children) {
            if (static_cast<int>(ids.size()) >= limit)
                break;
            ids.push_back(addCandidate(std::move(c)));
        }
        for (int island = 0; island < m_config.islands; ++island) {
            auto rng = rngFor(generation, island);
            for (int k = 0; k < m_config.childrenPerIsland && static_cast<int>(ids.size()) < limit && !m_finished; ++k) {
                std::optional<model::Candidate> child;
                std::uniform_real_distribution<double> coin(0.0, 1.0);
                if (m_llm && coin(rng) < m_config.llm.rate && static_cast<int>(ids.size()) + m_llmPending < limit
                    && proposeLlm(island, generation, rng))
                    continue;
                if (coin(rng) < m_config.expertRate)
                    child = proposeExpert(island, generation);
                if (!child)
                    child = proposeChild(island, generation, rng);
                if (!child)
                    child = proposeExpert(island, generation); // the island's templates are exhausted
                if (!child)
                    break;
                ids.push_back(addCandidate(std::move(*child)));
            }
        }
        if (!m_finished)
            written(tx.commit(), QStringLiteral("the candidates of generation %1").arg(generation));
    }
    return m_finished ? std::vector<qint64>{} : ids;
}

std::vector<qint64> Engine::proposeSeeds() {
    std::vector<qint64> ids;
    store::RunStore::Transaction tx(*m_store);
    if (!written(tx.begun(), QStringLiteral("the seed kernels")))
        return {};
    const std::string backend = m_config.backend.toStdString();
    model::Candidate baseline;
    baseline.source = q(m_task.baselineSource.at(backend));
    baseline.origin = model::Origin::Seed;
    baseline.label = QStringLiteral("baseline");
    baseline.island = 0;
    ids.push_back(addCandidate(std::move(baseline)));
    // Each expert starts on one island, so the islands begin in different places.
    int island = m_config.islands > 1 ? 1 : 0;
    for (const auto& expert : m_experts) {
        if (budgetLeft() <= static_cast<int>(ids.size()))
            break;
        model::Candidate c;
        c.source = expert.source;
        c.origin = model::Origin::Expert;
        c.label = QStringLiteral("expert %1/%2").arg(expert.family, expert.name);
        c.island = island;
        island = (island + 1) % m_config.islands;
        ids.push_back(addCandidate(std::move(c)));
    }
    for (qint64 id : experienceSeeds(island)) {
        if (budgetLeft() <= static_cast<int>(ids.size()))
            break;
        ids.push_back(id);
    }
    if (!m_finished)
        written(tx.commit(), QStringLiteral("the seed kernels"));
    return m_finished ? std::vector<qint64>{} : ids;
}

std::vector<qint64> Engine::experienceSeeds(int firstIsland) {
    std::vector<qint64> ids;
    if (!m_experience)
        return ids;
    experience::Query query;
    query.family = q(m_task.spec.family);
    query.task = q(m_task.spec.name);
    query.backend = m_config.backend;
    auto insights = m_experience->search(query, 50);
    if (!insights)
        return ids;
    // The kernels that helped on this very task before, best first: a kernel file is only valid
    // for the task whose arguments it binds.
    const int limit = 2 * m_config.islands;
    int island = firstIsland;
    for (const auto& insight : *insights) {
        if (static_cast<int>(ids.size()) >= limit)
            break;
        static const QStringList useful{QStringLiteral("helped"), QStringLiteral("human_pin"), QStringLiteral("human_edit")};
        if (!useful.contains(insight.kind) || insight.task != q(m_task.spec.name) || insight.backend != m_config.backend
            || insight.after.trimmed().isEmpty())
            continue;
        if (hasKernel(insight.after, {}))
            continue;
        model::Candidate c;
        c.source = insight.after;
        c.origin = model::Origin::Experience;
        c.label = QStringLiteral("experience #%1: %2").arg(insight.id).arg(insight.transformation);
        c.island = island;
        island = (island + 1) % m_config.islands;
        ids.push_back(addCandidate(std::move(c)));
    }
    return ids;
}

QString Engine::bakedSource(const Entry& entry) const {
    return store::bakeParams(entry.candidate.source, entry.candidate.params);
}

void Engine::harvest() {
    if (!m_experience)
        return;
    // What a change did, measured against its parent (a seed or expert against the baseline): a
    // clear win or loss is worth remembering; noise is not.
    constexpr double kClearly = 1.10;
    const Entry* baseline = nullptr;
    for (const auto& [id, e] : m_entries)
        if (e.candidate.origin == model::Origin::Seed) {
            baseline = &e;
            break;
        }
    for (qint64 id : m_batch) {
        const Entry& child = m_entries.at(id);
        if (child.candidate.origin == model::Origin::Seed || child.candidate.origin == model::Origin::Experience || !child.result)
            continue;
        const Entry* parent = baseline;
        if (!child.candidate.parents.isEmpty())
            if (auto it = m_entries.find(child.candidate.parents.front()); it != m_entries.end())
                parent = &it->second;
        if (!parent || !parent->fitness.correct || parent->fitness.speedup <= 0.0)
            continue;
        experience::Insight insight;
        const double ratio = child.fitness.correct ? child.fitness.speedup / parent->fitness.speedup : 0.0;
        if (child.fitness.correct && ratio >= kClearly)
            insight.kind = QStringLiteral("helped");
        else if (child.fitness.correct && ratio > 0.0 && ratio <= 1.0 / kClearly)
            insight.kind = QStringLiteral("hurt");
        else if (!child.fitness.correct)
            insight.kind = QStringLiteral("hurt");
        else
            continue;
        insight.family = q(m_task.spec.family);
        insight.task = q(m_task.spec.name);
        insight.backend = m_config.backend;
        insight.transformation = child.candidate.label;
        insight.bottleneck = parent->roofline.value(QStringLiteral("bound")).toString();
        insight.speedup = ratio;
        insight.before = bakedSource(*parent);
        insight.after = bakedSource(child);
        insight.diff = util::unifiedDiff(insight.before, insight.after, QStringLiteral("#%1").arg(parent->candidate.id),
                                         QStringLiteral("#%1").arg(child.candidate.id));
        const QString device = q(child.result->device);
        if (child.fitness.correct) {
            insight.summary = QStringLiteral("On %1 (%2%3), %4 made the kernel %5x %6 than %7 (#%8 -> #%9).")
                                  .arg(q(m_task.spec.name), m_config.backend, device.isEmpty() ? QString() : QStringLiteral(", ") + device,
                                       child.candidate.label)
                                  .arg(ratio >= 1.0 ? ratio : 1.0 / ratio, 0, 'f', 2)
                                  .arg(ratio >= 1.0 ? QStringLiteral("faster") : QStringLiteral("slower"), parent->candidate.label)
                                  .arg(parent->candidate.id)
                                  .arg(child.candidate.id);
            if (!insight.bottleneck.isEmpty())
                insight.summary += QStringLiteral(" The parent was %1-bound.").arg(insight.bottleneck);
        } else {
            insight.summary = QStringLiteral("On %1 (%2), %3 broke the kernel: %4.")
                                  .arg(q(m_task.spec.name), m_config.backend, child.candidate.label, q(child.result->message));
        }
        insight.origin = QStringLiteral("%1#run%2/candidate%3").arg(m_store->path()).arg(m_run.id).arg(child.candidate.id);
        if (auto added = m_experience->add(insight); !added)
            qCWarning(lcSearch) << "experience library:" << q(added.error());
    }
}

void Engine::learnHumanAction(const EngineCommand& c, const QString& kind) {
    if (!m_experience)
        return;
    experience::Insight insight;
    insight.kind = kind;
    insight.family = q(m_task.spec.family);
    insight.task = q(m_task.spec.name);
    insight.backend = m_config.backend;
    insight.reason = c.reason;
    if (kind == QLatin1String("human_edit")) {
        insight.transformation = c.injected.label.isEmpty() ? QStringLiteral("a hand edit") : c.injected.label;
        insight.after = c.injected.source;
        if (!c.injected.parents.isEmpty())
            if (auto it = m_entries.find(c.injected.parents.front()); it != m_entries.end())
                insight.before = bakedSource(it->second);
        insight.diff = util::unifiedDiff(insight.before, insight.after);
    } else {
        auto it = m_entries.find(c.candidate);
        if (it == m_entries.end())
            return;
        const Entry& e = it->second;
        insight.transformation = e.candidate.label;
        insight.after = bakedSource(e);
        insight.speedup = e.fitness.speedup;
        insight.bottleneck = e.roofline.value(QStringLiteral("bound")).toString();
    }
    insight.summary = QStringLiteral("A person %1 %2 on %3 (%4)%5")
                          .arg(kind == QLatin1String("human_pin") ? QStringLiteral("pinned")
                               : kind == QLatin1String("human_veto") ? QStringLiteral("vetoed")
                                                                      : QStringLiteral("wrote"),
                               insight.transformation, insight.task, insight.backend,
                               c.reason.isEmpty() ? QStringLiteral(".") : QStringLiteral(": ") + c.reason);
    insight.origin = QStringLiteral("%1#run%2/candidate%3").arg(m_store->path()).arg(m_run.id).arg(c.candidate);
    if (auto added = m_experience->add(insight); !added)
        qCWarning(lcSearch) << "experience library:" << q(added.error());
}

std::optional<model::Candidate> Engine::proposeExpert(int island, int generation) {
    auto& tried = m_islands[static_cast<size_t>(island)].expertsTried;
    for (const auto& expert : m_experts) {
        const QString templateKey = model::candidateKey(expert.source, {});
        if (tried.count(templateKey))
            continue;
        tried.insert(templateKey);
        model::Candidate c;
        c.source = expert.source;
        c.origin = model::Origin::Expert;
        c.label = QStringLiteral("expert %1/%2").arg(expert.family, expert.name);
        c.island = island;
        c.generation = generation;
        if (hasKernel(c.source, {}))
            continue; // already in the run (seeded on another island)
        return c;
    }
    return std::nullopt;
}

std::optional<model::Candidate> Engine::proposeChild(int island, int generation, std::mt19937_64& rng) {
    auto parentId = selectParent(island, rng, true);
    if (!parentId)
        return std::nullopt;
    Entry& parent = m_entries.at(*parentId);
    propose::Tuner* tuner = tunerFor(parent);
    if (!tuner)
        return std::nullopt;
    auto config = tuner->propose(parent.candidate.params, rng, m_config.tunerRestart);
    if (!config)
        return std::nullopt;
    model::Candidate c;
    c.source = parent.candidate.source;
    c.params = *config;
    c.parents = {parent.candidate.id};
    c.island = island;
    c.generation = generation;
    c.origin = model::Origin::Tuner;
    c.label = QStringLiteral("tuner %1").arg(paramChange(parent.candidate.params, c.params));
    return c;
}

// ---------------------------------------------------------------------------------------------
// LLM children

llm::KernelContext Engine::contextOf(const Entry& e) const {
    llm::KernelContext k;
    k.id = e.candidate.id;
    k.label = e.candidate.label;
    k.speedup = e.fitness.speedup;
    k.params = model::formatParams(e.candidate.params);
    k.source = bakedSource(e);
    if (!e.result) {
        k.status = QStringLiteral("not evaluated yet");
        return k;
    }
    k.status = e.result->status == protocol::Status::Ok ? QStringLiteral("correct") : q(std::string(protocol::statusName(e.result->status)));
    if (e.result->status != protocol::Status::Ok && !e.result->message.empty())
        k.findings << QStringLiteral("result: ") + q(e.result->message);
    for (const QJsonValue& v : e.findings) {
        const auto f = diagnose::Finding::fromJson(v.toObject());
        QString line = f.line > 0 ? QStringLiteral("line %1: ").arg(f.line) : QString();
        line += QStringLiteral("[%1] %2").arg(f.severity, f.message);
        if (!f.direction.isEmpty())
            line += QStringLiteral(" (try: %1)").arg(f.direction);
        k.findings << line;
    }
    constexpr int kMaxLog = 4000;
    for (const auto& c : e.result->compile)
        if (c.role == "candidate" && !c.log.empty())
            k.compileLog = q(c.log).left(kMaxLog);
    if (!e.roofline.isEmpty()) {
        const auto& r = e.roofline;
        k.roofline = QStringLiteral("%1-bound; %2% of the DRAM roof, %3% of the %4 roof")
                         .arg(r.value(QStringLiteral("bound")).toString())
                         .arg(r.value(QStringLiteral("memory_fraction")).toDouble() * 100.0, 0, 'f', 0)
                         .arg(r.value(QStringLiteral("compute_fraction")).toDouble() * 100.0, 0, 'f', 0)
                         .arg(r.value(QStringLiteral("peak_name")).toString());
    }
    return k;
}

bool Engine::proposeLlm(int island, int generation, std::mt19937_64& rng) {
    propose::LlmJob job;
    job.island = island;
    job.generation = generation;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    const double roll = coin(rng);
    const Entry* first = nullptr;
    if (roll < m_config.llm.repairRate) {
        // The newest failed kernel of the island nobody tried to repair yet.
        for (auto it = m_entries.rbegin(); it != m_entries.rend(); ++it) {
            const Entry& e = it->second;
            if (e.candidate.island == island && e.result && !e.fitness.correct && !e.candidate.vetoed
                && e.candidate.origin != model::Origin::Seed && !m_repaired.count(e.candidate.id)) {
                first = &e;
                job.op = llm::Operator::Repair;
                break;
            }
        }
    }
    if (!first) {
        auto a = selectParent(island, rng, false);
        if (!a)
            return false;
        first = &m_entries.at(*a);
        job.op = llm::Operator::Mutate;
        if (roll < m_config.llm.repairRate + m_config.llm.crossoverRate) {
            // Crossover needs a second, different parent: another elite of the island, else one
            // of the run's best correct kernels (an island often holds a single cell's elite).
            std::optional<qint64> b = selectParent(island, rng, false);
            if (!b || *b == *a) {
                std::vector<const Entry*> others;
                for (const auto& [id, e] : m_entries)
                    if (id != *a && e.fitness.correct && !e.candidate.vetoed && !awaitingReview(e))
                        others.push_back(&e);
                const size_t top = std::min<size_t>(others.size(), 5);
                std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(top), others.end(),
                                  [](const Entry* x, const Entry* y) { return x->fitness.betterThan(y->fitness); });
                others.resize(top);
                b = others.empty() ? std::nullopt
                                   : std::optional<qint64>(others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(rng)]->candidate.id);
            }
            if (b && *b != *a) {
                job.op = llm::Operator::Crossover;
                job.parents << contextOf(m_entries.at(*b));
                job.parentIds << *b;
            }
        }
    }
    job.parents.prepend(contextOf(*first));
    job.parentIds.prepend(first->candidate.id);
    job.bottleneck = first->roofline.value(QStringLiteral("bound")).toString();
    if (!m_llm->submit(job, rng))
        return false;
    if (job.op == llm::Operator::Repair)
        m_repaired.insert(first->candidate.id);
    ++m_llmPending;
    return true;
}

void Engine::proposePersonas(const std::vector<qint64>& seeds) {
    if (!m_llm || !m_config.llm.personas || seeds.empty())
        return;
    const Entry& baseline = m_entries.at(seeds.front()); // the task's baseline comes first
    int k = 0;
    for (const auto& persona : m_llm->personas()) {
        if (budgetLeft() <= static_cast<int>(seeds.size()))
            break;
        propose::LlmJob job;
        job.op = llm::Operator::Init;
        job.island = k % m_config.islands;
        job.generation = 0;
        job.personaId = persona.id;
        job.parentIds << baseline.candidate.id; // the prompt shows the task's baseline itself
        auto rng = rngFor(0, 1000 + k);
        ++k;
        if (!m_llm->submit(job, rng))
            break;
        ++m_llmPending;
    }
}

void Engine::onLlmProposed(const propose::LlmProposal& p) {
    if (m_finished)
        return;
    --m_llmPending;
    if (m_state == RunState::Stopping) {
        if (m_tickets.empty() && m_llmPending == 0)
            finish(RunState::Stopped, QStringLiteral("stopped by the user"));
        return;
    }
    if (p.ok && p.job.generation == m_generation && m_generation > m_completedGeneration) {
        model::Candidate c;
        c.source = p.source;
        c.origin = model::Origin::Llm;
        c.label = p.label;
        c.parents = p.job.parentIds;
        c.island = std::clamp(p.job.island, 0, m_config.islands - 1);
        c.generation = m_generation;
        if (!hasKernel(c.source, {})) {
            const qint64 id = addCandidate(std::move(c));
            m_llm->adopted(p.callId, id);
            m_batch.push_back(id);
            ++m_outstanding;
            evaluate(id, kSearch);
        }
    } else if (!p.ok) {
        qCDebug(lcSearch) << "LLM proposal gave no kernel:" << p.problem;
    }
    scheduleProgress();
    maybeCompleteGeneration();
}

void Engine::finishOnLlmBudget() {
    const auto spend = m_llm->spend();
    QJsonObject data{{QStringLiteral("message"), m_llm->budgetMessage()},
                     {QStringLiteral("calls"), spend.calls},
                     {QStringLiteral("input_tokens"), spend.inputTokens},
                     {QStringLiteral("output_tokens"), spend.outputTokens},
                     {QStringLiteral("estimated_tokens"), spend.estimatedTokens},
                     {QStringLiteral("usd"), spend.usd},
                     {QStringLiteral("calls_of_unknown_cost"), spend.unknownCost}};
    if (!written(m_store->insertEvent(m_run.id, std::max(0, m_completedGeneration), QStringLiteral("llm_budget_reached"), data),
                 QStringLiteral("the LLM budget stop")))
        return;
    finish(RunState::Finished, m_llm->budgetMessage());
}

void Engine::creditLlmChildren() {
    if (!m_llm)
        return;
    for (qint64 id : m_batch) {
        const Entry& child = m_entries.at(id);
        if (child.candidate.origin != model::Origin::Llm)
            continue;
        // Against the better parent; a failed parent (a repair) or none counts as the baseline.
        double parent = 0.0;
        for (qint64 p : child.candidate.parents)
            if (auto it = m_entries.find(p); it != m_entries.end() && it->second.fitness.correct)
                parent = std::max(parent, it->second.fitness.speedup);
        if (parent <= 0.0)
            parent = 1.0;
        m_llm->credit(id, propose::ModelBandit::rewardOf(child.fitness.correct, child.fitness.speedup / parent));
    }
}

qint64 Engine::addCandidate(model::Candidate candidate) {
    Entry e;
    e.candidate = std::move(candidate);
    e.candidate.id = m_nextId++;
    e.candidate.params = completeParams(e.candidate.source, e.candidate.params, &e.templateKey);
    e.candidate.key = model::candidateKey(e.candidate.source, e.candidate.params);
    adopt(e);
    // On failure the entry is still kept, so that callers holding its id stay valid while the run
    // stops; it is not in the store, and the summary counts the store's candidates.
    written(m_store->insertCandidate(m_run.id, e.candidate), QStringLiteral("candidate %1").arg(e.candidate.id));
    const qint64 id = e.candidate.id;
    m_entries.emplace(id, std::move(e));
    return id;
}

void Engine::adopt(Entry& entry) {
    m_keys.insert(entry.candidate.key);
    if (m_llm)
        m_llm->remember(entry.candidate.id, entry.candidate.source);
    if (entry.candidate.origin == model::Origin::Llm && entry.candidate.label.startsWith(QLatin1String("llm repair"))
        && !entry.candidate.parents.isEmpty())
        m_repaired.insert(entry.candidate.parents.front());
    if (entry.candidate.origin == model::Origin::Expert) {
        const int island = std::clamp(entry.candidate.island, 0, m_config.islands - 1);
        m_islands[static_cast<size_t>(island)].expertsTried.insert(entry.templateKey);
    }
    if (auto* tuner = tunerFor(entry))
        tuner->markSeen(entry.candidate.params);
}

void Engine::evaluate(qint64 candidate, model::EvaluationPurpose purpose) {
    auto known = m_known.find({candidate, purpose});
    if (known != m_known.end()) {
        const protocol::EvaluateResult result = known->second;
        if (purpose == kSearch) {
            m_entries.at(candidate).roofline = m_knownRoofline[candidate];
            m_entries.at(candidate).findings = m_knownFindings[candidate];
        }
        QMetaObject::invokeMethod(this, [this, candidate, purpose, result] { onResult(candidate, purpose, result); },
                                  Qt::QueuedConnection);
        return;
    }
    const Entry& e = m_entries.at(candidate);
    task::EvalSettings settings;
    settings.backend = m_config.backend;
    settings.variant = m_config.variant;
    settings.pairWithBaseline = true;
    settings.options.device = m_config.device;
    // No seeds are given, for the search evaluation and the confirmation alike: the worker draws
    // fresh ones from a secure source each time, so no kernel can know (or have been tuned on) the
    // inputs it is verified and timed with. The seeds it used come back in the stored result.
    auto request = task::makeEvalRequest(m_task, settings, e.candidate.source,
                                         QStringLiteral("candidate-%1.%2").arg(candidate).arg(m_dialect == spec::Dialect::Cuda ? QStringLiteral("cu") : QStringLiteral("cl")));
    if (!request) {
        protocol::EvaluateResult r;
        r.status = protocol::Status::Rejected;
        r.message = request.error();
        r.diagnostics.push_back({"launch_plan", "error", request.error(), "candidate", 0, 0});
        QMetaObject::invokeMethod(this, [this, candidate, purpose, r] {
            if (m_finished || !written(m_store->insertEvaluation(m_run.id, candidate, purpose, r),
                                       QStringLiteral("the evaluation of candidate %1").arg(candidate)))
                return;
            ++m_evaluations;
            ++m_sessionEvaluations;
            onResult(candidate, purpose, r);
        }, Qt::QueuedConnection);
        return;
    }
    request->candidate.params = e.candidate.params;
    const auto timeout = std::chrono::milliseconds(static_cast<qint64>(m_config.evalTimeoutSeconds * 1000.0));
    const qint64 ticket = m_executor->submit(std::move(*request), timeout);
    m_tickets[ticket] = Pending{candidate, purpose};
}

void Engine::onEvaluated(qint64 ticket, const protocol::EvaluateResult& result) {
    auto it = m_tickets.find(ticket);
    if (it == m_tickets.end())
        return;
    const Pending pending = it->second;
    m_tickets.erase(it);
    if (m_state == RunState::Stopping || m_finished) {
        // Cancelled on the way out: not a result; a resumed run evaluates it again.
        if (m_tickets.empty() && !m_finished)
            finish(RunState::Stopped, QStringLiteral("stopped by the user"));
        return;
    }
    auto [findings, roofline] = analyse(result);
    protocol::EvaluateResult judged = result;
    if (result.status == protocol::Status::Ok) {
        if (auto impossible = impossibility(roofline)) {
            // Faster than the device can go: the timing cannot be what the kernel really does
            // (work skipped, results cached across runs, a broken timer). Stored as rejected,
            // with the roof it broke, so it never enters an archive, a review or a lineage.
            judged.status = protocol::Status::Rejected;
            judged.message = "impossible timing: " + impossible->toStdString();
            judged.diagnostics.push_back({"roofline", "error", judged.message, "candidate", 0, 0});
            QJsonArray withVerdict{QJsonObject{{QStringLiteral("rule"), QStringLiteral("above_roof")},
                                               {QStringLiteral("kind"), QStringLiteral("integrity")},
                                               {QStringLiteral("severity"), QStringLiteral("error")},
                                               {QStringLiteral("message"), QStringLiteral("impossible timing: %1").arg(*impossible)},
                                               {QStringLiteral("evidence"), QString()},
                                               {QStringLiteral("line"), 0},
                                               {QStringLiteral("direction"), QString()}}};
            for (const QJsonValue& f : findings)
                withVerdict.append(f);
            findings = withVerdict;
            emit notice(QStringLiteral("candidate %1 rejected: impossible timing: %2").arg(pending.candidate).arg(*impossible));
        }
    }
    std::optional<model::Cell> cell;
    if (pending.purpose == kSearch) {
        Entry& entry = m_entries.at(pending.candidate);
        entry.roofline = roofline;
        entry.findings = findings;
        entry.cell = cellOf(entry.candidate, judged);
        cell = entry.cell; // stored, so that views need not read the source
    }
    // Counted only once stored: the run's figures never include an evaluation the store lacks.
    if (!written(m_store->insertEvaluation(m_run.id, pending.candidate, pending.purpose, judged, findings, roofline, cell),
                 QStringLiteral("the evaluation of candidate %1").arg(pending.candidate)))
        return;
    ++m_evaluations;
    ++m_sessionEvaluations;
    onResult(pending.candidate, pending.purpose, judged);
}

void Engine::onResult(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result) {
    if (m_finished)
        return;
    if (purpose == kConfirm) {
        onConfirmation(candidate, result);
        return;
    }
    m_entries.at(candidate).result = result;
    ++m_evaluatedCount;
    m_correctCount += result.status == protocol::Status::Ok ? 1 : 0;
    scheduleProgress();
    --m_outstanding;
    maybeCompleteGeneration();
}

void Engine::maybeCompleteGeneration() {
    if (m_outstanding == 0 && m_llmPending == 0 && !m_finished && m_generation > m_completedGeneration)
        completeGeneration();
}

void Engine::completeGeneration() {
    for (qint64 id : m_batch)
        integrate(m_entries.at(id));

    if (m_generation == 0) {
        const Entry& baseline = m_entries.at(m_batch.front());
        if (!baseline.fitness.correct) {
            fail(QStringLiteral("the task's own baseline did not pass on %1: %2")
                     .arg(m_config.backend, q(baseline.result ? baseline.result->message : std::string("no result"))));
            return;
        }
    }
    creditLlmChildren();
    if (m_generation > m_storedGeneration)
        harvest();
    if (m_config.migrationInterval > 0 && m_generation > 0 && m_generation % m_config.migrationInterval == 0)
        migrate();
    considerPromotion();
}

model::Cell Engine::cellOf(const model::Candidate& candidate, const protocol::EvaluateResult& result) const {
    KernelFacts facts;
    facts.dialect = m_dialect;
    facts.params = candidate.params;
    for (const auto& c : result.compile)
        if (c.role == "candidate")
            facts.resources = c.resources;
    return m_space.describe(candidate.source, facts);
}

void Engine::integrate(Entry& entry) {
    const auto& result = *entry.result;
    entry.fitness = model::fitnessOf(result);
    if (!entry.cell) // placed when its result arrived; replayed and rejected ones here
        entry.cell = cellOf(entry.candidate, result);
    if (!entry.fitness.correct || entry.candidate.vetoed)
        return;
    // A suspicious result waits for a person instead of entering the archive; the task's own
    // baseline is the reference point, never suspicious.
    entry.review = entry.candidate.origin == model::Origin::Seed ? QString() : suspicion(entry);
    if (!entry.review.isEmpty()) {
        auto known = m_knownReviews.find(entry.candidate.id);
        entry.reviewState = known != m_knownReviews.end() ? known->second : model::ReviewState::Pending;
        if (known == m_knownReviews.end()) {
            if (!written(m_store->requestReview(m_run.id, entry.candidate.id, entry.review),
                         QStringLiteral("the review request of candidate %1").arg(entry.candidate.id)))
                return;
            event(QStringLiteral("review_requested"), {{QStringLiteral("candidate"), entry.candidate.id}, {QStringLiteral("reason"), entry.review}});
            emit notice(QStringLiteral("candidate %1 waits for review: %2").arg(entry.candidate.id).arg(entry.review));
        }
        if (entry.reviewState != model::ReviewState::Accepted)
            return;
    }
    admit(entry);
}

void Engine::admit(Entry& entry) {
    // Seeds (the baseline) belong to every island; everything else to the island it was made on.
    std::vector<int> islands;
    if (entry.candidate.origin == model::Origin::Seed) {
        for (int i = 0; i < m_config.islands; ++i)
            islands.push_back(i);
    } else {
        islands.push_back(std::clamp(entry.candidate.island, 0, m_config.islands - 1));
    }
    for (int i : islands) {
        Island& island = m_islands[static_cast<size_t>(i)];
        const auto insertion = island.archive.insert(*entry.cell, entry.candidate.id, entry.fitness);
        // Credit the parent's cell when its child made it in: the selection favours cells that
        // improved recently, and forgets slowly those that stopped paying off.
        if (!entry.candidate.parents.isEmpty()) {
            if (auto parentCell = island.archive.cellOf(entry.candidate.parents.front())) {
                double& c = island.curiosity[*parentCell];
                c = insertion.outcome == Archive::Outcome::Rejected ? c * 0.8 : c + 1.0;
            }
        }
    }
}

void Engine::migrate() {
    // Everyone picks its emigrants before anyone receives, so the ring's order does not matter.
    std::vector<std::vector<Elite>> emigrants(m_islands.size());
    for (size_t i = 0; i < m_islands.size(); ++i) {
        for (const Elite& e : m_islands[i].archive.ranked()) {
            if (static_cast<int>(emigrants[i].size()) >= m_config.migrants)
                break;
            if (!m_entries.at(e.candidate).candidate.vetoed)
                emigrants[i].push_back(e);
        }
    }
    if (m_islands.size() < 2)
        return;
    for (size_t i = 0; i < m_islands.size(); ++i) {
        const size_t to = (i + 1) % m_islands.size();
        for (const Elite& e : emigrants[i]) {
            const Entry& entry = m_entries.at(e.candidate);
            const auto insertion = m_islands[to].archive.insert(*entry.cell, e.candidate, e.fitness);
            const bool accepted = insertion.outcome != Archive::Outcome::Rejected;
            event(QStringLiteral("migration"),
                  {{QStringLiteral("from"), static_cast<int>(i)}, {QStringLiteral("to"), static_cast<int>(to)},
                   {QStringLiteral("candidate"), e.candidate}, {QStringLiteral("speedup"), e.fitness.speedup},
                   {QStringLiteral("accepted"), accepted}});
        }
    }
}

void Engine::considerPromotion() {
    const Entry* best = nullptr;
    std::vector<qint64> considered = m_batch;
    considered.insert(considered.end(), m_reviewAccepted.begin(), m_reviewAccepted.end());
    m_reviewAccepted.clear();
    for (qint64 id : considered) {
        const Entry& e = m_entries.at(id);
        if (!e.fitness.correct || e.candidate.vetoed || m_confirmed.count(id) || awaitingReview(e))
            continue;
        if (!best || e.fitness.betterThan(best->fitness))
            best = &e;
    }
    const double threshold = m_bestCandidate ? m_bestSpeedup * kPromotionMargin : 0.0;
    if (!best || best->fitness.speedup <= threshold) {
        finishGeneration();
        return;
    }
    if (!m_config.confirmBest) {
        onConfirmation(best->candidate.id, *best->result);
        return;
    }
    m_outstanding = 1;
    evaluate(best->candidate.id, kConfirm);
}

void Engine::onConfirmation(qint64 candidate, const protocol::EvaluateResult& result) {
    const Entry& e = m_entries.at(candidate);
    const model::Fitness confirmed = model::fitnessOf(result);
    const double threshold = m_bestCandidate ? m_bestSpeedup * kPromotionMargin : 0.0;
    QJsonObject data{{QStringLiteral("candidate"), candidate},
                     {QStringLiteral("first_speedup"), e.fitness.speedup},
                     {QStringLiteral("confirmed_speedup"), confirmed.speedup},
                     {QStringLiteral("status"), q(std::string(protocol::statusName(result.status)))},
                     {QStringLiteral("label"), e.candidate.label}};
    if (confirmed.correct && confirmed.speedup > threshold) {
        m_confirmed[candidate] = confirmed.speedup;
        event(QStringLiteral("new_best"), data);
        recomputeBest();
    } else {
        data.insert(QStringLiteral("previous_best"), m_bestSpeedup);
        event(QStringLiteral("promotion_rejected"), data);
    }
    m_outstanding = 0;
    finishGeneration();
}

void Engine::finishGeneration() {
    m_completedGeneration = m_generation;
    if (m_llm && m_config.llm.metaInterval > 0 && m_generation > m_storedGeneration && m_generation > 0
        && m_generation % m_config.llm.metaInterval == 0)
        m_llm->evolveStrategies(m_generation);
    {
        store::RunStore::Transaction tx(*m_store);
        bool ok = written(tx.begun(), QStringLiteral("the end of generation %1").arg(m_generation));
        if (ok && m_generation > m_storedGeneration) { // a replayed generation's events are stored already
            for (const auto& [kind, data] : m_generationEvents)
                if (!(ok = written(m_store->insertEvent(m_run.id, m_generation, kind, data), QStringLiteral("a %1 event").arg(kind))))
                    break;
        }
        ok = ok && writeRun();
        if (!ok || !written(tx.commit(), QStringLiteral("the end of generation %1").arg(m_generation)))
            return;
    }
    m_generationEvents.clear();
    applyStoredHumanEvents(m_completedGeneration);
    emit generationCompleted(m_completedGeneration);
    scheduleProgress();
    scheduleNextGeneration();
}

void Engine::finish(RunState state, QString message) {
    if (m_finished)
        return;
    m_finished = true;
    for (const auto& [ticket, pending] : m_tickets)
        if (m_executor)
            m_executor->cancel(ticket);
    m_tickets.clear();
    if (m_llm)
        m_llm->cancelAll();
    m_state = state;
    if (m_store && m_run.id != 0) {
        m_run.message = message;
        m_generationEvents.clear();
        event(QStringLiteral("run_ended"), {{QStringLiteral("state"), runStateName(state)}, {QStringLiteral("message"), message}});
        store::RunStore::Transaction tx(*m_store);
        spec::Status ok = tx.begun();
        for (const auto& [kind, data] : m_generationEvents)
            if (ok)
                if (auto stored = m_store->insertEvent(m_run.id, std::max(0, m_completedGeneration), kind, data); !stored)
                    ok = spec::Error{stored.error()};
        m_generationEvents.clear();
        if (ok) {
            fillRunRecord();
            ok = m_store->updateRun(m_run);
        }
        if (ok)
            ok = tx.commit();
        if (!ok && !m_storeBroken) {
            // The end of the run is not recorded: the store still shows it running, so it can be
            // resumed; the summary must not claim a clean end.
            m_storeBroken = true;
            state = m_state = RunState::Failed;
            message = storeFailureMessage(QStringLiteral("the end of the run"), q(ok.error()));
            qCWarning(lcSearch).noquote() << message;
        }
    }
    m_runLock.reset(); // another session may take the run from here on
    if (m_executor)
        m_executor->shutdown();
    if (m_progressTimer)
        m_progressTimer->stop();
    emit progressed(progress());

    RunSummary s;
    s.runId = m_run.id;
    s.storePath = m_store ? m_store->path() : m_setup.storePath;
    s.state = state;
    s.message = message;
    s.bestCandidate = m_bestCandidate;
    s.bestSpeedup = m_bestSpeedup;
    if (m_bestCandidate)
        s.bestLabel = m_entries.at(m_bestCandidate).candidate.label;
    s.evaluations = m_evaluations; // counted as they were stored
    s.candidates = static_cast<qint64>(m_entries.size());
    if (m_store && m_run.id != 0)
        if (auto stored = m_store->candidateCount(m_run.id))
            s.candidates = *stored; // a generation whose write failed was rolled back
    s.generations = m_completedGeneration + 1;
    s.wallSeconds = elapsedSeconds();
    emit finished(s);
}

// ---------------------------------------------------------------------------------------------
// Steering

void Engine::drainCommands() {
    std::deque<EngineCommand> commands;
    {
        QMutexLocker lock(&m_commandsMutex);
        commands.swap(m_commands);
    }
    if (m_finished || m_state == RunState::Starting) {
        if (!m_finished && !commands.empty()) {
            // Not started yet: keep them for the first boundary.
            QMutexLocker lock(&m_commandsMutex);
            for (auto it = commands.rbegin(); it != commands.rend(); ++it)
                m_commands.push_front(*it);
        }
        return;
    }
    const bool atBoundary = m_generation == m_completedGeneration;
    for (const EngineCommand& c : commands) {
        using K = EngineCommand::Kind;
        const bool immediate = c.kind == K::Pause || c.kind == K::Resume || c.kind == K::Stop || c.kind == K::SetBudget;
        if (immediate || atBoundary) {
            apply(c, false);
        } else {
            QMutexLocker lock(&m_commandsMutex);
            m_commands.push_back(c); // waits for the end of the generation in flight
        }
    }
}

void Engine::apply(const EngineCommand& c, bool replaying) {
    using K = EngineCommand::Kind;
    auto record = [&](const QString& kind, QJsonObject data) {
        if (replaying)
            return;
        if (!c.reason.isEmpty())
            data.insert(QStringLiteral("reason"), c.reason);
        written(m_store->insertEvent(m_run.id, m_completedGeneration, kind, data), QStringLiteral("a %1 event").arg(kind));
    };
    const QJsonObject who{{QStringLiteral("candidate"), c.candidate}};
    switch (c.kind) {
    case K::Pause:
        if (m_state == RunState::Running) {
            m_state = m_generation == m_completedGeneration ? RunState::Paused : RunState::Pausing;
            record(QStringLiteral("pause"), {});
            writeRun();
        }
        break;
    case K::Resume:
        if (m_state == RunState::Paused || m_state == RunState::Pausing) {
            const bool wasPaused = m_state == RunState::Paused;
            m_state = RunState::Running;
            record(QStringLiteral("resume"), {});
            writeRun();
            if (wasPaused)
                scheduleNextGeneration();
        }
        break;
    case K::Stop:
        if (m_state != RunState::Stopping) {
            record(QStringLiteral("stop"), {});
            m_state = RunState::Stopping;
            if (m_tickets.empty()) {
                finish(RunState::Stopped, QStringLiteral("stopped by the user"));
            } else {
                for (const auto& [ticket, pending] : m_tickets)
                    m_executor->cancel(ticket);
            }
        }
        break;
    case K::SetBudget:
        if (c.budgetEvaluations >= 0)
            m_config.budgetEvaluations = c.budgetEvaluations;
        if (c.budgetSeconds >= 0.0)
            m_config.budgetSeconds = c.budgetSeconds;
        m_run.config = m_config.toJson();
        record(QStringLiteral("budget"), {{QStringLiteral("evaluations"), m_config.budgetEvaluations},
                                          {QStringLiteral("seconds"), m_config.budgetSeconds}});
        writeRun();
        if (m_state == RunState::Running && m_generation == m_completedGeneration)
            scheduleNextGeneration();
        break;
    case K::Pin:
    case K::Unpin:
        if (!m_entries.count(c.candidate)) {
            emit notice(QStringLiteral("cannot %1 candidate %2: the run has no such candidate")
                            .arg(c.kind == K::Pin ? QStringLiteral("pin") : QStringLiteral("unpin")).arg(c.candidate));
            break;
        }
        setPinned(c.candidate, c.kind == K::Pin);
        record(c.kind == K::Pin ? QStringLiteral("pin") : QStringLiteral("unpin"), who);
        if (c.kind == K::Pin && !replaying)
            learnHumanAction(c, QStringLiteral("human_pin"));
        break;
    case K::Veto:
        if (!m_entries.count(c.candidate)) {
            emit notice(QStringLiteral("cannot veto candidate %1: the run has no such candidate").arg(c.candidate));
            break;
        }
        setVetoed(c.candidate);
        record(QStringLiteral("veto"), who);
        if (!replaying)
            learnHumanAction(c, QStringLiteral("human_veto"));
        break;
    case K::AcceptReview:
    case K::RejectReview: {
        auto it = m_entries.find(c.candidate);
        if (it == m_entries.end() || it->second.review.isEmpty() || it->second.reviewState != model::ReviewState::Pending) {
            emit notice(QStringLiteral("candidate %1 is not waiting for review").arg(c.candidate));
            break;
        }
        const bool accepted = c.kind == K::AcceptReview;
        if (!replaying)
            if (!written(m_store->decideReview(m_run.id, c.candidate, accepted, c.reason),
                         QStringLiteral("the review of candidate %1").arg(c.candidate)))
                break;
        it->second.reviewState = accepted ? model::ReviewState::Accepted : model::ReviewState::Rejected;
        m_knownReviews[c.candidate] = it->second.reviewState;
        record(accepted ? QStringLiteral("review_accepted") : QStringLiteral("review_rejected"), who);
        if (accepted) {
            admit(it->second); // an elite and a parent from now on
            m_reviewAccepted.push_back(c.candidate); // and considered for promotion after this generation
        }
        else
            setVetoed(c.candidate);
        break;
    }
    case K::Inject: {
        model::Candidate cand = c.injected;
        cand.origin = model::Origin::Human;
        cand.island = std::clamp(cand.island, 0, m_config.islands - 1);
        if (cand.label.isEmpty())
            cand.label = cand.parents.isEmpty() ? QStringLiteral("human") : QStringLiteral("human edit of #%1").arg(cand.parents.front());
        if (hasKernel(cand.source, cand.params)) {
            emit notice(QStringLiteral("not injected: the run already has this kernel with these parameters"));
            break;
        }
        record(QStringLiteral("inject"), {{QStringLiteral("island"), cand.island}, {QStringLiteral("label"), cand.label}});
        if (!replaying) {
            EngineCommand edit = c;
            edit.injected.label = cand.label;
            learnHumanAction(edit, QStringLiteral("human_edit"));
        }
        m_injected.push_back(std::move(cand));
        if (m_state == RunState::Running && m_generation == m_completedGeneration)
            scheduleNextGeneration();
        break;
    }
    }
    scheduleProgress();
}

void Engine::applyStoredHumanEvents(int generation) {
    auto it = m_storedHumanEvents.find(generation);
    if (it == m_storedHumanEvents.end())
        return;
    for (const auto& record : it->second) {
        const qint64 id = static_cast<qint64>(record.data.value(QStringLiteral("candidate")).toDouble());
        if (!m_entries.count(id))
            continue;
        if (record.kind == QLatin1String("veto"))
            setVetoed(id);
        else
            setPinned(id, record.kind == QLatin1String("pin"));
    }
    m_storedHumanEvents.erase(it);
}

void Engine::setPinned(qint64 candidate, bool pinned) {
    Entry& e = m_entries.at(candidate);
    e.candidate.pinned = pinned && !e.candidate.vetoed;
    if (e.candidate.pinned)
        m_pinned.insert(candidate);
    else
        m_pinned.erase(candidate);
    written(m_store->setCandidateFlags(m_run.id, candidate, e.candidate.pinned, e.candidate.vetoed),
            QStringLiteral("the flags of candidate %1").arg(candidate));
}

void Engine::setVetoed(qint64 candidate) {
    Entry& e = m_entries.at(candidate);
    e.candidate.vetoed = true;
    e.candidate.pinned = false;
    m_pinned.erase(candidate);
    for (Island& island : m_islands)
        island.archive.remove(candidate);
    written(m_store->setCandidateFlags(m_run.id, candidate, false, true), QStringLiteral("the veto of candidate %1").arg(candidate));
    if (candidate == m_bestCandidate)
        recomputeBest();
}

void Engine::recomputeBest() {
    const qint64 before = m_bestCandidate;
    m_bestCandidate = 0;
    m_bestSpeedup = 0.0;
    for (const auto& [id, speedup] : m_confirmed) {
        if (m_entries.at(id).candidate.vetoed)
            continue;
        if (!m_bestCandidate || speedup > m_bestSpeedup) {
            m_bestCandidate = id;
            m_bestSpeedup = speedup;
        }
    }
    m_run.bestCandidate = m_bestCandidate;
    m_run.bestSpeedup = m_bestSpeedup;
    if (m_bestCandidate != before)
        emit bestChanged(m_bestCandidate, m_bestSpeedup);
}

// ---------------------------------------------------------------------------------------------
// Helpers

std::optional<qint64> Engine::selectParent(int island, std::mt19937_64& rng, bool tunable) {
    const Island& isl = m_islands[static_cast<size_t>(island)];
    struct Option {
        qint64 id;
        model::Fitness fitness;
        double weight;
    };
    std::vector<Option> options;
    // A template whose every configuration was tried has nothing left for the tuner.
    auto spent = [&](const Entry& entry) {
        if (!tunable)
            return false;
        const propose::Tuner* tuner = tunerFor(entry);
        return !tuner || tuner->exhausted();
    };
    for (const Elite& e : isl.archive.ranked()) {
        const Entry& entry = m_entries.at(e.candidate);
        if (entry.candidate.vetoed || spent(entry))
            continue;
        double curiosity = 0.0;
        if (entry.cell)
            if (auto it = isl.curiosity.find(*entry.cell); it != isl.curiosity.end())
                curiosity = it->second;
        options.push_back({e.candidate, e.fitness, (1.0 + curiosity) * (entry.candidate.pinned ? 3.0 : 1.0)});
    }
    // Pinned kernels stay parents even when a better one took their cell. A kernel waiting for
    // review is never a parent, pinned or not (the archive never holds one): its children would
    // inherit whatever made it suspicious, a cheat included, and be judged by their own numbers
    // alone. It becomes a parent once a person accepts it.
    for (qint64 id : m_pinned) {
        const Entry& entry = m_entries.at(id);
        if (entry.candidate.vetoed || !entry.fitness.correct || awaitingReview(entry) || spent(entry))
            continue;
        if (std::none_of(options.begin(), options.end(), [&](const Option& o) { return o.id == id; }))
            options.push_back({id, entry.fitness, 3.0});
    }
    if (options.empty())
        return std::nullopt;

    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng) < m_config.exploitation) {
        // Exploit: a tournament of three by fitness; pinned kernels enter twice.
        std::vector<size_t> pool;
        for (size_t i = 0; i < options.size(); ++i) {
            pool.push_back(i);
            if (m_entries.at(options[i].id).candidate.pinned)
                pool.push_back(i);
        }
        std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
        size_t best = pool[pick(rng)];
        for (int round = 1; round < 3; ++round) {
            const size_t other = pool[pick(rng)];
            if (options[other].fitness.betterThan(options[best].fitness))
                best = other;
        }
        return options[best].id;
    }
    // Explore: roulette over the cells, weighted by their recent success.
    double total = 0.0;
    for (const auto& o : options)
        total += o.weight;
    double target = std::uniform_real_distribution<double>(0.0, total)(rng);
    for (const auto& o : options) {
        target -= o.weight;
        if (target <= 0.0)
            return o.id;
    }
    return options.back().id;
}

std::mt19937_64 Engine::rngFor(int generation, int island) const {
    const std::uint64_t s = mix(mix(m_config.seed) ^ mix(static_cast<std::uint64_t>(generation) * 1315423911ull + static_cast<std::uint64_t>(island)));
    return std::mt19937_64(s);
}

propose::Tuner* Engine::tunerFor(const Entry& entry) {
    auto it = m_tuners.find(entry.templateKey);
    if (it != m_tuners.end())
        return it->second.get();
    auto kf = spec::KernelFile::parse(entry.candidate.source.toStdString(), m_dialect);
    if (!kf)
        return nullptr;
    auto tuner = std::make_unique<propose::Tuner>(kf->params);
    auto* raw = tuner.get();
    m_tuners.emplace(entry.templateKey, std::move(tuner));
    return raw;
}

model::ParamValues Engine::completeParams(const QString& source, const model::ParamValues& params, QString* templateKey) {
    *templateKey = model::candidateKey(source, {});
    auto kf = spec::KernelFile::parse(source.toStdString(), m_dialect);
    if (!kf)
        return params; // the worker will say what is wrong with it
    return propose::Tuner(kf->params).complete(params);
}

bool Engine::hasKernel(const QString& source, const model::ParamValues& params) {
    QString templateKey;
    return m_keys.count(model::candidateKey(source, completeParams(source, params, &templateKey))) > 0;
}

double Engine::elapsedSeconds() const {
    return m_priorWallSeconds + (m_session.isValid() ? m_session.elapsed() / 1000.0 : 0.0);
}

int Engine::budgetLeft() const {
    if (m_config.budgetEvaluations <= 0)
        return INT_MAX;
    // One evaluation stays in reserve for the re-measurement that a new best needs.
    const qint64 reserve = m_config.confirmBest ? 1 : 0;
    const qint64 left = m_config.budgetEvaluations - m_evaluations - static_cast<qint64>(m_tickets.size()) - m_llmPending - reserve;
    return static_cast<int>(std::clamp<qint64>(left, 0, INT_MAX));
}

void Engine::event(const QString& kind, const QJsonObject& data) {
    m_generationEvents.emplace_back(kind, data);
}

void Engine::fillRunRecord() {
    m_run.state = runStateName(m_state);
    m_run.evaluations = m_evaluations;
    m_run.wallSeconds = elapsedSeconds();
    m_run.generation = m_completedGeneration;
    m_run.bestCandidate = m_bestCandidate;
    m_run.bestSpeedup = m_bestSpeedup;
    m_run.config = m_config.toJson();
}

bool Engine::writeRun() {
    if (!m_store || m_run.id == 0)
        return true;
    fillRunRecord();
    return written(m_store->updateRun(m_run), QStringLiteral("the run's state"));
}

template <typename T>
bool Engine::written(const spec::Expected<T>& outcome, const QString& what) {
    if (outcome)
        return true;
    if (!m_storeBroken) {
        m_storeBroken = true;
        fail(storeFailureMessage(what, q(outcome.error())));
    }
    return false;
}

QString Engine::storeFailureMessage(const QString& what, const QString& error) const {
    return QStringLiteral("the run store could not record %1: %2. The run stopped there; everything stored before is intact, "
                          "and `kforge run --resume` continues it once the store can be written again (free disk space, "
                          "write permission, or another program holding it locked)")
        .arg(what, error);
}

void Engine::scheduleProgress() {
    if (m_progressTimer && !m_progressTimer->isActive())
        m_progressTimer->start();
}

RunProgress Engine::progress() const {
    RunProgress p;
    p.runId = m_run.id;
    p.state = m_state;
    p.generation = std::max(0, m_generation);
    p.evaluations = m_evaluations;
    p.budgetEvaluations = m_config.budgetEvaluations;
    p.inFlight = static_cast<int>(m_tickets.size());
    p.candidates = static_cast<qint64>(m_entries.size());
    p.evaluated = m_evaluatedCount;
    p.correct = m_correctCount;
    p.bestCandidate = m_bestCandidate;
    p.bestSpeedup = m_bestSpeedup;
    p.elapsedSeconds = elapsedSeconds();
    const double session = m_session.isValid() ? m_session.elapsed() / 1000.0 : 0.0;
    p.evaluationsPerSecond = session > 0.5 ? m_sessionEvaluations / session : 0.0;
    if (m_config.budgetEvaluations > 0 && p.evaluationsPerSecond > 0.0)
        p.etaSeconds = std::max<qint64>(0, m_config.budgetEvaluations - m_evaluations) / p.evaluationsPerSecond;
    std::set<model::Cell> cells;
    for (const Island& island : m_islands)
        for (const auto& [cell, elite] : island.archive.cells())
            cells.insert(cell);
    p.archiveCells = static_cast<int>(cells.size());
    if (m_llm) {
        const auto spend = m_llm->spend();
        p.llmCalls = spend.calls;
        p.llmTokens = spend.tokens();
        p.llmUsd = spend.usd;
        p.llmUnknownCost = spend.unknownCost;
        p.llmPending = m_llmPending;
    }
    return p;
}

} // namespace kforge::search
