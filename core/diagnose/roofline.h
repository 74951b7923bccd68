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
    double bf16TensorFlops = 0.0; // mma.sync / WMMA
    double tf32TensorFlops = 0.0; // mma.sync m16n8k8 with float32 data as TF32; 0 where not measured
    double fp16WgmmaFlops = 0.0;  // Hopper's wgmma (compute capability 9.0); 0 where not measured
    double bf16WgmmaFlops = 0.0;
    double tf32WgmmaFlops = 0.0; // wgmma m64n256k8 with float32 data as TF32 (A in registers)
    double cacheBytes = 0.0;     // the last-level cache a working set may fit in; 0 when unknown (not a rate)

    bool valid() const { return dramBytes > 0.0 && fp32Flops > 0.0; }
    // The fastest compute roof measured, whatever unit it is for.
    double fastestFlops() const;
    // Whether the tensor roofs include the wgmma ones, which sit near the hardware's peak.
    bool hasWgmmaRoofs() const { return fp16WgmmaFlops > 0.0 || bf16WgmmaFlops > 0.0 || tf32WgmmaFlops > 0.0; }
    static Ceilings fromWorker(const std::map<std::string, double>& ceilings, const QString& device);
    QJsonObject toJson() const;
    static Ceilings fromJson(const QJsonObject& json);
    // One line for people and prompts: "DRAM 4.53 TB/s, FP32 65.3 TFLOP/s, ..."; empty when unknown.
    QString summary() const;
};

// Which tensor-core instructions a kernel file's code uses, read from its text (comments left out):
// the compute roof that applies to a half-precision kernel depends on it, since mma.sync cannot
// reach what wgmma does on Hopper.
enum class TensorInstructions { Unknown, None, MmaSync, Wgmma };
TensorInstructions tensorInstructionsOf(const QString& source);
// Whether a kernel's tensor-core instructions take TF32 operands (read as above): float32 data on
// the tensor cores, whose roof is the TF32 one rather than FP32's (e.g. 3xTF32 kernels, which keep
// float32 accuracy with three TF32 products per product).
bool usesTf32TensorCores(const QString& source);
// Both of the above from one reading of the source.
struct TensorUse {
    TensorInstructions instructions = TensorInstructions::Unknown;
    bool tf32 = false;
};
TensorUse tensorUseOf(const QString& source);

// The name of a compute roof (Roofline::peakName) for people: "FP32", "TF32 tensor (mma.sync)",
// "FP16 tensor (wgmma)"...; a name it does not know as it is.
QString peakTitle(const QString& peakName);

// TF32 products per float32 product in a float32-accurate (3xTF32) kernel: big*big, big*small,
// small*big. Such a kernel can reach 1 / kSplitTf32Products of a TF32 roof in the task's FLOPs.
inline constexpr double kSplitTf32Products = 3.0;
// Whether the third of a TF32 roof is a kernel's ceiling, by its Roofline::splitTf32Fraction: not
// for 0 (another roof, or measured FLOPs), nor above 1: a kernel past the third cannot be issuing
// three products per product (one TF32 product a product, where the task's tolerance lets that pass).
inline bool heldToSplitTf32Third(double splitTf32Fraction) {
    return splitTf32Fraction > 0.0 && splitTf32Fraction <= 1.0;
}
// For people, after a fraction of a TF32 roof or of a bound: " (59% of the third of the TF32 roof
// that a 3xTF32 kernel can reach)" for Roofline::splitTf32Fraction 0.59; empty where that third is
// not the kernel's ceiling (heldToSplitTf32Third).
QString splitTf32Note(double splitTf32Fraction);

struct Roofline {
    double flops = 0.0;           // per run of the launch plan
    double bytes = 0.0;           // compulsory DRAM traffic (task formula) or measured (profile)
    double seconds = 0.0;         // median kernel time
    double intensity = 0.0;       // flops / bytes
    double achievedFlops = 0.0;   // per second
    double achievedBytes = 0.0;   // per second
    double peakFlops = 0.0;       // the compute ceiling that applies (FP32 or tensor, by the inputs' dtype and
                                  // the kernel's tensor instructions)
    QString peakName;             // "fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor" (mma.sync), "tf32_wgmma",
                                  // "fp16_wgmma", "bf16_wgmma"
    double peakBytes = 0.0;       // DRAM ceiling
    double boundSeconds = 0.0;    // max(flops / peakFlops, bytes / peakBytes)
    double fractionOfBound = 0.0; // boundSeconds / seconds: 1 means on the roofline
    double computeFraction = 0.0; // achievedFlops / peakFlops
    double memoryFraction = 0.0;  // achievedBytes / peakBytes
    QString bound;                // "memory", "compute" or "latency" (far below both roofs)
    bool fromProfile = false;     // bytes and flops measured by CUPTI rather than from the formulas
    double writtenBytes = 0.0;    // of `bytes`, what the outputs take (formula bytes only; 0 when measured):
                                  // writes may still sit in the cache when the kernel ends
    // Float32 data on TF32 tensor cores, counted in the task's FLOPs (not measured): a float32-accurate
    // kernel there (3xTF32: x = big + small, three TF32 products per product) issues three products
    // per FLOP counted, so it can reach a third of the TF32 roof; this is computeFraction against that
    // third (3 x computeFraction). 0 otherwise: another roof, or measured FLOPs, which count every
    // product the kernel issues.
    double splitTf32Fraction = 0.0;

    QJsonObject toJson() const;
    static Roofline fromJson(const QJsonObject& json);
};

// The roofline point of an evaluation's candidate timing at `sizes`; fails (with a reason) when the
// result has no timing or the formulas do not evaluate. Without valid ceilings the achieved
// figures are filled and the fractions stay 0. For half-precision inputs the roof is the tensor roof
// of the kernel's instructions (mma.sync or wgmma); where they are unknown, or the kernel uses
// neither, the faster of the two measured. For float32 inputs it is a TF32 tensor roof when the
// kernel puts them on the tensor cores (`tf32`, see usesTf32TensorCores) and that roof was
// measured, chosen by the instructions the same way, FP32's otherwise.
spec::Expected<Roofline> computeRoofline(const spec::TaskSpec& task, const spec::Sizes& sizes,
                                         const protocol::EvaluateResult& result, const Ceilings& ceilings,
                                         TensorInstructions instructions = TensorInstructions::Unknown,
                                         bool tf32 = false);

} // namespace kforge::diagnose
