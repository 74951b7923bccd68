#include "propose/llmjobplanner.h"

#include <algorithm>

namespace kforge::propose {

std::optional<LlmPlan> planLlmJob(const LlmPlanInputs& inputs, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    const double roll = coin(rng);
    if (roll < inputs.repairRate && !inputs.repairable.empty())
        return LlmPlan{llm::Operator::Repair, {inputs.repairable.front()}};
    const auto a = inputs.selectParent(rng);
    if (!a)
        return std::nullopt;
    LlmPlan plan{llm::Operator::Mutate, {*a}};
    if (roll < inputs.repairRate + inputs.crossoverRate) {
        // Crossover needs a second, different parent: another elite of the island, else one of
        // the run's best correct kernels (an island often holds a single cell's elite).
        std::optional<qint64> b = inputs.selectParent(rng);
        if (!b || *b == *a) {
            auto others = inputs.strongKernels();
            std::erase_if(others, [&](const auto& o) { return o.first == *a; });
            const size_t top = std::min<size_t>(others.size(), 5);
            std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(top), others.end(),
                              [](const auto& x, const auto& y) { return x.second.betterThan(y.second); });
            others.resize(top);
            b = others.empty() ? std::nullopt
                               : std::optional<qint64>(
                                   others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(rng)].first);
        }
        if (b && *b != *a) {
            plan.op = llm::Operator::Crossover;
            plan.parents.push_back(*b);
        }
    }
    return plan;
}

} // namespace kforge::propose
