// The expert library: the built-in experts load, parse and bind to the tasks they name at every
// size variant and every parameter combination; broken files are reported with file and line and
// skipped; user folders add (and override) experts.

#include "diagnose/roofline.h"
#include "launchplan.h"
#include "propose/expertlibrary.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <filesystem>
#include <map>

using namespace kforge;
using propose::Expert;
using propose::ExpertLibrary;

namespace {

QString builtInRoot() {
    return util::ResourceLocator::find(QStringLiteral("experts"));
}

void writeFile(const QString& path, const QByteArray& data) {
    QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
    f.write(data);
}

// A minimal valid OpenCL expert for the softmax task (x -> y by rows).
QByteArray openClExpert(const QByteArray& name, const QByteArray& tasks = "softmax") {
    return "// expert:name " + name
           + "\n"
             "// expert:tasks "
           + tasks
           + "\n"
             "// expert:pattern a test pattern\n"
             "// kforge:param BLOCK in {32, 64} = 64\n"
             "// kforge:launch softmax grid=(M) block=(BLOCK)\n"
             "__kernel void softmax(__global const float* x, __global float* y, int N) { }\n";
}

QByteArray cudaExpert(const QByteArray& name) {
    return "// expert:name " + name
           + "\n"
             "// expert:tasks softmax\n"
             "// expert:pattern a test pattern\n"
             "// kforge:launch softmax grid=(M) block=(128)\n"
             "extern \"C\" __global__ void softmax(const float* x, float* y, int N) { }\n";
}

QStringList names(const QList<Expert>& experts) {
    QStringList out;
    for (const auto& e : experts)
        out << e.family + QLatin1Char('/') + e.name + QLatin1Char('.') + model::backendName(e.backend);
    return out;
}

// Every combination of the declared choices that the file's requirements allow (fixed parameters
// keep their value), so that the tuner can never propose a configuration that does not even launch.
std::vector<std::map<std::string, std::int64_t>> allConfigurations(const spec::KernelFile& kf) {
    std::vector<std::map<std::string, std::int64_t>> out{{}};
    for (const auto& p : kf.params) {
        if (p.choices.empty())
            continue;
        std::vector<std::map<std::string, std::int64_t>> next;
        for (const auto& partial : out)
            for (std::int64_t c : p.choices) {
                auto m = partial;
                m[p.name] = c;
                next.push_back(std::move(m));
            }
        out = std::move(next);
    }
    std::erase_if(out, [&](const auto& config) { return kf.brokenRequirement(config) != nullptr; });
    return out;
}

} // namespace

class TestExpertLibrary : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true); // the user folder lives under ~/.qttest
        QVERIFY2(!builtInRoot().isEmpty(), "resources/experts not found");
    }

    void builtInLibraryLoads() {
        const auto lib = ExpertLibrary::load({builtInRoot()});
        QVERIFY2(lib.problems().isEmpty(), qPrintable(lib.problems().join(QLatin1Char('\n'))));
        QVERIFY(lib.experts().size() >= 8);
        QStringList seen;
        for (const auto& e : lib.experts()) {
            QVERIFY(!e.name.isEmpty());
            QVERIFY(!e.pattern.isEmpty());
            QVERIFY(!e.tasks.isEmpty());
            QVERIFY(model::backendName(e.backend) == QLatin1String("opencl")
                    || model::backendName(e.backend) == QLatin1String("cuda"));
            QVERIFY(e.source.startsWith(QLatin1String("// expert:")));
            QVERIFY(e.file.startsWith(builtInRoot() + QLatin1Char('/') + e.family + QLatin1Char('/')));
            const QString key = e.family + QLatin1Char('/') + e.name + QLatin1Char('/') + model::backendName(e.backend);
            QVERIFY2(!seen.contains(key), qPrintable(key));
            seen << key;
        }
        // The priority tasks have OpenCL experts.
        for (const char* task : {"sgemm", "softmax", "row_sum", "layernorm", "bias_gelu", "vector_add"})
            QVERIFY2(!lib.forTask(QLatin1String(task), model::Backend::OpenCL).isEmpty(), task);
    }

    void float32TensorCoreExpertsAreHeldToTheTf32Roof() {
        // The 3xTF32 experts put float32 data on the tensor cores: the roofline must see their TF32
        // MMAs, or their honest speed (above 90% of FP32's roof) would be held for review.
        const auto lib = ExpertLibrary::load({builtInRoot()});
        QStringList tf32;
        for (const auto& e : lib.experts())
            if (diagnose::usesTf32TensorCores(e.source))
                tf32 << e.name;
        tf32.sort();
        QCOMPARE(tf32,
                 (QStringList{QStringLiteral("attention_3xtf32"), QStringLiteral("attention_3xtf32_wgmma"),
                              QStringLiteral("conv2d_halo_3xtf32_wgmma"), QStringLiteral("conv2d_implicit_3xtf32"),
                              QStringLiteral("gemm_bias_relu_3xtf32"), QStringLiteral("gemm_bias_relu_3xtf32_wgmma"),
                              QStringLiteral("sgemm_3xtf32"), QStringLiteral("sgemm_3xtf32_wgmma")}));
    }

    void builtInExpertBindsToItsTasks_data() {
        QTest::addColumn<QString>("file");
        const auto lib = ExpertLibrary::load({builtInRoot()});
        for (const auto& e : lib.experts())
            QTest::newRow(qPrintable(e.family + QLatin1Char('/') + QFileInfo(e.file).fileName())) << e.file;
    }
    void builtInExpertBindsToItsTasks() {
        QFETCH(QString, file);
        const auto lib = ExpertLibrary::load({builtInRoot()});
        const Expert* expert = nullptr;
        for (const auto& e : lib.experts())
            if (e.file == file)
                expert = &e;
        QVERIFY(expert);
        const auto dialect = expert->backend;
        // `// expert:` lines are ordinary comments to the kernel-file parser.
        const auto kf = spec::KernelFile::parse(expert->source.toStdString(), dialect);
        QVERIFY2(kf.ok(), kf.ok() ? "" : kf.error().c_str());
        // GPU-sized work-groups; no dynamic shared memory in OpenCL; in CUDA up to the opt-in
        // limit of the largest current parts (Hopper: 227 KiB), which the worker enables itself,
        // TMA tensor maps and thread block clusters, which Hopper has, and Hopper's multiprocessor count.
        spec::DeviceLimits limits;
        limits.maxSharedBytes = dialect == spec::Dialect::OpenCL ? 0 : 227 * 1024;
        limits.tensorMaps = dialect == spec::Dialect::Cuda;
        limits.maxClusterBlocks = dialect == spec::Dialect::Cuda ? spec::kPortableClusterBlocks : 0;
        limits.multiprocessors = 132; // an H100's or H200's SMs, for grids sized to the device
        const auto configurations = allConfigurations(*kf);
        QVERIFY(configurations.size() <= 5000);

        const QDir tasksDir(qEnvironmentVariable("KFORGE_TASKS_DIR"));
        QVERIFY2(tasksDir.exists(), "KFORGE_TASKS_DIR must name the tasks folder");
        for (const QString& taskName : expert->tasks) {
            const auto task = spec::loadTaskDir(std::filesystem::path(tasksDir.filePath(taskName).toStdString()));
            QVERIFY2(task.ok(), qPrintable(file + QStringLiteral(": names task ") + taskName + QStringLiteral(": ")
                                           + QString::fromStdString(task.ok() ? "" : task.error())));
            QCOMPARE(expert->family, QString::fromStdString(task->spec.family));
            const QString backend = model::backendName(expert->backend);
            QVERIFY2(task->baselineSource.count(backend.toStdString()),
                     qPrintable(taskName + QStringLiteral(" has no ") + backend + QStringLiteral(" baseline")));
            std::vector<std::string> variants = task->spec.variantNames();
            variants.insert(variants.begin(), "default");
            for (const auto& variant : variants) {
                const auto sizes = task->spec.sizesFor(variant);
                QVERIFY(sizes.ok());
                for (const auto& config : configurations) {
                    const auto plan = spec::LaunchPlan::resolve(*kf, task->spec, *sizes, config, limits);
                    if (!plan.ok()) {
                        QString where;
                        for (const auto& [k, v] : config)
                            where += QStringLiteral(" %1=%2").arg(QString::fromStdString(k)).arg(v);
                        QFAIL(qPrintable(QStringLiteral("%1 on %2 (%3,%4): %5")
                                             .arg(file, taskName, QString::fromStdString(variant), where,
                                                  QString::fromStdString(plan.error()))));
                    }
                }
            }
        }
    }

    void forTaskOrdering() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        writeFile(root.filePath(QStringLiteral("softmax/b.cl")), openClExpert("beta"));
        writeFile(root.filePath(QStringLiteral("softmax/a.cl")), openClExpert("alpha"));
        writeFile(root.filePath(QStringLiteral("softmax/a.cu")), cudaExpert("alpha"));
        writeFile(root.filePath(QStringLiteral("norm/z.cl")), openClExpert("zeta", "layernorm softmax"));
        writeFile(root.filePath(QStringLiteral("elementwise/other.cl")), openClExpert("other", "vector_add"));
        writeFile(root.filePath(QStringLiteral("softmax/README.md")), "not an expert"); // ignored
        const auto lib = ExpertLibrary::load({root.path()});
        QVERIFY2(lib.problems().isEmpty(), qPrintable(lib.problems().join(QLatin1Char('\n'))));
        QCOMPARE(lib.experts().size(), 5);

        QCOMPARE(names(lib.forTask(QStringLiteral("softmax"), model::Backend::OpenCL)),
                 QStringList({QStringLiteral("norm/zeta.opencl"), QStringLiteral("softmax/alpha.opencl"),
                              QStringLiteral("softmax/beta.opencl")}));
        QCOMPARE(names(lib.forTask(QStringLiteral("softmax"), model::Backend::Cuda)),
                 QStringList({QStringLiteral("softmax/alpha.cuda")}));
        QCOMPARE(names(lib.forTask(QStringLiteral("layernorm"), model::Backend::OpenCL)),
                 QStringList({QStringLiteral("norm/zeta.opencl")}));
        QVERIFY(lib.forTask(QStringLiteral("sgemm"), model::Backend::OpenCL).isEmpty());

        const Expert zeta = lib.forTask(QStringLiteral("layernorm"), model::Backend::OpenCL).first();
        QCOMPARE(zeta.tasks, QStringList({QStringLiteral("layernorm"), QStringLiteral("softmax")}));
        QCOMPARE(zeta.pattern, QStringLiteral("a test pattern"));
        QCOMPARE(zeta.family, QStringLiteral("norm"));
        QCOMPARE(zeta.file, root.filePath(QStringLiteral("norm/z.cl")));
        QCOMPARE(zeta.source, QString::fromUtf8(openClExpert("zeta", "layernorm softmax")));
    }

    void badFilesAreReported_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("line"); // 0: the problem names no line
        QTest::addColumn<QString>("mentions");
        const QByteArray good = openClExpert("bad");
        auto without = [&](const QByteArray& prefix) {
            QList<QByteArray> lines = good.split('\n');
            lines.removeIf([&](const QByteArray& l) { return l.startsWith(prefix); });
            return lines.join('\n');
        };
        auto replaced = [&](const QByteArray& from, const QByteArray& to) {
            return QByteArray(good).replace(from, to);
        };
        QTest::newRow("no name") << without("// expert:name") << 1 << "expert:name";
        QTest::newRow("no tasks") << without("// expert:tasks") << 1 << "expert:tasks";
        QTest::newRow("no pattern") << without("// expert:pattern") << 1 << "expert:pattern";
        QTest::newRow("no header") << without("// expert:") << 1 << "expert:name";
        QTest::newRow("empty tasks") << replaced("// expert:tasks softmax", "// expert:tasks") << 2 << "no value";
        QTest::newRow("unknown header key") << replaced("// expert:tasks", "// expert:taks") << 2 << "expert:taks";
        QTest::newRow("header given twice") << good + "// expert:name again\n" << 7 << "twice";
        QTest::newRow("broken launch") << replaced(" block=(BLOCK)", "") << 5 << "block=";
        QTest::newRow("broken param") << replaced("{32, 64} = 64", "{32, 64} = 48") << 4 << "not one of its choices";
        QTest::newRow("unknown directive") << replaced("// kforge:param", "// kforge:parm") << 4 << "kforge:parm";
        QTest::newRow("launch of a missing kernel") << replaced("void softmax", "void other") << 5 << "not defined";
        QTest::newRow("no launch plan") << without("// kforge:launch") << 0 << "no launch plan";
        QTest::newRow("not UTF-8") << good + "// \xff\xfe\n" << 7 << "byte 0xFF is not UTF-8";
    }
    void badFilesAreReported() {
        QFETCH(QByteArray, content);
        QFETCH(int, line);
        QFETCH(QString, mentions);
        QTemporaryDir root;
        QVERIFY(root.isValid());
        const QString bad = root.filePath(QStringLiteral("softmax/bad.cl"));
        writeFile(bad, content);
        writeFile(root.filePath(QStringLiteral("softmax/good.cl")), openClExpert("good"));
        const auto lib = ExpertLibrary::load({root.path()});
        QCOMPARE(names(lib.experts()), QStringList({QStringLiteral("softmax/good.opencl")}));
        QCOMPARE(lib.problems().size(), 1);
        const QString p = lib.problems().first();
        const QString where = line > 0 ? bad + QStringLiteral(":%1: ").arg(line) : bad + QStringLiteral(": ");
        QVERIFY2(p.startsWith(where), qPrintable(p));
        QVERIFY2(p.contains(mentions), qPrintable(p));
    }

    void unreadableFilesAreReported() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        writeFile(root.filePath(QStringLiteral("softmax/good.cl")), openClExpert("good"));
        const QString dangling = root.filePath(QStringLiteral("softmax/dangling.cl"));
        QVERIFY(QFile::link(root.filePath(QStringLiteral("nowhere.cl")), dangling));
        const QString folder = root.filePath(QStringLiteral("softmax/folder.cu"));
        QVERIFY(QDir().mkpath(folder));
        const QString stray = root.filePath(QStringLiteral("stray.cl")); // not in a family folder
        writeFile(stray, openClExpert("stray"));
        const QString missingRoot = root.filePath(QStringLiteral("does-not-exist"));

        const auto lib = ExpertLibrary::load({root.path(), missingRoot});
        QCOMPARE(names(lib.experts()), QStringList({QStringLiteral("softmax/good.opencl")}));
        QCOMPARE(lib.problems().size(), 4);
        for (const QString& path : {dangling, folder, stray, missingRoot})
            QVERIFY2(std::any_of(lib.problems().begin(), lib.problems().end(),
                                 [&](const QString& p) { return p.startsWith(path + QStringLiteral(": ")); }),
                     qPrintable(path + QStringLiteral(" not reported in:\n") + lib.problems().join(QLatin1Char('\n'))));
    }

    void duplicateNamesInOneRoot() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        writeFile(root.filePath(QStringLiteral("softmax/a.cl")), openClExpert("same"));
        writeFile(root.filePath(QStringLiteral("softmax/b.cl")), openClExpert("same"));
        writeFile(root.filePath(QStringLiteral("softmax/c.cu")), cudaExpert("same")); // another backend
        const auto lib = ExpertLibrary::load({root.path()});
        QCOMPARE(lib.experts().size(), 2);
        QCOMPARE(lib.problems().size(), 1);
        QVERIFY2(lib.problems().first().startsWith(root.filePath(QStringLiteral("softmax/b.cl: "))),
                 qPrintable(lib.problems().first()));
    }

    void userRootAddsExperts() {
        const auto builtIn = ExpertLibrary::load({builtInRoot()});
        QTemporaryDir user;
        QVERIFY(user.isValid());
        writeFile(user.filePath(QStringLiteral("softmax/mine.cl")), openClExpert("mine"));
        const auto lib = ExpertLibrary::load({builtInRoot(), user.path()});
        QVERIFY2(lib.problems().isEmpty(), qPrintable(lib.problems().join(QLatin1Char('\n'))));
        QCOMPARE(lib.experts().size(), builtIn.experts().size() + 1);
        const auto forSoftmax = lib.forTask(QStringLiteral("softmax"), model::Backend::OpenCL);
        QCOMPARE(forSoftmax.size(), builtIn.forTask(QStringLiteral("softmax"), model::Backend::OpenCL).size() + 1);
        QVERIFY(names(forSoftmax).contains(QStringLiteral("softmax/mine.opencl")));

        // A user expert with a built-in expert's family, name and backend replaces it.
        const Expert original = builtIn.forTask(QStringLiteral("softmax"), model::Backend::OpenCL).first();
        writeFile(user.filePath(QStringLiteral("softmax/override.cl")), openClExpert(original.name.toUtf8()));
        const auto overridden = ExpertLibrary::load({builtInRoot(), user.path()});
        QVERIFY2(overridden.problems().isEmpty(), qPrintable(overridden.problems().join(QLatin1Char('\n'))));
        QCOMPARE(overridden.experts().size(), builtIn.experts().size() + 1);
        for (const auto& e : overridden.experts())
            if (e.family == original.family && e.name == original.name && e.backend == original.backend)
                QCOMPARE(e.file, user.filePath(QStringLiteral("softmax/override.cl")));
    }

    void defaultRoots() {
        const QString userExperts = util::ResourceLocator::userDir() + QStringLiteral("/experts");
        QDir(userExperts).removeRecursively();
        QCOMPARE(ExpertLibrary::defaultRoots(), QStringList{builtInRoot()});
        QVERIFY(QDir().mkpath(userExperts + QStringLiteral("/softmax")));
        writeFile(userExperts + QStringLiteral("/softmax/mine.cl"), openClExpert("mine"));
        QCOMPARE(ExpertLibrary::defaultRoots(), QStringList({builtInRoot(), userExperts}));
        const auto lib = ExpertLibrary::load(ExpertLibrary::defaultRoots());
        QVERIFY(names(lib.experts()).contains(QStringLiteral("softmax/mine.opencl")));
        QVERIFY(QDir(userExperts).removeRecursively());
    }
};

QTEST_GUILESS_MAIN(TestExpertLibrary)
#include "tst_expertlibrary.moc"
