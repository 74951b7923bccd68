#pragma once
// Roofline data for an evaluated kernel: its arithmetic intensity and achieved throughput (from the
// task's FLOP and byte formulas and the measured time, or from CUPTI metrics when it was profiled)
// against the device's measured ceilings, and what bounds it.

#include "expected.h"
#include "protocol.h"
#include "taskspec.h"

#include <QJsonObject>
#include <QString>

#include <map>
#include <optional>
#include <string>

namespace kforge::diagnose {

// The device's measured peaks (a worker's ceilings answer), per second.
struct Ceilings {
    QString device;
    double dramBytes = 0.0;
    double l2Bytes = 0.0;
    double fp32Flops = 0.0;
    double fp16TensorFlops = 0.0;
    double bf16TensorFlops = 0.0;
    double cacheBytes = 0.0; // the last-level cache a working set may fit in; 0 when unknown (not a rate)

    bool valid() const { return dramBytes > 0.0 && fp32Flops > 0.0; }
    static Ceilings fromWorker(const std::map<std::string, double>& ceilings, const QString& device);
    QJsonObject toJson() const;
    static Ceilings fromJson(const QJsonObject& json);
    // One line for people and prompts: "DRAM 4.53 TB/s, FP32 65.3 TFLOP/s, ..."; empty when unknown.
    QString summary() const;
};

struct Roofline {
    double flops = 0.0;           // per run of the launch plan
    double bytes = 0.0;           // compulsory DRAM traffic (task formula) or measured (profile)
    double seconds = 0.0;         // median kernel time
    double intensity = 0.0;       // flops / bytes
    double achievedFlops = 0.0;   // per second
    double achievedBytes = 0.0;   // per second
    double peakFlops = 0.0;       // the compute ceiling that applies (FP32 or tensor, by the inputs' dtype)
    QString peakName;             // "fp32", "fp16_tensor", "bf16_tensor"
    double peakBytes = 0.0;       // DRAM ceiling
    double boundSeconds = 0.0;    // max(flops / peakFlops, bytes / peakBytes)
    double fractionOfBound = 0.0; // boundSeconds / seconds: 1 means on the roofline
    double computeFraction = 0.0; // achievedFlops / peakFlops
    double memoryFraction = 0.0;  // achievedBytes / peakBytes
    QString bound;                // "memory", "compute" or "latency" (far below both roofs)
    bool fromProfile = false;     // bytes and flops measured by CUPTI rather than from the formulas

    QJsonObject toJson() const;
    static Roofline fromJson(const QJsonObject& json);
};

// The roofline point of an evaluation's candidate timing at `sizes`; fails (with a reason) when the
// result has no timing or the formulas do not evaluate. Without valid ceilings the achieved
// figures are filled and the fractions stay 0.
spec::Expected<Roofline> computeRoofline(const spec::TaskSpec& task, const spec::Sizes& sizes,
                                         const protocol::EvaluateResult& result, const Ceilings& ceilings);

} // namespace kforge::diagnose
