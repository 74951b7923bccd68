#include "propose/metaprompt.h"

#include <algorithm>

namespace kforge::propose {

void StrategyPool::add(Strategy strategy) {
    m_nextId = std::max(m_nextId, strategy.id + 1);
    m_strategies.push_back(std::move(strategy));
}

void StrategyPool::retire(qint64 id) {
    for (auto& s : m_strategies)
        if (s.id == id)
            s.retired = true;
}

void StrategyPool::reward(qint64 id, double reward) {
    for (auto& s : m_strategies)
        if (s.id == id) {
            ++s.uses;
            s.rewardSum += reward;
        }
}

const Strategy* StrategyPool::find(qint64 id) const {
    for (const auto& s : m_strategies)
        if (s.id == id)
            return &s;
    return nullptr;
}

int StrategyPool::active(const QString& stage) const {
    return static_cast<int>(std::count_if(m_strategies.begin(), m_strategies.end(),
                                          [&](const Strategy& s) { return !s.retired && s.stage == stage; }));
}

const Strategy* StrategyPool::choose(const QString& stage, std::mt19937_64& rng) const {
    std::vector<const Strategy*> options;
    for (const auto& s : m_strategies)
        if (!s.retired && s.stage == stage)
            options.push_back(&s);
    if (options.empty())
        return nullptr;
    // Every strategy is tried enough to be judged before the roulette takes over.
    std::vector<const Strategy*> untried;
    for (const auto* s : options)
        if (s->uses < kMinUses)
            untried.push_back(s);
    if (!untried.empty())
        return untried[std::uniform_int_distribution<size_t>(0, untried.size() - 1)(rng)];
    constexpr double kFloor = 0.1;
    double total = 0.0;
    for (const auto* s : options)
        total += kFloor + s->meanReward();
    double target = std::uniform_real_distribution<double>(0.0, total)(rng);
    for (const auto* s : options) {
        target -= kFloor + s->meanReward();
        if (target <= 0.0)
            return s;
    }
    return options.back();
}

std::optional<StrategyPool::Rewrite> StrategyPool::rewriteCandidate(const QString& stage) const {
    Rewrite r;
    for (const auto& s : m_strategies) {
        if (s.retired || s.stage != stage || s.uses < kMinUses)
            continue;
        if (!r.weak || s.meanReward() < r.weak->meanReward())
            r.weak = &s;
        if (!r.best || s.meanReward() > r.best->meanReward())
            r.best = &s;
    }
    // "Clearly": a tenth of the reward scale, about a fifth of a speedup step.
    if (!r.weak || r.weak == r.best || r.best->meanReward() - r.weak->meanReward() < 0.1)
        return std::nullopt;
    return r;
}

} // namespace kforge::propose
