#include "launchplan.h"

#include <nlohmann/json.hpp>

#include <QTest>

using namespace kforge::spec;

namespace {

TaskSpec rowTask() {
    return *TaskSpec::fromJson(nlohmann::json::parse(R"({
      "name": "rows", "family": "reduction", "sizes": {"M": 33, "N": 1000},
      "scalars": {"eps": {"dtype": "float32", "value": 0.5}},
      "inputs": [{"name": "x", "dtype": "float32", "shape": ["M", "N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
      "outputs": [{"name": "y", "dtype": "float32", "shape": ["M"], "atol": 1e-3, "rtol": 1e-4}],
      "flops": "M * N", "bytes": "4 * M * N", "reference": {"opencl": "r.cl"}, "baseline": {"opencl": "b.cl"}})"),
                               "rows");
}

const char* kGood = R"(// kforge:param BLOCK in {64, 128, 256} = 128
// kforge:scratch partial float32 [M * cdiv(N, BLOCK)]
// kforge:launch row_partials grid=(M, cdiv(N, BLOCK)) block=(BLOCK, 1)
// kforge:launch row_finish grid=(M) block=(BLOCK)
/* a comment with __kernel void fake(int q) inside */
__kernel void row_partials(__global const float* restrict x, __global float* partial, int M, const int N) { }
__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void row_finish(__global const float* partial, __global float* y, int M, int N, float eps, int ROWS) { }
)";

} // namespace

class TestKernelFile : public QObject {
    Q_OBJECT
private slots:
    void parsesDirectivesAndSignatures() {
        auto kf = KernelFile::parse(kGood, Dialect::OpenCL);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->params.size(), 1u);
        QCOMPARE(kf->params[0].choices, (std::vector<std::int64_t>{64, 128, 256}));
        QCOMPARE(kf->params[0].value, 128);
        QCOMPARE(kf->scratch.size(), 1u);
        QCOMPARE(kf->launches.size(), 2u);
        QCOMPARE(kf->launches[0].grid.size(), 2u);
        QCOMPARE(kf->launches[0].grid[1], std::string("cdiv(N, BLOCK)"));
        QCOMPARE(kf->kernels.size(), 2u); // the commented-out "fake" kernel is not one
        const auto* partials = kf->findKernel("row_partials");
        QVERIFY(partials);
        QCOMPARE(partials->args.size(), 4u);
        QVERIFY(partials->args[0].pointer && partials->args[0].isConst);
        QCOMPARE(partials->args[0].elementType, std::string("float"));
        QCOMPARE(partials->args[3].elementType, std::string("int"));
        QCOMPARE(partials->line, 6);
        QCOMPARE(kf->findKernel("row_finish")->line, 7);
    }

    void parsesCudaSignatures() {
        const char* src = R"(// kforge:launch k grid=(cdiv(N, 256)) block=(256) smem=256*4
extern "C" __global__ void __launch_bounds__(256) k(const float* __restrict__ x, float* y, int N) {}
)";
        auto kf = KernelFile::parse(src, Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->kernels.at(0).args.size(), 3u);
        QCOMPARE(kf->launches.at(0).smem, std::string("256*4"));
    }

    void directiveErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("mentions");
        const QString kernel = QStringLiteral("\n__kernel void k(__global float* y) {}\n");
        QTest::newRow("no launch plan") << kernel << "no launch plan";
        QTest::newRow("unknown directive") << "// kforge:lunch k grid=(1) block=(1)" + kernel << "line 1: unknown directive 'kforge:lunch'";
        QTest::newRow("unknown kernel") << "// kforge:launch q grid=(1) block=(1)" + kernel << "line 1: launch names kernel 'q'";
        QTest::newRow("missing block") << "// kforge:launch k grid=(1)" + kernel << "needs both grid";
        QTest::newRow("too many dims") << "// kforge:launch k grid=(1,1,1,1) block=(1)" + kernel << "1 to 3 dimensions";
        QTest::newRow("unknown key") << "// kforge:launch k grid=(1) block=(1) stream=2" + kernel << "unknown key 'stream'";
        QTest::newRow("param syntax") << "// kforge:param B in 1,2 = 1\n// kforge:launch k grid=(1) block=(1)" + kernel << "line 1: param";
        QTest::newRow("param default not a choice") << "// kforge:param B in {1, 2} = 3\n// kforge:launch k grid=(1) block=(1)" + kernel
                                                    << "default 3 is not one of its choices";
        QTest::newRow("param twice") << "// kforge:param B = 1\n// kforge:param B = 2\n// kforge:launch k grid=(1) block=(1)" + kernel
                                     << "line 2: param B is declared twice";
        QTest::newRow("scratch dtype") << "// kforge:scratch t real [4]\n// kforge:launch k grid=(1) block=(1)" + kernel
                                       << "line 1: scratch t: unknown dtype 'real'";
        QTest::newRow("directive after code") << "int a; // kforge:launch k grid=(1) block=(1)" + kernel << "alone on its line";
    }
    void directiveErrors() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        QVERIFY(!kf.ok());
        QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
    }

    void resolvesPlan() {
        auto kf = KernelFile::parse(kGood, Dialect::OpenCL);
        // ROWS is not declared anywhere: resolution must name it.
        auto bad = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, DeviceLimits{});
        QVERIFY(!bad.ok());
        QVERIFY2(QString::fromStdString(bad.error()).contains(QStringLiteral("'ROWS' matches nothing")), bad.error().c_str());

        std::string src = kGood;
        src.replace(src.find(", int ROWS"), std::string(", int ROWS").size(), "");
        auto kf2 = KernelFile::parse(src, Dialect::OpenCL);
        QVERIFY(kf2.ok());
        auto plan = LaunchPlan::resolve(*kf2, rowTask(), rowTask().sizes, {{"BLOCK", 256}}, DeviceLimits{});
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
        QCOMPARE(plan->params.at("BLOCK"), 256);
        QCOMPARE(plan->defines, (std::vector<std::string>{"-DBLOCK=256"}));
        QCOMPARE(plan->scratch.at(0).count, 33u * 4u);
        const auto& first = plan->launches.at(0);
        QCOMPARE(first.dims, 2);
        QCOMPARE(first.grid[0], 33u);
        QCOMPARE(first.grid[1], 4u);
        QCOMPARE(first.block[0], 256u);
        QCOMPARE(first.args.at(0).kind, ArgBinding::Kind::Input);
        QCOMPARE(first.args.at(1).kind, ArgBinding::Kind::Scratch);
        QCOMPARE(first.args.at(3).kind, ArgBinding::Kind::Size);
        QCOMPARE(first.args.at(3).value, 1000.0);
        const auto& second = plan->launches.at(1);
        QCOMPARE(second.args.at(1).kind, ArgBinding::Kind::Output);
        QCOMPARE(second.args.at(4).kind, ArgBinding::Kind::Scalar);
        QCOMPARE(second.args.at(4).value, 0.5);
        QCOMPARE(second.args.size(), 5u);
    }

    void planErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("overrides"); // NAME=value or empty
        QTest::addColumn<QString>("mentions");
        QTest::newRow("param not a choice") << "// kforge:param B in {1, 2} = 1\n// kforge:launch k grid=(M) block=(B)\n__kernel void k(__global const float* x, __global float* y) {}"
                                            << "B=3" << "line 1: param B = 3 is not one of its declared choices";
        QTest::newRow("override undeclared") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
                                             << "Q=3" << "parameter 'Q' is not declared";
        QTest::newRow("block too large") << "// kforge:launch k grid=(M) block=(2048)\n__kernel void k(__global const float* x, __global float* y) {}"
                                         << "" << "block dimension 0 is 2048, the device allows at most 1024";
        QTest::newRow("block product too large") << "// kforge:launch k grid=(M, 1) block=(64, 32)\n__kernel void k(__global const float* x, __global float* y) {}"
                                                 << "" << "a block of 2048 threads exceeds the device's limit of 1024";
        QTest::newRow("fractional grid") << "// kforge:launch k grid=(N / 3) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
                                         << "" << "line 1: launch k: grid: 'N / 3' evaluates to";
        QTest::newRow("unknown size in grid") << "// kforge:launch k grid=(K) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
                                              << "" << "unknown name 'K'";
        QTest::newRow("input not const") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global float* x, __global float* y) {}"
                                         << "" << "line 2: kernel k: parameter 'x' is an input and must be declared const";
        QTest::newRow("wrong element type") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const int* x, __global float* y) {}"
                                            << "" << "'x' is int* but the buffer holds float32";
        QTest::newRow("buffer as value") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, float y) {}"
                                         << "" << "'y' names a buffer but is not a pointer";
        QTest::newRow("size as pointer") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, __global float* y, __global int* N) {}"
                                         << "" << "'N' names a value but is a pointer";
        QTest::newRow("output never written") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x) {}"
                                              << "" << "no launched kernel takes output 'y'";
        QTest::newRow("param shadows size") << "// kforge:param N = 4\n// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
                                            << "" << "line 1: param N has the name of one of the task's sizes";
        QTest::newRow("param as argument") << "// kforge:param B = 4\n// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, __global float* y, int B) {}"
                                           << "" << "'B' has the name of a kforge:param";
        QTest::newRow("smem on OpenCL") << "// kforge:launch k grid=(M) block=(1) smem=64\n__kernel void k(__global const float* x, __global float* y) {}"
                                        << "" << "smem= is not supported by this backend";
        QTest::newRow("vector loads allowed") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float4* x, __global float* y) {}"
                                              << "" << "";
    }
    void planErrors() {
        QFETCH(QString, source);
        QFETCH(QString, overrides);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        std::map<std::string, std::int64_t> o;
        if (!overrides.isEmpty())
            o[overrides.section(QLatin1Char('='), 0, 0).toStdString()] = overrides.section(QLatin1Char('='), 1).toLongLong();
        DeviceLimits limits;
        limits.maxSharedBytes = 0; // as on OpenCL
        auto plan = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, o, limits);
        if (mentions.isEmpty()) {
            QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
            return;
        }
        QVERIFY(!plan.ok());
        QVERIFY2(QString::fromStdString(plan.error()).contains(mentions), plan.error().c_str());
    }

    void stripsCommentsKeepingLines() {
        const std::string s = "a // x\n/* b\n c */ d \"// not\" e\n";
        const std::string out = stripComments(s);
        QCOMPARE(out.size(), s.size());
        QCOMPARE(std::count(out.begin(), out.end(), '\n'), 3);
        QVERIFY(out.find('x') == std::string::npos);
        QVERIFY(out.find('d') != std::string::npos);
        QVERIFY(out.find("not") == std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestKernelFile)
#include "tst_kernelfile.moc"
