// Roofline points from a task's formulas, a measured time and the device's ceilings: the compute
// roof by input dtype, the bound classification, profile metrics replacing the formulas.

#include "diagnose/roofline.h"

#include <QTest>

using namespace kforge;
using namespace kforge::diagnose;

namespace {

spec::TaskSpec task(const char* dtype, const char* flops, const char* bytes) {
    const auto json =
        nlohmann::json::parse(std::string(R"({"name": "t", "title": "t", "family": "f", "description": "d",
        "sizes": {"N": 1000},
        "inputs": [{"name": "x", "dtype": ")")
                              + dtype + R"(", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["N"], "atol": 0.001, "rtol": 0.001}],
        "flops": ")" + flops + R"(", "bytes": ")"
                              + bytes + R"(",
        "reference": {"opencl": "r.cl"}, "baseline": {"opencl": "b.cl"}})");
    auto spec = spec::TaskSpec::fromJson(json, "test");
    if (!spec)
        qFatal("%s", spec.error().c_str());
    return *spec;
}

protocol::EvaluateResult timed(double us) {
    protocol::EvaluateResult r;
    r.status = protocol::Status::Ok;
    r.candidateTiming = protocol::TimingStats{"test", 10, us, us, us, us, 0.0};
    return r;
}

Ceilings ceilings() {
    Ceilings c;
    c.dramBytes = 1e12;       // 1 TB/s
    c.fp32Flops = 1e13;       // 10 TFLOP/s
    c.fp16TensorFlops = 1e14; // 100 TFLOP/s
    return c;
}

} // namespace

class TestRoofline : public QObject {
    Q_OBJECT
private slots:
    void classification_data() {
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<QString>("flops");
        QTest::addColumn<QString>("bytes");
        QTest::addColumn<double>("us");
        QTest::addColumn<QString>("bound");
        QTest::addColumn<double>("fraction");
        QTest::addColumn<QString>("peak");
        // 1e9 bytes at 1 TB/s take 1 ms: at 2 ms the kernel is at half the memory roof.
        QTest::newRow("memory") << "float32"
                                << "N"
                                << "N * 1000000" << 2000.0 << "memory" << 0.5 << "fp32";
        // 1e10 FLOPs at 10 TFLOP/s take 1 ms.
        QTest::newRow("compute") << "float32"
                                 << "N * 10000000"
                                 << "N" << 1250.0 << "compute" << 0.8 << "fp32";
        // The same work on fp16 inputs is measured against the tensor roof.
        QTest::newRow("tensor") << "float16"
                                << "N * 10000000"
                                << "N" << 125.0 << "compute" << 0.8 << "fp16_tensor";
        // Far below both roofs: latency.
        QTest::newRow("latency") << "float32"
                                 << "N"
                                 << "N * 4" << 100.0 << "latency" << 0.00004 << "fp32";
    }

    void classification() {
        QFETCH(QString, dtype);
        QFETCH(QString, flops);
        QFETCH(QString, bytes);
        QFETCH(double, us);
        QFETCH(QString, bound);
        QFETCH(double, fraction);
        QFETCH(QString, peak);
        const auto t = task(dtype.toUtf8().constData(), flops.toUtf8().constData(), bytes.toUtf8().constData());
        auto r = computeRoofline(t, t.sizes, timed(us), ceilings());
        QVERIFY2(r, r ? "" : r.error().c_str());
        QCOMPARE(r->bound, bound);
        QCOMPARE(r->peakName, peak);
        QVERIFY2(qAbs(r->fractionOfBound - fraction) < 1e-9, qPrintable(QString::number(r->fractionOfBound)));
        QVERIFY(qAbs(r->intensity - r->flops / r->bytes) < 1e-12);
        QVERIFY(!r->fromProfile);
        // JSON round trip.
        const Roofline back = Roofline::fromJson(r->toJson());
        QCOMPARE(back.bound, r->bound);
        QCOMPARE(back.fractionOfBound, r->fractionOfBound);
    }

    void profileMetricsReplaceTheFormulas() {
        const auto t = task("float32", "N", "N * 4");
        auto result = timed(10.0);
        result.profile = protocol::ProfileResult{"ok", "", {{"dram_bytes", 8e6}, {"fp32_flops", 2e6}}};
        auto r = computeRoofline(t, t.sizes, result, ceilings());
        QVERIFY(r);
        QVERIFY(r->fromProfile);
        QCOMPARE(r->bytes, 8e6);
        QCOMPARE(r->flops, 2e6);
        QCOMPARE(r->writtenBytes, 0.0); // measured traffic crossed DRAM already
    }

    void outputsBytesAreTheWrittenShare() {
        // The output y holds N floats: 4000 of the formula's bytes are writes, which the roof
        // verdict lets sit in the cache. Never more than the formula's bytes.
        const auto t = task("float32", "N", "N * 12");
        auto r = computeRoofline(t, t.sizes, timed(10.0), ceilings());
        QVERIFY(r);
        QCOMPARE(r->writtenBytes, 4000.0);
        QCOMPARE(Roofline::fromJson(r->toJson()).writtenBytes, 4000.0);
        const auto small = task("float32", "N", "N");
        QCOMPARE(computeRoofline(small, small.sizes, timed(10.0), ceilings())->writtenBytes, 1000.0);
    }

    void withoutCeilingsOnlyAchievedFigures() {
        const auto t = task("float32", "N", "N * 4");
        auto r = computeRoofline(t, t.sizes, timed(1.0), Ceilings{});
        QVERIFY(r);
        QCOMPARE(r->achievedBytes, 4000.0 / 1e-6);
        QCOMPARE(r->fractionOfBound, 0.0);
        QVERIFY(r->bound.isEmpty());
    }

    void untimedResultHasNoRoofline() {
        const auto t = task("float32", "N", "N * 4");
        protocol::EvaluateResult r;
        r.status = protocol::Status::Incorrect;
        QVERIFY(!computeRoofline(t, t.sizes, r, ceilings()));
    }

    void tensorRoofOfTheKernelsInstructions() {
        // Half-precision inputs: the roof is the one of the instructions the kernel uses.
        Ceilings c = ceilings();
        c.fp16WgmmaFlops = 1.5e14;
        const auto t = task("float16", "N * 1000000", "N");
        const auto roof = [&](TensorInstructions instructions) {
            auto r = computeRoofline(t, t.sizes, timed(100.0), c, instructions);
            return r ? std::pair(r->peakName, r->peakFlops) : std::pair(QString(), 0.0);
        };
        QCOMPARE(roof(TensorInstructions::MmaSync), std::pair(QStringLiteral("fp16_tensor"), 1e14));
        QCOMPARE(roof(TensorInstructions::Wgmma), std::pair(QStringLiteral("fp16_wgmma"), 1.5e14));
        QCOMPARE(roof(TensorInstructions::Unknown), std::pair(QStringLiteral("fp16_wgmma"), 1.5e14));
        QCOMPARE(roof(TensorInstructions::None), std::pair(QStringLiteral("fp16_wgmma"), 1.5e14));
        // Without wgmma roofs (before Hopper), every kernel has the mma.sync roof.
        c.fp16WgmmaFlops = 0.0;
        QCOMPARE(roof(TensorInstructions::Wgmma), std::pair(QStringLiteral("fp16_tensor"), 1e14));
        QCOMPARE(Ceilings::fromJson(
                     Ceilings::fromWorker(
                         {{"dram_bytes_per_s", 1e12}, {"fp32_flops_per_s", 1e13}, {"bf16_wgmma_flops_per_s", 9e14}},
                         QStringLiteral("H200"))
                         .toJson())
                     .bf16WgmmaFlops,
                 9e14);
    }

    void float32OnTheTensorCoresHasTheTf32Roof() {
        // A float32 task's kernel that puts its data on the tensor cores as TF32 (3xTF32) is held
        // to the TF32 roof, not FP32's; where that roof was not measured, FP32's still applies.
        Ceilings c = ceilings();
        c.tf32TensorFlops = 5e13;
        const auto t = task("float32", "N * 1000000", "N");
        auto r = computeRoofline(t, t.sizes, timed(100.0), c, TensorInstructions::MmaSync, true);
        QVERIFY(r);
        QCOMPARE(r->peakName, QStringLiteral("tf32_tensor"));
        QCOMPARE(peakTitle(r->peakName), QStringLiteral("TF32 tensor (mma.sync)"));
        QCOMPARE(peakTitle(QStringLiteral("fp32")), QStringLiteral("FP32"));
        QCOMPARE(peakTitle(QStringLiteral("bf16_wgmma")), QStringLiteral("BF16 tensor (wgmma)"));
        QCOMPARE(peakTitle(QStringLiteral("fp16_tensor")), QStringLiteral("FP16 tensor (mma.sync)"));
        QCOMPARE(peakTitle(QStringLiteral("int8_dp4a")), QStringLiteral("int8_dp4a")); // not known: as it is
        QCOMPARE(r->peakFlops, 5e13);
        QCOMPARE(r->computeFraction, 1e9 / 1e-4 / 5e13);
        // Counted in the task's FLOPs, a float32-accurate (3xTF32) kernel can reach a third of that
        // roof; the roofline says how far along that third it is, and keeps it through the store.
        QCOMPARE(r->splitTf32Fraction, 3.0 * r->computeFraction);
        QCOMPARE(Roofline::fromJson(r->toJson()).splitTf32Fraction, r->splitTf32Fraction);
        // People read it after the fraction of the roof; past the third the kernel cannot be doing
        // three products a product, and nothing is said.
        QCOMPARE(splitTf32Note(0.59),
                 QStringLiteral(" (59% of the third of the TF32 roof that a 3xTF32 kernel can reach)"));
        QVERIFY(splitTf32Note(0.0).isEmpty());
        QVERIFY(splitTf32Note(1.4).isEmpty());
        // Measured FLOPs count every product the kernel issued: no third.
        auto profiled = timed(100.0);
        profiled.profile = protocol::ProfileResult{"ok", "", {{"tensor_flops", 3e9}}};
        const auto measured = computeRoofline(t, t.sizes, profiled, c, TensorInstructions::MmaSync, true);
        QVERIFY(measured && measured->fromProfile);
        QCOMPARE(measured->peakName, QStringLiteral("tf32_tensor"));
        QCOMPARE(measured->splitTf32Fraction, 0.0);
        QVERIFY(!measured->toJson().contains(QStringLiteral("split_tf32_fraction")));
        const auto fp32 = computeRoofline(t, t.sizes, timed(100.0), c, TensorInstructions::MmaSync, false);
        QCOMPARE(fp32->peakName, QStringLiteral("fp32"));
        QCOMPARE(fp32->splitTf32Fraction, 0.0);
        // On Hopper, a kernel on TF32 wgmma has the wgmma roof, one on mma.sync keeps its own, and
        // one whose instructions are unknown the faster of the two.
        c.tf32WgmmaFlops = 8e13;
        const auto tf32Roof = [&](TensorInstructions instructions) {
            auto roof = computeRoofline(t, t.sizes, timed(100.0), c, instructions, true);
            return roof ? std::pair(roof->peakName, roof->peakFlops) : std::pair(QString(), 0.0);
        };
        QCOMPARE(tf32Roof(TensorInstructions::Wgmma), std::pair(QStringLiteral("tf32_wgmma"), 8e13));
        QCOMPARE(tf32Roof(TensorInstructions::MmaSync), std::pair(QStringLiteral("tf32_tensor"), 5e13));
        QCOMPARE(tf32Roof(TensorInstructions::Unknown), std::pair(QStringLiteral("tf32_wgmma"), 8e13));
        QCOMPARE(peakTitle(QStringLiteral("tf32_wgmma")), QStringLiteral("TF32 tensor (wgmma)"));
        c.tf32WgmmaFlops = 0.0;
        c.tf32TensorFlops = 0.0;
        QCOMPARE(computeRoofline(t, t.sizes, timed(100.0), c, TensorInstructions::MmaSync, true)->peakName,
                 QStringLiteral("fp32"));
        // The worker's key survives the store, and counts among the device's roofs.
        const auto stored = Ceilings::fromJson(
            Ceilings::fromWorker(
                {{"dram_bytes_per_s", 1e12}, {"fp32_flops_per_s", 1e13}, {"tf32_tensor_flops_per_s", 2e14}},
                QStringLiteral("H200"))
                .toJson());
        QCOMPARE(stored.tf32TensorFlops, 2e14);
        QCOMPARE(stored.fastestFlops(), 2e14);
        QVERIFY(stored.summary().contains(QStringLiteral("tf32 tensor 200.00 TFLOP/s")));
        const auto hopper = Ceilings::fromJson(Ceilings::fromWorker({{"dram_bytes_per_s", 1e12},
                                                                     {"fp32_flops_per_s", 1e13},
                                                                     {"tf32_tensor_flops_per_s", 2e14},
                                                                     {"tf32_wgmma_flops_per_s", 3e14}},
                                                                    QStringLiteral("H200"))
                                                   .toJson());
        QCOMPARE(hopper.tf32WgmmaFlops, 3e14);
        QCOMPARE(hopper.fastestFlops(), 3e14);
        QVERIFY(hopper.hasWgmmaRoofs());
        QVERIFY2(hopper.summary().contains(QStringLiteral("tf32 tensor (mma.sync) 200.00 TFLOP/s"))
                     && hopper.summary().contains(QStringLiteral("tf32 tensor (wgmma) 300.00 TFLOP/s")),
                 qPrintable(hopper.summary()));
    }

    void tf32ReadFromTheCode() {
        QVERIFY(usesTf32TensorCores(
            QStringLiteral("asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, ...\");")));
        QVERIFY(usesTf32TensorCores(
            QStringLiteral("wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;\n"
                           "wmma::mma_sync(c, a, b, c);")));
        // Half-precision MMAs, a conversion without any MMA, and a comment are not TF32 tensor work.
        QVERIFY(!usesTf32TensorCores(
            QStringLiteral("asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, ...\");")));
        QVERIFY(!usesTf32TensorCores(QStringLiteral("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));")));
        QVERIFY(!usesTf32TensorCores(
            QStringLiteral("// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 would be faster\nx[0] = 1.0f;")));
        QVERIFY(!usesTf32TensorCores(QString()));
    }

    void instructionsReadFromTheCode() {
        QCOMPARE(tensorInstructionsOf(QString()), TensorInstructions::Unknown);
        QCOMPARE(tensorInstructionsOf(QStringLiteral("__global__ void k(float* x) { x[0] = 1.0f; }")),
                 TensorInstructions::None);
        QCOMPARE(tensorInstructionsOf(QStringLiteral(
                     "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, ...\");")),
                 TensorInstructions::MmaSync);
        QCOMPARE(tensorInstructionsOf(QStringLiteral("nvcuda::wmma::mma_sync(c, a, b, c);")),
                 TensorInstructions::MmaSync);
        QCOMPARE(tensorInstructionsOf(QStringLiteral("asm volatile(\"wgmma.mma_async.sync.aligned.m64n256k16...\");\n"
                                                     "asm volatile(\"mma.sync.aligned...\");")),
                 TensorInstructions::Wgmma);
        // A comment that mentions an instruction does not make the kernel use it.
        QCOMPARE(tensorInstructionsOf(QStringLiteral("// faster than wgmma.mma_async\n/* wgmma.mma_async */\n"
                                                     "asm volatile(\"mma.sync.aligned...\");")),
                 TensorInstructions::MmaSync);
    }

    void ceilingsFromTheWorker() {
        const auto c =
            Ceilings::fromWorker({{"dram_bytes_per_s", 3.9e12}, {"fp32_flops_per_s", 6.5e13}}, QStringLiteral("H200"));
        QVERIFY(c.valid());
        QCOMPARE(Ceilings::fromJson(c.toJson()).dramBytes, 3.9e12);
        QCOMPARE(Ceilings::fromJson(c.toJson()).device, QStringLiteral("H200"));
    }
};

QTEST_GUILESS_MAIN(TestRoofline)
#include "tst_roofline.moc"
