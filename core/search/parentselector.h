#pragma once
// Parent selection on one island: the island's elites and the run's pinned kernels are the
// options; a tournament of three by fitness exploits (pinned kernels enter it twice), a roulette
// over the cells weighted by their recent success (curiosity) explores.

#include "search/islandmodel.h"

#include <optional>
#include <random>
#include <vector>

namespace kforge::search {

class Population;

struct ParentOption {
    qint64 id = 0;
    model::Fitness fitness;
    double weight = 1.0; // roulette weight: (1 + curiosity of its cell), x3 when pinned
    bool pinned = false; // enters the tournament twice
};

// The options of an island: its elites (best first) that are not vetoed, then the pinned kernels
// it does not hold that are correct and not waiting for review. `tunable`: only kernels whose
// template still has untried configurations.
std::vector<ParentOption> parentOptions(const IslandModel& islands, int island, Population& population, bool tunable);

// Exploits with probability `exploitation`, explores otherwise. Draws from `rng` in a fixed order,
// so the same seed gives the same parent.
std::optional<qint64> chooseParent(const std::vector<ParentOption>& options, double exploitation, std::mt19937_64& rng);

} // namespace kforge::search
