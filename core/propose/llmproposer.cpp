#include "propose/llmproposer.h"

#include "util/text.h"

#include "llm/apikeys.h"

#include "llm/llmclient.h"
#include "llm/pricetable.h"
#include "util/logging.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QSet>

#include <algorithm>
#include <cmath>

namespace kforge::propose {

namespace {

using util::q;

// Roughly four characters per token for code and English: enough to reserve a call's worst case.
qint64 estimateTokens(const QString& text) {
    return text.size() / 4 + 1;
}

QString promptText(const llm::Prompt& prompt) {
    QStringList turns;
    for (const auto& m : prompt.messages)
        turns << (prompt.messages.size() > 1 ? QStringLiteral("[%1]\n").arg(m.role) : QString()) + m.content;
    return turns.join(QStringLiteral("\n\n"));
}

constexpr int kMaxAnswerInRepair = 16000;      // characters of an unparsable answer shown back
constexpr const char* kInFlight = "in-flight"; // the status of a call stored as it was sent
constexpr int kExperienceDiffChars = 1200;

} // namespace

LlmProposer::LlmProposer(llm::LlmSettings settings, Context context, QObject* parent)
    : QObject(parent), m_settings(std::move(settings)), m_context(std::move(context)),
      m_bandit(m_settings.models, m_settings.selection == QLatin1String("bandit")) {
    qRegisterMetaType<kforge::propose::LlmProposal>();
    qRegisterMetaType<kforge::llm::ChatResult>();
}

LlmProposer::~LlmProposer() {
    // The store may be gone by now: calls still in flight are dropped, not recorded (the engine
    // ends them with cancelAll() while its store is open).
    if (m_client)
        m_client->cancelAll();
}

spec::Status LlmProposer::open() {
    auto prices = llm::PriceTable::loadDefault();
    if (!prices)
        return spec::fail("LLM prices: " + prices.error());
    llm::PriceTable table = std::move(*prices);
    m_prices = std::make_unique<llm::PriceTable>(table);
    for (const auto& model : m_settings.models)
        if (!m_prices->find(model.model))
            emit notice(QStringLiteral("%1 has no price in %2: its calls have an unknown cost%3")
                            .arg(modelKey(model), llm::PriceTable::userPath(),
                                 m_settings.budgetUsd > 0.0 ? QStringLiteral(
                                     " and count nothing against the money budget (a token budget still holds)")
                                                            : QString()));

    auto prompts = llm::PromptBuilder::builtIn();
    if (!prompts)
        return spec::fail("LLM prompts: " + prompts.error());
    m_prompts.emplace(std::move(*prompts));
    auto personas = llm::loadPersonas();
    if (!personas)
        return spec::fail("expert personas: " + personas.error());
    m_personas = *personas;

    // The run's strategies: those it stored, else the built-in seeds.
    auto stored = m_context.store->strategies(m_context.runId);
    if (!stored)
        return spec::fail(stored.error());
    if (stored->isEmpty()) {
        auto seeds = llm::loadStrategySeeds();
        if (!seeds)
            return spec::fail("prompt strategies: " + seeds.error());
        qint64 id = 1;
        for (const auto& seed : *seeds) {
            Strategy s;
            s.id = id++;
            s.stage = llm::stageName(seed.stage);
            s.seed = seed.id;
            s.text = seed.text;
            store::StrategyRecord r{s.id, s.stage, std::nullopt, s.seed, 0, s.text, false, {}};
            if (auto ok = m_context.store->insertStrategy(m_context.runId, r); !ok)
                return ok;
            m_strategies.add(std::move(s));
        }
    } else {
        for (const auto& r : *stored) {
            Strategy s;
            s.id = r.id;
            s.stage = r.stage;
            s.seed = r.seed;
            s.parent = r.parent;
            s.text = r.text;
            s.generation = r.generation;
            s.retired = r.retired;
            m_strategies.add(std::move(s));
        }
    }

    m_budget = LlmBudget(m_settings.budgetTokens, m_settings.budgetUsd);
    // What earlier sessions of the run spent, and which calls made which candidates.
    auto calls = m_context.store->llmCalls(m_context.runId);
    if (!calls)
        return spec::fail(calls.error());
    for (auto c : *calls) {
        if (c.status == QLatin1String(kInFlight)) {
            // Its session ended without a word (killed): whatever it got is lost.
            c.status = llm::errorKindName(llm::ErrorKind::Cancelled);
            c.message = QStringLiteral("the session ended while the call was in flight");
            if (auto completed = m_context.store->completeLlmCall(m_context.runId, c.id, c); !completed)
                return completed;
        }
        const qint64 input = estimateTokens(c.systemPrompt + c.prompt);
        learnInputTokens(input, c.inputTokens);
        m_spend.add(c.inputTokens, c.outputTokens, c.costUsd,
                    c.attempts > 0 && !c.answer.isEmpty() ? input + estimateTokens(c.answer) : 0);
        const auto model = m_bandit.find(c.endpoint, c.model);
        if (model)
            m_bandit.cost(*model, c.costUsd);
        if (c.candidateId)
            m_made[*c.candidateId] = Made{model.value_or(-1), c.strategyId};
        else if (c.op != QLatin1String("meta") && c.status != QLatin1String("ok")) {
            // A call that gave no kernel.
            if (model)
                m_bandit.reward(*model, 0.0);
            if (c.strategyId)
                m_strategies.reward(*c.strategyId, 0.0);
        }
    }

    QList<llm::Endpoint> endpoints = m_settings.endpoints;
    m_client = new llm::LlmClient(endpoints, *m_prices, this);
    connect(m_client, &llm::LlmClient::finished, this, &LlmProposer::onFinished);
    connect(m_client, &llm::LlmClient::streamed, this, &LlmProposer::onStreamed);
    return spec::success();
}

QList<llm::Endpoint> LlmProposer::calledEndpoints() const {
    QSet<QString> names;
    for (const auto& model : m_settings.models)
        names.insert(model.endpoint);
    if (m_settings.metaInterval > 0)
        if (const auto helper = helperModel())
            names.insert(helper->endpoint);
    QList<llm::Endpoint> called;
    for (const auto& e : m_settings.endpoints)
        if (names.contains(e.name))
            called << e;
    return called;
}

void LlmProposer::lookUpKeys() {
    auto* lookup = new llm::KeyLookup(calledEndpoints(), this);
    connect(lookup, &llm::KeyLookup::finished, this,
            [this, lookup](const QHash<QString, QString>& keys, const QHash<QString, QString>& problems) {
                lookup->deleteLater();
                m_client->setKeys(keys, problems);
                m_keyProblems = problems;
                emit keysReady();
            });
    lookup->start();
}

QString LlmProposer::missingKeys() const {
    if (m_keyProblems.isEmpty())
        return {};
    QStringList names = m_keyProblems.keys();
    names.sort();
    QStringList problems;
    for (const QString& name : names)
        problems << m_keyProblems.value(name);
    return QStringLiteral("the run cannot call its language models: %1").arg(problems.join(QLatin1Char(' ')));
}

QString LlmProposer::unusable() const {
    if (m_refusedBy.empty())
        return {};
    for (int i = 0; i < m_bandit.size(); ++i)
        if (!m_bandit.retired(i))
            return {};
    QStringList why;
    for (const auto& [endpoint, refusal] : m_refusedBy)
        why << refusal;
    return QStringLiteral("no language model of the run can be called any more: %1")
        .arg(why.join(QStringLiteral("; ")));
}

void LlmProposer::setDevice(const QString& device, const QString& ceilings) {
    m_device = device;
    m_ceilings = ceilings;
}

int LlmProposer::pending() const {
    return m_pendingJobs;
}

void LlmProposer::cancelAll() {
    if (!m_client)
        return;
    m_client->cancelAll(); // their finished() finds nothing in flight any more
    auto calls = std::move(m_inFlight);
    m_inFlight.clear();
    for (auto& [ticket, call] : calls) {
        llm::ChatResult r;
        r.error = llm::ErrorKind::Cancelled;
        r.message =
            QStringLiteral("%1: cancelled, the run ended while the call was in flight").arg(call.choice.endpoint);
        r.text = call.received;
        r.model = call.choice.model;
        r.attempts = 1;
        r.latencySeconds = call.sent.isValid() ? call.sent.elapsed() / 1000.0 : 0.0;
        account(call, r);
        record(call, r, llm::errorKindName(r.error), r.message);
    }
    m_pendingJobs = 0;
    m_metaStages.clear();
    m_held = false;
}

void LlmProposer::onStreamed(qint64 ticket, const QString& delta) {
    if (auto it = m_inFlight.find(ticket); it != m_inFlight.end())
        it->second.received += delta;
}

void LlmProposer::learnInputTokens(qint64 estimate, std::optional<qint64> reported) {
    // Worst cases are reserved from the estimate: scaled so that it is never below what servers say.
    if (reported && estimate > 0)
        m_inputScale = std::max(m_inputScale, static_cast<double>(*reported) / static_cast<double>(estimate));
}

void LlmProposer::retireEndpoint(const InFlight& call, const llm::ChatResult& result) {
    const QString endpoint = call.choice.endpoint;
    if (m_refusedBy.count(endpoint))
        return;
    const QString why = QStringLiteral("endpoint \"%1\" %2 (%3)")
                            .arg(endpoint,
                                 result.error == llm::ErrorKind::Auth ? QStringLiteral("refused the API key")
                                                                      : QStringLiteral("has no quota left"),
                                 result.message);
    m_refusedBy[endpoint] = why;
    for (int i = 0; i < m_bandit.size(); ++i)
        if (m_bandit.model(i).endpoint == endpoint)
            m_bandit.retire(i);
    const QString message = QStringLiteral("LLM %1: it is not called again in this run").arg(why);
    emit notice(message);
    if (auto event = m_context.store->insertEvent(m_context.runId, std::max(0, call.job.generation),
                                                  model::EventKind::LlmEndpointRetired,
                                                  {{QStringLiteral("endpoint"), endpoint},
                                                   {QStringLiteral("error"), llm::errorKindName(result.error)},
                                                   {QStringLiteral("http_status"), result.httpStatus},
                                                   {QStringLiteral("message"), message}});
        !event)
        qCWarning(lcSearch) << "cannot record that an LLM endpoint is retired:" << q(event.error());
}

void LlmProposer::remember(qint64 candidate, const QString& source) {
    m_novelty.add(candidate, source);
}

void LlmProposer::Spend::add(std::optional<qint64> input, std::optional<qint64> output, std::optional<double> cost,
                             qint64 estimate) {
    ++calls;
    if (input && output) {
        inputTokens += *input;
        outputTokens += *output;
    } else {
        estimatedTokens += estimate;
    }
    if (cost)
        usd += *cost;
    else
        ++unknownCost;
}

QString LlmProposer::modelKey(const llm::ModelChoice& choice) {
    return choice.endpoint + QLatin1Char(':') + choice.model;
}

std::optional<llm::ModelChoice> LlmProposer::helperModel() const {
    if (m_settings.helper.isEmpty())
        return m_bandit.size() > 0 ? std::optional<llm::ModelChoice>(m_bandit.model(0)) : std::nullopt;
    auto choice = llm::ModelChoice::parse(m_settings.helper);
    if (!choice)
        return std::nullopt;
    return *choice;
}

QStringList LlmProposer::experienceFor(const LlmJob& job) const {
    QStringList items;
    if (!m_context.experience || m_settings.experienceItems <= 0)
        return items;
    experience::Query query;
    query.family = q(m_context.task->spec.family);
    query.backend = m_context.backend;
    query.bottleneck = job.bottleneck;
    auto insights = m_context.experience->search(query, m_settings.experienceItems * 3);
    if (!insights)
        return items;
    for (const auto& insight : *insights) {
        if (items.size() >= m_settings.experienceItems)
            break;
        QString item = QStringLiteral("[%1").arg(model::insightKindName(insight.kind));
        if (insight.speedup > 0.0)
            item += QStringLiteral(", %1x").arg(insight.speedup, 0, 'f', 2);
        item += QStringLiteral("] ") + insight.summary;
        if (!insight.reason.isEmpty())
            item += QStringLiteral(" Reason given: ") + insight.reason;
        if (!insight.diff.isEmpty()) {
            QString diff = insight.diff;
            if (diff.size() > kExperienceDiffChars)
                diff = diff.left(kExperienceDiffChars) + QStringLiteral("\n... (diff cut)");
            item += QStringLiteral("\n```diff\n") + diff + QStringLiteral("\n```");
        }
        items << item;
    }
    return items;
}

bool LlmProposer::submit(LlmJob job, std::mt19937_64& rng) {
    if (budgetReached() || m_held || !m_prompts)
        return false;
    const auto model = m_bandit.choose(job.island, rng);
    if (!model)
        return false;
    InFlight call;
    call.model = *model;
    call.choice = m_bandit.model(*model);
    call.stage = job.op == llm::Operator::Init ? QStringLiteral("structure")
                                               : m_settings.stageOf(job.island, m_context.islands, job.generation);
    if (const Strategy* s = m_strategies.choose(call.stage, rng))
        call.strategy = s->id;
    call.job = std::move(job);
    if (!send(std::move(call)))
        return false;
    ++m_pendingJobs;
    return true;
}

bool LlmProposer::send(InFlight call) {
    llm::PromptContext ctx;
    ctx.op = call.job.op;
    ctx.stage = llm::parseStage(call.stage).value_or(llm::Stage::Structure);
    ctx.task = m_context.task;
    ctx.variant = m_context.variant;
    ctx.sizes = m_context.sizes;
    ctx.backend = m_context.backend;
    ctx.device = m_device;
    ctx.ceilings = m_ceilings;
    ctx.parents = call.job.parents;
    if (call.strategy)
        if (const Strategy* s = m_strategies.find(*call.strategy))
            ctx.strategy = s->text;
    if (call.job.op == llm::Operator::Init) {
        for (const auto& p : m_personas)
            if (p.id == call.job.personaId) {
                ctx.personaName = p.name;
                ctx.personaSkill = p.skill;
            }
    }
    if (call.meta) {
        const Strategy* weak = m_strategies.find(call.metaWeak);
        auto rewrite = m_strategies.rewriteCandidate(call.stage);
        if (!weak || !rewrite)
            return false;
        auto stats = [](const Strategy* s) {
            return QStringLiteral("used for %1 kernels, mean reward %2 (0: unusable or wrong, 0.5: as fast as the "
                                  "parent, 1: twice as fast)")
                .arg(s->uses)
                .arg(s->meanReward(), 0, 'f', 2);
        };
        ctx.weakStrategy = weak->text;
        ctx.weakStats = stats(weak);
        ctx.bestStrategy = rewrite->best->text;
        ctx.bestStats = stats(rewrite->best);
    } else {
        ctx.experience = experienceFor(call.job);
    }
    auto prompt = m_prompts->build(ctx);
    if (!prompt) {
        emit notice(QStringLiteral("LLM prompt: %1").arg(q(prompt.error())));
        return false;
    }
    call.prompt = *prompt;
    call.promptText = promptText(call.prompt);
    call.inputEstimate = estimateTokens(call.prompt.system + call.promptText);

    // The call's worst case must fit in what is left beside the calls in flight. One that fits
    // only once they settle waits (the budget is not spent yet); one that never fits ends the
    // LLM calls of the run.
    const llm::ModelChoice& model = call.choice;
    if (m_refusedBy.count(model.endpoint))
        return false;
    llm::ChatRequest request;
    request.endpoint = model.endpoint;
    request.model = model.model;
    request.system = call.prompt.system;
    request.messages = call.prompt.messages;
    request.maxTokens = m_settings.maxTokens;
    request.temperature = m_settings.temperature;
    call.worst = worstCase(request, call.inputEstimate);
    switch (m_budget.admit(spentAmount(), call.worst)) {
    case LlmBudget::Admission::Send:
        break;
    case LlmBudget::Admission::Wait:
        m_held = true;
        return false;
    case LlmBudget::Admission::Spent:
        if (!call.meta) // a strategy rewrite is a bonus: jobs may still fit
            m_budgetMessage = m_budget.stopMessage(spentAmount(), call.worst).value_or(QString());
        return false;
    }

    m_budget.reserve(call.worst);
    // Stored now, completed when it ends: a call in flight when the run ends is in the record too.
    llm::ChatResult none;
    none.model = model.model;
    call.callId = record(call, none, QLatin1String(kInFlight), QString());
    call.sent.start();
    const qint64 ticket = m_client->submit(request);
    m_inFlight.emplace(ticket, std::move(call));
    return true;
}

LlmBudget::Amount LlmProposer::worstCase(const llm::ChatRequest& request, qint64 inputEstimate) const {
    // Estimates scaled so that they are never below what servers said. A written cache costs more
    // than input at list prices, a price table may say otherwise: the dearer of the two is kept.
    const auto scaled = [&](qint64 estimate) {
        return static_cast<qint64>(std::ceil(static_cast<double>(estimate) * m_inputScale));
    };
    const llm::Usage worst =
        m_client->worstUsage(request, scaled(inputEstimate), scaled(estimateTokens(request.system)));
    llm::Usage uncached = worst;
    uncached.cacheWriteTokens.reset();
    const double usd = std::max(m_prices->cost(request.model, worst).value_or(0.0),
                                m_prices->cost(request.model, uncached).value_or(0.0));
    return {*worst.inputTokens + *worst.outputTokens, usd};
}

void LlmProposer::account(const InFlight& call, const llm::ChatResult& result) {
    m_budget.release(call.worst);
    learnInputTokens(call.inputEstimate, result.usage.inputTokens);
    // Usage the server never reported is estimated from what came back; a call that failed with
    // nothing received costs nothing.
    const bool received = result.attempts > 0 && (result.ok || !result.text.isEmpty());
    m_spend.add(result.usage.inputTokens, result.usage.outputTokens, result.costUsd,
                received ? call.inputEstimate + estimateTokens(result.text) : 0);
    if (call.model >= 0)
        m_bandit.cost(call.model, result.costUsd);
}

qint64 LlmProposer::record(const InFlight& call, const llm::ChatResult& result, const QString& status,
                           const QString& message) {
    store::LlmCallRecord r;
    r.generation = call.job.generation;
    r.island = call.job.island;
    r.op = call.meta ? QStringLiteral("meta") : llm::llmOperatorName(call.job.op);
    r.stage = call.stage;
    r.endpoint = call.choice.endpoint;
    r.model = call.choice.model; // as asked for: the bandit and the price table know it by this name
    r.strategyId = call.meta ? std::optional<qint64>(call.metaWeak) : call.strategy;
    r.parents = call.job.parentIds;
    r.status = status;
    r.message = message;
    r.inputTokens = result.usage.inputTokens;
    r.outputTokens = result.usage.outputTokens;
    r.cachedInputTokens = result.usage.cachedInputTokens;
    r.cacheWriteTokens = result.usage.cacheWriteTokens;
    r.costUsd = result.costUsd;
    r.latencySeconds = result.latencySeconds;
    r.attempts = result.attempts;
    r.systemPrompt = call.prompt.system;
    r.prompt = call.promptText;
    r.answer = result.text;
    if (call.callId > 0) {
        if (auto completed = m_context.store->completeLlmCall(m_context.runId, call.callId, r); !completed)
            qCWarning(lcSearch) << "cannot record an LLM call:" << q(completed.error());
        return call.callId;
    }
    auto id = m_context.store->insertLlmCall(m_context.runId, r);
    if (!id) {
        qCWarning(lcSearch) << "cannot record an LLM call:" << q(id.error());
        return 0;
    }
    return *id;
}

void LlmProposer::onFinished(qint64 ticket, const llm::ChatResult& result) {
    auto it = m_inFlight.find(ticket);
    if (it == m_inFlight.end())
        return;
    InFlight call = std::move(it->second);
    m_inFlight.erase(it);
    account(call, result);
    m_held = false;
    if (result.error == llm::ErrorKind::Auth || result.error == llm::ErrorKind::Quota)
        retireEndpoint(call, result);
    // After the proposal (queued): the engine then sees this call settled.
    QMetaObject::invokeMethod(this, &LlmProposer::callSettled, Qt::QueuedConnection);

    if (call.meta) {
        m_metaStages.erase(call.stage);
        if (!result.ok) {
            record(call, result, llm::errorKindName(result.error), result.message);
            emit notice(QStringLiteral("strategy rewrite by %1 failed: %2").arg(modelKey(call.choice), result.message));
            return;
        }
        onMetaAnswer(call, result, 0);
        return;
    }

    LlmProposal proposal;
    proposal.job = call.job;
    auto give = [&](const QString& status, const QString& problem) {
        proposal.callId = record(call, result, status, problem);
        proposal.problem = problem;
        m_bandit.reward(call.model, 0.0);
        if (call.strategy) // a prompt that gave nothing usable counts against its strategy too
            m_strategies.reward(*call.strategy, 0.0);
        --m_pendingJobs;
        emit proposed(proposal);
    };
    if (!result.ok) {
        give(llm::errorKindName(result.error), result.message);
        return;
    }
    auto parsed = llm::parseAnswer(result.text, m_context.dialect);
    if (!parsed) {
        const QString problem = q(parsed.error());
        const qint64 callId = record(call, result, QStringLiteral("unparsable"), problem);
        m_bandit.reward(call.model, 0.0);
        if (call.strategy)
            m_strategies.reward(*call.strategy, 0.0);
        if (call.attempt == 0 && !budgetReached()) {
            // One repair attempt: the same model sees its answer and what is wrong with it.
            InFlight repair = call;
            repair.attempt = 1;
            repair.callId = 0; // a call of its own
            repair.received.clear();
            repair.job.op = llm::Operator::Repair;
            llm::KernelContext answer;
            answer.label = QStringLiteral("your previous answer");
            answer.status = QStringLiteral("unparsable");
            answer.source = result.text.left(kMaxAnswerInRepair);
            answer.parseError = problem;
            repair.job.parents = {answer};
            if (send(std::move(repair)))
                return;
        }
        proposal.callId = callId;
        proposal.problem = problem;
        --m_pendingJobs;
        emit proposed(proposal);
        return;
    }
    if (auto dup = m_novelty.check(parsed->source)) {
        give(QStringLiteral("duplicate"), dup->exact
                                              ? QStringLiteral("the answer repeats kernel #%1 of the run").arg(dup->id)
                                              : QStringLiteral("the answer is %1% the same as kernel #%2 of the run")
                                                    .arg(dup->similarity * 100.0, 0, 'f', 0)
                                                    .arg(dup->id));
        return;
    }
    // The engine adds the kernel to the filter once it becomes a candidate (remember()).
    proposal.ok = true;
    proposal.source = parsed->source;
    const QString what = call.job.op == llm::Operator::Init ? QStringLiteral("init (%1)").arg(call.job.personaId)
                         : call.job.parentIds.isEmpty()
                             ? llm::llmOperatorName(call.job.op)
                             : QStringLiteral("%1 of #%2").arg(llm::llmOperatorName(call.job.op)).arg([&] {
                                   QStringList ids;
                                   for (qint64 id : call.job.parentIds)
                                       ids << QString::number(id);
                                   return ids.join(QStringLiteral(" x #"));
                               }());
    proposal.label = QStringLiteral("llm %1 (%2, %3)").arg(what, modelKey(call.choice), call.stage);
    proposal.callId = record(call, result, QStringLiteral("ok"), parsed->warnings.join(QStringLiteral("; ")));
    m_callMade[proposal.callId] = Made{call.model, call.strategy};
    --m_pendingJobs;
    emit proposed(proposal);
}

void LlmProposer::adopted(qint64 callId, qint64 candidate) {
    if (auto it = m_callMade.find(callId); it != m_callMade.end()) {
        m_made[candidate] = it->second;
        m_callMade.erase(it);
    }
    if (callId > 0)
        if (auto linked = m_context.store->setLlmCallCandidate(m_context.runId, callId, candidate); !linked)
            qCWarning(lcSearch) << q(linked.error());
}

void LlmProposer::credit(qint64 candidate, double reward) {
    auto it = m_made.find(candidate);
    if (it == m_made.end())
        return;
    m_bandit.reward(it->second.model, reward);
    if (it->second.strategy)
        m_strategies.reward(*it->second.strategy, reward);
}

void LlmProposer::evolveStrategies(int generation) {
    const auto helper = helperModel();
    if (!helper || budgetReached())
        return;
    for (const QString& stage : {QStringLiteral("structure"), QStringLiteral("tuning")}) {
        if (m_metaStages.count(stage))
            continue;
        auto rewrite = m_strategies.rewriteCandidate(stage);
        if (!rewrite)
            continue;
        InFlight call;
        call.meta = true;
        call.metaWeak = rewrite->weak->id;
        call.choice = *helper;
        call.model = m_bandit.find(helper->endpoint, helper->model).value_or(-1);
        call.stage = stage;
        call.job.op = llm::Operator::Meta;
        call.job.generation = generation;
        call.job.island = -1;
        if (send(std::move(call)))
            m_metaStages.insert(stage);
    }
}

void LlmProposer::onMetaAnswer(const InFlight& call, const llm::ChatResult& result, qint64) {
    auto text = llm::parseStrategyAnswer(result.text);
    if (!text) {
        record(call, result, QStringLiteral("unparsable"), q(text.error()));
        return;
    }
    const Strategy* weak = m_strategies.find(call.metaWeak);
    if (!weak || weak->retired) {
        record(call, result, QStringLiteral("ok"), QStringLiteral("the strategy was retired meanwhile"));
        return;
    }
    Strategy s;
    s.id = m_strategies.nextId();
    s.stage = call.stage;
    s.seed = weak->seed;
    s.parent = weak->id;
    s.text = *text;
    s.generation = call.job.generation;
    const qint64 weakId = weak->id;
    const QString weakStats =
        QStringLiteral("%1 uses, mean reward %2").arg(weak->uses).arg(weak->meanReward(), 0, 'f', 2);
    store::StrategyRecord r{s.id, s.stage, s.parent, s.seed, s.generation, s.text, false, {}};
    store::RunStore::Transaction tx(*m_context.store);
    const qint64 callId =
        record(call, result, QStringLiteral("ok"), QStringLiteral("strategy %1 rewritten as %2").arg(weakId).arg(s.id));
    // All three or none: a failed write leaves the transaction to roll back.
    spec::Status written = m_context.store->insertStrategy(m_context.runId, r);
    if (written)
        written = m_context.store->retireStrategy(m_context.runId, weakId);
    if (written)
        if (auto event =
                m_context.store->insertEvent(m_context.runId, call.job.generation, model::EventKind::StrategyRewritten,
                                             {{QStringLiteral("stage"), call.stage},
                                              {QStringLiteral("retired"), weakId},
                                              {QStringLiteral("retired_stats"), weakStats},
                                              {QStringLiteral("strategy"), s.id},
                                              {QStringLiteral("call"), callId},
                                              {QStringLiteral("model"), modelKey(call.choice)}});
            !event)
            written = spec::Error{event.error()};
    if (written)
        written = tx.commit();
    if (!written)
        qCWarning(lcSearch) << "cannot record the rewritten strategy:" << q(written.error());
    m_strategies.add(std::move(s));
    m_strategies.retire(weakId);
    emit notice(QStringLiteral("%1 strategy %2 (%3) rewritten by %4")
                    .arg(call.stage)
                    .arg(weakId)
                    .arg(weakStats, modelKey(call.choice)));
}

} // namespace kforge::propose
