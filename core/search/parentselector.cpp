#include "search/parentselector.h"

#include "search/population.h"

#include <algorithm>

namespace kforge::search {

std::vector<ParentOption> parentOptions(const IslandModel& islands, int island, Population& population, bool tunable) {
    std::vector<ParentOption> options;
    auto spent = [&](const Entry& entry) { return tunable && population.tunerSpent(entry); };
    for (const Elite& e : islands.island(island).archive.ranked()) {
        const Entry& entry = population.at(e.candidate);
        if (entry.candidate.vetoed || spent(entry))
            continue;
        const double curiosity = entry.cell ? islands.curiosity(island, *entry.cell) : 0.0;
        options.push_back(
            {e.candidate, e.fitness, (1.0 + curiosity) * (entry.candidate.pinned ? 3.0 : 1.0), entry.candidate.pinned});
    }
    // Pinned kernels stay parents even when a better one took their cell. A kernel waiting for
    // review is never a parent, pinned or not (the archive never holds one): its children would
    // inherit whatever made it suspicious, a cheat included, and be judged by their own numbers
    // alone. It becomes a parent once a person accepts it.
    for (qint64 id : population.pinned()) {
        const Entry& entry = population.at(id);
        if (entry.candidate.vetoed || !entry.fitness.correct || entry.awaitingReview() || spent(entry))
            continue;
        if (std::none_of(options.begin(), options.end(), [&](const ParentOption& o) { return o.id == id; }))
            options.push_back({id, entry.fitness, 3.0, true});
    }
    return options;
}

std::optional<qint64> chooseParent(const std::vector<ParentOption>& options, double exploitation,
                                   std::mt19937_64& rng) {
    if (options.empty())
        return std::nullopt;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng) < exploitation) {
        // Exploit: a tournament of three by fitness; pinned kernels enter twice.
        std::vector<size_t> pool;
        for (size_t i = 0; i < options.size(); ++i) {
            pool.push_back(i);
            if (options[i].pinned)
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

} // namespace kforge::search
