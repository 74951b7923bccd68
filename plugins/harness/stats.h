#pragma once
// Summary statistics of repeated kernel timings.

#include "protocol.h"

#include <optional>
#include <vector>

namespace kforge::harness {

// Median, mean, extremes and the relative interquartile spread of `samplesUs`.
protocol::TimingStats summarise(std::vector<double> samplesUs, const std::string& method);

// The 95% confidence interval of the median of the per-round ratios theirsUs[i] / mineUs[i] (two
// calls timed in the same rounds; see protocol::RatioInterval). None when the lists differ in
// length, a time is not positive, or there are fewer than 6 rounds (too few for 95%).
std::optional<protocol::RatioInterval> pairedRatioInterval(const std::vector<double>& theirsUs,
                                                           const std::vector<double>& mineUs);

} // namespace kforge::harness
