#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kforge::harness {

namespace {

// Linear interpolation between closest ranks, on sorted data.
double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty())
        return 0.0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

} // namespace

protocol::TimingStats summarise(std::vector<double> s, const std::string& method) {
    protocol::TimingStats t;
    t.method = method;
    t.count = static_cast<int>(s.size());
    if (s.empty())
        return t;
    std::sort(s.begin(), s.end());
    t.minUs = s.front();
    t.maxUs = s.back();
    t.medianUs = quantile(s, 0.5);
    t.meanUs = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
    t.spread = t.medianUs > 0 ? (quantile(s, 0.75) - quantile(s, 0.25)) / t.medianUs : 0.0;
    return t;
}

std::optional<protocol::RatioInterval> pairedRatioInterval(const std::vector<double>& theirs,
                                                           const std::vector<double>& mine) {
    const std::size_t n = mine.size();
    if (theirs.size() != n || n < 6)
        return std::nullopt;
    std::vector<double> ratios;
    ratios.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (!(theirs[i] > 0.0) || !(mine[i] > 0.0))
            return std::nullopt;
        ratios.push_back(theirs[i] / mine[i]);
    }
    std::sort(ratios.begin(), ratios.end());
    // The median lies between the k-th smallest and the k-th largest ratio unless at most k - 1
    // ratios fall on one side of it, which happens with probability 2 P(Binomial(n, 1/2) < k):
    // the largest k that keeps that at or below 5%.
    // P(B = j) = C(n, j) / 2^n in logarithms, so that no term underflows or overflows however
    // many rounds there are.
    const double rounds = static_cast<double>(n);
    const auto probability = [&](std::size_t j) {
        const double x = static_cast<double>(j);
        return std::exp(std::lgamma(rounds + 1.0) - std::lgamma(x + 1.0) - std::lgamma(rounds - x + 1.0)
                        - rounds * std::log(2.0));
    };
    double below = 0.0; // P(B <= j - 1)
    std::size_t k = 0;
    for (std::size_t j = 0; j < n / 2; ++j) {
        below += probability(j);
        if (2.0 * below > 0.05)
            break;
        k = j + 1; // P(B <= j) small enough: the (j + 1)-th order statistic bounds the median
    }
    if (k == 0)
        return std::nullopt;
    return protocol::RatioInterval{ratios[k - 1], ratios[n - k], static_cast<int>(n)};
}

} // namespace kforge::harness
