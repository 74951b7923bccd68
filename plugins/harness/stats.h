#pragma once
// Summary statistics of repeated kernel timings.

#include "protocol.h"

#include <vector>

namespace kforge::harness {

// Median, mean, extremes and the relative interquartile spread of `samplesUs`.
protocol::TimingStats summarise(std::vector<double> samplesUs, const std::string& method);

} // namespace kforge::harness
