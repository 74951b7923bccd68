#include "stats.h"

#include <algorithm>
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

} // namespace kforge::harness
