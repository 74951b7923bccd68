#include "propose/modelbandit.h"

#include <algorithm>
#include <cmath>

namespace kforge::propose {

namespace {
// How much a model that costs the most per call loses against a free one of equal merit.
constexpr double kCostPenalty = 0.3;
constexpr double kExploration = 0.5;
} // namespace

ModelBandit::ModelBandit(QList<llm::ModelChoice> models, bool learn)
    : m_models(std::move(models)), m_stats(static_cast<size_t>(m_models.size())),
      m_retired(static_cast<size_t>(m_models.size()), false), m_learn(learn) {}

double ModelBandit::rewardOf(bool correct, double ratio) {
    if (!correct || !(ratio > 0.0))
        return 0.0;
    return std::clamp(ratio / 2.0, 0.0, 1.0);
}

std::optional<int> ModelBandit::find(const QString& endpoint, const QString& model) const {
    for (int i = 0; i < size(); ++i)
        if (m_models[i].endpoint == endpoint && m_models[i].model == model)
            return i;
    return std::nullopt;
}

void ModelBandit::reward(int model, double reward) {
    if (model < 0 || model >= size())
        return;
    Stats& s = m_stats[static_cast<size_t>(model)];
    ++s.calls;
    s.rewardSum += std::clamp(reward, 0.0, 1.0);
}

void ModelBandit::cost(int model, std::optional<double> usd) {
    if (model < 0 || model >= size() || !usd)
        return;
    Stats& s = m_stats[static_cast<size_t>(model)];
    s.costSum += *usd;
    ++s.costed;
}

void ModelBandit::retire(int model) {
    if (model >= 0 && model < size())
        m_retired[static_cast<size_t>(model)] = true;
}

std::optional<int> ModelBandit::choose(int island, std::mt19937_64& rng) const {
    std::vector<int> serving;
    for (int i = 0; i < size(); ++i)
        if (m_models[i].servesIsland(island) && !m_retired[static_cast<size_t>(i)])
            serving.push_back(i);
    if (serving.empty())
        return std::nullopt;

    auto weighted = [&](const std::vector<int>& among) {
        double total = 0.0;
        for (int i : among)
            total += m_models[i].weight;
        double target = std::uniform_real_distribution<double>(0.0, total)(rng);
        for (int i : among) {
            target -= m_models[i].weight;
            if (target <= 0.0)
                return i;
        }
        return among.back();
    };
    if (!m_learn || serving.size() == 1)
        return weighted(serving);

    // Every model gets tried before any is judged.
    std::vector<int> untried;
    for (int i : serving)
        if (m_stats[static_cast<size_t>(i)].calls == 0)
            untried.push_back(i);
    if (!untried.empty())
        return weighted(untried);

    int total = 0;
    double maxCost = 0.0;
    for (int i : serving) {
        total += m_stats[static_cast<size_t>(i)].calls;
        maxCost = std::max(maxCost, m_stats[static_cast<size_t>(i)].meanCost());
    }
    int best = serving.front();
    double bestScore = -1e300;
    for (int i : serving) {
        const Stats& s = m_stats[static_cast<size_t>(i)];
        double score = s.meanReward() + kExploration * std::sqrt(2.0 * std::log(std::max(total, 1)) / s.calls);
        if (maxCost > 0.0)
            score -= kCostPenalty * s.meanCost() / maxCost;
        // The configured weight breaks ties and nudges the start.
        score += 1e-3 * std::log(m_models[i].weight);
        if (score > bestScore) {
            bestScore = score;
            best = i;
        }
    }
    return best;
}

} // namespace kforge::propose
