#pragma once
// Meta-prompt evolution: the strategy section of the LLM prompts co-evolves with the kernels. Each
// stage (structure, tuning) keeps a small population of strategy texts. A prompt uses one of them;
// the strategy's fitness is the mean reward of the kernels it produced (see ModelBandit::rewardOf).
// Every few generations the weakest strategy that has been tried enough is handed, with the best
// one, to a helper model that rewrites it; the rewrite joins the population and the weak one
// retires.

#include <QList>
#include <QString>

#include <optional>
#include <random>
#include <vector>

namespace kforge::propose {

struct Strategy {
    qint64 id = 0;
    QString stage;
    QString seed;                 // the built-in strategy it descends from
    std::optional<qint64> parent; // the strategy it was rewritten from
    QString text;
    int generation = 0; // when it joined
    bool retired = false;
    int uses = 0; // children rewarded
    double rewardSum = 0.0;
    double meanReward() const { return uses ? rewardSum / uses : 0.0; }
};

class StrategyPool {
public:
    static constexpr int kMinUses = 3; // tried this often before it may be judged weak
    static constexpr int kActivePerStage = 4;

    void add(Strategy strategy); // keeps its id; ids grow
    void retire(qint64 id);
    void reward(qint64 id, double reward);
    qint64 nextId() const { return m_nextId; }

    // A strategy for a prompt of this stage: one tried fewer than kMinUses times first, then roulette over mean
    // reward (with a floor, so a bad start does not doom a strategy). Nullptr when none exists.
    const Strategy* choose(const QString& stage, std::mt19937_64& rng) const;

    struct Rewrite {
        const Strategy* weak = nullptr;
        const Strategy* best = nullptr;
    };
    // The weakest and the best active strategy of a stage, when both were tried enough and the
    // best is clearly better.
    std::optional<Rewrite> rewriteCandidate(const QString& stage) const;

    const Strategy* find(qint64 id) const;
    const std::vector<Strategy>& all() const { return m_strategies; }
    int active(const QString& stage) const;

private:
    std::vector<Strategy> m_strategies;
    qint64 m_nextId = 1;
};

} // namespace kforge::propose
