#include "launchplan.h"
#include "sourcescan.h"
#include "taskspec.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace kforge::spec;
using nlohmann::json;

namespace {

json validTask() {
    return json::parse(R"({
      "name": "softmax", "title": "Row softmax", "family": "softmax",
      "sizes": {"M": 64, "N": 100}, "variants": {"small": {"M": 3}},
      "scalars": {"eps": {"dtype": "float32", "value": 1e-5}},
      "inputs": [{"name": "x", "dtype": "float32", "shape": ["M", "N"], "init": {"kind": "uniform", "low": -4, "high": 4}}],
      "outputs": [{"name": "y", "dtype": "float32", "shape": ["M", "N"], "atol": 1e-6, "rtol": 1e-4}],
      "flops": "5 * M * N", "bytes": "2 * M * N * 4",
      "reference": {"opencl": "reference.cl"}, "baseline": {"opencl": "baseline.cl"}})");
}

void writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
}

} // namespace

class TestTaskSpec : public QObject {
    Q_OBJECT
private slots:
    void parsesValidTask() {
        auto t = TaskSpec::fromJson(validTask(), "task.json");
        QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
        QCOMPARE(t->sizes.at("N"), 100);
        auto small = t->sizesFor("small");
        QVERIFY(small.ok());
        QCOMPARE(small->at("M"), 3);
        QCOMPARE(small->at("N"), 100);
        QCOMPARE(*t->elementCount(t->outputs[0], *small), 300);
        QVERIFY(!t->sizesFor("huge").ok());
        // toJson is what travels to workers: it must parse back to the same task.
        auto again = TaskSpec::fromJson(t->toJson(), "again");
        QVERIFY(again.ok());
        QVERIFY(again->toJson() == t->toJson());
    }

    void rejectsBadFields_data() {
        QTest::addColumn<QString>("pointer"); // JSON pointer to change
        QTest::addColumn<QString>("value");   // JSON value, or "<remove>"
        QTest::addColumn<QString>("mentions");
        QTest::newRow("missing name") << "/name"
                                      << "<remove>"
                                      << "name: missing";
        QTest::newRow("bad name") << "/name"
                                  << R"("soft max!")"
                                  << "name: 'soft max!'";
        QTest::newRow("missing family") << "/family"
                                        << "<remove>"
                                        << "family: missing";
        QTest::newRow("size not integer") << "/sizes/N"
                                          << "1.5"
                                          << "sizes.N: must be a positive integer";
        QTest::newRow("size zero") << "/sizes/N"
                                   << "0"
                                   << "sizes.N: must be a positive integer";
        QTest::newRow("variant unknown size") << "/variants/small"
                                              << R"({"K": 3})"
                                              << "variants.small.K: is not one of the task's sizes";
        QTest::newRow("variant named default") << "/variants/default"
                                               << R"({"M": 3})"
                                               << "variants.default";
        QTest::newRow("unknown dtype") << "/inputs/0/dtype"
                                       << R"("float128")"
                                       << "inputs[0].dtype: unknown dtype 'float128'";
        QTest::newRow("shape unknown size") << "/inputs/0/shape/1"
                                            << R"("K")"
                                            << "inputs[0].shape[1]: 'K': unknown name 'K'";
        QTest::newRow("shape negative") << "/outputs/0/shape/0"
                                        << R"("M - 100")"
                                        << "outputs[0].shape[0]: evaluates to -36";
        QTest::newRow("shape fraction") << "/outputs/0/shape/0"
                                        << R"("M / 3")"
                                        << "not a whole number";
        QTest::newRow("init kind") << "/inputs/0/init/kind"
                                   << R"("gaussian")"
                                   << "inputs[0].init.kind: unknown initialiser 'gaussian'";
        QTest::newRow("init missing bound") << "/inputs/0/init/high"
                                            << "<remove>"
                                            << "inputs[0].init.high: missing";
        QTest::newRow("init reversed") << "/inputs/0/init/low"
                                       << "10"
                                       << "high must not be below low";
        QTest::newRow("missing atol") << "/outputs/0/atol"
                                      << "<remove>"
                                      << "outputs[0].atol: missing";
        QTest::newRow("atol string") << "/outputs/0/atol"
                                     << R"("tiny")"
                                     << "outputs[0].atol: must be a number, not string";
        QTest::newRow("negative rtol") << "/outputs/0/rtol"
                                       << "-1"
                                       << "must not be negative";
        QTest::newRow("no outputs") << "/outputs"
                                    << "[]"
                                    << "outputs: must be a non-empty array";
        QTest::newRow("duplicate name") << "/outputs/0/name"
                                        << R"("x")"
                                        << "name 'x' is used twice";
        QTest::newRow("size shadows buffer") << "/sizes/x"
                                             << "4"
                                             << "used twice";
        QTest::newRow("flops unknown") << "/flops"
                                       << R"("5 * M * Q")"
                                       << "flops: '5 * M * Q': unknown name 'Q'";
        QTest::newRow("bytes missing") << "/bytes"
                                       << "<remove>"
                                       << "bytes: missing";
        QTest::newRow("unknown backend") << "/reference/metal"
                                         << R"("r.metal")"
                                         << "reference.metal: unknown backend";
        QTest::newRow("empty baseline") << "/baseline"
                                        << "{}"
                                        << "baseline: must be an object of backend";
        QTest::newRow("torch baseline") << "/baseline/torch"
                                        << R"("b.py")"
                                        << "baseline.torch: unknown backend (known: opencl, cuda)";
        QTest::newRow("torch reference not a file") << "/reference/torch"
                                                    << "3"
                                                    << "reference.torch: must be a Python file name";
        QTest::newRow("no reference") << "/reference"
                                      << "<remove>"
                                      << "reference: missing";
        QTest::newRow("scalar dtype") << "/scalars/eps/dtype"
                                      << R"("real")"
                                      << "scalars.eps.dtype: unknown dtype 'real'";
        QTest::newRow("reference data variant")
            << "/reference_data"
            << R"([{"variant": "huge", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {"y": "y.bin"}}])"
            << "reference_data[0].variant: unknown variant 'huge'";
        QTest::newRow("reference data missing output")
            << "/reference_data"
            << R"([{"variant": "small", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {}}])"
            << "no file for output 'y'";
    }
    void pyTorchReferenceNeedsNoBaseline() {
        // A task imported from PyTorch: PyTorch is the reference, and there is no baseline kernel.
        json task = validTask();
        task["reference"] = {{"torch", "reference.py"}};
        task.erase("baseline");
        auto t = TaskSpec::fromJson(task, "tasks/x/task.json");
        QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
        QCOMPARE(t->reference.at("torch"), std::string("reference.py"));
        QVERIFY(t->baseline.empty());
        QVERIFY2(!t->toJson().contains("baseline"), "no baseline is written back as none, not as {}");
        QVERIFY(TaskSpec::fromJson(t->toJson(), "again").ok());
    }
    void rejectsBadFields() {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        json task = validTask();
        const json::json_pointer ptr(pointer.toStdString());
        if (value == QLatin1String("<remove>"))
            task[ptr.parent_pointer()].erase(ptr.back());
        else
            task[ptr] = json::parse(value.toStdString());
        auto t = TaskSpec::fromJson(task, "tasks/x/task.json");
        QVERIFY(!t.ok());
        const QString error = QString::fromStdString(t.error());
        QVERIFY2(error.startsWith(QStringLiteral("tasks/x/task.json: ")), qPrintable(error));
        QVERIFY2(error.contains(mentions), qPrintable(error));
    }

    void loadsFolderAndReportsFileProblems() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString root = dir.path();

        auto missing = loadTaskDir((root + QStringLiteral("/nope")).toStdString());
        QVERIFY(!missing.ok());
        QVERIFY(QString::fromStdString(missing.error()).contains(QStringLiteral("not a task folder")));

        writeFile(root + QStringLiteral("/task.json"), "{\n  \"name\": \"t\",\n  \"family\": oops\n}");
        auto syntax = loadTaskDir(root.toStdString());
        QVERIFY(!syntax.ok());
        QVERIFY2(QString::fromStdString(syntax.error()).contains(QStringLiteral("task.json:3:")),
                 syntax.error().c_str());
        QVERIFY(QString::fromStdString(syntax.error()).contains(QStringLiteral("invalid JSON")));

        writeFile(root + QStringLiteral("/task.json"), QByteArray::fromStdString(validTask().dump()));
        auto noKernel = loadTaskDir(root.toStdString());
        QVERIFY(!noKernel.ok());
        QVERIFY2(QString::fromStdString(noKernel.error()).contains(QStringLiteral("reference.opencl")),
                 noKernel.error().c_str());

        writeFile(root + QStringLiteral("/reference.cl"), "// ref");
        writeFile(root + QStringLiteral("/baseline.cl"), "// base");
        auto ok = loadTaskDir(root.toStdString());
        QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().c_str());
        QCOMPARE(ok->referenceSource.at("opencl"), std::string("// ref"));

        // Kernel files are UTF-8 text (the worker protocol carries nothing else): a Latin-1 byte is
        // named with its place, not passed on to break the request that would carry it.
        writeFile(root + QStringLiteral("/baseline.cl"), "// base\n// 4 \xb5s a row\n");
        auto latin1 = loadTaskDir(root.toStdString());
        QVERIFY(!latin1.ok());
        QVERIFY2(
            QString::fromStdString(latin1.error())
                .contains(QStringLiteral("baseline.opencl: baseline.cl: line 2, column 6: byte 0xB5 is not UTF-8")),
            latin1.error().c_str());
        writeFile(root + QStringLiteral("/baseline.cl"), "// base\n// 4 \xc2\xb5s a row\n");
        QVERIFY(loadTaskDir(root.toStdString()).ok());

        // Reference data files must exist and hold exactly the tensor's bytes.
        json task = validTask();
        task["reference_data"] =
            json::parse(R"([{"variant": "small", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {"y": "y.bin"}}])");
        writeFile(root + QStringLiteral("/task.json"), QByteArray::fromStdString(task.dump()));
        writeFile(root + QStringLiteral("/x.bin"), QByteArray(300 * 4, '\0'));
        writeFile(root + QStringLiteral("/y.bin"), QByteArray(10, '\0'));
        auto shortData = loadTaskDir(root.toStdString());
        QVERIFY(!shortData.ok());
        QVERIFY2(QString::fromStdString(shortData.error()).contains(QStringLiteral("has 10 bytes, expected 1200")),
                 shortData.error().c_str());
        writeFile(root + QStringLiteral("/y.bin"), QByteArray(300 * 4, '\0'));
        auto withData = loadTaskDir(root.toStdString());
        QVERIFY2(withData.ok(), withData.ok() ? "" : withData.error().c_str());
        QVERIFY(withData->spec.findReferenceData("small", 1) != nullptr);
        QVERIFY(withData->spec.findReferenceData("small", 2) == nullptr);
    }

    void utf8IsCheckedStrictly_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("invalidAt"); // -1: all of it is UTF-8
        QTest::newRow("ascii") << QByteArray("__global float* x;\n") << -1;
        QTest::newRow("empty") << QByteArray() << -1;
        QTest::newRow("two bytes") << QByteArray("// \xc2\xb5s") << -1;
        QTest::newRow("three bytes") << QByteArray("// \xe2\x82\xac") << -1;
        QTest::newRow("four bytes") << QByteArray("// \xf0\x9f\x98\x80") << -1;
        QTest::newRow("latin-1") << QByteArray("// \xb5s") << 3;
        QTest::newRow("overlong slash") << QByteArray("a\xc0\xaf") << 1;
        QTest::newRow("overlong three bytes") << QByteArray("\xe0\x80\xaf") << 0;
        QTest::newRow("surrogate") << QByteArray("ab\xed\xa0\x80") << 2;
        QTest::newRow("past U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << 0;
        QTest::newRow("cut short at the end") << QByteArray("ok \xe2\x82") << 3;
        QTest::newRow("continuation alone") << QByteArray("\x80") << 0;
        QTest::newRow("lead byte F5") << QByteArray("\xf5\x80\x80\x80") << 0;
    }

    void utf8IsCheckedStrictly() {
        QFETCH(QByteArray, text);
        QFETCH(int, invalidAt);
        const std::size_t at =
            firstInvalidUtf8(std::string_view(text.constData(), static_cast<std::size_t>(text.size())));
        QCOMPARE(at == std::string_view::npos ? -1 : static_cast<int>(at), invalidAt);
        // Exactly what the JSON the worker protocol writes accepts.
        bool dumped = true;
        try {
            (void)json(text.toStdString()).dump();
        } catch (const json::exception&) {
            dumped = false;
        }
        QCOMPARE(dumped, invalidAt < 0);
    }

    // ---- hostile task folders -------------------------------------------------------------------

    void refusesFilesOutsideTheFolder_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("parent") << "reference"
                                << "../secret.cl"
                                << "must not leave the task folder";
        QTest::newRow("absolute") << "reference"
                                  << "/etc/passwd"
                                  << "must be a file name relative to the task folder";
        QTest::newRow("symlink out") << "baseline"
                                     << "link.cl"
                                     << "is not a file inside the task folder";
        QTest::newRow("missing") << "baseline"
                                 << "nothing.cl"
                                 << "is not a file inside the task folder";
        QTest::newRow("fifo") << "reference"
                              << "fifo.cl"
                              << "is not a regular file";
        QTest::newRow("device via symlink") << "reference"
                                            << "zero.cl"
                                            << "is not a file inside the task folder";
        QTest::newRow("directory") << "reference"
                                   << "sub"
                                   << "is not a regular file";
        QTest::newRow("too large") << "baseline"
                                   << "big.cl"
                                   << "more than the limit of 1048576";
        QTest::newRow("reference data outside") << "reference_data"
                                                << "../secret.cl"
                                                << "reference_data[0].inputs.x";
        QTest::newRow("reference data symlink") << "reference_data"
                                                << "link.cl"
                                                << "reference_data[0].inputs.x";
        QTest::newRow("reference data fifo") << "reference_data"
                                             << "fifo.cl"
                                             << "is not a regular file";
    }
    void refusesFilesOutsideTheFolder() {
        QFETCH(QString, field);
        QFETCH(QString, name);
        QFETCH(QString, mentions);
        QTemporaryDir outer;
        QVERIFY(outer.isValid());
        const QString root = outer.path() + QStringLiteral("/task");
        QVERIFY(QDir().mkpath(root + QStringLiteral("/sub")));
        // A secret outside the folder, whose size must not show in any message.
        writeFile(outer.path() + QStringLiteral("/secret.cl"), QByteArray(12345, 's'));
        QVERIFY(QFile::link(outer.path() + QStringLiteral("/secret.cl"), root + QStringLiteral("/link.cl")));
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), root + QStringLiteral("/zero.cl")));
        QCOMPARE(::mkfifo((root + QStringLiteral("/fifo.cl")).toLocal8Bit().constData(), 0600), 0);
        writeFile(root + QStringLiteral("/big.cl"), QByteArray(1100000, ' '));
        writeFile(root + QStringLiteral("/reference.cl"), "// ref");
        writeFile(root + QStringLiteral("/baseline.cl"), "// base");
        writeFile(root + QStringLiteral("/y.bin"), QByteArray(300 * 4, '\0'));
        json task = validTask();
        if (field == QStringLiteral("reference_data"))
            task["reference_data"] = {{{"variant", "small"},
                                       {"seed", 1},
                                       {"inputs", {{"x", name.toStdString()}}},
                                       {"outputs", {{"y", "y.bin"}}}}};
        else
            task[field.toStdString()]["opencl"] = name.toStdString();
        writeFile(root + QStringLiteral("/task.json"), QByteArray::fromStdString(task.dump()));
        auto t = loadTaskDir(root.toStdString());
        QVERIFY(!t.ok());
        const QString error = QString::fromStdString(t.error());
        QVERIFY2(error.contains(mentions), t.error().c_str());
        QVERIFY2(!error.contains(QStringLiteral("12345")), t.error().c_str());
        QVERIFY2(!error.contains(outer.path() + QStringLiteral("/secret")), t.error().c_str());
        QVERIFY2(error.contains(field), t.error().c_str());
    }

    void taskJsonItselfIsChecked() {
        QTemporaryDir outer;
        QVERIFY(outer.isValid());
        const QString root = outer.path() + QStringLiteral("/task");
        QVERIFY(QDir().mkpath(root));
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), root + QStringLiteral("/task.json")));
        auto zero = loadTaskDir(root.toStdString());
        QVERIFY(!zero.ok());
        QVERIFY2(QString::fromStdString(zero.error()).contains(QStringLiteral("not a file inside the task folder")),
                 zero.error().c_str());
        QVERIFY(QFile::remove(root + QStringLiteral("/task.json")));
        QCOMPARE(::mkfifo((root + QStringLiteral("/task.json")).toLocal8Bit().constData(), 0600), 0);
        auto fifo = loadTaskDir(root.toStdString()); // must not block
        QVERIFY(!fifo.ok());
        QVERIFY2(QString::fromStdString(fifo.error()).contains(QStringLiteral("not a regular file")),
                 fifo.error().c_str());
        QVERIFY(QFile::remove(root + QStringLiteral("/task.json")));
        writeFile(root + QStringLiteral("/task.json"), "{\"name\": \"" + QByteArray(1100000, 'x') + "\"}");
        auto big = loadTaskDir(root.toStdString());
        QVERIFY(!big.ok());
        QVERIFY2(QString::fromStdString(big.error()).contains(QStringLiteral("more than the limit")),
                 big.error().c_str());
    }

    void hostileJsonIsAnError_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("mentions");
        QByteArray big = QByteArray::fromStdString(validTask().dump());
        QTest::newRow("1e999") << QByteArray(big).replace("\"value\":1e-05", "\"value\":1e999") << "invalid JSON";
        QTest::newRow("-1e999") << QByteArray(big).replace("\"low\":-4", "\"low\":-1e999") << "invalid JSON";
        QTest::newRow("deep arrays") << "{\"name\": " + QByteArray(100000, '[') + QByteArray(100000, ']') + "}"
                                     << "nested deeper than 64";
        QTest::newRow("unclosed deep arrays") << QByteArray(100000, '[') << "invalid JSON";
        QTest::newRow("invalid UTF-8") << QByteArray(big).replace("Row softmax", "Row \xff\xfe softmax")
                                       << "invalid JSON";
        QTest::newRow("huge string") << "{\"name\": \"" + QByteArray(900000, '!') + "\"}"
                                     << "task.json: name: '!!!";
        QTest::newRow("huge integer size")
            << QByteArray(big).replace("\"M\":64", "\"M\":18446744073709551615") << "sizes.M";
        QTest::newRow("overflowing shape")
            << QByteArray(big).replace("\"M\":64", "\"M\":4294967296").replace("\"N\":100", "\"N\":4294967296")
            << "elements (the limit per tensor)";
    }
    void hostileJsonIsAnError() {
        QFETCH(QByteArray, text);
        QFETCH(QString, mentions);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeFile(dir.path() + QStringLiteral("/task.json"), text);
        writeFile(dir.path() + QStringLiteral("/reference.cl"), "// ref");
        writeFile(dir.path() + QStringLiteral("/baseline.cl"), "// base");
        auto t = loadTaskDir(dir.path().toStdString());
        QVERIFY(!t.ok());
        QVERIFY2(QString::fromStdString(t.error()).contains(mentions), t.error().c_str());
        QVERIFY2(QString::fromStdString(t.error()).contains(QStringLiteral("task.json")), t.error().c_str());
        QVERIFY(t.error().size() < 2000);
    }

    void builtInTasksAreValid() {
        const QDir tasks(qEnvironmentVariable("KFORGE_TASKS_DIR"));
        const QStringList names = tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
        QVERIFY2(names.size() >= 6, "expected at least six built-in tasks");
        for (const QString& name : names) {
            auto t = loadTaskDir(tasks.filePath(name).toStdString());
            QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
            QVERIFY2(t->spec.variants.count("small"), qPrintable(name + QStringLiteral(" has no small variant")));
            QVERIFY(!t->referenceSource.empty());
            // Every built-in task has a PyTorch form (kforge's yardstick); every backend with a
            // reference kernel has a baseline, and every kernel file binds to the task at every
            // variant's sizes.
            QVERIFY2(t->referenceSource.count("torch"), qPrintable(name + QStringLiteral(" has no PyTorch form")));
            for (const auto& [backend, source] : t->referenceSource) {
                if (backend == "torch")
                    continue;
                QVERIFY2(t->baselineSource.count(backend),
                         qPrintable(name + QStringLiteral(": no baseline for ") + QString::fromStdString(backend)));
                const Dialect dialect = backend == "cuda" ? Dialect::Cuda : Dialect::OpenCL;
                DeviceLimits limits;
                if (dialect == Dialect::OpenCL)
                    limits.maxSharedBytes = 0;
                for (const auto* files : {&t->referenceSource, &t->baselineSource}) {
                    const std::string& text = files->at(backend);
                    auto kf = KernelFile::parse(text, dialect);
                    QVERIFY2(kf.ok(),
                             qPrintable(name + QStringLiteral(" ")
                                        + QString::fromStdString(backend + ": " + (kf.ok() ? "" : kf.error()))));
                    for (const auto& variant : t->spec.variantNames()) {
                        auto plan = LaunchPlan::resolve(*kf, t->spec, *t->spec.sizesFor(variant), {}, limits);
                        QVERIFY2(plan.ok(), qPrintable(name + QStringLiteral(" ")
                                                       + QString::fromStdString(backend + " " + variant + ": "
                                                                                + (plan.ok() ? "" : plan.error()))));
                    }
                }
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestTaskSpec)
#include "tst_taskspec.moc"
