// The CUDA backend's parts that need no GPU: NVRTC compiles and their diagnostics, the cubin
// cache, static checks, launch-plan binding of CUDA kernel files, and behaviour without a driver.

#include "compilelog.h"
#include "cudabackend.h"
#include "cudastaticcheck.h"
#include "disassembly.h"

#include <nlohmann/json.hpp>

#include <QFile>

#include <QTemporaryDir>
#include <QTest>
#include <future>

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

bool driverPresent() {
    return QFile::exists(QStringLiteral("/proc/driver/nvidia/version"));
}

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

    // Module-scope memory (what a kernel could carry results in from one run to the next) is found
    // in the CUBIN, named variables and ones the kernel hides alike, and bounded.
    void moduleStateIsFoundAndBounded() {
        cuda::CudaBackend backend;
        const std::string small = "// kforge:launch k grid=(1) block=(1)\n"
                                  "namespace { __device__ int hidden[4]; }\n"
                                  "__device__ int* flag() { static __device__ int seen; return &seen; }\n"
                                  "__device__ float table[2] = {1.0f, 2.0f};\n"
                                  "extern \"C\" __global__ void k(float* y) { y[0] = table[*flag()] + hidden[1]; "
                                  "*flag() = 1; hidden[1] = 2; }\n";
        auto out = backend.compile(small, {}, "candidate");
        QVERIFY2(out.ok, out.log.c_str());
        QVERIFY2(out.rejection.empty(), out.rejection.c_str());
        auto* program = dynamic_cast<cuda::CudaProgram*>(out.program.get());
        QVERIFY(program);
        const auto sections = cuda::cubinGlobalSections(program->cubin());
        std::size_t bytes = 0, symbols = 0;
        bool sawStatic = false, sawHidden = false;
        for (const auto& section : sections) {
            QVERIFY2(section.name.rfind(".nv.global", 0) == 0, section.name.c_str());
            bytes += section.bytes;
            for (const auto& symbol : section.symbols) {
                ++symbols;
                QVERIFY(symbol.offset + symbol.bytes <= section.bytes);
                sawStatic = sawStatic || symbol.name.find("seen") != std::string::npos;
                sawHidden = sawHidden || symbol.name.find("hidden") != std::string::npos;
            }
        }
        QVERIFY2(bytes >= 4 * 4 + 4 + 2 * 4, std::to_string(bytes).c_str());
        QCOMPARE(symbols, std::size_t(3));
        QVERIFY(sawStatic);
        QVERIFY(sawHidden);
        // Restored before every run in the worker, not in another process: not portable.
        auto portable = backend.portableLaunches(*program, spec::LaunchPlan{});
        QVERIFY(!portable.ok());
        QVERIFY2(portable.error().find("module-scope") != std::string::npos, portable.error().c_str());

        // More than kforge restores before every run: rejected, naming the variable.
        const std::string big = "// kforge:launch k grid=(1) block=(1)\n"
                                "__device__ float cache[32768];\n"
                                "extern \"C\" __global__ void k(float* y) { y[0] = cache[0]; cache[0] = y[1]; }\n";
        auto rejected = backend.compile(big, {}, "candidate");
        QVERIFY2(rejected.ok, rejected.log.c_str());
        QVERIFY(rejected.rejection.find("131072 bytes") != std::string::npos);
        QVERIFY2(rejected.rejection.find("cache") != std::string::npos, rejected.rejection.c_str());

        // A malformed image is not a crash.
        QVERIFY(cuda::cubinGlobalSections("\x7f"
                                          "ELF garbage")
                    .empty());
        QVERIFY(cuda::cubinGlobalSections(std::string()).empty());
    }

    void compileErrorsNameTheLine() {
        cuda::CudaBackend backend;
        const std::string broken = "// kforge:launch k grid=(1) block=(1)\nextern \"C\" __global__ void k(float* "
                                   "y)\n{\n    y[0] = undeclared;\n}\n";
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
                return backend.compile(std::string(kValid) + "\n// variant " + std::to_string(i) + "\n",
                                       {"-DBLOCK=128"}, "candidate");
            }));
        for (auto& j : jobs)
            QVERIFY(j.get().ok);
    }

    void staticChecks_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("line"); // 0: no error expected
        QTest::addColumn<QString>("mentions");
        QTest::newRow("vendor header") << "// x\n#include <cublas_v2.h>\n" << 2 << "cublas_v2.h";
        QTest::newRow("quoted include") << "#include \"reference.cu\"\n" << 1 << "reference.cu";
        QTest::newRow("device launch") << "__global__ void k() {}\n__global__ void p() { k<<<1, 1>>>(); }\n"
                                       << 2 << "<<<";
        QTest::newRow("runtime api") << "__global__ void k(float* p) {\n  cudaMalloc(&p, 4);\n}\n" << 2 << "cudaMalloc";
        QTest::newRow("thrust") << "__global__ void k() { thrust::sort(); }\n" << 1 << "thrust";
        QTest::newRow("allowed headers")
            << "#include <cuda_fp16.h>\n#include <mma.h>\n#include <cub/block/block_reduce.cuh>\n"
            << 0 << "";
        QTest::newRow("inline ptx allowed") << "__global__ void k(int* p) { asm volatile(\"membar.gl;\"); }\n"
                                            << 0 << "";
        QTest::newRow("mention in comment") << "// cublas would be faster\n__global__ void k() {}\n" << 0 << "";
        QTest::newRow("include after apostrophe in #if 0") << "#if 0\nit's\n#endif\n#include </etc/passwd>\n"
                                                           << 4 << "/etc/passwd";
        QTest::newRow("raw string hides no include") << "const char* s = R\"(\n)\";\n#include </etc/passwd>\n"
                                                     << 3 << "/etc/passwd";
        QTest::newRow("digit separators") << "int n = 1'000;\n#include </etc/passwd>\n" << 2 << "/etc/passwd";
        QTest::newRow("spliced include") << "#inc\\\nlude </etc/passwd>\n" << 1 << "/etc/passwd";
        QTest::newRow("has_include") << "#if __has_include(</etc/passwd>)\n#endif\n" << 1 << "__has_include";
        QTest::newRow("line directive") << "#line 1 \"/etc/passwd\"\n" << 1 << "#line";
        QTest::newRow("vendor in undecidable branch") << "#ifdef NEVER\nvoid f() { cublasCreate(0); }\n#endif\n"
                                                      << 2 << "cublasCreate";
        QTest::newRow("vendor in #if 0") << "#if 0\nvoid f() { cublasCreate(0); }\n#endif\n" << 0 << "";
        QTest::newRow("long identifier") << QStringLiteral("__global__ void k() { int ")
                                                + QString(500000, QLatin1Char('a')) + QStringLiteral("; }\n")
                                         << 0 << "";
        QTest::newRow("many __host__") << QStringLiteral("__host__ ").repeated(100000) << 1 << "__host__";
    }
    void staticChecks() {
        QFETCH(QString, source);
        QFETCH(int, line);
        QFETCH(QString, mentions);
        const auto diags = cuda::staticCheckCuda(source.toStdString());
        const auto error =
            std::find_if(diags.begin(), diags.end(), [](const auto& d) { return d.severity == "error"; });
        if (line == 0) {
            QVERIFY2(error == diags.end(), error == diags.end() ? "" : error->message.c_str());
            return;
        }
        QVERIFY(error != diags.end());
        QCOMPARE(error->line, line);
        QVERIFY2(QString::fromStdString(error->message).contains(mentions), error->message.c_str());
        QCOMPARE(error->kind, std::string("integrity"));
    }

    // PTX with its source lines, and SASS where nvdisasm is installed, for a kernel under a task's
    // launch plan: the plan's parameters become the defines, as in an evaluation. No driver needed.
    void listsPtxAndSass() {
        const QString dir = qEnvironmentVariable("KFORGE_TASKS_DIR") + QStringLiteral("/vector_add");
        QFile taskFile(dir + QStringLiteral("/task.json"));
        QFile kernelFile(dir + QStringLiteral("/baseline.cu"));
        QVERIFY(taskFile.open(QIODevice::ReadOnly) && kernelFile.open(QIODevice::ReadOnly));
        auto task = spec::TaskSpec::fromJson(nlohmann::json::parse(taskFile.readAll().toStdString()), "task.json");
        QVERIFY2(task, task ? "" : task.error().c_str());
        protocol::DisassembleRequest request;
        request.task = *task;
        request.kernel.file = "baseline.cu";
        request.kernel.source = kernelFile.readAll().toStdString();
        request.arch = 90;
        cuda::CudaBackend backend;
        const auto listing = harness::disassemble(backend, request);
        QVERIFY2(listing.ok, listing.message.c_str());
        QCOMPARE(listing.arch.substr(0, 5), std::string("sm_90"));
        QVERIFY(listing.compiler.rfind("NVRTC ", 0) == 0);
        QVERIFY(listing.intermediate.find(".entry vector_add") != std::string::npos);
        // The body's first statement is line 10 of the file.
        QVERIFY2(listing.intermediate.find(".loc\t1 10 ") != std::string::npos, listing.intermediate.c_str());
        // Another block size is another program: BLOCK reaches the compiler as a define.
        request.kernel.params = {{"BLOCK", 128}};
        const auto other = harness::disassemble(backend, request);
        QVERIFY2(other.ok, other.message.c_str());
        QVERIFY(other.intermediate != listing.intermediate);
#ifdef KFORGE_VENV_NVDISASM
        const bool haveNvdisasm = true;
#else
        const bool haveNvdisasm = QFile::exists(QStringLiteral("/usr/local/cuda/bin/nvdisasm"));
#endif
        if (haveNvdisasm) {
            QCOMPARE(listing.machineTool, std::string("nvdisasm"));
            QVERIFY2(listing.machineCode.find("//## File \"") != std::string::npos, listing.machineCode.c_str());
            // The kernel's file is named without the worker's folder.
            QVERIFY2(listing.machineCode.find("//## File \"candidate.cu\", line 10") != std::string::npos,
                     listing.machineCode.c_str());
            QVERIFY(listing.machineCode.find("EXIT") != std::string::npos);
        } else if (listing.machineCode.empty()) {
            QVERIFY2(listing.machineCodeNote.find("nvdisasm") != std::string::npos, listing.machineCodeNote.c_str());
        }
        request.machineCode = false;
        QVERIFY(harness::disassemble(backend, request).machineCode.empty());

        // What is wrong is named: a launch plan the task does not fit, a kernel that does not compile.
        request.kernel.params.clear();
        request.kernel.source = "// kforge:launch vector_add grid=(cdiv(M, 256)) block=(256)\n"
                                "extern \"C\" __global__ void vector_add(float* z, int M) {}\n";
        const auto unfit = harness::disassemble(backend, request);
        QVERIFY(!unfit.ok);
        QVERIFY2(unfit.message.find("baseline.cu") != std::string::npos && unfit.message.find("M") != std::string::npos,
                 unfit.message.c_str());
        request.kernel.source = "// kforge:launch vector_add grid=(1) block=(32)\n"
                                "extern \"C\" __global__ void vector_add(const float* x, const float* y, float* z, "
                                "int N) { undeclared = 1; }\n";
        const auto broken = harness::disassemble(backend, request);
        QVERIFY(!broken.ok);
        QVERIFY2(broken.message.find("does not compile") != std::string::npos
                     && broken.log.find("undeclared") != std::string::npos,
                 broken.message.c_str());
        if (!driverPresent()) {
            request.arch = 0; // the device's: there is none
            const auto noDevice = harness::disassemble(backend, request);
            QVERIFY(!noDevice.ok);
            QVERIFY2(noDevice.message.find("name the target") != std::string::npos, noDevice.message.c_str());
        }
    }

    void paramNamedLikeATemplateArgument() {
        // A -DT=128 on the command line would rewrite the templates of cuda_fp16.h; the defines go
        // after the kernel's includes instead, and the kernel's line numbers stay its own.
        const std::string src = "// kforge:param T = 128\n"
                                "// kforge:launch k grid=(cdiv(N, T)) block=(T)\n"
                                "#include <cuda_fp16.h>\n"
                                "extern \"C\" __global__ void k(const __half* x, __half* y, int N)\n"
                                "{\n"
                                "    const int i = blockIdx.x * T + threadIdx.x;\n"
                                "    if (i < N) y[i] = __hadd(x[i], x[i]);\n"
                                "}\n";
        QCOMPARE(cuda::staticCheckCuda(src).size(), 0u);
        cuda::CudaBackend backend;
        auto out = backend.compile(src, {"-DT=128"}, "candidate");
        QVERIFY2(out.ok, out.log.c_str());
        const std::string broken = src.substr(0, src.rfind('}')) + "    undeclared_name = 1;\n}\n";
        auto bad = backend.compile(broken, {"-DT=128"}, "candidate");
        QVERIFY(!bad.ok);
        const auto diags = harness::parseCompileLog(bad.log, "candidate");
        QVERIFY2(!diags.empty(), bad.log.c_str());
        QCOMPARE(diags.front().line, 8);
        const std::string prologue = cuda::withDefines(src, {"-DT=128"});
        QVERIFY(prologue.find("#include <cuda_fp16.h>\n#define T 128\n#line 4\n") != std::string::npos);
    }

    // The TMA kernel file kforge-gpucheck runs (tests/kernels/tensormap): it declares CUtensorMap
    // itself (NVRTC cannot include cuda.h), passes the static checks, resolves at the aligned size
    // with tensor maps over its input and output, and NVRTC builds its bulk tensor copies for Hopper.
    void tensorMapKernelCompiles() {
        const QString dir = qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/tensormap");
        QFile file(dir + QStringLiteral("/tile_add_tma.cu"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const std::string src = file.readAll().toStdString();
        for (const auto& d : cuda::staticCheckCuda(src))
            QVERIFY2(d.severity != "error", d.message.c_str());
        auto task = spec::loadTaskDir(dir.toStdString());
        QVERIFY2(task.ok(), task.ok() ? "" : task.error().c_str());
        auto kf = spec::KernelFile::parse(src, spec::Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        spec::DeviceLimits hopper;
        hopper.tensorMaps = true;
        auto plan = spec::LaunchPlan::resolve(*kf, task->spec, task->spec.sizes, {}, hopper);
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
        QCOMPARE(plan->launches.size(), 1u);
        QCOMPARE(plan->launches[0].kernel, std::string("tile_add_tma"));
        QCOMPARE(plan->tensorMaps.size(), 2u);
        auto odd = spec::LaunchPlan::resolve(*kf, task->spec, *task->spec.sizesFor("odd"), {}, hopper);
        QVERIFY2(odd.ok(), odd.ok() ? "" : odd.error().c_str());
        QCOMPARE(odd->launches[0].kernel, std::string("tile_add_plain"));

        cuda::CudaBackend backend;
        if (driverPresent() && backend.open(0).ok() && backend.computeCapability() < 90)
            QSKIP("the GPU here is older than Hopper; the kernel needs sm_90");
        auto out = backend.compile(src, plan->defines, "candidate");
        QVERIFY2(out.ok, out.log.c_str());
        auto* program = dynamic_cast<cuda::CudaProgram*>(out.program.get());
        QVERIFY(program);
        QVERIFY2(program->arch().rfind("sm_9", 0) == 0 || program->arch().rfind("sm_1", 0) == 0,
                 program->arch().c_str());

        // Tensor maps go to another process as the encoding's arguments for its own tensors, the
        // launch's argument naming the map: the same layout, box and swizzle the worker encodes.
        auto tma = backend.portableLaunches(*program, *plan);
        QVERIFY2(tma.ok(), tma.ok() ? "" : tma.error().c_str());
        const auto& maps = (*tma)["tensor_maps"];
        QCOMPARE(maps.size(), 2u);
        QCOMPARE(maps[0]["input"].get<int>(), 0);
        QCOMPARE(maps[1]["output"].get<int>(), 0);
        QCOMPARE(maps[0]["name"].get<std::string>(), std::string("tmX"));
        QVERIFY2(maps[0]["dims"] == nlohmann::json::array({1000, 300}), maps[0].dump().c_str());
        QVERIFY2(maps[0]["strides"] == nlohmann::json::array({4000}), maps[0].dump().c_str());
        QVERIFY2(maps[0]["box"] == nlohmann::json::array({32, 16}), maps[0].dump().c_str());
        QCOMPARE(maps[0]["element_bytes"].get<int>(), 4);
        QCOMPARE(maps[0]["data_type"].get<int>(), static_cast<int>(CU_TENSOR_MAP_DATA_TYPE_FLOAT32));
        QCOMPARE(maps[0]["swizzle"].get<int>(), static_cast<int>(CU_TENSOR_MAP_SWIZZLE_NONE));
        QCOMPARE(maps[0]["l2_promotion"].get<int>(), static_cast<int>(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
        QVERIFY2((*tma)["launches"][0]["args"] == nlohmann::json::parse(R"([{"tensor_map": 0}, {"tensor_map": 1}])"),
                 (*tma)["launches"][0].dump().c_str());
        QVERIFY(!(*tma)["launches"][0].contains("cluster"));
        // The odd sizes' plain kernel it can: the image, the kernel's symbol, its extents and its
        // arguments (buffers by task index, the size's bytes).
        auto plain = backend.portableLaunches(*program, *odd);
        QVERIFY2(plain.ok(), plain.ok() ? "" : plain.error().c_str());
        QCOMPARE((*plain)["image"].get<std::string>().size(), 2 * program->cubin().size());
        QVERIFY((*plain)["scratch"].empty());
        QCOMPARE((*plain)["launches"].size(), 1u);
        const auto& l = (*plain)["launches"][0];
        QCOMPARE(l["function"].get<std::string>(), program->loweredName("tile_add_plain"));
        QVERIFY2(l["grid"] == nlohmann::json::array({1, 67, 1}), l.dump().c_str());
        QVERIFY2(l["block"] == nlohmann::json::array({256, 1, 1}), l.dump().c_str());
        QCOMPARE(l["smem"].get<int>(), 0);
        QVERIFY2(l["args"] == nlohmann::json::parse(R"([{"input": 0}, {"output": 0}, {"bytes": "81000000"}])"),
                 l.dump().c_str());
    }

    // The cluster kernel file kforge-gpucheck runs (tests/kernels/cluster): it passes the static
    // checks, binds to vector_add at every size with clusters of two blocks on a grid of a multiple
    // of two, is refused where the device has no clusters, and NVRTC builds its cluster special
    // registers, barriers and distributed shared memory loads for Hopper.
    void clusterKernelCompiles() {
        QFile file(qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/cluster/vector_add_cluster.cu"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const std::string src = file.readAll().toStdString();
        for (const auto& d : cuda::staticCheckCuda(src))
            QVERIFY2(d.severity != "error", d.message.c_str());
        auto task = spec::loadTaskDir(qEnvironmentVariable("KFORGE_TASKS_DIR").toStdString() + "/vector_add");
        QVERIFY2(task.ok(), task.ok() ? "" : task.error().c_str());
        auto kf = spec::KernelFile::parse(src, spec::Dialect::Cuda);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        spec::DeviceLimits hopper;
        hopper.maxClusterBlocks = spec::kPortableClusterBlocks;
        for (const auto& variant : task->spec.variantNames()) {
            auto plan = spec::LaunchPlan::resolve(*kf, task->spec, *task->spec.sizesFor(variant), {}, hopper);
            QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
            const auto& l = plan->launches.at(0);
            QCOMPARE(l.cluster, (std::array<std::uint64_t, 3>{2, 1, 1}));
            QCOMPARE(l.grid[0] % 2, 0u);
            QVERIFY(l.grid[0] * l.block[0] >= static_cast<std::uint64_t>(task->spec.sizesFor(variant)->at("N")));
        }
        auto refused = spec::LaunchPlan::resolve(*kf, task->spec, task->spec.sizes, {}, spec::DeviceLimits{});
        QVERIFY(!refused.ok());
        QVERIFY2(refused.error().find("cluster=(2) is not supported by this backend") != std::string::npos,
                 refused.error().c_str());

        cuda::CudaBackend backend;
        if (driverPresent() && backend.open(0).ok() && backend.computeCapability() < 90)
            QSKIP("the GPU here is older than Hopper; the kernel needs sm_90");
        auto plan = spec::LaunchPlan::resolve(*kf, task->spec, task->spec.sizes, {}, hopper);
        auto out = backend.compile(src, plan->defines, "candidate");
        QVERIFY2(out.ok, out.log.c_str());
        // Another process launches it with the same cluster (cuLaunchKernelEx there too).
        auto portable = backend.portableLaunches(*out.program, *plan);
        QVERIFY2(portable.ok(), portable.ok() ? "" : portable.error().c_str());
        QVERIFY2((*portable)["launches"][0]["cluster"] == nlohmann::json::array({2, 1, 1}),
                 (*portable)["launches"][0].dump().c_str());
    }

    void compileLogQuotesOnlyTheKernel() {
        const std::string log = "candidate.cu(4): error: identifier \"q\" is undefined\n"
                                "      y[0] = q;\n"
                                "             ^\n"
                                "\n"
                                "/etc/shadow(1): error: expected a declaration\n"
                                "  root:$6$secret:19000:0:99999:7:::\n"
                                "  ^\n"
                                "\n"
                                "2 errors detected in the compilation of \"candidate.cu\".\n";
        const std::string kept =
            harness::filterCompileLog(log, [](const std::string& f) { return f == "candidate.cu"; });
        QVERIFY2(kept.find("secret") == std::string::npos, kept.c_str());
        QVERIFY(kept.find("/etc/shadow") == std::string::npos);
        QVERIFY(kept.find("identifier \"q\"") != std::string::npos);
        QVERIFY(kept.find("1 message about files other than the kernel's own left out") != std::string::npos);
    }

    void tensorMapFaultsExplained() {
        // A TMA copy started off 16 bytes faults as an illegal instruction; the message says where to look,
        // only for plans that have tensor maps and only for that error.
        const std::string hint = cuda::deviceFaultHint(CUDA_ERROR_ILLEGAL_INSTRUCTION, 1);
        QVERIFY(hint.rfind("; ", 0) == 0);
        QVERIFY(hint.find("tensor maps") != std::string::npos);
        QVERIFY(hint.find("multiple of 16 bytes") != std::string::npos);
        QVERIFY(cuda::deviceFaultHint(CUDA_ERROR_ILLEGAL_INSTRUCTION, 0).empty());
        QVERIFY(cuda::deviceFaultHint(CUDA_ERROR_ILLEGAL_ADDRESS, 2).empty());
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
