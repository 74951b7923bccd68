#pragma once
// What the device's measured roofs say about a timed result: plausible, worth a person's look, or
// impossible. A pure function of the roofline point, the ceilings and the run's two thresholds, so
// that the engine's verdict can be tested on its own.

#include "diagnose/roofline.h"

#include <QJsonObject>
#include <QString>

namespace kforge::search {

// What the measured roofs say about a timed result.
struct RoofVerdict {
    enum class Kind { Plausible, Review, Impossible };
    Kind kind = Kind::Plausible;
    QString reason;
};

// A kernel cannot move the task's compulsory bytes faster than DRAM allows, nor do its FLOPs
// faster than the fastest compute unit of the device: a result above a roof (beyond the margin a
// measured roof needs) is impossible, whatever the outputs looked like; one close to a roof is
// possible but rare, and worth a person's look.
//
// The DRAM roof binds only a working set that cannot stay in the last-level cache between timed
// runs: at most the cache size, it is read from cache (small problems on CPUs); up to twice the
// cache, part of it may still be, so such a result goes to review rather than being rejected; with
// the cache size unknown, too. The compute roof that applies is the one the roofline chose by the
// inputs' type (FP32, or tensor cores for half precision); exceeding it only goes to review while
// the device has a faster unit (FP32 inputs on tensor cores), and is impossible above the fastest
// unless that is a tensor unit, whose measured roof may fall short of the hardware.
// `reviewCeiling` applies to the compute roofs, `memoryReviewCeiling` to the DRAM roof.
RoofVerdict judgeRoofs(const std::optional<diagnose::Roofline>& roofline, const diagnose::Ceilings& ceilings,
                       double reviewCeiling, double rejectCeiling, double memoryReviewCeiling);

} // namespace kforge::search
