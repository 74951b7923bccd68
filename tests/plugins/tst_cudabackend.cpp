// The CUDA backend's parts that need no GPU: NVRTC compiles and their diagnostics, the cubin
// cache, static checks, launch-plan binding of CUDA kernel files, and behaviour without a driver.

#include "compilelog.h"
#include "cudabackend.h"
#include "cudastaticcheck.h"

#include <QFile>

#include <future>
#include <QTemporaryDir>
#include <QTest>

using namespace kforge;

namespace {

const char* kValid = R"(// kforge:param BLOCK in {128, 256} = 256
// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void scale(const float* x, float* y, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        y[i] = 2.0f * x[i];
}
)";

bool driverPresent() { return QFile::exists(QStringLiteral("/proc/driver/nvidia/version")); }

} // namespace

class TestCudaBackend : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        // A private cubin cache, so that the first compile below is cold.
        QVERIFY(m_cache.isValid());
        qputenv("KFORGE_CACHE_DIR", m_cache.path().toLocal8Bit());
    }

    void compilesWithoutDriverAndCaches() {
        cuda::CudaBackend backend;
        auto first = backend.compile(kValid, {"-DBLOCK=256"}, "candidate");
        QVERIFY2(first.ok, first.log.c_str());
        QVERIFY(first.program != nullptr);
        QCOMPARE(first.resources.at("cache_hit"), 0.0);
        auto second = backend.compile(kValid, {"-DBLOCK=256"}, "candidate");
        QVERIFY(second.ok);
        QCOMPARE(second.resources.at("cache_hit"), 1.0);
        // Other defines are another program.
        auto other = backend.compile(kValid, {"-DBLOCK=128"}, "candidate");
        QVERIFY(other.ok);
        QCOMPARE(other.resources.at("cache_hit"), 0.0);
    }

    void compileErrorsNameTheLine() {
        cuda::CudaBackend backend;
        const std::string broken = "// kforge:launch k grid=(1) block=(1)\nextern \"C\" __global__ void k(float* y)\n{\n    y[0] = undeclared;\n}\n";
        auto out = backend.compile(broken, {}, "candidate");
        QVERIFY(!out.ok);
        const auto diags = harness::parseCompileLog(out.log, "candidate");
        QVERIFY2(!diags.empty(), out.log.c_str());
        QCOMPARE(diags.front().line, 4);
        QCOMPARE(diags.front().severity, std::string("error"));
        QVERIFY(QString::fromStdString(diags.front().message).contains(QStringLiteral("undeclared")));
    }

    void concurrentCompiles() {
        cuda::CudaBackend backend;
        std::vector<std::future<harness::CompileOutput>> jobs;
        for (int i = 0; i < 3; ++i)
            jobs.push_back(std::async(std::launch::async, [&backend, i] {
                return backend.compile(std::string(kValid) + "\n// variant " + std::to_string(i) + "\n", {"-DBLOCK=128"}, "candidate");
            }));
        for (auto& j : jobs)
            QVERIFY(j.get().ok);
    }

    void staticChecks_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("line");      // 0: no error expected
        QTest::addColumn<QString>("mentions");
        QTest::newRow("vendor header") << "// x\n#include <cublas_v2.h>\n" << 2 << "cublas_v2.h";
        QTest::newRow("quoted include") << "#include \"reference.cu\"\n" << 1 << "reference.cu";
        QTest::newRow("device launch") << "__global__ void k() {}\n__global__ void p() { k<<<1, 1>>>(); }\n" << 2 << "<<<";
        QTest::newRow("runtime api") << "__global__ void k(float* p) {\n  cudaMalloc(&p, 4);\n}\n" << 2 << "cudaMalloc";
        QTest::newRow("thrust") << "__global__ void k() { thrust::sort(); }\n" << 1 << "thrust";
        QTest::newRow("allowed headers") << "#include <cuda_fp16.h>\n#include <mma.h>\n#include <cub/block/block_reduce.cuh>\n" << 0 << "";
        QTest::newRow("inline ptx allowed") << "__global__ void k(int* p) { asm volatile(\"membar.gl;\"); }\n" << 0 << "";
        QTest::newRow("mention in comment") << "// cublas would be faster\n__global__ void k() {}\n" << 0 << "";
    }
    void staticChecks() {
        QFETCH(QString, source);
        QFETCH(int, line);
        QFETCH(QString, mentions);
        const auto diags = cuda::staticCheckCuda(source.toStdString());
        const auto error = std::find_if(diags.begin(), diags.end(), [](const auto& d) { return d.severity == "error"; });
        if (line == 0) {
            QVERIFY2(error == diags.end(), error == diags.end() ? "" : error->message.c_str());
            return;
        }
        QVERIFY(error != diags.end());
        QCOMPARE(error->line, line);
        QVERIFY2(QString::fromStdString(error->message).contains(mentions), error->message.c_str());
        QCOMPARE(error->kind, std::string("integrity"));
    }

    void withoutDriver() {
        if (driverPresent())
            QSKIP("an NVIDIA driver is present; this checks the behaviour without one");
        cuda::CudaBackend backend;
        const auto probe = backend.probe();
        QVERIFY(!probe.available);
        QVERIFY(!probe.problems.empty());
        QVERIFY(QString::fromStdString(probe.problems.front()).contains(QStringLiteral("no NVIDIA driver")));
        const auto open = backend.open(0);
        QVERIFY(!open.ok());
        QVERIFY(QString::fromStdString(open.error()).contains(QStringLiteral("no NVIDIA driver")));
    }

private:
    QTemporaryDir m_cache;
};

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "tst_cudabackend.moc"
