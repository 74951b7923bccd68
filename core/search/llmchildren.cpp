#include "search/llmchildren.h"

#include "util/text.h"

#include "diagnose/finding.h"
#include "propose/llmjobplanner.h"
#include "propose/modelbandit.h"

#include <algorithm>

namespace kforge::search {

namespace {

using util::q;

} // namespace

spec::Status LlmChildren::open(const RunConfig& config, propose::LlmProposer::Context context, QObject* parent) {
    m_settings = config.llm;
    if (!m_settings.enabled())
        return spec::success();
    context.variant = config.variant;
    context.backend = model::backendName(config.backend);
    context.islands = config.islands;
    context.dialect = config.backend;
    auto* llm = new propose::LlmProposer(m_settings, context, parent);
    if (auto opened = llm->open(); !opened) {
        delete llm;
        return opened;
    }
    m_llm = llm;
    return spec::success();
}

bool LlmChildren::propose(int island, int generation, std::mt19937_64& rng, const Population& population,
                          const ParentSelection& selectParent) {
    propose::LlmPlanInputs inputs;
    inputs.repairRate = m_settings.repairRate;
    inputs.crossoverRate = m_settings.crossoverRate;
    // The newest failed kernels of the island nobody tried to repair yet.
    const auto& entries = population.entries();
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        const Entry& e = it->second;
        if (e.candidate.island == island && e.result && !e.fitness.correct && !e.candidate.vetoed
            && e.candidate.origin != model::Origin::Seed && !m_repaired.count(e.candidate.id))
            inputs.repairable.push_back(e.candidate.id);
    }
    inputs.selectParent = selectParent;
    inputs.strongKernels = [&population] {
        std::vector<std::pair<qint64, model::Fitness>> strong;
        for (const auto& [id, e] : population.entries())
            if (e.fitness.correct && !e.candidate.vetoed && !e.awaitingReview())
                strong.emplace_back(id, e.fitness);
        return strong;
    };
    const auto plan = propose::planLlmJob(inputs, rng);
    if (!plan)
        return false;
    propose::LlmJob job;
    job.island = island;
    job.generation = generation;
    job.op = plan->op;
    for (qint64 id : plan->parents) {
        job.parents << contextOf(population.at(id));
        job.parentIds << id;
    }
    const auto& roofline = population.at(plan->parents.front()).roofline;
    job.bottleneck = roofline ? roofline->bound : QString();
    if (!m_llm->submit(job, rng))
        return false;
    if (job.op == llm::Operator::Repair)
        m_repaired.insert(plan->parents.front());
    ++m_pending;
    return true;
}

void LlmChildren::proposePersonas(qint64 baseline, int islands, int seeds, const std::function<int()>& budgetLeft,
                                  const std::function<std::mt19937_64(int)>& rngFor) {
    if (!m_llm || !m_settings.personas)
        return;
    int k = 0;
    for (const auto& persona : m_llm->personas()) {
        if (budgetLeft() <= seeds)
            break;
        propose::LlmJob job;
        job.op = llm::Operator::Init;
        job.island = k % islands;
        job.generation = 0;
        job.personaId = persona.id;
        job.parentIds << baseline; // the prompt shows the task's baseline itself
        auto rng = rngFor(k);
        ++k;
        if (!m_llm->submit(job, rng))
            break;
        ++m_pending;
    }
}

model::Candidate LlmChildren::candidateOf(const propose::LlmProposal& proposal, int generation, int islands) {
    model::Candidate c;
    c.source = proposal.source;
    c.origin = model::Origin::Llm;
    c.llmOperator = proposal.job.op;
    c.label = proposal.label;
    c.parents = proposal.job.parentIds;
    c.island = std::clamp(proposal.job.island, 0, islands - 1);
    c.generation = generation;
    return c;
}

void LlmChildren::adopt(const Entry& entry) {
    if (!m_llm)
        return;
    m_llm->remember(entry.candidate.id, entry.candidate.source);
    if (entry.candidate.llmOperator == model::LlmOperator::Repair && !entry.candidate.parents.isEmpty())
        m_repaired.insert(entry.candidate.parents.front());
}

void LlmChildren::credit(const std::vector<qint64>& batch, const Population& population) {
    if (!m_llm)
        return;
    for (qint64 id : batch) {
        const Entry& child = population.at(id);
        if (child.candidate.origin != model::Origin::Llm)
            continue;
        // Against the better parent; a failed parent (a repair) or none counts as the baseline.
        double parent = 0.0;
        for (qint64 p : child.candidate.parents)
            if (const Entry* e = population.find(p); e && e->fitness.correct)
                parent = std::max(parent, e->fitness.speedup);
        if (parent <= 0.0)
            parent = 1.0;
        m_llm->credit(id, propose::ModelBandit::rewardOf(child.fitness.correct, child.fitness.speedup / parent));
    }
}

void LlmChildren::report(RunProgress& p) const {
    if (!m_llm)
        return;
    const auto spend = m_llm->spend();
    p.llmCalls = spend.calls;
    p.llmTokens = spend.tokens();
    p.llmUsd = spend.usd;
    p.llmUnknownCost = spend.unknownCost;
    p.llmPending = m_pending;
}

QJsonObject LlmChildren::budgetStop() const {
    const auto spend = m_llm->spend();
    return {{QStringLiteral("message"), m_llm->budgetMessage()},
            {QStringLiteral("calls"), spend.calls},
            {QStringLiteral("input_tokens"), spend.inputTokens},
            {QStringLiteral("output_tokens"), spend.outputTokens},
            {QStringLiteral("estimated_tokens"), spend.estimatedTokens},
            {QStringLiteral("usd"), spend.usd},
            {QStringLiteral("calls_of_unknown_cost"), spend.unknownCost}};
}

llm::KernelContext LlmChildren::contextOf(const Entry& e) {
    llm::KernelContext k;
    k.id = e.candidate.id;
    k.label = e.candidate.label;
    k.speedup = e.fitness.speedup;
    k.params = model::formatParams(e.candidate.params);
    k.source = e.bakedSource();
    if (!e.result) {
        k.status = QStringLiteral("not evaluated yet");
        return k;
    }
    k.status = e.result->status == protocol::Status::Ok ? QStringLiteral("correct")
                                                        : q(std::string(protocol::statusName(e.result->status)));
    if (e.result->status != protocol::Status::Ok && !e.result->message.empty())
        k.findings << QStringLiteral("result: ") + q(e.result->message);
    for (const auto& f : e.findings) {
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
    if (const auto& r = e.roofline) {
        k.roofline = QStringLiteral("%1-bound; %2% of the DRAM roof, %3% of the %4 roof")
                         .arg(r->bound)
                         .arg(r->memoryFraction * 100.0, 0, 'f', 0)
                         .arg(r->computeFraction * 100.0, 0, 'f', 0)
                         .arg(diagnose::peakTitle(r->peakName));
        k.roofline += diagnose::splitTf32Note(r->splitTf32Fraction);
    }
    return k;
}

} // namespace kforge::search
