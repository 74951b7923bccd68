#include "search/roofverdict.h"

#include <QLocale>

#include <algorithm>

namespace kforge::search {

namespace {

QString percent(double fraction) {
    return QStringLiteral("%1%").arg(fraction * 100.0, 0, 'f', 0);
}

} // namespace

RoofVerdict judgeRoofs(const std::optional<diagnose::Roofline>& roofline, const diagnose::Ceilings& ceilings,
                       double reviewCeiling, double rejectCeiling, double memoryReviewCeiling) {
    RoofVerdict verdict;
    if (!roofline || !ceilings.valid())
        return verdict;
    auto raise = [&](RoofVerdict::Kind kind, const QString& reason) {
        if (kind > verdict.kind) {
            verdict.kind = kind;
            verdict.reason = reason;
        }
    };
    const double bytes = roofline->bytes;
    const double cache = ceilings.cacheBytes;
    if (cache <= 0.0 || bytes > cache) {
        // The timed run starts with the cache holding only clean lines, and a store is done once the
        // cache has it: up to a cache's worth of the outputs may still be on its way to DRAM when
        // the kernel ends (a vector add writing 64 MiB on the 60 MiB L2 of an H200 looks faster
        // than DRAM). The bytes that had to cross DRAM while it ran are the rest.
        const double deferred = cache > 0.0 ? std::min(roofline->writtenBytes, cache) : 0.0;
        const double memory = roofline->seconds > 0.0 && ceilings.dramBytes > 0.0
                                  ? (bytes - deferred) / roofline->seconds / ceilings.dramBytes
                                  : roofline->memoryFraction;
        const bool dramBinds = cache > 0.0 && bytes > 2.0 * cache;
        const QString where =
            QStringLiteral("the measured DRAM bandwidth (%1 GB/s)").arg(ceilings.dramBytes / 1e9, 0, 'f', 1);
        const QString moved =
            deferred > 0.0
                ? QStringLiteral("the %1 of the task's bytes that must cross DRAM while it runs (%2 bytes of "
                                 "outputs may still sit in the %3 cache when it ends)")
                      .arg(bytes - deferred, 0, 'g', 6)
                      .arg(deferred, 0, 'g', 6)
                      .arg(QLocale::c().formattedDataSize(static_cast<qint64>(cache), 0))
                : QStringLiteral("the task's %1 bytes").arg(bytes, 0, 'g', 6);
        if (dramBinds && memory > rejectCeiling)
            raise(RoofVerdict::Kind::Impossible,
                  QStringLiteral("it moves %1 at %2 of %3: %4x the roof, which no kernel can do")
                      .arg(moved, percent(memory), where)
                      .arg(memory, 0, 'f', 2));
        else if (memoryReviewCeiling > 0.0 && memory > memoryReviewCeiling)
            raise(RoofVerdict::Kind::Review,
                  QStringLiteral("it moves %1 at %2 of %3").arg(moved, percent(memory), where));
    }
    const double compute = roofline->computeFraction;
    const double achieved = roofline->achievedFlops;
    const QString& peakName = roofline->peakName;
    const double fastest = ceilings.fastestFlops();
    // The FP32 roof is measured with FMA chains that reach ~97% of the hardware's peak, and on
    // Hopper the wgmma roofs with back-to-back warpgroup MMAs: above the fastest of them is
    // impossible. Where the tensor roofs come from mma.sync alone, which falls short of what a
    // GPU's faster tensor path may reach (631 against ~990 TFLOP/s on an H200), above them is only
    // worth a person's look, never a rejection.
    const bool tensorUnits =
        (ceilings.fp16TensorFlops > 0.0 || ceilings.bf16TensorFlops > 0.0) && !ceilings.hasWgmmaRoofs();
    if (fastest > 0.0 && achieved > rejectCeiling * fastest && !tensorUnits)
        raise(RoofVerdict::Kind::Impossible,
              QStringLiteral("it does the task's FLOPs at %1 of the device's fastest measured peak (%2 GFLOP/s): "
                             "%3x the roof, which no kernel can do")
                  .arg(percent(achieved / fastest))
                  .arg(fastest / 1e9, 0, 'f', 1)
                  .arg(achieved / fastest, 0, 'f', 2));
    else if (tensorUnits && fastest > 0.0 && achieved > fastest && reviewCeiling > 0.0)
        raise(RoofVerdict::Kind::Review,
              QStringLiteral("it does the task's FLOPs at %1 of the device's fastest measured peak (%2 GFLOP/s, "
                             "measured with mma.sync; check that the kernel really does the work)")
                  .arg(percent(achieved / fastest))
                  .arg(fastest / 1e9, 0, 'f', 1));
    else if (reviewCeiling > 0.0 && compute > reviewCeiling)
        raise(RoofVerdict::Kind::Review, QStringLiteral("it does the task's FLOPs at %1 of the measured %2 peak")
                                             .arg(percent(compute), diagnose::peakTitle(peakName)));
    return verdict;
}

} // namespace kforge::search
