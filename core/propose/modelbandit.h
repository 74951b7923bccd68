#pragma once
// Chooses which model proposes the next LLM child. Either by fixed weights, or as a cost-aware
// bandit (UCB1) that learns whose children improve most: every model is tried once, then the one
// with the best mean reward plus exploration bonus, less a penalty for costing more than the
// others, wins. Rewards are in [0, 1] (0: the child was unusable or incorrect; 0.5: as fast as
// its parent; 1: twice as fast or more).

#include "llm/llmsettings.h"

#include <optional>
#include <random>
#include <vector>

namespace kforge::propose {

class ModelBandit {
public:
    struct Stats {
        int calls = 0; // rewarded children (and failed calls)
        double rewardSum = 0.0;
        double costSum = 0.0; // known costs only
        int costed = 0;       // calls with a known cost
        double meanReward() const { return calls ? rewardSum / calls : 0.0; }
        double meanCost() const { return costed ? costSum / costed : 0.0; }
    };

    ModelBandit(QList<llm::ModelChoice> models, bool learn);

    // An index into the models serving the island; nullopt when none does.
    std::optional<int> choose(int island, std::mt19937_64& rng) const;
    void reward(int model, double reward);
    void cost(int model, std::optional<double> usd);
    // Never chosen again (its endpoint refused the key or the quota is spent).
    void retire(int model);
    bool retired(int model) const { return m_retired.at(static_cast<size_t>(model)); }

    // The reward of a child with `ratio` = its speedup over its parent's (0 when incorrect).
    static double rewardOf(bool correct, double ratio);

    const llm::ModelChoice& model(int index) const { return m_models.at(index); }
    int size() const { return static_cast<int>(m_models.size()); }
    const Stats& stats(int index) const { return m_stats.at(static_cast<size_t>(index)); }
    std::optional<int> find(const QString& endpoint, const QString& model) const;

private:
    QList<llm::ModelChoice> m_models;
    std::vector<Stats> m_stats;
    std::vector<bool> m_retired;
    bool m_learn = true;
};

} // namespace kforge::propose
