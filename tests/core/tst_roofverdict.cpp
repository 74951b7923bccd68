// The engine's verdict from the measured roofs: impossible above a roof that is measured reliably,
// a person's look near a roof or above a roof that is measured short of the hardware.

#include "search/roofverdict.h"
#include "search/runconfig.h"

#include <QTest>

using namespace kforge;
using search::judgeRoofs;
using Kind = search::RoofVerdict::Kind;

namespace {

// A roofline point as the engine stores it.
QJsonObject point(double bytes, double memoryFraction, double achievedFlops, double computeFraction,
                  const QString& peak = QStringLiteral("fp32")) {
    return QJsonObject{{QStringLiteral("bytes"), bytes},
                       {QStringLiteral("memory_fraction"), memoryFraction},
                       {QStringLiteral("achieved_flops_per_s"), achievedFlops},
                       {QStringLiteral("compute_fraction"), computeFraction},
                       {QStringLiteral("peak_name"), peak}};
}

// A timed point from the task's formulas: `written` of its `bytes` are outputs.
QJsonObject timed(double bytes, double written, double seconds, double dramBytesPerSecond) {
    return QJsonObject{{QStringLiteral("bytes"), bytes},
                       {QStringLiteral("written_bytes"), written},
                       {QStringLiteral("seconds"), seconds},
                       {QStringLiteral("memory_fraction"), bytes / seconds / dramBytesPerSecond},
                       {QStringLiteral("achieved_flops_per_s"), bytes / 12.0 / seconds},
                       {QStringLiteral("compute_fraction"), 0.001},
                       {QStringLiteral("peak_name"), QStringLiteral("fp32")}};
}

std::optional<diagnose::Roofline> typed(const QJsonObject& json) {
    return json.isEmpty() ? std::nullopt : std::optional(diagnose::Roofline::fromJson(json));
}

diagnose::Ceilings cpu() {
    diagnose::Ceilings c;
    c.dramBytes = 20e9;
    c.fp32Flops = 200e9;
    c.cacheBytes = 32e6;
    return c;
}

diagnose::Ceilings hopper() {
    diagnose::Ceilings c;
    c.dramBytes = 4.5e12;
    c.fp32Flops = 65e12;
    c.fp16TensorFlops = 631e12; // mma.sync; wgmma reaches ~990
    c.bf16TensorFlops = 631e12;
    c.cacheBytes = 60e6;
    return c;
}

} // namespace

class TestRoofVerdict : public QObject {
    Q_OBJECT
private slots:
    void verdicts_data() {
        QTest::addColumn<QJsonObject>("roofline");
        QTest::addColumn<bool>("gpu");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("reason");
        // Memory: the working set far above the cache binds DRAM.
        QTest::newRow("half the DRAM roof") << point(1e9, 0.5, 1e9, 0.01) << false << int(Kind::Plausible) << QString();
        // A well-tuned memory-bound kernel moves its bytes at 90-98% of the measured bandwidth:
        // only faster than the measurement is worth a look, and beyond its margin impossible.
        QTest::newRow("near the DRAM roof")
            << point(1e9, 0.95, 1e9, 0.01) << false << int(Kind::Plausible) << QString();
        QTest::newRow("above the measured DRAM roof, within its margin")
            << point(1e9, 1.05, 1e9, 0.01) << false << int(Kind::Review) << QStringLiteral("105% of the measured DRAM");
        QTest::newRow("above the DRAM roof")
            << point(1e9, 1.5, 1e9, 0.01) << false << int(Kind::Impossible) << QStringLiteral("1.50x the roof");
        // Up to twice the cache, part of the working set may stay cached: a look, not a verdict.
        QTest::newRow("above DRAM, fits twice the cache")
            << point(50e6, 3.0, 1e9, 0.01) << false << int(Kind::Review) << QStringLiteral("DRAM");
        QTest::newRow("above DRAM, fits the cache")
            << point(20e6, 3.0, 1e9, 0.01) << false << int(Kind::Plausible) << QString();
        // Compute on a device without tensor units: FMA chains measure the real peak.
        QTest::newRow("cpu near the FP32 peak")
            << point(1e6, 0.01, 190e9, 0.95) << false << int(Kind::Review) << QStringLiteral("FP32 peak");
        QTest::newRow("cpu above the FP32 peak") << point(1e6, 0.01, 300e9, 1.5) << false << int(Kind::Impossible)
                                                 << QStringLiteral("fastest measured peak");
        // With tensor units, above the measured (mma.sync) peak is a person's call, never a rejection:
        // an honest wgmma GEMM does 750 TFLOP/s against 631 measured.
        QTest::newRow("wgmma gemm above the measured tensor peak")
            << point(1e9, 0.01, 750e12, 750.0 / 631.0, QStringLiteral("fp16_tensor")) << true << int(Kind::Review)
            << QStringLiteral("mma.sync");
        QTest::newRow("fp32 inputs on tensor cores")
            << point(1e9, 0.01, 200e12, 3.0) << true << int(Kind::Review) << QStringLiteral("FP32 peak");
        // Float32 data on the tensor cores as TF32 (a 3xTF32 GEMM at 56 TFLOP/s of the task's FLOPs):
        // held to the TF32 roof its MMAs have, 18% of it.
        QTest::newRow("3xTF32 under the tf32 tensor roof")
            << point(1e9, 0.01, 56e12, 56.0 / 316.0, QStringLiteral("tf32_tensor")) << true << int(Kind::Plausible)
            << QString();
        QTest::newRow("gpu half the fp32 peak")
            << point(1e9, 0.01, 30e12, 0.46) << true << int(Kind::Plausible) << QString();
    }
    void verdicts() {
        QFETCH(QJsonObject, roofline);
        QFETCH(bool, gpu);
        QFETCH(int, kind);
        QFETCH(QString, reason);
        const auto v = judgeRoofs(typed(roofline), gpu ? hopper() : cpu(), 0.9, 1.1, 1.0);
        QVERIFY2(int(v.kind) == kind, qPrintable(v.reason));
        QVERIFY2(v.reason.contains(reason), qPrintable(v.reason));
    }
    void wgmmaRoofsMeasured() {
        // With Hopper's wgmma roofs measured, the fastest roof is near the hardware's peak: a wgmma
        // GEMM under it is plausible (a look only near its own roof), far above it is impossible.
        diagnose::Ceilings c = hopper();
        c.fp16WgmmaFlops = 940e12;
        c.bf16WgmmaFlops = 940e12;
        const auto honest =
            judgeRoofs(typed(point(1e9, 0.01, 720e12, 720.0 / 940.0, QStringLiteral("bf16_wgmma"))), c, 0.9, 1.1, 1.0);
        QVERIFY2(honest.kind == Kind::Plausible, qPrintable(honest.reason));
        const auto near =
            judgeRoofs(typed(point(1e9, 0.01, 900e12, 900.0 / 940.0, QStringLiteral("bf16_wgmma"))), c, 0.9, 1.1, 1.0);
        QVERIFY2(near.kind == Kind::Review && near.reason.contains(u"BF16 tensor (wgmma) peak"),
                 qPrintable(near.reason));
        const auto impossible = judgeRoofs(
            typed(point(1e9, 0.01, 1500e12, 1500.0 / 940.0, QStringLiteral("bf16_wgmma"))), c, 0.9, 1.1, 1.0);
        QVERIFY2(impossible.kind == Kind::Impossible && impossible.reason.contains(u"fastest measured peak"),
                 qPrintable(impossible.reason));
    }
    void noCeilingsNoVerdict() {
        QCOMPARE(int(judgeRoofs(typed(point(1e9, 5.0, 1e15, 50.0)), diagnose::Ceilings{}, 0.9, 1.1, 1.0).kind),
                 int(Kind::Plausible));
        QCOMPARE(int(judgeRoofs(std::nullopt, cpu(), 0.9, 1.1, 1.0).kind), int(Kind::Plausible));
    }
    void reviewOff() {
        // --review-ceiling 0 --memory-review-ceiling 0: nothing waits for a person; the impossible
        // is still rejected.
        QCOMPARE(int(judgeRoofs(typed(point(1e9, 1.05, 1e9, 0.01)), cpu(), 0.0, 1.1, 0.0).kind), int(Kind::Plausible));
        QCOMPARE(int(judgeRoofs(typed(point(1e9, 0.01, 190e9, 0.95)), cpu(), 0.0, 1.1, 0.0).kind),
                 int(Kind::Plausible));
        QCOMPARE(int(judgeRoofs(typed(point(1e9, 1.5, 1e9, 0.01)), cpu(), 0.0, 1.1, 0.0).kind), int(Kind::Impossible));
    }
    void outputsMayStayInTheCache() {
        // A vector add of 16M floats (134 MB read, 67 MB written) on a GPU with a 60 MB L2: PyTorch's
        // add takes 43.9 us, 102% of the DRAM roof for all 201 MB. Up to the cache's size of the
        // outputs may still be on their way to DRAM when it ends: the rest moves at 71%.
        const diagnose::Ceilings c = hopper();
        const double bytes = 3.0 * 16777216 * 4, written = 16777216.0 * 4;
        const auto honest = judgeRoofs(typed(timed(bytes, written, 43.9e-6, c.dramBytes)), c, 0.9, 1.1, 1.0);
        QVERIFY2(honest.kind == Kind::Plausible, qPrintable(honest.reason));
        // Even with every cacheable output left in the cache, 20 us is beyond DRAM: impossible, and
        // the reason says which bytes it counted.
        const auto fast = judgeRoofs(typed(timed(bytes, written, 20e-6, c.dramBytes)), c, 0.9, 1.1, 1.0);
        QVERIFY2(fast.kind == Kind::Impossible && fast.reason.contains(u"may still sit in the 57 MiB cache"),
                 qPrintable(fast.reason));
        // Bytes measured by the profiler crossed DRAM already: nothing is taken off.
        QJsonObject profiled = timed(bytes, written, 43.9e-6, c.dramBytes);
        profiled.insert(QStringLiteral("written_bytes"), 0.0);
        const auto measured = judgeRoofs(typed(profiled), c, 0.9, 1.1, 1.0);
        QVERIFY2(measured.kind == Kind::Review && measured.reason.contains(u"the task's"), qPrintable(measured.reason));
    }
    void theDefaultsLeaveTheBestStreamingKernelsBe() {
        // A gemv of an 8192 x 8192 float matrix on an H100 whose fastest read micro-kernel streams
        // 3109.9 GB/s: torch.compile's kernel reads the 268 MB in 85.5 us (101%), the library's in
        // 86.0 us (100%). The run's default ceilings take both as they are; 3% more is worth a look,
        // and beyond the reject ceiling impossible.
        const search::RunConfig defaults;
        diagnose::Ceilings c = hopper();
        c.dramBytes = 3109.9e9;
        c.cacheBytes = 50.0 * 1024 * 1024;
        const double bytes = 8192.0 * 8192 * 4 + 8192.0 * 4 + 8192.0 * 4, written = 8192.0 * 4;
        const auto judge = [&](double seconds) {
            return judgeRoofs(typed(timed(bytes, written, seconds, c.dramBytes)), c, defaults.reviewCeiling,
                              defaults.rejectCeiling, defaults.memoryReviewCeiling);
        };
        for (const double seconds : {85.5e-6, 86.0e-6}) {
            const auto honest = judge(seconds);
            QVERIFY2(honest.kind == Kind::Plausible, qPrintable(honest.reason));
        }
        const auto fast = judge(82.0e-6);
        QVERIFY2(fast.kind == Kind::Review && fast.reason.contains(u"105% of the measured DRAM"),
                 qPrintable(fast.reason));
        QCOMPARE(int(judge(70.0e-6).kind), int(Kind::Impossible));
    }
    void memoryAndComputeCeilingsApart() {
        // A stricter memory ceiling asks for a look at 95% of DRAM; the compute ceiling leaves it be.
        const auto memory = judgeRoofs(typed(point(1e9, 0.95, 1e9, 0.01)), cpu(), 0.9, 1.1, 0.9);
        QVERIFY2(memory.kind == Kind::Review && memory.reason.contains(u"95% of the measured DRAM"),
                 qPrintable(memory.reason));
        const auto compute = judgeRoofs(typed(point(1e6, 0.01, 190e9, 0.95)), cpu(), 0.99, 1.1, 0.9);
        QCOMPARE(int(compute.kind), int(Kind::Plausible));
    }
};

QTEST_GUILESS_MAIN(TestRoofVerdict)
#include "tst_roofverdict.moc"
