#pragma once
// Which kind of LLM child to ask for on an island, and from which parents: a repair of the
// island's newest failed kernel (at the repair rate, while there is one nobody tried), else a
// mutation of a selected parent, or a crossover with a second, different one (at the crossover
// rate). Plain ids in, a plan out; the engine turns it into a prompt.

#include "llm/promptbuilder.h"
#include "model/candidate.h"

#include <functional>
#include <optional>
#include <random>
#include <vector>

namespace kforge::propose {

struct LlmPlanInputs {
    double repairRate = 0.2;
    double crossoverRate = 0.25;
    // Failed kernels of the island that may be repaired, newest first.
    std::vector<qint64> repairable;
    // A parent selected on the island (the engine's parent selection), drawing from the same rng.
    std::function<std::optional<qint64>(std::mt19937_64&)> selectParent;
    // Correct kernels of the run that may serve as a second parent (not vetoed, not waiting for
    // review), with their fitness; asked only for a crossover whose second selection failed.
    std::function<std::vector<std::pair<qint64, model::Fitness>>()> strongKernels;
};

struct LlmPlan {
    llm::Operator op = llm::Operator::Mutate;
    std::vector<qint64> parents; // the first is the one the child is made from
};

// Nothing when the island has no parent to offer.
std::optional<LlmPlan> planLlmJob(const LlmPlanInputs& inputs, std::mt19937_64& rng);

} // namespace kforge::propose
