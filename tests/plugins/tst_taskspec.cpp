#include "launchplan.h"
#include "taskspec.h"

#include <nlohmann/json.hpp>

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
        QTest::newRow("missing name") << "/name" << "<remove>" << "name: missing";
        QTest::newRow("bad name") << "/name" << R"("soft max!")" << "name: 'soft max!'";
        QTest::newRow("missing family") << "/family" << "<remove>" << "family: missing";
        QTest::newRow("size not integer") << "/sizes/N" << "1.5" << "sizes.N: must be a positive integer";
        QTest::newRow("size zero") << "/sizes/N" << "0" << "sizes.N: must be a positive integer";
        QTest::newRow("variant unknown size") << "/variants/small" << R"({"K": 3})" << "variants.small.K: is not one of the task's sizes";
        QTest::newRow("variant named default") << "/variants/default" << R"({"M": 3})" << "variants.default";
        QTest::newRow("unknown dtype") << "/inputs/0/dtype" << R"("float128")" << "inputs[0].dtype: unknown dtype 'float128'";
        QTest::newRow("shape unknown size") << "/inputs/0/shape/1" << R"("K")" << "inputs[0].shape[1]: 'K': unknown name 'K'";
        QTest::newRow("shape negative") << "/outputs/0/shape/0" << R"("M - 100")" << "outputs[0].shape[0]: evaluates to -36";
        QTest::newRow("shape fraction") << "/outputs/0/shape/0" << R"("M / 3")" << "not a whole number";
        QTest::newRow("init kind") << "/inputs/0/init/kind" << R"("gaussian")" << "inputs[0].init.kind: unknown initialiser 'gaussian'";
        QTest::newRow("init missing bound") << "/inputs/0/init/high" << "<remove>" << "inputs[0].init.high: missing";
        QTest::newRow("init reversed") << "/inputs/0/init/low" << "10" << "high must not be below low";
        QTest::newRow("missing atol") << "/outputs/0/atol" << "<remove>" << "outputs[0].atol: missing";
        QTest::newRow("atol string") << "/outputs/0/atol" << R"("tiny")" << "outputs[0].atol: must be a number, not string";
        QTest::newRow("negative rtol") << "/outputs/0/rtol" << "-1" << "must not be negative";
        QTest::newRow("no outputs") << "/outputs" << "[]" << "outputs: must be a non-empty array";
        QTest::newRow("duplicate name") << "/outputs/0/name" << R"("x")" << "name 'x' is used twice";
        QTest::newRow("size shadows buffer") << "/sizes/x" << "4" << "used twice";
        QTest::newRow("flops unknown") << "/flops" << R"("5 * M * Q")" << "flops: '5 * M * Q': unknown name 'Q'";
        QTest::newRow("bytes missing") << "/bytes" << "<remove>" << "bytes: missing";
        QTest::newRow("unknown backend") << "/reference/metal" << R"("r.metal")" << "reference.metal: unknown backend";
        QTest::newRow("no baseline") << "/baseline" << "{}" << "baseline: must be an object of backend";
        QTest::newRow("scalar dtype") << "/scalars/eps/dtype" << R"("real")" << "scalars.eps.dtype: unknown dtype 'real'";
        QTest::newRow("reference data variant") << "/reference_data"
                                                << R"([{"variant": "huge", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {"y": "y.bin"}}])"
                                                << "reference_data[0].variant: unknown variant 'huge'";
        QTest::newRow("reference data missing output") << "/reference_data"
                                                       << R"([{"variant": "small", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {}}])"
                                                       << "no file for output 'y'";
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
        QVERIFY2(QString::fromStdString(syntax.error()).contains(QStringLiteral("task.json:3:")), syntax.error().c_str());
        QVERIFY(QString::fromStdString(syntax.error()).contains(QStringLiteral("invalid JSON")));

        writeFile(root + QStringLiteral("/task.json"), QByteArray::fromStdString(validTask().dump()));
        auto noKernel = loadTaskDir(root.toStdString());
        QVERIFY(!noKernel.ok());
        QVERIFY2(QString::fromStdString(noKernel.error()).contains(QStringLiteral("reference.opencl")), noKernel.error().c_str());

        writeFile(root + QStringLiteral("/reference.cl"), "// ref");
        writeFile(root + QStringLiteral("/baseline.cl"), "// base");
        auto ok = loadTaskDir(root.toStdString());
        QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().c_str());
        QCOMPARE(ok->referenceSource.at("opencl"), std::string("// ref"));

        // Reference data files must exist and hold exactly the tensor's bytes.
        json task = validTask();
        task["reference_data"] = json::parse(R"([{"variant": "small", "seed": 1, "inputs": {"x": "x.bin"}, "outputs": {"y": "y.bin"}}])");
        writeFile(root + QStringLiteral("/task.json"), QByteArray::fromStdString(task.dump()));
        writeFile(root + QStringLiteral("/x.bin"), QByteArray(300 * 4, '\0'));
        writeFile(root + QStringLiteral("/y.bin"), QByteArray(10, '\0'));
        auto shortData = loadTaskDir(root.toStdString());
        QVERIFY(!shortData.ok());
        QVERIFY2(QString::fromStdString(shortData.error()).contains(QStringLiteral("has 10 bytes, expected 1200")), shortData.error().c_str());
        writeFile(root + QStringLiteral("/y.bin"), QByteArray(300 * 4, '\0'));
        auto withData = loadTaskDir(root.toStdString());
        QVERIFY2(withData.ok(), withData.ok() ? "" : withData.error().c_str());
        QVERIFY(withData->spec.findReferenceData("small", 1) != nullptr);
        QVERIFY(withData->spec.findReferenceData("small", 2) == nullptr);
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
            // Every backend with a reference has a baseline, and every kernel file binds to the task
            // at every variant's sizes.
            for (const auto& [backend, source] : t->referenceSource) {
                QVERIFY2(t->baselineSource.count(backend), qPrintable(name + QStringLiteral(": no baseline for ") + QString::fromStdString(backend)));
                const Dialect dialect = backend == "cuda" ? Dialect::Cuda : Dialect::OpenCL;
                DeviceLimits limits;
                if (dialect == Dialect::OpenCL)
                    limits.maxSharedBytes = 0;
                for (const auto* files : {&t->referenceSource, &t->baselineSource}) {
                    const std::string& text = files->at(backend);
                    auto kf = KernelFile::parse(text, dialect);
                    QVERIFY2(kf.ok(), qPrintable(name + QStringLiteral(" ") + QString::fromStdString(backend + ": " + (kf.ok() ? "" : kf.error()))));
                    for (const auto& variant : t->spec.variantNames()) {
                        auto plan = LaunchPlan::resolve(*kf, t->spec, *t->spec.sizesFor(variant), {}, limits);
                        QVERIFY2(plan.ok(), qPrintable(name + QStringLiteral(" ") + QString::fromStdString(backend + " " + variant + ": " + (plan.ok() ? "" : plan.error()))));
                    }
                }
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestTaskSpec)
#include "tst_taskspec.moc"
