#include "search/engine.h"

#include "eval/placement.h"

#include "util/text.h"

#include "eval/executor.h"
#include "search/offspring.h"
#include "util/logging.h"

#include <QJsonArray>
#include <QTimer>

#include <algorithm>
#include <climits>

namespace kforge::search {

namespace {

constexpr auto kSearch = model::EvaluationPurpose::Search;
constexpr auto kConfirm = model::EvaluationPurpose::Confirm;
constexpr auto kYardstick = model::EvaluationPurpose::Yardstick;

using util::q;

} // namespace

Engine::Engine(Setup setup, QObject* parent) : QObject(parent), m_setup(std::move(setup)) {
    qRegisterMetaType<kforge::search::RunProgress>();
    qRegisterMetaType<kforge::search::RunSummary>();
    qRegisterMetaType<kforge::search::EngineCommand>();
    m_config = m_setup.config;
    m_evals = new Evaluations(this);
    connect(m_evals, &Evaluations::result, this, &Engine::onResult);
    connect(m_evals, &Evaluations::notice, this, &Engine::notice);
    connect(m_evals, &Evaluations::drained, this, &Engine::finishStopped);
}

Engine::~Engine() = default;

void Engine::post(EngineCommand command) {
    m_steering.post(std::move(command));
    QMetaObject::invokeMethod(this, &Engine::drainCommands, Qt::QueuedConnection);
}

spec::Expected<eval::Executor*> Engine::defaultExecutor(const RunConfig& config, QObject* parent) {
    eval::Placement placement;
    placement.workers = config.workers;
    placement.device = config.device;
    placement.places = config.workerPlaces;
    placement.devices = config.devices;
    placement.slurmArgs = config.slurmArgs;
    return eval::makeExecutor(model::backendName(config.backend), placement, parent);
}

// ---------------------------------------------------------------------------------------------
// Setup

void Engine::start() {
    m_budget.startSession();
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
    scheduleNextGeneration(); // waits for the ceilings and the keys
}

spec::Status Engine::open() {
    auto loaded = loadRun(m_setup);
    if (!loaded)
        return spec::fail(loaded.error());
    for (const QString& n : loaded->notices)
        emit notice(n);
    m_store = std::move(loaded->store);
    m_runLock = std::move(loaded->lock);
    m_run = loaded->run;
    m_config = loaded->config;
    m_task = std::move(loaded->task);
    m_sizes = loaded->sizes;
    m_diagnosis = std::move(loaded->diagnosis);
    m_space = loaded->space;
    m_experts = loaded->experts;
    m_experience = std::move(loaded->experience);
    m_record.attach(m_store.get(), m_run.id, [this](const QString& message) { fail(message); });
    m_population.setDialect(m_config.backend);
    m_islands.reset(m_config.islands);
    const bool resuming = loaded->stored.has_value();
    if (resuming)
        replayStored(std::move(*loaded->stored));
    if (resuming)
        if (auto queued = postQueuedCommands(); !queued)
            return queued;

    Offspring::Sources sources;
    sources.config = &m_config;
    sources.task = &m_task;
    sources.population = &m_population;
    sources.islands = &m_islands;
    sources.llm = &m_llm;
    sources.experts = m_experts;
    sources.seedKernels = std::move(loaded->seedKernels);
    sources.experience = m_experience.get();
    sources.tuning = &m_tuning;
    sources.add = [this](model::Candidate c) { return addCandidate(std::move(c)); };
    sources.budgetLeft = [this] { return budgetLeft(); };
    sources.stopped = [this] { return m_finished; };
    m_offspring.setSources(std::move(sources));
    m_tuning.attach({&m_population, m_setup.useTuningCache ? m_experience.get() : nullptr, q(m_task.spec.name),
                     m_config.backend, TuningMemory::sizesKey(m_config.variant, m_sizes),
                     [this](const QString& message) { emit notice(message); }});
    m_learning.attach(m_experience.get(), {q(m_task.spec.family), q(m_task.spec.name),
                                           model::backendName(m_config.backend), m_store->path(), m_run.id});
    m_curation.attach({m_store.get(), m_run.id, &m_record, &m_population, &m_islands, &m_promotions, &m_learning},
                      std::move(m_stored.reviews));

    if (auto connected = connectExecutor(); !connected)
        return connected;
    if (auto opened = openLlm(); !opened)
        return opened;

    QJsonObject data{{QStringLiteral("backend"), model::backendName(m_config.backend)},
                     {QStringLiteral("experts"), static_cast<int>(m_experts.size())}};
    // Written at once: the generation's buffered events are skipped while stored ones replay.
    if (auto stored =
            m_store->insertEvent(m_run.id, std::max(0, m_run.generation),
                                 resuming ? model::EventKind::RunResumed : model::EventKind::RunStarted, data);
        !stored)
        return spec::fail(stored.error());
    return spec::success();
}

spec::Status Engine::postQueuedCommands() {
    auto queued = m_store->queuedCommands(m_run.id);
    if (!queued)
        return spec::fail(queued.error());
    int posted = 0;
    for (const auto& record : *queued) {
        auto command = Steering::fromJson(record.command);
        if (!command) {
            emit notice(QStringLiteral("steering queued on the stored run (command %1) left out: %2")
                            .arg(record.id)
                            .arg(q(command.error())));
            if (auto marked = m_store->markCommandApplied(m_run.id, record.id); !marked)
                return marked;
            continue;
        }
        command->queuedId = record.id;
        m_steering.post(std::move(*command));
        ++posted;
    }
    if (posted > 0)
        emit notice(
            QStringLiteral("%1 steering action(s) made on the stored run apply at the first generation boundary")
                .arg(posted));
    return spec::success();
}

void Engine::replayStored(StoredRun stored) {
    m_budget.resume(stored.evaluations, stored.wallSeconds);
    m_population.restore(std::move(stored.candidates));
    m_steering.setStoredActions(std::move(stored.humanEvents));
    m_stored = std::move(stored);
}

spec::Status Engine::connectExecutor() {
    auto executor = m_setup.executorFactory ? m_setup.executorFactory(m_config, this) : defaultExecutor(m_config, this);
    if (!executor)
        return spec::fail(executor.error());
    m_executor = *executor;
    m_evals->attach({&m_task, &m_config, m_sizes, m_diagnosis ? &*m_diagnosis : nullptr, &m_space, m_store.get(),
                     m_run.id, &m_record, &m_population, &m_stored, &m_budget},
                    m_executor);
    connect(m_evals, &Evaluations::failed, this, &Engine::fail);
    connect(m_executor, &eval::Executor::shutDown, this, &Engine::released);
    connect(m_executor, &eval::Executor::degraded, this, &Engine::notice);
    // The roofline needs the device's ceilings before the first result arrives.
    connect(m_evals, &Evaluations::ceilingsReady, this, [this] {
        if (m_llm)
            m_llm.proposer()->setDevice(m_evals->ceilings().device, m_evals->ceilings().summary());
        scheduleNextGeneration();
    });
    m_evals->measureCeilings();
    return spec::success();
}

spec::Status Engine::openLlm() {
    propose::LlmProposer::Context context;
    context.task = &m_task;
    context.sizes = m_sizes;
    context.store = m_store.get();
    context.runId = m_run.id;
    context.experience = m_experience.get();
    if (auto opened = m_llm.open(m_config, std::move(context), this); !opened || !m_llm)
        return opened;
    auto* llm = m_llm.proposer();
    connect(llm, &propose::LlmProposer::proposed, this, &Engine::onLlmProposed);
    connect(llm, &propose::LlmProposer::notice, this, &Engine::notice);
    // Keys are looked up before generation 0, without blocking: never from inside a proposal,
    // where a store transaction is open.
    m_waitingForKeys = true;
    connect(llm, &propose::LlmProposer::keysReady, this, [this] {
        m_waitingForKeys = false;
        // A run whose models cannot be called must not start: it would only refuse call after call.
        if (const QString missing = m_llm.proposer()->missingKeys(); !missing.isEmpty()) {
            fail(missing);
            return;
        }
        scheduleNextGeneration();
    });
    connect(llm, &propose::LlmProposer::callSettled, this, [this] {
        if (!m_waitingForLlm)
            return;
        m_waitingForLlm = false;
        scheduleNextGeneration();
    });
    llm->lookUpKeys();
    return spec::success();
}

void Engine::finishStopped() {
    finish(RunState::Stopped, QStringLiteral("stopped by the user"));
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
    if (m_finished || m_finalPending || m_generation > m_completedGeneration || m_evals->measuringCeilings()
        || m_waitingForKeys || m_waitingForLlm)
        return;
    drainCommands();
    if (m_finished)
        return;
    if (m_state == RunState::Stopping) {
        finishStopped();
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
    const bool stored = m_stored.batches.count(generation) > 0;
    if (!stored) {
        if (auto spent = m_budget.spent(m_config, inFlight())) {
            finishWithYardstick(*spent);
            return;
        }
        // A hard stop: no call may take the run over its token or money budget.
        if (m_llm && m_llm.proposer()->budgetReached()) {
            finishOnLlmBudget();
            return;
        }
    }

    m_generation = generation;
    if (stored) {
        m_batch = m_stored.batches[generation];
        for (qint64 id : m_batch)
            adopt(m_population.at(id));
    } else {
        m_batch = propose(generation);
    }
    if (m_batch.empty() && m_llm.pending() == 0) {
        if (m_llm && m_llm.proposer()->budgetReached()) {
            finishOnLlmBudget();
            return;
        }
        if (m_llm && m_llm.proposer()->waiting()) {
            // Its calls wait for the budget that a strategy rewrite in flight holds: the
            // generation starts again once that call has settled.
            m_generation = m_completedGeneration;
            m_waitingForLlm = true;
            return;
        }
        if (m_llm && !stored)
            if (const QString unusable = m_llm.proposer()->unusable(); !unusable.isEmpty()) {
                fail(unusable);
                return;
            }
        if (generation == 0) {
            fail(QStringLiteral("nothing to search from: task %1 has no %2 baseline kernel, no expert kernel binds "
                                "to it, and no language model is set; start from your own kernel with "
                                "--seed-kernel FILE, or add a model (--llm-model)")
                     .arg(q(m_task.spec.name), model::backendName(m_config.backend)));
            return;
        }
        finishWithYardstick(QStringLiteral("nothing left to try: every configuration of every kernel on every island "
                                           "has been evaluated (or an earlier run measured it slower than the best)"));
        return;
    }
    m_outstanding = static_cast<int>(m_batch.size());
    const std::vector<qint64> batch = m_batch;
    // The first seed is measured beside PyTorch eager and torch.compile: the run's yardstick at its start.
    for (qint64 id : batch)
        m_evals->evaluate(id, kSearch, generation == 0 && id == batch.front() && wantsYardstick());
    scheduleProgress();
}

std::vector<qint64> Engine::propose(int generation) {
    std::vector<model::Candidate> injected;
    injected.swap(m_injected);
    const QString what = generation == 0 ? QStringLiteral("the seed kernels")
                                         : QStringLiteral("the candidates of generation %1").arg(generation);
    std::vector<qint64> ids;
    {
        store::RunStore::Transaction tx(*m_store);
        if (!m_record.written(tx.begun(), what))
            return {};
        ids = generation == 0 ? m_offspring.seeds() : m_offspring.children(generation, std::move(injected));
        if (m_finished)
            return {};
        if (!m_record.written(tx.commit(), what))
            return {};
    }
    if (generation == 0)
        m_offspring.personas(ids);
    return ids;
}

qint64 Engine::addCandidate(model::Candidate candidate) {
    candidate.id = m_population.nextId();
    Entry& e = m_population.add(m_population.prepare(std::move(candidate)));
    adopt(e);
    // On failure the entry is still kept, so that callers holding its id stay valid while the run
    // stops; it is not in the store, and the summary counts the store's candidates.
    m_record.written(m_store->insertCandidate(m_run.id, e.candidate),
                     QStringLiteral("candidate %1").arg(e.candidate.id));
    return e.candidate.id;
}

void Engine::adopt(Entry& entry) {
    m_llm.adopt(entry);
    if (entry.candidate.origin == model::Origin::Expert)
        m_islands.island(entry.candidate.island).expertsTried.insert(entry.templateKey);
    m_population.markTried(entry);
}

// ---------------------------------------------------------------------------------------------
// LLM children

void Engine::onLlmProposed(const propose::LlmProposal& p) {
    if (m_finished)
        return;
    m_llm.answered();
    if (m_state == RunState::Stopping) {
        if (m_evals->inFlight() == 0 && m_llm.pending() == 0)
            finishStopped();
        return;
    }
    if (p.ok && p.job.generation == m_generation && m_generation > m_completedGeneration) {
        if (!m_population.hasKernel(p.source, {})) {
            const qint64 id = addCandidate(LlmChildren::candidateOf(p, m_generation, m_config.islands));
            m_llm.proposer()->adopted(p.callId, id);
            m_batch.push_back(id);
            ++m_outstanding;
            m_evals->evaluate(id, kSearch);
        }
    } else if (!p.ok) {
        qCDebug(lcSearch) << "LLM proposal gave no kernel:" << p.problem;
    }
    scheduleProgress();
    maybeCompleteGeneration();
}

void Engine::finishOnLlmBudget() {
    if (!m_record.written(m_store->insertEvent(m_run.id, std::max(0, m_completedGeneration),
                                               model::EventKind::LlmBudgetReached, m_llm.budgetStop()),
                          QStringLiteral("the LLM budget stop")))
        return;
    finishWithYardstick(m_llm.proposer()->budgetMessage());
}

// ---------------------------------------------------------------------------------------------
// Evaluation and results

void Engine::onResult(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result) {
    if (m_finished)
        return;
    if (purpose == kConfirm) {
        onConfirmation(candidate, result);
        return;
    }
    if (purpose == kYardstick) {
        m_final = result;
        finish(RunState::Finished, m_finalMessage);
        return;
    }
    m_population.at(candidate).result = result;
    ++m_evaluatedCount;
    m_correctCount += result.status == protocol::Status::Ok ? 1 : 0;
    scheduleProgress();
    --m_outstanding;
    maybeCompleteGeneration();
}

void Engine::maybeCompleteGeneration() {
    if (m_outstanding == 0 && m_llm.pending() == 0 && !m_finished && m_generation > m_completedGeneration)
        completeGeneration();
}

void Engine::completeGeneration() {
    for (qint64 id : m_batch)
        integrate(m_population.at(id));
    m_tuning.flush();

    if (m_generation == 0 && !m_batch.empty()) {
        const Entry& first = m_population.at(m_batch.front());
        if (first.candidate.label == QLatin1String("baseline") && !first.fitness.correct) {
            fail(QStringLiteral("the task's own baseline did not pass on %1: %2")
                     .arg(model::backendName(m_config.backend),
                          q(first.result ? first.result->message : std::string("no result"))));
            return;
        }
        const bool anyCorrect = std::any_of(m_batch.begin(), m_batch.end(),
                                            [this](qint64 id) { return m_population.at(id).fitness.correct; });
        if (!anyCorrect && !m_llm) {
            fail(QStringLiteral("none of the %1 seed kernels passed on %2 (first: %3): there is nothing to search from")
                     .arg(m_batch.size())
                     .arg(model::backendName(m_config.backend),
                          q(first.result ? first.result->message : std::string("no result"))));
            return;
        }
    }
    m_llm.credit(m_batch, m_population);
    if (m_generation > m_stored.generation)
        m_learning.harvest(m_batch, m_population);
    if (m_config.migrationInterval > 0 && m_generation > 0 && m_generation % m_config.migrationInterval == 0)
        migrate();
    considerPromotion();
}

void Engine::integrate(Entry& entry) {
    entry.fitness = model::fitnessOf(*entry.result);
    m_tuning.learn(entry, m_generation > m_stored.generation);
    if (!entry.cell) // placed when its result arrived; replayed and rejected ones here
        entry.cell = m_evals->cellOf(entry.candidate, *entry.result);
    // A suspicious result waits for a person instead of entering the archive.
    if (const QString waits = m_curation.place(entry, m_evals->ceilingsFor(entry.result->device), m_config);
        !waits.isEmpty())
        emit notice(waits);
}

void Engine::migrate() {
    const auto moves =
        m_islands.migrate(m_config.migrants, [this](qint64 id) { return !m_population.at(id).candidate.vetoed; });
    for (const Migration& m : moves)
        m_record.buffer(model::EventKind::Migration, {{QStringLiteral("from"), m.from},
                                                      {QStringLiteral("to"), m.to},
                                                      {QStringLiteral("candidate"), m.candidate},
                                                      {QStringLiteral("speedup"), m.speedup},
                                                      {QStringLiteral("accepted"), m.accepted}});
}

void Engine::considerPromotion() {
    const auto best = m_promotions.next(m_population, m_batch);
    if (!best) {
        finishGeneration();
        return;
    }
    if (!m_config.confirmBest) {
        onConfirmation(*best, *m_population.at(*best).result);
        return;
    }
    m_outstanding = 1;
    m_evals->evaluate(*best, kConfirm);
}

void Engine::onConfirmation(qint64 candidate, const protocol::EvaluateResult& result) {
    const auto verdict = m_promotions.confirm(candidate, result, m_population);
    m_record.buffer(verdict.event, verdict.data);
    // From now on the kernel is judged by its re-measurement, as a parent and as an elite: the
    // first measurement is the one it was picked for, so it errs high, and a kernel that was not
    // correct the second time (a race that passed once) is no elite at all.
    Entry& entry = m_population.at(candidate);
    entry.fitness = model::fitnessOf(result);
    m_curation.remeasured(candidate);
    if (verdict.bestChanged)
        bestMoved();
    m_outstanding = 0;
    finishGeneration();
}

void Engine::finishGeneration() {
    m_completedGeneration = m_generation;
    if (m_llm && m_config.llm.metaInterval > 0 && m_generation > m_stored.generation && m_generation > 0
        && m_generation % m_config.llm.metaInterval == 0)
        m_llm.proposer()->evolveStrategies(m_generation);
    fillRunRecord();
    if (!m_record.endGeneration(m_generation, m_generation <= m_stored.generation, m_run, archives()))
        return;
    if (m_curation.replay(m_steering.storedActionsAt(m_completedGeneration)))
        bestMoved();
    emit generationCompleted(m_completedGeneration);
    scheduleProgress();
    scheduleNextGeneration();
}

QString Engine::speedupBase() const {
    return m_task.baselineSource.count(model::backendName(m_config.backend).toStdString())
               ? QStringLiteral("the baseline")
               : QStringLiteral("PyTorch eager");
}

bool Engine::wantsYardstick() const {
    return m_config.pytorch && m_task.referenceSource.count("torch") > 0;
}

void Engine::finishWithYardstick(const QString& message) {
    const qint64 best = m_promotions.best().candidate;
    if (!wantsYardstick() || best == 0 || m_finalPending) {
        finish(RunState::Finished, message);
        return;
    }
    // The budget is spent: this one evaluation is not counted against it.
    m_finalPending = true;
    m_finalMessage = message;
    emit notice(QStringLiteral("timing the best kernel (#%1) beside PyTorch eager and torch.compile").arg(best));
    m_evals->evaluate(best, kYardstick);
    scheduleProgress();
}

void Engine::finish(RunState state, QString message) {
    if (m_finished)
        return;
    m_finished = true;
    m_evals->close();
    if (m_llm)
        m_llm.proposer()->cancelAll();
    m_state = state;
    if (m_record.attached()) {
        m_run.message = message;
        fillRunRecord();
        const QJsonObject ended{{QStringLiteral("state"), runStateName(state)}, {QStringLiteral("message"), message}};
        if (auto failure = m_record.endRun(std::max(0, m_completedGeneration), ended, m_run)) {
            // The end of the run is not recorded: the store still shows it running, so it can be
            // resumed; the summary must not claim a clean end.
            state = m_state = RunState::Failed;
            message = *failure;
            qCWarning(lcSearch).noquote() << message;
        }
    }
    m_runLock.reset(); // another session may take the run from here on
    if (m_executor)
        m_executor->shutdown(); // released() follows once its workers have exited
    else
        QMetaObject::invokeMethod(this, &Engine::released, Qt::QueuedConnection);
    if (m_progressTimer)
        m_progressTimer->stop();
    emit progressed(progress());

    RunSummary s;
    s.runId = m_run.id;
    s.storePath = m_store ? m_store->path() : m_setup.storePath;
    s.state = state;
    s.message = message;
    const Best& best = m_promotions.best();
    s.bestCandidate = best.candidate;
    s.bestSpeedup = best.speedup;
    if (best.candidate)
        s.bestLabel = m_population.at(best.candidate).candidate.label;
    s.speedupBase = speedupBase();
    if (wantsYardstick()) {
        const protocol::EvaluateResult* start = nullptr;
        if (m_population.size() > 0)
            if (const Entry& first = m_population.at(m_population.firstId()); first.result)
                start = &*first.result;
        s.pytorch = store::yardstickFigures(start, m_final ? &*m_final : nullptr);
    } else {
        s.pytorch.note = m_task.referenceSource.count("torch") ? QStringLiteral("not timed (--no-pytorch)")
                                                               : QStringLiteral("the task has no PyTorch form");
    }
    if (best.candidate)
        if (const auto& roof = m_population.at(best.candidate).roofline; roof && roof->fractionOfBound > 0.0) {
            s.bestFractionOfBound = roof->fractionOfBound;
            if (roof->splitTf32Fraction > 0.0)
                s.bestSplitTf32Fraction = roof->splitTf32Fraction;
        }
    if (!s.pytorch.bestFractionOfBound) {
        s.pytorch.bestFractionOfBound = s.bestFractionOfBound;
        s.pytorch.bestSplitTf32Fraction = s.bestSplitTf32Fraction;
    }
    s.evaluations = m_budget.evaluations(); // counted as they were stored
    s.candidates = m_population.size();
    if (m_store && m_run.id != 0)
        if (auto stored = m_store->candidateCount(m_run.id))
            s.candidates = *stored; // a generation whose write failed was rolled back
    s.generations = m_completedGeneration + 1;
    s.wallSeconds = m_budget.elapsedSeconds();
    for (const auto& [id, e] : m_population.entries())
        if (!e.review.isEmpty() && e.reviewState == model::ReviewState::Pending && e.fitness.correct)
            s.pendingReviews.append({id, e.candidate.label, e.fitness.speedup, e.review});
    std::stable_sort(s.pendingReviews.begin(), s.pendingReviews.end(),
                     [](const PendingReview& a, const PendingReview& b) { return a.speedup > b.speedup; });
    emit finished(s);
}

// ---------------------------------------------------------------------------------------------
// Steering

void Engine::drainCommands() {
    if (m_finished)
        return;
    const bool atBoundary = m_generation == m_completedGeneration;
    for (const EngineCommand& c : m_steering.take(m_state != RunState::Starting, atBoundary))
        apply(c);
}

void Engine::apply(const EngineCommand& c) {
    const bool atBoundary = m_generation == m_completedGeneration;
    if (Steering::immediate(c.kind)) {
        if (auto step = Steering::runStep(c, m_state, atBoundary, m_config)) {
            m_state = step->state;
            m_run.config = m_config.toJson();
            if (!c.reason.isEmpty())
                step->data.insert(QStringLiteral("reason"), c.reason);
            m_record.event(m_completedGeneration, step->event, step->data);
            if (m_state != RunState::Stopping)
                writeRun();
            else if (m_evals->inFlight() == 0)
                finishStopped();
            else
                m_evals->stop(); // the run finishes once the last evaluation has answered
            if (step->reschedule)
                scheduleNextGeneration();
        }
    } else if (const QString why = Steering::refusal(c, m_population, m_config.islands); !why.isEmpty()) {
        emit notice(why);
    } else if (c.kind == EngineCommand::Kind::Inject) {
        model::Candidate injected = Steering::injectedCandidate(c, m_config.islands);
        QJsonObject data{{QStringLiteral("island"), injected.island}, {QStringLiteral("label"), injected.label}};
        if (!c.reason.isEmpty())
            data.insert(QStringLiteral("reason"), c.reason);
        m_record.event(m_completedGeneration, model::EventKind::Inject, data);
        EngineCommand edit = c;
        edit.injected.label = injected.label;
        m_learning.learnHumanAction(experience::HumanAction::Edit, edit, m_population);
        m_injected.push_back(std::move(injected));
        if (m_state == RunState::Running && atBoundary)
            scheduleNextGeneration();
    } else if (m_curation.apply(c, m_completedGeneration)) {
        bestMoved();
    }
    if (c.queuedId != 0)
        if (auto marked = m_store->markCommandApplied(m_run.id, c.queuedId); !marked)
            emit notice(q(marked.error()));
    if (m_record.attached() && !m_finished)
        m_record.archives(archives()); // a veto or a review decision may have changed them
    scheduleProgress();
}

QList<store::ArchiveMemberRecord> Engine::archives() const {
    QList<store::ArchiveMemberRecord> members;
    for (const ArchiveMember& m : m_islands.members())
        members.push_back({m.island, m.cell, m.candidate, m.fitness.speedup});
    return members;
}

void Engine::bestMoved() {
    const Best& best = m_promotions.best();
    m_run.bestCandidate = best.candidate;
    m_run.bestSpeedup = best.speedup;
    emit bestChanged(best.candidate, best.speedup);
}

// ---------------------------------------------------------------------------------------------
// Records

int Engine::inFlight() const {
    return m_evals->inFlight() + m_llm.pending();
}

int Engine::budgetLeft() const {
    return m_budget.left(m_config, inFlight());
}

void Engine::fillRunRecord() {
    m_run.state = m_state;
    m_run.evaluations = m_budget.evaluations();
    m_run.wallSeconds = m_budget.elapsedSeconds();
    m_run.generation = m_completedGeneration;
    m_run.bestCandidate = m_promotions.best().candidate;
    m_run.bestSpeedup = m_promotions.best().speedup;
    m_run.config = m_config.toJson();
}

bool Engine::writeRun() {
    fillRunRecord();
    return m_record.updateRun(m_run);
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
    p.evaluations = m_budget.evaluations();
    p.budgetEvaluations = m_config.budgetEvaluations;
    p.inFlight = m_evals->inFlight();
    p.candidates = m_population.size();
    p.evaluated = m_evaluatedCount;
    p.correct = m_correctCount;
    p.bestCandidate = m_promotions.best().candidate;
    p.bestSpeedup = m_promotions.best().speedup;
    p.speedupBase = speedupBase();
    p.elapsedSeconds = m_budget.elapsedSeconds();
    p.evaluationsPerSecond = m_budget.sessionRate();
    p.etaSeconds = m_budget.etaSeconds(m_config);
    p.archiveCells = m_islands.filledCells();
    m_llm.report(p);
    return p;
}

} // namespace kforge::search
