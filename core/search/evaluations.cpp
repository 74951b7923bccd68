#include "search/evaluations.h"

#include "search/judgement.h"
#include "task/evalrequest.h"

#include <chrono>
#include <utility>

namespace kforge::search {

namespace {
constexpr auto kSearch = model::EvaluationPurpose::Search;
}

Evaluations::Evaluations(QObject* parent) : QObject(parent) {}

void Evaluations::attach(Context context, eval::Executor* executor) {
    m_c = std::move(context);
    m_executor = executor;
    connect(m_executor, &eval::Executor::evaluated, this, &Evaluations::onEvaluated);
    connect(m_executor, &eval::Executor::workersFailedToStart, this, [this](const QString& message) {
        emit failed(
            QStringLiteral("the %1 worker cannot start: %2").arg(model::backendName(m_c.config->backend), message));
    });
    connect(m_executor, &eval::Executor::ceilingsMeasured, this, [this](const protocol::CeilingsResult& c) {
        onCeilings(diagnose::Ceilings::fromWorker(c.ceilings, QString::fromStdString(c.device)), {});
    });
    connect(m_executor, &eval::Executor::ceilingsFailed, this,
            [this](const QString& message) { onCeilings({}, message); });
}

void Evaluations::measureCeilings() {
    m_measuringCeilings = true;
    m_ceilingsByModel.clear();
    m_ceilingsFailed = false;
    m_ceilingsAnswers = m_executor->requestCeilings(m_c.config->device, /*refresh=*/true);
}

diagnose::Ceilings Evaluations::ceilingsFor(const std::string& device) const {
    if (device.empty())
        return m_ceilings;
    const auto it = m_ceilingsByModel.find(QString::fromStdString(device));
    return it != m_ceilingsByModel.end() ? it->second : diagnose::Ceilings{};
}

void Evaluations::onCeilings(const diagnose::Ceilings& ceilings, const QString& problem) {
    if (m_ceilingsAnswers <= 0 || m_closed)
        return;
    if (m_remeasuring)
        return onRemeasured(ceilings, problem);
    --m_ceilingsAnswers;
    const bool first = m_measuringCeilings;
    if (problem.isEmpty() && m_ceilingsByModel.count(ceilings.device) == 0) {
        m_ceilingsByModel[ceilings.device] = ceilings;
        QJsonObject data = ceilings.toJson();
        // The run's roofs are the first model's; another model's are stored beside them.
        data.insert(QStringLiteral("primary"), first);
        if (first) {
            m_measuringCeilings = false;
            m_ceilings = ceilings;
        }
        if (!recordCeilings(data))
            return;
        if (first)
            emit ceilingsReady();
    } else if (!problem.isEmpty()) {
        m_ceilingsFailed = true;
        if (first && m_ceilingsAnswers == 0) {
            // Nothing measured anywhere: the run goes on without roofs, and says so.
            m_measuringCeilings = false;
            m_ceilings = {};
            QJsonObject data = m_ceilings.toJson();
            data.insert(QStringLiteral("problem"), problem);
            emit notice(QStringLiteral("no device ceilings (%1): roofline data will hold achieved throughput only")
                            .arg(problem));
            if (!recordCeilings(data))
                return;
            emit ceilingsReady();
        } else {
            emit notice(QStringLiteral("no ceilings from one place (%1): results from a GPU model measured nowhere "
                                       "else are judged without roofs")
                            .arg(problem));
        }
    }
    releaseHeld(m_ceilingsAnswers == 0 || m_ceilingsFailed);
}

bool Evaluations::recordCeilings(const QJsonObject& data) {
    // At generation 0: the first generation's results are judged against the first ones.
    return m_c.record->written(m_c.store->insertEvent(m_c.runId, 0, model::EventKind::Ceilings, data),
                               QStringLiteral("the device's ceilings"));
}

void Evaluations::releaseHeld(bool all) {
    std::vector<Held> waiting;
    std::vector<Held> ready;
    for (Held& h : m_held)
        (all || m_ceilingsByModel.count(QString::fromStdString(h.result.device)) ? ready : waiting)
            .push_back(std::move(h));
    m_held = std::move(waiting);
    for (const Held& h : ready)
        judgeAndSettle(h.pending, h.result);
}

bool Evaluations::remeasureFor(const Pending& pending, const protocol::EvaluateResult& result) {
    const QString model = QString::fromStdString(result.device);
    if (m_remeasuring == model) { // another result that waits for the same measurement
        m_heldForRoofs.push_back({pending, result});
        return true;
    }
    if (m_remeasured.count(model) || m_measuringCeilings || m_ceilingsAnswers > 0 || m_ceilingsFailed
        || !m_ceilingsByModel.count(model))
        return false;
    m_remeasured.insert(model);
    m_ceilingsAnswers = m_executor->requestCeilings(m_c.config->device, /*refresh=*/true);
    if (m_ceilingsAnswers <= 0) {
        m_ceilingsAnswers = 0;
        return false;
    }
    m_remeasuring = model;
    m_heldForRoofs.push_back({pending, result});
    emit notice(QStringLiteral("candidate %1 broke a measured roof of %2: measuring its ceilings again before "
                               "judging it")
                    .arg(pending.candidate)
                    .arg(model));
    return true;
}

void Evaluations::onRemeasured(const diagnose::Ceilings& ceilings, const QString& problem) {
    --m_ceilingsAnswers;
    // Only the model asked about takes new roofs; a failed measurement keeps the ones it had.
    if (problem.isEmpty() && ceilings.device == *m_remeasuring) {
        // A roof is the most the device was seen to do: the workers keep the higher of a new and a
        // cached measurement, and so does this where they have no cache.
        QJsonObject data = ceilings.toJson();
        const QJsonObject before = m_ceilingsByModel[ceilings.device].toJson();
        for (auto it = before.begin(); it != before.end(); ++it)
            if (it.key().endsWith(QLatin1String("_per_s")) && it.value().toDouble() > data.value(it.key()).toDouble())
                data.insert(it.key(), it.value());
        const bool primary = ceilings.device == m_ceilings.device;
        m_ceilingsByModel[ceilings.device] = diagnose::Ceilings::fromJson(data);
        if (primary)
            m_ceilings = m_ceilingsByModel[ceilings.device];
        data.insert(QStringLiteral("primary"), primary);
        data.insert(QStringLiteral("remeasured"), true);
        if (!recordCeilings(data))
            return;
    } else if (!problem.isEmpty()) {
        emit notice(
            QStringLiteral("the ceilings could not be measured again (%1): the roofs stay as they were").arg(problem));
    }
    if (m_ceilingsAnswers == 0)
        releaseHeldForRoofs();
}

void Evaluations::releaseHeldForRoofs() {
    m_remeasuring.reset();
    const std::vector<Held> ready = std::exchange(m_heldForRoofs, {});
    for (const Held& h : ready)
        judgeAndSettle(h.pending, h.result);
}

void Evaluations::handOn(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result) {
    QMetaObject::invokeMethod(
        this,
        [this, candidate, purpose, result] {
            if (!m_closed)
                emit this->result(candidate, purpose, result);
        },
        Qt::QueuedConnection);
}

void Evaluations::evaluate(qint64 candidate, model::EvaluationPurpose purpose, bool withPyTorch) {
    if (m_closed)
        return;
    auto known = m_c.stored->results.find({candidate, purpose});
    if (known != m_c.stored->results.end()) {
        if (purpose == kSearch) {
            Entry& entry = m_c.population->at(candidate);
            if (auto r = m_c.stored->roofline.find(candidate); r != m_c.stored->roofline.end())
                entry.roofline = r->second;
            if (auto f = m_c.stored->findings.find(candidate); f != m_c.stored->findings.end())
                entry.findings = f->second;
        }
        handOn(candidate, purpose, known->second);
        return;
    }
    auto request = candidateRequest(*m_c.task, *m_c.config, m_c.population->at(candidate).candidate,
                                    withPyTorch || purpose == model::EvaluationPurpose::Yardstick);
    if (!request) {
        // A broken launch plan: stored as the candidate's result without asking a worker.
        const protocol::EvaluateResult r = unrequestable(request.error());
        QMetaObject::invokeMethod(
            this,
            [this, candidate, purpose, r] {
                if (!m_closed)
                    settle(candidate, purpose, r);
            },
            Qt::QueuedConnection);
        return;
    }
    const auto timeout = task::evaluationTimeout(*request, m_c.config->evalTimeoutSeconds);
    const qint64 ticket = m_executor->submit(std::move(*request), timeout);
    m_tickets[ticket] = Pending{candidate, purpose};
}

void Evaluations::stop() {
    releaseHeld(true); // results that came in are results
    releaseHeldForRoofs();
    m_stopping = true;
    for (const auto& [ticket, pending] : m_tickets)
        m_executor->cancel(ticket);
}

void Evaluations::close() {
    m_closed = true;
    m_held.clear();
    m_heldForRoofs.clear();
    for (const auto& [ticket, pending] : m_tickets)
        m_executor->cancel(ticket);
    m_tickets.clear();
}

void Evaluations::onEvaluated(qint64 ticket, const protocol::EvaluateResult& result) {
    auto it = m_tickets.find(ticket);
    if (it == m_tickets.end())
        return;
    const Pending pending = it->second;
    m_tickets.erase(it);
    if (m_stopping || m_closed) {
        if (m_tickets.empty() && !m_closed)
            emit drained();
        return;
    }
    // From a GPU model whose ceilings are still being measured: judged once they are in.
    if (m_ceilingsAnswers > 0 && !m_ceilingsFailed && !result.device.empty()
        && m_ceilingsByModel.count(QString::fromStdString(result.device)) == 0) {
        m_held.push_back({pending, result});
        return;
    }
    judgeAndSettle(pending, result);
}

void Evaluations::judgeAndSettle(const Pending& pending, const protocol::EvaluateResult& result) {
    JudgementContext context{m_c.task, m_c.sizes, ceilingsFor(result.device), m_c.diagnosis, m_c.config};
    if (const Entry* entry = m_c.population->find(pending.candidate)) {
        const diagnose::TensorUse use = diagnose::tensorUseOf(entry->candidate.source);
        context.instructions = use.instructions;
        context.tf32 = use.tf32;
    }
    const Judgement j = judge(result, context);
    if (j.impossible && remeasureFor(pending, result))
        return;
    if (j.impossible)
        emit notice(
            QStringLiteral("candidate %1 rejected: impossible timing: %2").arg(pending.candidate).arg(*j.impossible));
    std::optional<model::Cell> cell;
    if (pending.purpose == kSearch) {
        Entry& entry = m_c.population->at(pending.candidate);
        entry.roofline = j.roofline;
        entry.findings = j.findings;
        entry.cell = cellOf(entry.candidate, j.result);
        cell = entry.cell; // stored, so that views need not read the source
    }
    settle(pending.candidate, pending.purpose, j.result, diagnose::toJson(j.findings),
           j.roofline ? j.roofline->toJson() : QJsonObject(), cell);
}

void Evaluations::settle(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result,
                         const QJsonArray& findings, const QJsonObject& roofline, std::optional<model::Cell> cell) {
    // Counted only once stored: the run's figures never include an evaluation the store lacks.
    if (!m_c.record->written(
            m_c.store->insertEvaluation(m_c.runId, candidate, purpose, result, findings, roofline, cell),
            QStringLiteral("the evaluation of candidate %1").arg(candidate)))
        return;
    if (purpose != model::EvaluationPurpose::Yardstick)
        m_c.budget->counted();
    emit this->result(candidate, purpose, result);
}

model::Cell Evaluations::cellOf(const model::Candidate& candidate, const protocol::EvaluateResult& result) const {
    KernelFacts facts;
    facts.dialect = m_c.config->backend;
    facts.params = candidate.params;
    for (const auto& c : result.compile)
        if (c.role == "candidate")
            facts.resources = c.resources;
    return m_c.space->describe(candidate.source, facts);
}

} // namespace kforge::search
