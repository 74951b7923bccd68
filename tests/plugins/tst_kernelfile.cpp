#include "launchplan.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QDirIterator>
#include <QFile>
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

// A task for tensor maps: A is float16 [M, K], so a row of A is 16-byte aligned only when K is a
// multiple of 8 (the odd variant's K = 129 is not).
TaskSpec tmaTask() {
    return *TaskSpec::fromJson(nlohmann::json::parse(R"({
      "name": "tma", "family": "gemm", "sizes": {"M": 64, "K": 128}, "variants": {"odd": {"K": 129}},
      "inputs": [{"name": "A", "dtype": "float16", "shape": ["M", "K"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
      "outputs": [{"name": "C", "dtype": "float32", "shape": ["M", "K"], "atol": 1e-3, "rtol": 1e-3}],
      "flops": "M * K", "bytes": "6 * M * K", "reference": {"cuda": "r.cu"}, "baseline": {"cuda": "b.cu"}})"),
                               "tma");
}

const char* kTensorMapHeader = R"(struct __align__(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef CUtensorMap_st CUtensorMap;
)";

// A TMA kernel for aligned sizes and a plain one for the others; C is written only through tmC.
const char* kTma = R"(// kforge:param BM = 64
// kforge:param BK = 64
// kforge:tensormap tmA A box=(BM, BK) swizzle=128
// kforge:tensormap tmC C box=(BM, 32)
// kforge:tensormap tmUnused A box=(1, 8)
// kforge:launch k_tma grid=(cdiv(M, BM)) block=(128) when=mod(K, 8) == 0
// kforge:launch k_plain grid=(M) block=(128) when=mod(K, 8) != 0
struct __align__(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef CUtensorMap_st CUtensorMap;
extern "C" __global__ void k_tma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmC,
                                 const __grid_constant__ int K) {}
extern "C" __global__ void k_plain(const __half* A, float* C, int M, int K) {}
)";

DeviceLimits hopper() {
    DeviceLimits limits;
    limits.tensorMaps = true;
    limits.maxClusterBlocks = kPortableClusterBlocks;
    return limits;
}

// A CUDA kernel for rowTask(): x in, y out.
const char* kRowKernel = "__global__ void k(const float* x, float* y) {}\n";

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
        QTest::newRow("unknown directive") << QStringLiteral("// kforge:lunch k grid=(1) block=(1)") + kernel
                                           << "line 1: unknown directive 'kforge:lunch'";
        QTest::newRow("unknown kernel") << QStringLiteral("// kforge:launch q grid=(1) block=(1)") + kernel
                                        << "line 1: launch names kernel 'q'";
        QTest::newRow("missing block") << QStringLiteral("// kforge:launch k grid=(1)") + kernel << "needs both grid";
        QTest::newRow("too many dims") << QStringLiteral("// kforge:launch k grid=(1,1,1,1) block=(1)") + kernel
                                       << "1 to 3 dimensions";
        QTest::newRow("unknown key") << QStringLiteral("// kforge:launch k grid=(1) block=(1) stream=2") + kernel
                                     << "unknown key 'stream'";
        QTest::newRow("param syntax") << QStringLiteral(
                                             "// kforge:param B in 1,2 = 1\n// kforge:launch k grid=(1) block=(1)")
                                             + kernel
                                      << "line 1: param";
        QTest::newRow("param default not a choice")
            << QStringLiteral("// kforge:param B in {1, 2} = 3\n// kforge:launch k grid=(1) block=(1)") + kernel
            << "default 3 is not one of its choices";
        QTest::newRow("param twice")
            << QStringLiteral("// kforge:param B = 1\n// kforge:param B = 2\n// kforge:launch k grid=(1) block=(1)")
                   + kernel
            << "line 2: param B is declared twice";
        QTest::newRow("scratch dtype") << QStringLiteral(
                                              "// kforge:scratch t real [4]\n// kforge:launch k grid=(1) block=(1)")
                                              + kernel
                                       << "line 1: scratch t: unknown dtype 'real'";
        QTest::newRow("directive after code")
            << QStringLiteral("int a; // kforge:launch k grid=(1) block=(1)") + kernel << "alone on its line";
        const QString twoParams = QStringLiteral("// kforge:param TPR in {32, 64, 128} = 64\n"
                                                 "// kforge:param BLOCK in {32, 64, 128} = 128\n");
        const QString launch = QStringLiteral("// kforge:launch k grid=(1) block=(BLOCK)");
        QTest::newRow("require without a condition")
            << twoParams + QStringLiteral("// kforge:require\n") + launch + kernel
            << "line 3: require: expected a condition over the parameters";
        QTest::newRow("require names a size")
            << twoParams + QStringLiteral("// kforge:require TPR <= N\n") + launch + kernel
            << "line 3: require: 'TPR <= N': unknown name 'N' (known: BLOCK, TPR)";
        QTest::newRow("require does not parse")
            << twoParams + QStringLiteral("// kforge:require TPR <=\n") + launch + kernel
            << "line 3: require: 'TPR <='";
        QTest::newRow("require broken by the defaults")
            << twoParams + QStringLiteral("// kforge:require BLOCK <= TPR\n") + launch + kernel
            << "line 3: require 'BLOCK <= TPR' does not hold for the parameters' defaults (BLOCK=128, TPR=64)";
        QString many = twoParams;
        for (int i = 0; i < 17; ++i)
            many += QStringLiteral("// kforge:require TPR <= BLOCK\n");
        QTest::newRow("too many requirements")
            << many + launch + kernel << "line 19: require: more than 16 requirements";
    }
    void directiveErrors() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        QVERIFY(!kf.ok());
        QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
    }

    // `// kforge:require` is checked where a plan is resolved: values that break it name the line,
    // the condition and the values, and values that meet it resolve.
    void requirementsBindPlans() {
        const std::string src = "// kforge:param TPR in {32, 64, 128, 256} = 64\n"
                                "// kforge:param BLOCK in {64, 128, 256} = 128\n"
                                "// kforge:require TPR <= BLOCK\n"
                                "// kforge:require mod(BLOCK, TPR) == 0\n"
                                "// kforge:launch k grid=(cdiv(M, BLOCK / TPR)) block=(BLOCK)\n"
                                + std::string(kRowKernel);
        auto kf = KernelFile::parse(src, Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->requirements.size(), 2u);
        QCOMPARE(kf->requirements.at(0).condition, std::string("TPR <= BLOCK"));
        QCOMPARE(kf->requirements.at(1).line, 4);
        QVERIFY(!kf->brokenRequirement({}));
        QCOMPARE(kf->brokenRequirement({{"TPR", 256}}), &kf->requirements.at(0));

        auto ok = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {{"TPR", 128}, {"BLOCK", 256}}, DeviceLimits{});
        QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().c_str());
        QCOMPARE(ok->launches.at(0).grid[0], 17u);
        auto bad = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {{"TPR", 256}}, DeviceLimits{});
        QVERIFY(!bad.ok());
        QCOMPARE(QString::fromStdString(bad.error()),
                 QStringLiteral("line 3: require 'TPR <= BLOCK' does not hold for BLOCK=128, TPR=256"));
    }

    void resolvesPlan() {
        auto kf = KernelFile::parse(kGood, Dialect::OpenCL);
        // ROWS is not declared anywhere: resolution must name it.
        auto bad = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, DeviceLimits{});
        QVERIFY(!bad.ok());
        QVERIFY2(QString::fromStdString(bad.error()).contains(QStringLiteral("'ROWS' matches nothing")),
                 bad.error().c_str());

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
        QTest::newRow("param not a choice")
            << "// kforge:param B in {1, 2} = 1\n// kforge:launch k grid=(M) block=(B)\n__kernel void k(__global const "
               "float* x, __global float* y) {}"
            << "B=3"
            << "line 1: param B = 3 is not one of its declared choices";
        QTest::newRow("override undeclared")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
            << "Q=3"
            << "parameter 'Q' is not declared";
        QTest::newRow("block too large") << "// kforge:launch k grid=(M) block=(2048)\n__kernel void k(__global const "
                                            "float* x, __global float* y) {}"
                                         << ""
                                         << "block dimension 0 is 2048, the device allows at most 1024";
        QTest::newRow("block product too large") << "// kforge:launch k grid=(M, 1) block=(64, 32)\n__kernel void "
                                                    "k(__global const float* x, __global float* y) {}"
                                                 << ""
                                                 << "a block of 2048 threads exceeds the device's limit of 1024";
        QTest::newRow("fractional grid") << "// kforge:launch k grid=(N / 3) block=(1)\n__kernel void k(__global const "
                                            "float* x, __global float* y) {}"
                                         << ""
                                         << "line 1: launch k: grid: 'N / 3' evaluates to";
        QTest::newRow("unknown size in grid")
            << "// kforge:launch k grid=(K) block=(1)\n__kernel void k(__global const float* x, __global float* y) {}"
            << ""
            << "unknown name 'K'";
        QTest::newRow("input not const")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global float* x, __global float* y) {}"
            << ""
            << "line 2: kernel k: parameter 'x' is an input and must be declared const";
        QTest::newRow("wrong element type")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const int* x, __global float* y) {}"
            << ""
            << "'x' is int* but the buffer holds float32";
        QTest::newRow("buffer as value")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x, float y) {}"
            << ""
            << "'y' names a buffer but is not a pointer";
        QTest::newRow("size as pointer") << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const "
                                            "float* x, __global float* y, __global int* N) {}"
                                         << ""
                                         << "'N' names a value but is a pointer";
        QTest::newRow("output never written")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float* x) {}"
            << ""
            << "no launched kernel takes output 'y'";
        QTest::newRow("param shadows size") << "// kforge:param N = 4\n// kforge:launch k grid=(M) block=(1)\n__kernel "
                                               "void k(__global const float* x, __global float* y) {}"
                                            << ""
                                            << "line 1: param N has the name of one of the task's sizes";
        QTest::newRow("param as argument") << "// kforge:param B = 4\n// kforge:launch k grid=(M) block=(1)\n__kernel "
                                              "void k(__global const float* x, __global float* y, int B) {}"
                                           << ""
                                           << "'B' has the name of a kforge:param";
        QTest::newRow("smem on OpenCL") << "// kforge:launch k grid=(M) block=(1) smem=64\n__kernel void k(__global "
                                           "const float* x, __global float* y) {}"
                                        << ""
                                        << "smem= is not supported by this backend";
        QTest::newRow("vector loads allowed")
            << "// kforge:launch k grid=(M) block=(1)\n__kernel void k(__global const float4* x, __global float* y) {}"
            << ""
            << "";
    }
    void planErrors() {
        QFETCH(QString, source);
        QFETCH(QString, overrides);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        std::map<std::string, std::int64_t> o;
        if (!overrides.isEmpty())
            o[overrides.section(QLatin1Char('='), 0, 0).toStdString()] =
                overrides.section(QLatin1Char('='), 1).toLongLong();
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

    // ---- when= and tensor maps --------------------------------------------------------------------

    void parsesTensorMapsAndWhen() {
        auto kf = KernelFile::parse(kTma, Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->tensorMaps.size(), 3u);
        const TensorMapDecl& a = kf->tensorMaps[0];
        QCOMPARE(a.name, std::string("tmA"));
        QCOMPARE(a.buffer, std::string("A"));
        QCOMPARE(a.box, (std::vector<std::string>{"BM", "BK"}));
        QCOMPARE(a.swizzle, 128);
        QCOMPARE(a.line, 3);
        QCOMPARE(kf->tensorMaps[1].swizzle, 0);
        QCOMPARE(kf->launches.at(0).when, std::string("mod(K, 8) == 0"));
        QCOMPARE(kf->launches.at(1).when, std::string("mod(K, 8) != 0"));
        const KernelArg& tmA = kf->findKernel("k_tma")->args.at(0);
        QCOMPARE(tmA.elementType, std::string("CUtensorMap"));
        QVERIFY(tmA.gridConstant && tmA.isConst && !tmA.pointer);
        QCOMPARE(kf->findKernel("k_tma")->args.at(2).elementType, std::string("int"));
        QVERIFY(!kf->findKernel("k_plain")->args.at(0).gridConstant);

        // Conditions with parentheses, comparisons and further keys after them.
        auto kf2 = KernelFile::parse("// kforge:launch k grid=(1) block=(1) when=(M > 4) && (N == 3) smem=4\n"
                                     "// kforge:launch k grid=(1) block=(1) when=M >= 4 && N == 3\n"
                                     "__global__ void k(float* y) {}\n",
                                     Dialect::Cuda);
        QVERIFY2(kf2.ok(), kf2.ok() ? "" : kf2.error().c_str());
        QCOMPARE(kf2->launches.at(0).when, std::string("(M > 4) && (N == 3)"));
        QCOMPARE(kf2->launches.at(0).smem, std::string("4"));
        QCOMPARE(kf2->launches.at(1).when, std::string("M >= 4 && N == 3"));
    }

    void tensorMapDirectiveErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("mentions");
        const QString launch =
            QStringLiteral("// kforge:launch k grid=(1) block=(1)\n__global__ void k(float* C) {}\n");
        QTest::newRow("no box") << QStringLiteral("// kforge:tensormap t A swizzle=none\n") + launch
                                << "line 1: tensormap t: needs box=(...)";
        QTest::newRow("no buffer") << QStringLiteral("// kforge:tensormap t\n") + launch
                                   << "line 1: tensormap: expected 'NAME BUFFER box=";
        QTest::newRow("unknown key") << QStringLiteral("// kforge:tensormap t A box=(8, 8) fill=nan\n") + launch
                                     << "line 1: tensormap t: unknown key 'fill' (known: box, swizzle)";
        QTest::newRow("box twice") << QStringLiteral("// kforge:tensormap t A box=(8, 8) box=(8, 16)\n") + launch
                                   << "tensormap t: box= is given twice";
        QTest::newRow("bad swizzle") << QStringLiteral("// kforge:tensormap t A box=(8, 8) swizzle=16\n") + launch
                                     << "swizzle '16' is not one of none, 32, 64, 128";
        QTest::newRow("box of six") << QStringLiteral("// kforge:tensormap t A box=(1, 1, 1, 1, 1, 8)\n") + launch
                                    << "box has 6 dimensions; TMA takes 1 to 5";
        QTest::newRow("empty box extent")
            << QStringLiteral("// kforge:tensormap t A box=(8, )\n") + launch << "box has an empty dimension";
        QTest::newRow("box not parenthesised")
            << QStringLiteral("// kforge:tensormap t A box=8\n") + launch << "box needs a parenthesised list";
        QTest::newRow("declared twice")
            << QStringLiteral("// kforge:tensormap t A box=(8, 8)\n// kforge:tensormap t C box=(8, 8)\n") + launch
            << "line 2: tensormap t is declared twice";
        QTest::newRow("named like a param")
            << QStringLiteral("// kforge:param t = 4\n// kforge:tensormap t A box=(8, 8)\n") + launch
            << "line 2: tensormap t has the name of a kforge:param";
        QTest::newRow("named like scratch")
            << QStringLiteral("// kforge:scratch t float32 [4]\n// kforge:tensormap t A box=(8, 8)\n") + launch
            << "line 2: tensormap t has the name of a kforge:scratch buffer";
        QString many;
        for (int i = 0; i < 17; ++i)
            many += QStringLiteral("// kforge:tensormap t%1 A box=(8, 8)\n").arg(i);
        QTest::newRow("17 tensor maps") << many + launch << "line 17: tensormap t16: more than 16 tensor maps";
        QTest::newRow("when twice") << QStringLiteral("// kforge:launch k grid=(1) block=(1) when=1 when=0\n"
                                                      "__global__ void k(float* C) {}\n")
                                    << "line 1: launch k: when= is given twice";
        QTest::newRow("grid twice") << QStringLiteral("// kforge:launch k grid=(1) grid=(2) block=(1)\n"
                                                      "__global__ void k(float* C) {}\n")
                                    << "launch k: grid= is given twice";
        QTest::newRow("when without value") << QStringLiteral("// kforge:launch k grid=(1) block=(1) when=\n"
                                                              "__global__ void k(float* C) {}\n")
                                            << "launch k: when= has no value";
        QTest::newRow("unknown launch key lists when")
            << QStringLiteral("// kforge:launch k grid=(1) block=(1) if=1\n__global__ void k(float* C) {}\n")
            << "(known: grid, block, cluster, smem, when)";
    }
    void tensorMapDirectiveErrors() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::Cuda);
        QVERIFY(!kf.ok());
        QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
    }

    // One file, two sizes: the aligned default size runs the TMA kernel, the odd one the plain one.
    void whenSelectsLaunches() {
        auto kf = KernelFile::parse(kTma, Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        const TaskSpec task = tmaTask();

        auto aligned = LaunchPlan::resolve(*kf, task, task.sizes, {}, hopper());
        QVERIFY2(aligned.ok(), aligned.ok() ? "" : aligned.error().c_str());
        QCOMPARE(aligned->launches.size(), 1u);
        const ResolvedLaunch& l = aligned->launches[0];
        QCOMPARE(l.kernel, std::string("k_tma"));
        QCOMPARE(l.args.size(), 3u);
        QCOMPARE(l.args[0].kind, ArgBinding::Kind::TensorMap);
        QCOMPARE(l.args[1].kind, ArgBinding::Kind::TensorMap);
        QCOMPARE(l.args[2].kind, ArgBinding::Kind::Size);
        QCOMPARE(l.args[2].value, 128.0);
        // Only the maps a launch binds are resolved; tmUnused is not.
        QCOMPARE(aligned->tensorMaps.size(), 2u);
        const ResolvedTensorMap& a = aligned->tensorMaps[static_cast<std::size_t>(l.args[0].index)];
        QCOMPARE(a.name, std::string("tmA"));
        QCOMPARE(a.bufferKind, ArgBinding::Kind::Input);
        QCOMPARE(a.buffer, 0);
        QCOMPARE(a.bufferName, std::string("A"));
        QCOMPARE(a.dtype, DType::Float16);
        QCOMPARE(a.dims, (std::vector<std::uint64_t>{128, 64})); // innermost first
        QCOMPARE(a.strides, (std::vector<std::uint64_t>{256}));
        QCOMPARE(a.box, (std::vector<std::uint32_t>{64, 64}));
        QCOMPARE(a.swizzle, 128);
        QCOMPARE(a.line, 3);
        // The output is written only through its tensor map, which counts as writing it.
        const ResolvedTensorMap& c = aligned->tensorMaps[static_cast<std::size_t>(l.args[1].index)];
        QCOMPARE(c.bufferKind, ArgBinding::Kind::Output);
        QCOMPARE(c.dtype, DType::Float32);
        QCOMPARE(c.strides, (std::vector<std::uint64_t>{512}));
        QCOMPARE(c.box, (std::vector<std::uint32_t>{32, 64}));

        auto odd = LaunchPlan::resolve(*kf, task, *task.sizesFor("odd"), {}, hopper());
        QVERIFY2(odd.ok(), odd.ok() ? "" : odd.error().c_str());
        QCOMPARE(odd->launches.size(), 1u);
        QCOMPARE(odd->launches[0].kernel, std::string("k_plain"));
        QVERIFY(odd->tensorMaps.empty());

        // Without TMA only the sizes whose launch takes no tensor map resolve.
        auto noTma = LaunchPlan::resolve(*kf, task, task.sizes, {}, DeviceLimits{});
        QVERIFY(!noTma.ok());
        QVERIFY2(QString::fromStdString(noTma.error())
                     .contains(QStringLiteral("line 3: tensormap tmA: needs the tensor memory accelerator of a CUDA "
                                              "GPU of compute capability 9.0 or newer")),
                 noTma.error().c_str());
        QVERIFY(LaunchPlan::resolve(*kf, task, *task.sizesFor("odd"), {}, DeviceLimits{}).ok());
    }

    void tensorMapPlanErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("variant");
        QTest::addColumn<QString>("mentions"); // "" = resolves
        const QString head = QString::fromUtf8(kTensorMapHeader);
        const QString map = QStringLiteral("// kforge:tensormap tmA A box=(64, 64)\n");
        const QString launch = QStringLiteral("// kforge:launch k grid=(M) block=(128)\n");
        const QString kernel =
            QStringLiteral("extern \"C\" __global__ void k(const __grid_constant__ CUtensorMap tmA, float* C) {}\n");
        QTest::newRow("aligned") << map + launch + head + kernel << ""
                                 << "";
        QTest::newRow("unaligned rows")
            << map + launch + head + kernel << "odd"
            << "line 1: tensormap tmA over A: its rows are 258 bytes apart at these sizes (K = 129); TMA needs a "
               "multiple of 16 bytes: guard launch k (line 2) with when=mod(K, 8) == 0 and give the other sizes a "
               "launch without tensor maps";
        QTest::newRow("pointer parameter")
            << map + launch + head
                   + QStringLiteral("extern \"C\" __global__ void k(const CUtensorMap* tmA, float* C) {}\n")
            << ""
            << "line 5: kernel k: parameter 'tmA' names a tensormap but is a pointer";
        QTest::newRow("wrong type")
            << map + launch + head
                   + QStringLiteral("extern \"C\" __global__ void k(const __grid_constant__ int tmA, float* C) {}\n")
            << ""
            << "parameter 'tmA' names a tensormap but has type 'int'; declare it 'const __grid_constant__ CUtensorMap "
               "tmA'";
        QTest::newRow("without __grid_constant__")
            << map + launch + head
                   + QStringLiteral("extern \"C\" __global__ void k(const CUtensorMap tmA, float* C) {}\n")
            << ""
            << "is a CUtensorMap without __grid_constant__: TMA reads the descriptor through the parameter's address";
        QTest::newRow("scratch buffer") << QStringLiteral("// kforge:scratch s float32 [64]\n"
                                                          "// kforge:tensormap tmA s box=(16)\n")
                                               + launch + head + kernel
                                        << ""
                                        << "line 2: tensormap tmA over s: s is a scratch buffer";
        QTest::newRow("unknown buffer") << QStringLiteral("// kforge:tensormap tmA B box=(64, 64)\n") + launch + head
                                               + kernel
                                        << ""
                                        << "B is not one of the task's inputs or outputs (known: A, C)";
        QTest::newRow("rank mismatch") << QStringLiteral("// kforge:tensormap tmA A box=(64)\n") + launch + head
                                              + kernel
                                       << ""
                                       << "line 1: tensormap tmA: box has 1 dimensions but A has 2";
        QTest::newRow("box over 256") << QStringLiteral("// kforge:tensormap tmA A box=(512, 64)\n") + launch + head
                                             + kernel
                                      << ""
                                      << "box extent 0 ('512') is 512; TMA takes 1 to 256";
        QTest::newRow("box of zero") << QStringLiteral("// kforge:tensormap tmA A box=(64, 0)\n") + launch + head
                                            + kernel
                                     << ""
                                     << "box extent 1 ('0') is 0";
        QTest::newRow("inner box not 16 bytes")
            << QStringLiteral("// kforge:tensormap tmA A box=(64, 4)\n") + launch + head + kernel << ""
            << "the box's innermost extent is 4 elements of float16, 8 bytes; TMA "
               "needs a multiple of 16 bytes";
        QTest::newRow("swizzle too small")
            << QStringLiteral("// kforge:tensormap tmA A box=(64, 64) swizzle=64\n") + launch + head + kernel << ""
            << "with swizzle=64 it may be at most 64 bytes";
        QTest::newRow("box expression") << QStringLiteral("// kforge:tensormap tmA A box=(64, BQ)\n") + launch + head
                                               + kernel
                                        << ""
                                        << "line 1: tensormap tmA: box: 'BQ': unknown name 'BQ'";
        QTest::newRow("named like a size")
            << QStringLiteral("// kforge:tensormap K A box=(64, 64)\n") + launch + head + kernel << ""
            << "line 1: tensormap K has the name of one of the task's sizes";
        QTest::newRow("declared, never bound")
            << QStringLiteral("// kforge:tensormap tmB A box=(64, 64)\n// kforge:launch k grid=(M) block=(1)\n"
                              "__global__ void k(const __half* A, float* C) {}\n")
            << "odd"
            << "";
        QTest::newRow("no launch applies")
            << QStringLiteral("// kforge:launch k grid=(M) block=(1) when=K > 1000\n"
                              "__global__ void k(const __half* A, float* C) {}\n")
            << ""
            << "no launch of the plan applies at these sizes (K = 128, M = 64): line 1: launch k when=K > 1000";
        QTest::newRow("typo in a launch left out")
            << QStringLiteral("// kforge:launch k grid=(M) block=(1)\n// kforge:launch k grid=(cdiv(M, BQ)) block=(1) "
                              "when=0\n__global__ void k(const __half* A, float* C) {}\n")
            << ""
            << "line 2: launch k: grid: 'cdiv(M, BQ)': unknown name 'BQ'";
        QTest::newRow("bad when") << QStringLiteral("// kforge:launch k grid=(M) block=(1) when=mod(K)\n"
                                                    "__global__ void k(const __half* A, float* C) {}\n")
                                  << ""
                                  << "line 1: launch k: when: 'mod(K)'";
        QTest::newRow("output not written at odd sizes")
            << QStringLiteral("// kforge:launch k grid=(M) block=(1)\n// kforge:launch w grid=(M) block=(1) "
                              "when=mod(K, 8) == 0\n__global__ void k(const __half* A) {}\n"
                              "__global__ void w(float* C) {}\n")
            << "odd"
            << "no launched kernel takes output 'C'";
    }
    void tensorMapPlanErrors() {
        QFETCH(QString, source);
        QFETCH(QString, variant);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        const TaskSpec task = tmaTask();
        auto plan = LaunchPlan::resolve(*kf, task, *task.sizesFor(variant.toStdString()), {}, hopper());
        if (mentions.isEmpty()) {
            QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
            return;
        }
        QVERIFY(!plan.ok());
        QVERIFY2(QString::fromStdString(plan.error()).contains(mentions), plan.error().c_str());
    }

    // ---- thread block clusters (cluster=) --------------------------------------------------------

    void parsesAndResolvesClusters() {
        auto kf = KernelFile::parse(std::string("// kforge:param CL in {1, 2, 4} = 2\n"
                                                "// kforge:launch k grid=(round_up(M, CL), 4) block=(128, 1) "
                                                "cluster=(CL) smem=64 when=M > 1\n"
                                                "// kforge:launch k grid=(2, 4) block=(128, 1) cluster=(2, 2)\n"
                                                "// kforge:launch k grid=(M) block=(128) cluster = ( 1 )\n")
                                        + kRowKernel,
                                    Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->launches.at(0).cluster, (std::vector<std::string>{"CL"}));
        QCOMPARE(kf->launches.at(0).smem, std::string("64"));
        QCOMPARE(kf->launches.at(0).when, std::string("M > 1"));
        QCOMPARE(kf->launches.at(1).cluster, (std::vector<std::string>{"2", "2"}));
        QCOMPARE(kf->launches.at(2).cluster, (std::vector<std::string>{"1"}));

        auto plan = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, hopper());
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
        const ResolvedLaunch& first = plan->launches.at(0);
        QCOMPARE(first.grid, (std::array<std::uint64_t, 3>{34, 4, 1}));
        // A cluster with fewer dimensions than the grid has clusters of one block in the others.
        QCOMPARE(first.cluster, (std::array<std::uint64_t, 3>{2, 1, 1}));
        QCOMPARE(first.clusterBlocks(), 2u);
        QCOMPARE(first.smemBytes, 64u);
        QCOMPARE(plan->launches.at(1).cluster, (std::array<std::uint64_t, 3>{2, 2, 1}));
        QCOMPARE(plan->launches.at(1).clusterBlocks(), 4u);
        QCOMPARE(plan->launches.at(2).cluster, (std::array<std::uint64_t, 3>{1, 1, 1}));
        // No cluster= at all is a cluster of one block.
        auto plain =
            KernelFile::parse(std::string("// kforge:launch k grid=(M) block=(128)\n") + kRowKernel, Dialect::Cuda);
        QVERIFY(plain.ok());
        QVERIFY(plain->launches.at(0).cluster.empty());
        auto plainPlan = LaunchPlan::resolve(*plain, rowTask(), rowTask().sizes, {}, hopper());
        QVERIFY(plainPlan.ok());
        QCOMPARE(plainPlan->launches.at(0).cluster, (std::array<std::uint64_t, 3>{1, 1, 1}));
        QCOMPARE(plainPlan->launches.at(0).clusterBlocks(), 1u);

        // The parameter decides the cluster: 4 blocks, the grid rounded up to a multiple of 4.
        auto four = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {{"CL", 4}}, hopper());
        QVERIFY2(four.ok(), four.ok() ? "" : four.error().c_str());
        QCOMPARE(four->launches.at(0).grid[0], 36u);
        QCOMPARE(four->launches.at(0).cluster[0], 4u);
    }

    // A kernel compiled for a fixed cluster (__cluster_dims__, which may use parameters) binds like
    // any other; its launches run in that cluster without a cluster=.
    void parsesClusterDimsAttribute() {
        auto kf = KernelFile::parse("// kforge:param CX = 2\n"
                                    "// kforge:launch k grid=(round_up(M, CX)) block=(128)\n"
                                    "extern \"C\" __global__ void __cluster_dims__(CX, 1, 1) __launch_bounds__(128)\n"
                                    "    k(const float* x, float* y) {}\n",
                                    Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->kernels.size(), 1u);
        QCOMPARE(kf->kernels[0].name, std::string("k"));
        QCOMPARE(kf->kernels[0].args.size(), 2u);
        QVERIFY(LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, hopper()).ok());
    }

    // A backend without clusters (OpenCL, CUDA before compute capability 9.0) refuses a cluster of
    // more than one block, and takes cluster=(1) as no cluster.
    void clustersRefusedWithoutSupport() {
        DeviceLimits none; // maxClusterBlocks 0, as the OpenCL worker and pre-Hopper GPUs give
        QCOMPARE(none.maxClusterBlocks, 0u);
        auto kf = KernelFile::parse(std::string("// kforge:launch k grid=(34) block=(128) cluster=(2)\n") + kRowKernel,
                                    Dialect::Cuda);
        QVERIFY(kf.ok());
        auto plan = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, none);
        QVERIFY(!plan.ok());
        QCOMPARE(QString::fromStdString(plan.error()),
                 QStringLiteral("line 1: launch k: cluster=(2) is not supported by this backend (thread block clusters "
                                "need a CUDA GPU of compute capability 9.0 or newer; leave cluster= out, or give "
                                "cluster=(1))"));
        QVERIFY(LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, hopper()).ok());

        for (const char* one : {"cluster=(1)", "cluster=(1, 1)", "cluster=(2 - 1, 1, 1)"}) {
            auto ocl = KernelFile::parse(std::string("// kforge:launch k grid=(M, 1, 1) block=(64, 1, 1) ") + one
                                             + "\n__kernel void k(__global const float* x, __global float* y) {}\n",
                                         Dialect::OpenCL);
            QVERIFY2(ocl.ok(), ocl.ok() ? "" : ocl.error().c_str());
            DeviceLimits openCl;
            openCl.maxSharedBytes = 0;
            auto p = LaunchPlan::resolve(*ocl, rowTask(), rowTask().sizes, {}, openCl);
            QVERIFY2(p.ok(), p.ok() ? one : p.error().c_str());
            QCOMPARE(p->launches.at(0).clusterBlocks(), 1u);
        }
    }

    void clusterDirectiveErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("mentions");
        const QString kernel = QString::fromUtf8(kRowKernel);
        QTest::newRow("usage names cluster") << QStringLiteral("// kforge:launch (1)\n") + kernel
                                             << "line 1: launch: expected 'KERNEL grid=(...) block=(...) "
                                                "[cluster=(...)] [smem=BYTES] [when=CONDITION]'";
        QTest::newRow("cluster twice") << QStringLiteral("// kforge:launch k grid=(2) block=(1) cluster=(2) "
                                                         "cluster=(1)\n")
                                              + kernel
                                       << "line 1: launch k: cluster= is given twice";
        QTest::newRow("four dimensions") << QStringLiteral(
                                                "// kforge:launch k grid=(2) block=(1) cluster=(1, 1, 1, 2)\n")
                                                + kernel
                                         << "line 1: cluster needs 1 to 3 dimensions, e.g. cluster=(2)";
        QTest::newRow("empty cluster") << QStringLiteral("// kforge:launch k grid=(2) block=(1) cluster=()\n") + kernel
                                       << "line 1: cluster needs 1 to 3 dimensions";
        QTest::newRow("empty dimension") << QStringLiteral(
                                                "// kforge:launch k grid=(2, 2) block=(1, 1) cluster=(2, )\n")
                                                + kernel
                                         << "line 1: cluster has an empty dimension";
        QTest::newRow("unknown key lists cluster")
            << QStringLiteral("// kforge:launch k grid=(2) block=(1) clusters=(2)\n") + kernel
            << "unknown key 'clusters' (known: grid, block, cluster, smem, when)";
    }
    void clusterDirectiveErrors() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::Cuda);
        QVERIFY(!kf.ok());
        QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
    }

    void clusterPlanErrors_data() {
        QTest::addColumn<QString>("launch");   // the directive's keys after the kernel's name
        QTest::addColumn<QString>("mentions"); // "" = resolves
        QTest::newRow("grid not a multiple")
            << "grid=(M) block=(128) cluster=(4)"
            << "line 1: launch k: grid=(33) is not a multiple of cluster=(4) (dimension 0: 33 blocks in clusters of 4; "
               "round the grid up with round_up(..., 4) and have the kernel skip the extra blocks' work)";
        QTest::newRow("second dimension not a multiple")
            << "grid=(4, M) block=(32, 4) cluster=(2, 4)"
            << "line 1: launch k: grid=(4, 33) is not a multiple of cluster=(2, 4) (dimension 1: 33 blocks in "
               "clusters of 4";
        QTest::newRow("rounded up") << "grid=(round_up(M, 4)) block=(128) cluster=(4)"
                                    << "";
        QTest::newRow("portable size") << "grid=(8, 4) block=(32, 4) cluster=(4, 2)"
                                       << "";
        QTest::newRow("too many blocks")
            << "grid=(16, 4) block=(32, 4) cluster=(4, 4)"
            << "line 1: launch k: cluster=(4, 4) is 16 blocks per cluster; the device allows at most 8 (the portable "
               "cluster size)";
        QTest::newRow("one dimension too large")
            << "grid=(16) block=(32) cluster=(16)"
            << "cluster=(16) is 16 blocks per cluster; the device allows at most 8";
        QTest::newRow("overflowing product")
            << "grid=(1, 1, 1) block=(1, 1, 1) cluster=(2^31, 2^31, 2^31)"
            << "cluster=(2147483648, 2147483648, 2147483648) is more than 2^64 blocks per cluster";
        QTest::newRow("zero") << "grid=(M) block=(128) cluster=(0)"
                              << "line 1: launch k: cluster sizes must be positive (dimension 0 is 0)";
        QTest::newRow("negative") << "grid=(4, 4) block=(32, 4) cluster=(2, 1 - 3)"
                                  << "line 1: launch k: cluster sizes must be positive (dimension 1 is -2)";
        QTest::newRow("more dimensions than the grid") << "grid=(M) block=(128) cluster=(1, 2)"
                                                       << "line 1: launch k: cluster has 2 dimensions but grid has 1";
        QTest::newRow("unknown name") << "grid=(M) block=(128) cluster=(CL)"
                                      << "line 1: launch k: cluster: 'CL': unknown name 'CL'";
        QTest::newRow("fraction") << "grid=(M) block=(128) cluster=(N / 3)"
                                  << "line 1: launch k: cluster: 'N / 3' evaluates to";
        QTest::newRow("typo in a launch left out")
            << "grid=(M) block=(128) cluster=(CL) when=0\n// kforge:launch k grid=(M) block=(128)"
            << "line 1: launch k: cluster: 'CL': unknown name 'CL'";
        QTest::newRow("launch left out is not resolved")
            << "grid=(M) block=(128) cluster=(4) when=mod(M, 4) == 0\n// kforge:launch k grid=(M) block=(128)"
            << "";
    }
    void clusterPlanErrors() {
        QFETCH(QString, launch);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse("// kforge:launch k " + launch.toStdString() + "\n" + kRowKernel, Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        auto plan = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, hopper());
        if (mentions.isEmpty()) {
            QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
            return;
        }
        QVERIFY(!plan.ok());
        QVERIFY2(QString::fromStdString(plan.error()).contains(mentions), plan.error().c_str());
    }

    // ---- hostile input: bounded, non-recursive parsing -----------------------------------------

    void hostileSourcesGiveErrors_data() {
        QTest::addColumn<QByteArray>("source");
        QTest::addColumn<QString>("mentions");
        const QByteArray kernel = "\n__kernel void k(__global float* y) {}\n";
        QTest::newRow("100k-character directive")
            << "// kforge:launch k grid=(" + QByteArray(100000, '1') + ") block=(1)" + kernel
            << "line 1: the kforge: directive is";
        QTest::newRow("100k-character param")
            << "// kforge:param B in {" + QByteArray(100000, ' ') + "1} = 1" + kernel << "at most 4096";
        QByteArray oneLine = "__kernel void k(__global float* y) { int a = 0";
        while (oneLine.size() < 1000000)
            oneLine += " + a";
        oneLine += "; }";
        QTest::newRow("1 MB on one line") << oneLine << "no launch plan";
        QTest::newRow("over 1 MiB") << "// kforge:launch k grid=(1) block=(1)" + kernel + QByteArray(1100000, ' ')
                                    << "kernel files are limited to";
        QByteArray manyDirectives;
        for (int i = 0; i < 300; ++i)
            manyDirectives += "// kforge:launch k grid=(1) block=(1)\n";
        QTest::newRow("300 directives") << manyDirectives + kernel << "more than 64 launches";
        QByteArray manyParams;
        for (int i = 0; i < 40; ++i)
            manyParams += "// kforge:param P" + QByteArray::number(i) + " = 1\n";
        QTest::newRow("40 params") << manyParams + "// kforge:launch k grid=(1) block=(1)" + kernel
                                   << "more than 32 parameters";
        QByteArray choices = "// kforge:param B in {";
        for (int i = 0; i < 65; ++i)
            choices += QByteArray::number(i) + (i < 64 ? ", " : "");
        QTest::newRow("65 choices") << choices + "} = 1\n// kforge:launch k grid=(1) block=(1)" + kernel
                                    << "more than 64 choices";
        QByteArray product;
        for (int i = 0; i < 4; ++i)
            product += "// kforge:param P" + QByteArray::number(i)
                       + " in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17} = 1\n";
        QTest::newRow("choice product") << product + "// kforge:launch k grid=(1) block=(1)" + kernel
                                        << "combinations; at most 65536";
        QByteArray scratch;
        for (int i = 0; i < 17; ++i)
            scratch += "// kforge:scratch s" + QByteArray::number(i) + " float32 [4]\n";
        QTest::newRow("17 scratch") << scratch + "// kforge:launch k grid=(1) block=(1)" + kernel
                                    << "more than 16 scratch buffers";
        QTest::newRow("unclosed parameter list")
            << "// kforge:launch k grid=(1) block=(1)\n__kernel void k(" + QByteArray(200000, 'x')
            << "parameter list is not closed";
        QTest::newRow("nested heads") << "// kforge:launch k grid=(1) block=(1)\n"
                                             + QByteArray("__kernel void k(").repeated(20000)
                                      << "line 2: kernel k: parameter list is not closed";
        QTest::newRow("long identifier") << "// kforge:launch k grid=(1) block=(1)\n__kernel void "
                                                + QByteArray(500000, 'k') + "(int a) {}"
                                         << "launch names kernel 'k'";
        // Garbage: bytes of every value, deterministic.
        QByteArray garbage;
        std::uint32_t x = 12345;
        for (int i = 0; i < 200000; ++i) {
            x = x * 1664525u + 1013904223u;
            garbage += static_cast<char>(x >> 24);
        }
        QTest::newRow("garbage") << garbage << "";
        QTest::newRow("garbage after a plan") << "// kforge:launch k grid=(1) block=(1)\n" + garbage << "";
        QTest::newRow("unbalanced braces and quotes")
            << "// kforge:launch k grid=((((((1) block=(1)\n__kernel void k('\"/*" + kernel << "";
    }
    void hostileSourcesGiveErrors() {
        QFETCH(QByteArray, source);
        QFETCH(QString, mentions);
        for (Dialect d : {Dialect::OpenCL, Dialect::Cuda}) {
            auto kf = KernelFile::parse(source.toStdString(), d);
            QVERIFY(!kf.ok());
            if (!mentions.isEmpty() && d == Dialect::OpenCL)
                QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
            // The scanners used by the static checks survive the same input.
            checkPreprocessor(source.toStdString(), d, {});
            findKernelHeads(checkedCode(source.toStdString(), d), d);
        }
    }

    void deepExpressionsAreBounded() {
        const std::string deep = std::string(10000, '(') + "M" + std::string(10000, ')');
        const std::string src = "// kforge:launch k grid=(" + deep
                                + ") block=(1)\n__kernel void k(__global const float* x, __global float* y) {}\n";
        auto kf = KernelFile::parse(src, Dialect::OpenCL);
        QVERIFY(!kf.ok()); // the directive is longer than the limit
        const std::string deep30 = std::string(40, '(') + "M" + std::string(40, ')');
        auto kf2 =
            KernelFile::parse("// kforge:launch k grid=(" + deep30
                                  + ") block=(1)\n__kernel void k(__global const float* x, __global float* y) {}\n",
                              Dialect::OpenCL);
        QVERIFY2(kf2.ok(), kf2.ok() ? "" : kf2.error().c_str());
        auto plan = LaunchPlan::resolve(*kf2, rowTask(), rowTask().sizes, {}, DeviceLimits{});
        QVERIFY(!plan.ok());
        QVERIFY2(QString::fromStdString(plan.error()).contains(QStringLiteral("line 1: launch k: grid: ")),
                 plan.error().c_str());
        QVERIFY2(QString::fromStdString(plan.error()).contains(QStringLiteral("nest deeper than 32")),
                 plan.error().c_str());
    }

    // ---- limits and arithmetic in the launch plan -----------------------------------------------

    void planLimits_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("mentions");
        const QString k = QStringLiteral("\n__kernel void k(__global const float* x, __global float* y) {}");
        QTest::newRow("scratch wraps 2^64")
            << QStringLiteral(
                   "// kforge:scratch s float32 [4611686018427387904]\n// kforge:launch k grid=(1) block=(1)")
                   + k
            << "line 1: scratch s: 4611686018427387904 elements of float32 exceed the limit of 4 GiB";
        QTest::newRow("scratch over 4 GiB together")
            << QStringLiteral("// kforge:scratch a float32 [600000000]\n// kforge:scratch b float32 [600000000]\n"
                              "// kforge:launch k grid=(1) block=(1)")
                   + k
            << "line 2: scratch b: the scratch buffers need 4800000000 bytes";
        QTest::newRow("grid of 1e19 blocks")
            << QStringLiteral("// kforge:launch k grid=(10000000000000000000) block=(1)") + k
            << "line 1: launch k: grid";
        QTest::newRow("grid beyond the device") << QStringLiteral("// kforge:launch k grid=(4294967296) block=(1)") + k
                                                << "the device allows at most 2147483647";
        QTest::newRow("too much work") << QStringLiteral("// kforge:launch k grid=(2147483647, 65535) block=(1024, 1)")
                                              + k
                                       << "work items; at most 1099511627776";
        QTest::newRow("product overflow")
            << QStringLiteral("// kforge:launch k grid=(2147483647, 65535, 65535) block=(1024)") + k
            << "line 1: launch k: ";
    }
    void planLimits() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        auto plan = LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, DeviceLimits{});
        QVERIFY(!plan.ok());
        QVERIFY2(QString::fromStdString(plan.error()).contains(mentions), plan.error().c_str());
    }

    // ---- comment and literal blanking -----------------------------------------------------------

    void blanksWhatTheCompilerSkips_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("dialect");       // 0 OpenCL, 1 CUDA
        QTest::addColumn<QString>("visible");   // must survive blanking
        QTest::addColumn<QString>("invisible"); // must be blanked
        QTest::newRow("apostrophe in #if 0") << "#if 0\ndon't\n#endif\nint visible;\n"
                                             << 1 << "visible"
                                             << "don";
        QTest::newRow("raw string") << "auto s = R\"x(a \" /* b )\" c)x\"; int visible;\n"
                                    << 1 << "visible"
                                    << "c)x";
        QTest::newRow("raw string over lines") << "auto s = R\"(\n' \" // \n)\"; int visible;\n"
                                               << 1 << "visible"
                                               << "//";
        QTest::newRow("digit separators") << "int n = 1'000'000; int visible; char c = 'q';\n"
                                          << 1 << "visible"
                                          << "q";
        QTest::newRow("C has no digit separators") << "int n = 1'0'; int visible;\n"
                                                   << 0 << "visible"
                                                   << "0'";
        QTest::newRow("comment continued by backslash") << "// comment \\\nhidden\nint visible;\n"
                                                        << 1 << "visible"
                                                        << "hidden";
        QTest::newRow("comment start split by a splice") << "/\\\n/ hidden\nint visible;\n"
                                                         << 1 << "visible"
                                                         << "hidden";
        QTest::newRow("char literal ends at the line") << "char c = 'x;\nint visible;\n"
                                                       << 1 << "visible"
                                                       << "x;";
        QTest::newRow("prefixed literals") << "auto a = u8\"hid\"; auto b = L'h'; int visible;\n"
                                           << 1 << "visible"
                                           << "hid";
        QTest::newRow("escaped quote") << "auto a = \"x\\\" hidden\"; int visible;\n"
                                       << 0 << "visible"
                                       << "hidden";
    }
    void blanksWhatTheCompilerSkips() {
        QFETCH(QString, source);
        QFETCH(int, dialect);
        QFETCH(QString, visible);
        QFETCH(QString, invisible);
        const std::string src = source.toStdString();
        const std::string out = checkedCode(src, dialect ? Dialect::Cuda : Dialect::OpenCL);
        QCOMPARE(out.size(), src.size());
        QCOMPARE(std::count(out.begin(), out.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
        QVERIFY2(out.find(visible.toStdString()) != std::string::npos, out.c_str());
        QVERIFY2(out.find(invisible.toStdString()) == std::string::npos, out.c_str());
    }

    void decidesConditionals_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("regions"); // one letter per line: A active, I inactive, U undecided
        QTest::newRow("#if 0 / #else") << "#if 0\na\n#else\nb\n#endif\nc"
                                       << "AIAAAA";
        QTest::newRow("#if 1 / #elif") << "#if 1\na\n#elif 1\nb\n#else\nc\n#endif"
                                       << "AAAIAIA";
        QTest::newRow("own define") << "#define X 1\n#ifdef X\na\n#endif\n#if X == 2\nb\n#endif"
                                    << "AAAAAIA";
        QTest::newRow("undef") << "#define X\n#undef X\n#ifdef X\na\n#endif"
                               << "AAAIA";
        QTest::newRow("unknown name") << "#ifdef DECOY\na\n#else\nb\n#endif"
                                      << "AUAUA";
        QTest::newRow("unknown or true") << "#if defined(DECOY) || 1\na\n#endif"
                                         << "AAA";
        QTest::newRow("unknown and false") << "#if DECOY && 0\na\n#endif"
                                           << "AIA";
        QTest::newRow("compiler define") << "#ifdef __CUDA_ARCH__\na\n#endif\n#if __CUDA_ARCH__ >= 800\nb\n#endif"
                                         << "AAAAUA";
        QTest::newRow("nested in inactive") << "#if 0\n#if 1\na\n#endif\n#endif\nb"
                                            << "AIIIAA";
        QTest::newRow("deep expression") << QStringLiteral("#if ") + QString(200, QLatin1Char('('))
                                                + QStringLiteral("1") + QString(200, QLatin1Char(')'))
                                                + QStringLiteral("\na\n#endif")
                                         << "AUA";
        QTest::newRow("define in undecided") << "#ifdef DECOY\n#define Y 1\n#endif\n#if Y\na\n#endif"
                                             << "AUAAUA";
    }
    void decidesConditionals() {
        QFETCH(QString, source);
        QFETCH(QString, regions);
        const std::string code = stripComments(source.toStdString(), Dialect::Cuda);
        const auto lines = logicalLines(code);
        const auto r = conditionalRegions(lines, lines.back().lastLine, Dialect::Cuda);
        QString got;
        for (Region x : r)
            got += x == Region::Active ? QLatin1Char('A') : x == Region::Inactive ? QLatin1Char('I') : QLatin1Char('U');
        QCOMPARE(got, regions);
    }

    // ---- signatures come from active code only -------------------------------------------------

    void bindsOnlyActiveSignatures_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("mentions"); // "" = parses, and k's first argument is x
        const QString plan = QStringLiteral("// kforge:launch k grid=(M) block=(1)\n");
        const QString real = QStringLiteral("__kernel void k(__global const float* x, __global float* y) {}\n");
        const QString decoy = QStringLiteral("__kernel void k(__global float* y, __global const float* x) {}\n");
        QTest::newRow("decoy in #if 0") << plan + QStringLiteral("#if 0\n") + decoy + QStringLiteral("#endif\n") + real
                                        << "";
        QTest::newRow("decoy in #else of #if 1")
            << plan + QStringLiteral("#if 1\n") + real + QStringLiteral("#else\n") + decoy + QStringLiteral("#endif\n")
            << "";
        QTest::newRow("apostrophe does not hide the real one")
            << plan + QStringLiteral("#if 0\nit's\n#endif\n") + real << "";
        QTest::newRow("only in an undecidable region")
            << plan + QStringLiteral("#ifdef SOMETHING\n") + real + QStringLiteral("#endif\n") << "cannot decide";
        QTest::newRow("two active definitions") << plan + real + decoy << "kernel k is defined twice";
        QTest::newRow("declaration then definition")
            << plan + QStringLiteral("__kernel void k(__global const float* a, __global float* b);\n") + real << "";
        QTest::newRow("macro renames the head")
            << plan + QStringLiteral("#define void int\n") + real << "changes a kernel signature";
        QTest::newRow("macro renames a type")
            << plan + QStringLiteral("#define float int\n") + real << "line 2: #define float";
        QTest::newRow("macro body is no kernel")
            << plan + QStringLiteral("#define K __kernel void k(__global float* y, __global const float* x) {}\n")
                   + real
            << "";
        QTest::newRow("param named like a type")
            << QStringLiteral("// kforge:param float = 1\n") + plan + real << "param float";
    }
    void bindsOnlyActiveSignatures() {
        QFETCH(QString, source);
        QFETCH(QString, mentions);
        auto kf = KernelFile::parse(source.toStdString(), Dialect::OpenCL);
        if (!mentions.isEmpty()) {
            QVERIFY(!kf.ok());
            QVERIFY2(QString::fromStdString(kf.error()).contains(mentions), kf.error().c_str());
            return;
        }
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        QCOMPARE(kf->kernels.size(), 1u);
        QCOMPARE(kf->kernels[0].args.at(0).name, std::string("x"));
        QVERIFY(LaunchPlan::resolve(*kf, rowTask(), rowTask().sizes, {}, DeviceLimits{}).ok());
    }

    // ---- the preprocessor checks both static checks share ---------------------------------------

    void preprocessorChecks_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("line"); // 0: accepted
        QTest::addColumn<QString>("mentions");
        QTest::newRow("allowed header") << "#include <cuda_fp16.h>\n__global__ void k() {}\n" << 0 << "";
        QTest::newRow("pragma unroll") << "__global__ void k() {\n#pragma unroll 4\n for (;;) {} }\n" << 0 << "";
        QTest::newRow("_Pragma unroll") << "#define U _Pragma(\"unroll\")\n" << 0 << "";
        QTest::newRow("include in #if 0") << "#if 0\n#include <stdio.h>\n#endif\n" << 0 << "";
        QTest::newRow("include in undecidable #ifdef") << "#ifdef X\n#include <stdio.h>\n#endif\n" << 2 << "<stdio.h>";
        QTest::newRow("include after apostrophe in #if 0") << "#if 0\ndon't\n#endif\n#include <stdio.h>\n"
                                                           << 4 << "<stdio.h>";
        QTest::newRow("include joined by a splice") << "#inc\\\nlude <stdio.h>\n" << 1 << "<stdio.h>";
        QTest::newRow("include after a continued comment") << "// x \\\nstill comment\n#include </etc/passwd>\n"
                                                           << 3 << "/etc/passwd";
        QTest::newRow("macro include") << "#define H </etc/passwd>\n#include H\n" << 2 << "computed #include";
        QTest::newRow("quoted include") << "#include \"/etc/passwd\"\n" << 1 << "#include \"...\"";
        QTest::newRow("path up") << "#include <cuda/std/../../../../etc/passwd>\n" << 1 << "not an allowed header";
        QTest::newRow("include_next") << "#include_next <cuda_fp16.h>\n" << 1 << "#include_next";
        QTest::newRow("embed") << "#embed </etc/passwd>\n" << 1 << "#embed";
        QTest::newRow("has_include") << "#if __has_include(</etc/shadow>)\n#endif\n" << 1 << "__has_include";
        QTest::newRow("line") << "#line 1 \"/etc/passwd\"\n" << 1 << "#line";
        QTest::newRow("line marker") << "# 1 \"/etc/passwd\"\n" << 1 << "#line";
        QTest::newRow("digraph include") << "%:include </etc/passwd>\n" << 1 << "/etc/passwd";
        QTest::newRow("pragma dependency") << "#pragma GCC dependency \"/etc/passwd\"\n"
                                           << 1 << "#pragma is not allowed";
        QTest::newRow("_Pragma dependency") << "_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n" << 1 << "_Pragma";
        QTest::newRow("_Pragma by stringizing") << "#define P(x) _Pragma(#x)\n" << 1 << "_Pragma";
        QTest::newRow("unknown directive") << "#ident \"x\"\n" << 1 << "#ident is not allowed";
        QTest::newRow("trigraph") << "?\?=include <stdio.h>\n" << 1 << "trigraph";
        QTest::newRow("backslash space newline") << "// a \\ \n#include <stdio.h>\n"
                                                 << 1 << "backslash followed by blanks";
        QTest::newRow("raw string hides nothing") << "auto s = R\"(\n)\";\n#include <stdio.h>\n" << 3 << "<stdio.h>";
    }
    void preprocessorChecks() {
        QFETCH(QString, source);
        QFETCH(int, line);
        QFETCH(QString, mentions);
        IncludePolicy policy;
        policy.allowed = [](const std::string& h) { return h == "cuda_fp16.h"; };
        const auto found = checkPreprocessor(source.toStdString(), Dialect::Cuda, policy);
        if (line == 0) {
            QVERIFY2(found.empty(), found.empty() ? "" : found.front().message.c_str());
            return;
        }
        QVERIFY(!found.empty());
        QCOMPARE(found.front().line, line);
        QVERIFY2(QString::fromStdString(found.front().message).contains(mentions), found.front().message.c_str());
    }

    void honestKernelsPassTheChecks() {
        // Every kernel shipped with kforge parses and passes the shared preprocessor checks.
        const QString tasks = qEnvironmentVariable("KFORGE_TASKS_DIR");
        int checked = 0;
        for (const QString& dir :
             {tasks, tasks + QStringLiteral("/../resources/experts"), qEnvironmentVariable("KFORGE_TEST_KERNELS")}) {
            QDirIterator it(dir, {QStringLiteral("*.cl"), QStringLiteral("*.cu")}, QDir::Files,
                            QDirIterator::Subdirectories);
            while (it.hasNext()) {
                const QString path = it.next();
                QFile f(path);
                QVERIFY(f.open(QIODevice::ReadOnly));
                const std::string src = f.readAll().toStdString();
                // Integrity test kernels say what they expect; only those meant to pass are honest.
                const auto expected = src.find("expected status: ");
                if (expected != std::string::npos && src.compare(expected, 21, "expected status: pass") != 0)
                    continue;
                const Dialect d = path.endsWith(QStringLiteral(".cu")) ? Dialect::Cuda : Dialect::OpenCL;
                IncludePolicy policy;
                policy.allowed = [](const std::string& h) {
                    return h == "cuda_fp16.h" || h == "cuda_bf16.h" || h == "mma.h" || h == "math_constants.h"
                           || h == "stdint.h" || h == "cooperative_groups.h";
                };
                const auto found = checkPreprocessor(src, d, policy);
                QVERIFY2(found.empty(),
                         qPrintable(path + QStringLiteral(": ")
                                    + QString::fromStdString(found.empty() ? "" : found.front().message)));
                {
                    auto kf = KernelFile::parse(src, d);
                    QVERIFY2(kf.ok(), qPrintable(path + QStringLiteral(": ")
                                                 + QString::fromStdString(kf.ok() ? "" : kf.error())));
                }
                ++checked;
            }
        }
        QVERIFY(checked > 20);
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
