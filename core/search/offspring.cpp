#include "search/offspring.h"

#include "search/parentselector.h"

#include <set>

namespace kforge::search {

namespace {

std::uint64_t mix(std::uint64_t x) {
    // splitmix64: spreads (seed, generation, island) over the whole state space.
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

model::Candidate expertCandidate(const propose::Expert& expert, int island) {
    model::Candidate c;
    c.source = expert.source;
    c.origin = model::Origin::Expert;
    c.label = QStringLiteral("expert %1/%2").arg(expert.family, expert.name);
    c.island = island;
    return c;
}

// What changed between a parent's parameters and a child's, for the child's label.
QString paramChange(const model::ParamValues& from, const model::ParamValues& to) {
    QStringList parts;
    for (const auto& [name, value] : to) {
        auto it = from.find(name);
        if (it == from.end() || it->second != value)
            parts << QStringLiteral("%1=%2").arg(QString::fromStdString(name)).arg(value);
    }
    return parts.isEmpty() ? QStringLiteral("(same)") : parts.join(QLatin1Char(' '));
}

} // namespace

std::mt19937_64 searchRng(std::uint64_t seed, int generation, int island) {
    return std::mt19937_64(mix(
        mix(seed) ^ mix(static_cast<std::uint64_t>(generation) * 1315423911ull + static_cast<std::uint64_t>(island))));
}

std::vector<qint64> Offspring::seeds() {
    const RunConfig& config = *m_s.config;
    std::vector<qint64> ids;
    const int limit = m_s.budgetLeft();
    int island = 0;
    // The baseline first, on island 0: the run fails if it does not pass.
    if (const auto b = m_s.task->baselineSource.find(model::backendName(config.backend).toStdString());
        b != m_s.task->baselineSource.end()) {
        model::Candidate baseline;
        baseline.source = QString::fromStdString(b->second);
        baseline.origin = model::Origin::Seed;
        baseline.label = QStringLiteral("baseline");
        ids.push_back(m_s.add(std::move(baseline)));
        island = config.islands > 1 ? 1 : 0;
    }
    for (model::Candidate c : m_s.seedKernels) {
        if (limit <= static_cast<int>(ids.size()))
            break;
        c.island = island;
        ids.push_back(m_s.add(std::move(c)));
        island = (island + 1) % config.islands;
    }
    for (const auto& expert : m_s.experts) {
        if (limit <= static_cast<int>(ids.size()))
            break;
        ids.push_back(m_s.add(expertCandidate(expert, island)));
        island = (island + 1) % config.islands;
    }
    for (model::Candidate& c : experienceSeeds(island)) {
        if (limit <= static_cast<int>(ids.size()))
            break;
        ids.push_back(m_s.add(std::move(c)));
    }
    return ids;
}

void Offspring::personas(const std::vector<qint64>& seeds) {
    if (seeds.empty())
        return;
    const RunConfig& config = *m_s.config;
    m_s.llm->proposePersonas(seeds.front(), config.islands, static_cast<int>(seeds.size()), m_s.budgetLeft,
                             [&config](int k) { return searchRng(config.seed, 0, 1000 + k); });
}

std::vector<model::Candidate> Offspring::experienceSeeds(int firstIsland) const {
    std::vector<model::Candidate> seeds;
    if (!m_s.experience)
        return seeds;
    const RunConfig& config = *m_s.config;
    experience::Query query;
    query.family = QString::fromStdString(m_s.task->spec.family);
    query.task = QString::fromStdString(m_s.task->spec.name);
    query.backend = model::backendName(config.backend);
    auto insights = m_s.experience->search(query, 50);
    if (!insights)
        return seeds;
    // The kernels that helped on this very task before, best first: a kernel file is only valid
    // for the task whose arguments it binds.
    const int limit = 2 * config.islands;
    int island = firstIsland;
    std::set<QString> keys; // of the seeds chosen so far
    for (const auto& insight : *insights) {
        if (static_cast<int>(seeds.size()) >= limit)
            break;
        using K = model::InsightKind;
        const bool useful = insight.kind == K::Helped || insight.kind == K::HumanPin || insight.kind == K::HumanEdit;
        if (!useful || insight.task != query.task || insight.backend != query.backend
            || insight.after.trimmed().isEmpty())
            continue;
        const QString key = model::candidateKey(insight.after, m_s.population->completeParams(insight.after, {}));
        if (m_s.population->hasKey(key) || !keys.insert(key).second)
            continue;
        model::Candidate c;
        c.source = insight.after;
        c.origin = model::Origin::Experience;
        c.label = QStringLiteral("experience #%1: %2").arg(insight.id).arg(insight.transformation);
        c.island = island;
        island = (island + 1) % config.islands;
        seeds.push_back(std::move(c));
    }
    return seeds;
}

std::vector<qint64> Offspring::children(int generation, std::vector<model::Candidate> injected) {
    const RunConfig& config = *m_s.config;
    const int limit = m_s.budgetLeft();
    std::vector<qint64> ids;
    for (model::Candidate& c : injected) {
        if (static_cast<int>(ids.size()) >= limit)
            break;
        c.generation = generation;
        ids.push_back(m_s.add(std::move(c)));
    }
    LlmChildren& llm = *m_s.llm;
    for (int island = 0; island < config.islands; ++island) {
        auto rng = searchRng(config.seed, generation, island);
        for (int k = 0; k < config.childrenPerIsland && static_cast<int>(ids.size()) < limit && !m_s.stopped(); ++k) {
            std::optional<model::Candidate> child;
            std::uniform_real_distribution<double> coin(0.0, 1.0);
            if (llm && coin(rng) < config.llm.rate && static_cast<int>(ids.size()) + llm.pending() < limit
                && llm.propose(island, generation, rng, *m_s.population,
                               [this, island](std::mt19937_64& r) { return selectParent(island, r, false); }))
                continue;
            if (coin(rng) < config.expertRate)
                child = expertChild(island, generation);
            if (!child)
                child = tunerChild(island, generation, rng);
            if (!child)
                child = expertChild(island, generation); // the island's templates are exhausted
            if (!child)
                break;
            ids.push_back(m_s.add(std::move(*child)));
        }
    }
    return ids;
}

std::optional<qint64> Offspring::selectParent(int island, std::mt19937_64& rng, bool tunable) {
    return chooseParent(parentOptions(*m_s.islands, island, *m_s.population, tunable), m_s.config->exploitation, rng);
}

std::optional<model::Candidate> Offspring::expertChild(int island, int generation) {
    auto& tried = m_s.islands->island(island).expertsTried;
    for (const auto& expert : m_s.experts) {
        const QString templateKey = model::templateKey(expert.source);
        if (tried.count(templateKey))
            continue;
        tried.insert(templateKey);
        if (m_s.population->hasKernel(expert.source, {}))
            continue; // already in the run (seeded on another island)
        model::Candidate c = expertCandidate(expert, island);
        c.generation = generation;
        return c;
    }
    return std::nullopt;
}

std::optional<model::Candidate> Offspring::tunerChild(int island, int generation, std::mt19937_64& rng) {
    auto parentId = selectParent(island, rng, true);
    if (!parentId)
        return std::nullopt;
    const Entry& parent = m_s.population->at(*parentId);
    propose::Tuner* tuner = m_s.population->tunerFor(parent);
    if (!tuner)
        return std::nullopt;
    if (m_s.tuning)
        m_s.tuning->recall(parent, *tuner);
    auto proposal = tuner->propose(parent.candidate.params, rng, m_s.config->tunerRestart);
    if (!proposal)
        return std::nullopt;
    model::Candidate c;
    c.source = parent.candidate.source;
    c.params = std::move(proposal->params);
    c.tunerStrategy = proposal->strategy;
    c.parents = {parent.candidate.id};
    c.island = island;
    c.generation = generation;
    c.origin = model::Origin::Tuner;
    c.label = QStringLiteral("tuner %1").arg(paramChange(parent.candidate.params, c.params));
    return c;
}

} // namespace kforge::search
