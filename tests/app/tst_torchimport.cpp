// `kforge import` of PyTorch operators and their evaluation against PyTorch itself, as a user runs
// them: KernelBench-format modules written for this suite (an elementwise op, a reduction, a norm,
// an nn.Linear with bias, a module with two outputs) and a plain function become task folders with
// named sizes, parameters as inputs, every output, a small variant and FLOPs; OpenCL kernels are
// verified on PoCL against the PyTorch reference (a right one passes, one that forgets the bias
// does not); every built-in task's PyTorch form agrees with its OpenCL baseline; `eval --pytorch`
// times PyTorch eager and torch.compile beside the kernel and names each speedup's yardstick;
// modules that cannot be tasks, and a missing PyTorch, get messages that say why.
// Needs the Python with PyTorch that `packaging/install-deps.sh --torch` makes (CI has it).

#include "headlessrun.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace Qt::StringLiterals;

namespace {

using Run = kforgetest::HeadlessRun;

QString data(const QString& file) {
    return QStringLiteral(KFORGE_TORCH_TEST_DATA "/") + file;
}

Run importModule(const QString& file, const QString& out, QStringList more = {},
                 const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    return kforgetest::runHeadless(
        QStringList{QStringLiteral("import"), data(file), QStringLiteral("--out"), out} + more, env);
}

QJsonObject taskJson(const QString& dir) {
    QFile f(dir + QStringLiteral("/task.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QStringList names(const QJsonArray& tensors) {
    QStringList n;
    for (const QJsonValue& t : tensors)
        n << t.toObject()[QStringLiteral("name")].toString();
    return n;
}

QStringList keys(const QJsonObject& o) {
    QStringList k = o.keys();
    k.sort();
    return k;
}

QJsonObject evalJson(const QString& task, const QString& kernel, QStringList more = {},
                     const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    const Run r = kforgetest::runHeadless(QStringList{QStringLiteral("eval"), QStringLiteral("--task"), task,
                                                      QStringLiteral("--kernel"), kernel, QStringLiteral("--variant"),
                                                      QStringLiteral("small"), QStringLiteral("--json")}
                                              + more,
                                          env);
    return QJsonDocument::fromJson(r.out).object();
}

} // namespace

class TestTorchImport : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    QString imported(const QString& module, QStringList more = {}) {
        const QString out = m_dir.filePath(module);
        if (!QFile::exists(out + QStringLiteral("/task.json"))) {
            const Run r = importModule(module + QStringLiteral(".py"), out, more);
            if (r.exitCode != 0)
                qWarning("%s%s", r.out.constData(), r.err.constData());
        }
        return out;
    }

private slots:
    void kernelBenchModules_data() {
        QTest::addColumn<QString>("module");
        QTest::addColumn<QString>("family");
        QTest::addColumn<QStringList>("sizes");
        QTest::addColumn<QStringList>("inputs");
        QTest::addColumn<QStringList>("outputs");
        QTest::addColumn<QString>("firstOutputShape");
        QTest::newRow("elementwise") << u"elementwise"_s << u"elementwise"_s << QStringList{u"batch_size"_s, u"dim"_s}
                                     << QStringList{u"x"_s} << QStringList{u"out"_s} << u"batch_size,dim"_s;
        // reduce_dim says which axis, not how large anything is: it stays a constant.
        QTest::newRow("reduction") << u"reduction"_s << u"reduction"_s
                                   << QStringList{u"batch_size"_s, u"dim1"_s, u"dim2"_s} << QStringList{u"x"_s}
                                   << QStringList{u"out"_s} << u"batch_size,1,dim2"_s;
        QTest::newRow("norm with weight and bias")
            << u"layernorm"_s << u"norm"_s << QStringList{u"batch_size"_s, u"dim1"_s, u"dim2"_s, u"features"_s}
            << QStringList{u"x"_s, u"ln_weight"_s, u"ln_bias"_s} << QStringList{u"out"_s}
            << u"batch_size,features,dim1,dim2"_s;
        QTest::newRow("linear with bias")
            << u"linear"_s << u"gemm"_s << QStringList{u"batch_size"_s, u"in_features"_s, u"out_features"_s}
            << QStringList{u"x"_s, u"linear_weight"_s, u"linear_bias"_s} << QStringList{u"out"_s}
            << u"batch_size,out_features"_s;
        // Buffers are inputs too, the 0-dimensional counter as one element.
        QTest::newRow("batch norm buffers")
            << u"batchnorm"_s << u"norm"_s << QStringList{u"batch_size"_s, u"features"_s, u"height"_s, u"width"_s}
            << QStringList{u"x"_s,
                           u"bn_weight"_s,
                           u"bn_bias"_s,
                           u"bn_running_mean"_s,
                           u"bn_running_var"_s,
                           u"bn_num_batches_tracked"_s}
            << QStringList{u"out"_s} << u"batch_size,features,height,width"_s;
        QTest::newRow("two outputs") << u"twooutputs"_s << u"reduction"_s << QStringList{u"cols"_s, u"rows"_s}
                                     << QStringList{u"x"_s} << QStringList{u"out0"_s, u"out1"_s} << u"rows"_s;
    }

    void kernelBenchModules() {
        QFETCH(QString, module);
        QFETCH(QString, family);
        QFETCH(QStringList, sizes);
        QFETCH(QStringList, inputs);
        QFETCH(QStringList, outputs);
        QFETCH(QString, firstOutputShape);
        const QJsonObject t = taskJson(imported(module));
        QVERIFY2(!t.isEmpty(), "the import wrote no task.json");
        QCOMPARE(t[QStringLiteral("family")].toString(), family);
        QCOMPARE(keys(t[QStringLiteral("sizes")].toObject()), sizes);
        QCOMPARE(names(t[QStringLiteral("inputs")].toArray()), inputs);
        QCOMPARE(names(t[QStringLiteral("outputs")].toArray()), outputs);
        QStringList shape;
        for (const QJsonValue& d :
             t[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("shape")].toArray())
            shape << d.toString();
        QCOMPARE(shape.join(QLatin1Char(',')), firstOutputShape);
        QCOMPARE(t[QStringLiteral("reference")].toObject()[QStringLiteral("torch")].toString(),
                 QStringLiteral("reference.py"));
        QVERIFY(!t.contains(QStringLiteral("baseline")));
        // A small variant, no larger than the defaults anywhere and smaller somewhere.
        const QJsonObject small = t[QStringLiteral("variants")].toObject()[QStringLiteral("small")].toObject();
        QCOMPARE(keys(small), sizes);
        bool smaller = false;
        for (const QString& k : sizes) {
            QVERIFY(small[k].toInt() <= t[QStringLiteral("sizes")].toObject()[k].toInt());
            smaller = smaller || small[k].toInt() < t[QStringLiteral("sizes")].toObject()[k].toInt();
        }
        QVERIFY(smaller);
        // float32 outputs get float32 tolerances; the indices of a max are exact.
        const QJsonObject first = t[QStringLiteral("outputs")].toArray().at(0).toObject();
        QCOMPARE(first[QStringLiteral("dtype")].toString(), QStringLiteral("float32"));
        QVERIFY(first[QStringLiteral("rtol")].toDouble() > 0.0);
        if (module == QLatin1String("twooutputs")) {
            const QJsonObject indices = t[QStringLiteral("outputs")].toArray().at(1).toObject();
            QCOMPARE(indices[QStringLiteral("dtype")].toString(), QStringLiteral("int64"));
            QCOMPARE(indices[QStringLiteral("atol")].toDouble(), 0.0);
        }
    }

    void flopsFromPyTorch() {
        QCOMPARE(taskJson(imported(QStringLiteral("linear")))[QStringLiteral("flops")].toString(),
                 QStringLiteral("2 * batch_size * in_features * out_features"));
        // The counter counts no elementwise work: one operation per element is assumed, and said.
        const QJsonObject t = taskJson(imported(QStringLiteral("elementwise")));
        QCOMPARE(t[QStringLiteral("flops")].toString(), QStringLiteral("batch_size * dim"));
        QVERIFY(t[QStringLiteral("imported")].toObject()[QStringLiteral("notes")].toArray().at(0).toString().contains(
            QLatin1String("FLOP counter")));
    }

    void parametersKeepTheirInitialisation() {
        // nn.Linear(1024, 512) draws its weights from U(-1/32, 1/32).
        const QJsonObject w =
            taskJson(imported(QStringLiteral("linear")))[QStringLiteral("inputs")].toArray().at(1).toObject();
        const QJsonObject init = w[QStringLiteral("init")].toObject();
        QCOMPARE(init[QStringLiteral("kind")].toString(), QStringLiteral("uniform"));
        QVERIFY(qAbs(init[QStringLiteral("high")].toDouble() - 1.0 / 32) < 1e-3);
        QCOMPARE(names(w[QStringLiteral("shape")].toArray()).size(), 2);
    }

    void plainFunction() {
        const QString out = m_dir.filePath(QStringLiteral("gelu"));
        const Run r = importModule(
            QStringLiteral("function.py"), out,
            {QStringLiteral("--function"), QStringLiteral("gelu"), QStringLiteral("--name"), QStringLiteral("gelu")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(r.out.contains("imported"));
        const QJsonObject t = taskJson(out);
        QCOMPARE(t[QStringLiteral("name")].toString(), QStringLiteral("gelu"));
        QCOMPARE(keys(t[QStringLiteral("sizes")].toObject()), QStringList{QStringLiteral("n")});
        const QJsonObject init =
            t[QStringLiteral("inputs")].toArray().at(0).toObject()[QStringLiteral("init")].toObject();
        QCOMPARE(init[QStringLiteral("kind")].toString(), QStringLiteral("uniform"));
        QCOMPARE(init[QStringLiteral("low")].toDouble(), -4.0);
        QCOMPARE(init[QStringLiteral("high")].toDouble(), 4.0);
    }

    void openClKernelsAgainstPyTorch() {
        const QJsonObject ok = evalJson(imported(QStringLiteral("linear")), data(QStringLiteral("linear.cl")),
                                        {QStringLiteral("--no-timing")});
        QCOMPARE(ok[QStringLiteral("status")].toString(), QStringLiteral("ok"));
        QCOMPARE(ok[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("mismatches")].toInt(), 0);
        QVERIFY(ok[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("checked")].toInt() > 0);

        const QJsonObject two = evalJson(imported(QStringLiteral("twooutputs")), data(QStringLiteral("twooutputs.cl")),
                                         {QStringLiteral("--no-timing")});
        QCOMPARE(two[QStringLiteral("status")].toString(), QStringLiteral("ok"));
        QCOMPARE(two[QStringLiteral("outputs")].toArray().size(), 2);
    }

    void wrongKernelIsIncorrect() {
        QFile right(data(QStringLiteral("linear.cl")));
        QVERIFY(right.open(QIODevice::ReadOnly));
        QByteArray source = right.readAll();
        QVERIFY(source.contains("float acc = linear_bias[j];"));
        source.replace("float acc = linear_bias[j];", "float acc = 0.0f; // the bias forgotten");
        const QString wrong = m_dir.filePath(QStringLiteral("linear_nobias.cl"));
        QVERIFY(kforgetest::writeFile(wrong, source));
        const QJsonObject r = evalJson(imported(QStringLiteral("linear")), wrong, {QStringLiteral("--no-timing")});
        QCOMPARE(r[QStringLiteral("status")].toString(), QStringLiteral("incorrect"));
        QVERIFY(r[QStringLiteral("outputs")].toArray().at(0).toObject()[QStringLiteral("mismatches")].toInt() > 0);
    }

    void timedWithoutBaseline() {
        // An imported task has no baseline kernel: its yardstick is PyTorch eager, timed in the same
        // evaluation, and the speedup says so (torch.compile only when asked for).
        const QJsonObject r = evalJson(imported(QStringLiteral("elementwise")), data(QStringLiteral("elementwise.cl")));
        QCOMPARE(r[u"status"_s].toString(), u"ok"_s);
        const QJsonObject timing = r[u"timing"_s].toObject();
        QVERIFY(timing.contains(u"candidate"_s));
        QVERIFY(!timing.contains(u"baseline"_s));
        QCOMPARE(timing[u"speedup_base"_s].toString(), u"pytorch eager"_s);
        const QJsonObject torch = timing[u"pytorch"_s].toObject();
        QVERIFY(torch[u"eager"_s].toObject()[u"median_us"_s].toDouble() > 0.0);
        QVERIFY(!torch.contains(u"compile"_s));
        QCOMPARE(timing[u"speedup"_s].toDouble(), torch[u"speedup_vs_eager"_s].toDouble());
        // PyTorch's calls bracket the kernel's timed runs: half before them, half after.
        QCOMPARE(torch[u"eager"_s].toObject()[u"count"_s].toInt(), 20);
        QVERIFY2(torch[u"eager"_s].toObject()[u"method"_s].toString().contains(u"half the calls before"_s),
                 qPrintable(torch[u"eager"_s].toObject()[u"method"_s].toString()));
    }

    void setsMadeOneAtATime() {
        // KernelBench's level-1 shapes reach gigabytes a tensor: where the input sets do not all fit
        // in the host memory a worker may use (1 KiB here), each is made just before it is used and
        // handed to PyTorch alone, timing uses one set, and the result says so. A wrong kernel is
        // still caught; a budget that cannot be read is named and the default used.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"KFORGE_WORKER_HOST_MEMORY"_s, u"1K"_s);
        const auto said = [](const QJsonObject& r, const QString& text) {
            for (const QJsonValue& d : r[u"diagnostics"_s].toArray())
                if (d.toObject()[u"message"_s].toString().contains(text))
                    return true;
            return false;
        };
        const QJsonObject ok =
            evalJson(imported(QStringLiteral("elementwise")), data(QStringLiteral("elementwise.cl")), {}, env);
        QCOMPARE(ok[u"status"_s].toString(), u"ok"_s);
        QVERIFY(said(ok, u"made one at a time"_s));
        QCOMPARE(ok[u"seeds"_s].toArray().size(), 3);
        QCOMPARE(ok[u"timing_seeds"_s].toArray().size(), 1);
        QCOMPARE(ok[u"timing"_s].toObject()[u"speedup_base"_s].toString(), u"pytorch eager"_s);

        QFile right(data(QStringLiteral("linear.cl")));
        QVERIFY(right.open(QIODevice::ReadOnly));
        const QString wrong = m_dir.filePath(u"linear_nobias_tight.cl"_s);
        QVERIFY(
            kforgetest::writeFile(wrong, right.readAll().replace("float acc = linear_bias[j];", "float acc = 0.0f;")));
        const QJsonObject bad = evalJson(imported(QStringLiteral("linear")), wrong, {u"--no-timing"_s}, env);
        QCOMPARE(bad[u"status"_s].toString(), u"incorrect"_s);

        env.insert(u"KFORGE_WORKER_HOST_MEMORY"_s, u"lots"_s);
        const QJsonObject unread =
            evalJson(imported(QStringLiteral("elementwise")), data(QStringLiteral("elementwise.cl")), {}, env);
        QCOMPARE(unread[u"status"_s].toString(), u"ok"_s);
        QVERIFY(said(unread, u"KFORGE_WORKER_HOST_MEMORY='lots' is not a positive size"_s));
    }

    void searchWithoutBaseline() {
        // A run on an imported task starts from the user's own kernel; its speedups are over
        // PyTorch eager, and it ends by timing its best beside eager and torch.compile.
        const QString task = imported(QStringLiteral("elementwise"));
        const QString db = m_dir.filePath(u"runs.kforge"_s);
        const QStringList run{
            u"run"_s,     u"--task"_s,          task,           u"--variant"_s, u"small"_s,          u"--db"_s, db,
            u"--quiet"_s, u"--no-experience"_s, u"--islands"_s, u"1"_s,         u"--budget-evals"_s, u"4"_s};
        // Nothing to start from: said, not searched.
        const Run bare = kforgetest::runHeadless(run);
        QVERIFY(bare.exitCode != 0);
        QVERIFY2(bare.err.contains("nothing to search from") && bare.err.contains("--seed-kernel"),
                 bare.err.constData());

        const Run r =
            kforgetest::runHeadless(run + QStringList{u"--seed-kernel"_s, data(u"elementwise.cl"_s), u"--json"_s});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[u"state"_s].toString(), u"finished"_s);
        QCOMPARE(o[u"speedup_base"_s].toString(), u"PyTorch eager"_s);
        QVERIFY(o[u"best_speedup"_s].toDouble() > 0.0);
        const QJsonObject torch = o[u"pytorch"_s].toObject();
        QVERIFY2(torch[u"start_eager_us"_s].toDouble() > 0.0, r.out.constData());
        QVERIFY2(torch[u"best_speedup_vs_eager"_s].toDouble() > 0.0, r.out.constData());
        QVERIFY2(torch[u"best_speedup_vs_compile"_s].toDouble() > 0.0
                     || torch[u"note"_s].toString().contains(u"torch.compile failed"_s),
                 r.out.constData());

        // The stored run says the same, naming its yardstick.
        const Run shown = kforgetest::runHeadless({u"runs"_s, u"show"_s, u"--db"_s, db});
        QVERIFY2(shown.out.contains("over PyTorch eager (re-measured)"), shown.out.constData());
        QVERIFY2(shown.out.contains("pytorch at the end, beside the best"), shown.out.constData());

        // ModelNew runs CUDA kernels: an OpenCL run's export says so instead of writing one.
        const Run exported = kforgetest::runHeadless(
            {u"export"_s, u"--best"_s, u"--torch"_s, u"--db"_s, db, u"--out"_s, m_dir.filePath(u"exported"_s)});
        QVERIFY(exported.exitCode != 0);
        QVERIFY2(exported.err.contains("exports CUDA kernels"), exported.err.constData());
    }

    void benchKernelBench() {
        // Problems in KernelBench's layout, one with a seed kernel and one without: a table with the
        // speedups over eager and torch.compile and fast_p, the second said to have nothing to search from.
        const QString root = m_dir.filePath(u"kb"_s);
        QVERIFY(QDir().mkpath(root + u"/level1"_s) && QDir().mkpath(root + u"/seeds"_s));
        QVERIFY(QFile::copy(data(u"elementwise.py"_s), root + u"/level1/1_Scaled_ReLU.py"_s));
        QVERIFY(QFile::copy(data(u"reduction.py"_s), root + u"/level1/2_Row_sum.py"_s));
        QVERIFY(QFile::copy(data(u"elementwise.cl"_s), root + u"/seeds/1_Scaled_ReLU.cl"_s));
        const QString out = m_dir.filePath(u"kb-out"_s);
        const Run r = kforgetest::runHeadless({u"bench"_s, u"kernelbench"_s, root, u"--backend"_s, u"opencl"_s,
                                               u"--level"_s, u"1"_s, u"--budget-evals"_s, u"2"_s, u"--seeds"_s,
                                               root + u"/seeds"_s, u"--out"_s, out});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(out + u"/kernelbench.json"_s);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray rows = o[u"problems"_s].toArray();
        QCOMPARE(rows.size(), 2);
        const QJsonObject first = rows.at(0).toObject();
        QCOMPARE(first[u"problem"_s].toString(), u"1_Scaled_ReLU"_s);
        QCOMPARE(first[u"result"_s].toString(), u"correct"_s);
        QVERIFY(first[u"speedup_vs_eager"_s].toDouble() > 0.0);
        QCOMPARE(rows.at(1).toObject()[u"result"_s].toString(), u"nothing to search from"_s);
        QCOMPARE(o[u"fast_p"_s].toObject()[u"eager"_s].toObject()[u"fast_0"_s].toDouble(), 0.5);
        QVERIFY(r.out.contains("| fast_p over |"));
    }

    void runComparesBuiltInTaskWithPyTorch() {
        // A built-in task's speedups are over its baseline; PyTorch is timed beside the baseline at
        // the start and beside the best at the end.
        const QString db = m_dir.filePath(u"builtin.kforge"_s);
        const Run r = kforgetest::runHeadless({u"run"_s, u"--task"_s, u"vector_add"_s, u"--variant"_s, u"small"_s,
                                               u"--db"_s, db, u"--quiet"_s, u"--no-experience"_s, u"--no-experts"_s,
                                               u"--islands"_s, u"1"_s, u"--budget-evals"_s, u"3"_s, u"--json"_s});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o[u"speedup_base"_s].toString(), u"the baseline"_s);
        const QJsonObject torch = o[u"pytorch"_s].toObject();
        QVERIFY2(torch[u"start_eager_us"_s].toDouble() > 0.0, r.out.constData());
        QVERIFY2(torch[u"seed_speedup_vs_eager"_s].toDouble() > 0.0, r.out.constData());
        QVERIFY2(torch[u"best_speedup_vs_eager"_s].toDouble() > 0.0, r.out.constData());
        // Its budget was spent on the search: the last comparison is not counted against it.
        QVERIFY(o[u"evaluations"_s].toInt() <= 3);

        const Run quiet =
            kforgetest::runHeadless({u"run"_s, u"--task"_s, u"vector_add"_s, u"--variant"_s, u"small"_s, u"--db"_s, db,
                                     u"--quiet"_s, u"--no-experience"_s, u"--no-experts"_s, u"--islands"_s, u"1"_s,
                                     u"--budget-evals"_s, u"2"_s, u"--no-pytorch"_s, u"--json"_s});
        const QJsonObject q = QJsonDocument::fromJson(quiet.out).object();
        QVERIFY2(q[u"pytorch"_s].toObject()[u"note"_s].toString().contains(u"--no-pytorch"_s), quiet.out.constData());
        QVERIFY(q[u"pytorch"_s].toObject()[u"start_eager_us"_s].isNull());
    }

    void builtInPyTorchFormsAgree_data() {
        QTest::addColumn<QString>("task");
        for (const char* t : {"vector_add", "softmax", "row_sum", "layernorm", "sgemm", "bias_gelu"})
            QTest::newRow(t) << QString::fromLatin1(t);
    }
    void builtInPyTorchFormsAgree() {
        // Every built-in task has a PyTorch form; on OpenCL, the baseline passes against it as it
        // does against the reference kernel (the CUDA-only tasks are checked on a GPU by gpucheck).
        QFETCH(QString, task);
        const Run r = kforgetest::runHeadless({u"eval"_s, u"--task"_s, task, u"--variant"_s, u"small"_s,
                                               u"--reference"_s, u"torch"_s, u"--no-timing"_s, u"--json"_s});
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QVERIFY2(o[u"status"_s].toString() == u"ok"_s, r.out.constData());
    }

    void speedupOverPyTorch() {
        const Run r = kforgetest::runHeadless(
            {u"eval"_s, u"--task"_s, u"vector_add"_s, u"--variant"_s, u"small"_s, u"--pytorch"_s, u"--json"_s});
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QVERIFY2(o[u"status"_s].toString() == u"ok"_s, r.out.constData());
        const QJsonObject torch = o[u"timing"_s].toObject()[u"pytorch"_s].toObject();
        QVERIFY2(torch[u"eager"_s].toObject()[u"median_us"_s].toDouble() > 0.0, r.out.constData());
        QVERIFY(torch[u"speedup_vs_eager"_s].toDouble() > 0.0);
        QVERIFY(torch[u"note"_s].toString().contains(u"PyTorch"_s));
        // torch.compile is timed too, or the note says why it could not be.
        QVERIFY2(torch.contains(u"compile"_s) || torch[u"note"_s].toString().contains(u"torch.compile failed"_s),
                 r.out.constData());
        // The text form names each yardstick.
        const Run text = kforgetest::runHeadless(
            {u"eval"_s, u"--task"_s, u"vector_add"_s, u"--variant"_s, u"small"_s, u"--pytorch"_s});
        QVERIFY2(text.out.contains("over PyTorch eager"), text.out.constData());
    }

    void withoutPyTorchFormSaysSo() {
        // A task without a PyTorch form evaluated with --pytorch: no number, a reason.
        const QString dir = m_dir.filePath(u"noform"_s);
        QVERIFY(QDir().mkpath(dir));
        for (const char* f : {"task.json", "baseline.cl", "reference.cl"})
            QVERIFY(QFile::copy(QStringLiteral(KFORGE_SOURCE_TASKS "/vector_add/") + QString::fromLatin1(f),
                                dir + u"/"_s + QString::fromLatin1(f)));
        QFile json(dir + u"/task.json"_s);
        QVERIFY(json.open(QIODevice::ReadOnly));
        QJsonObject t = QJsonDocument::fromJson(json.readAll()).object();
        json.close();
        t[u"reference"_s] = QJsonObject{{u"opencl"_s, u"reference.cl"_s}};
        t[u"baseline"_s] = QJsonObject{{u"opencl"_s, u"baseline.cl"_s}};
        QVERIFY(json.open(QIODevice::WriteOnly | QIODevice::Truncate));
        json.write(QJsonDocument(t).toJson());
        json.close();
        const Run r = kforgetest::runHeadless(
            {u"eval"_s, u"--task"_s, dir, u"--variant"_s, u"small"_s, u"--pytorch"_s, u"--json"_s});
        const QJsonObject torch =
            QJsonDocument::fromJson(r.out).object()[u"timing"_s].toObject()[u"pytorch"_s].toObject();
        QVERIFY2(torch[u"note"_s].toString().contains(u"no PyTorch form"_s), r.out.constData());
        QVERIFY(!torch.contains(u"speedup_vs_eager"_s));
    }

    void badModulesAreNamed_data() {
        QTest::addColumn<QString>("module");
        QTest::addColumn<QString>("message");
        QTest::newRow("random forward") << u"bad_random.py"_s << u"forward is random"_s;
        QTest::newRow("in place") << u"bad_inplace.py"_s << u"changes its input 'x' in place"_s;
        QTest::newRow("number returned") << u"bad_scalar_output.py"_s << u"forward returns float, not a tensor"_s;
        QTest::newRow("no get_inputs") << u"bad_no_inputs.py"_s << u"no get_inputs()"_s;
    }

    void badModulesAreNamed() {
        QFETCH(QString, module);
        QFETCH(QString, message);
        const QString out = m_dir.filePath(QStringLiteral("bad-") + module);
        const Run r = importModule(module, out);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
        QVERIFY2(!QFile::exists(out), "nothing is written for a module that cannot be a task");
    }

    void existingFolderIsKept() {
        const QString out = imported(QStringLiteral("elementwise"));
        const Run r = importModule(QStringLiteral("elementwise.py"), out);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("give --force"), r.err.constData());
        QVERIFY(QFile::exists(out + QStringLiteral("/task.json")));
    }

    void missingFile() {
        const Run r = importModule(QStringLiteral("no_such_module.py"), m_dir.filePath(QStringLiteral("none")));
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains("no such file"), r.err.constData());
    }

    void withoutPyTorch() {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("KFORGE_PYTHON"), QStringLiteral("/nonexistent/python3"));
        const Run r = importModule(QStringLiteral("linear.py"), m_dir.filePath(QStringLiteral("never")), {}, env);
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains("KFORGE_PYTHON"), r.err.constData());
        // A worker without PyTorch says so instead of verifying against nothing.
        const QJsonObject e = evalJson(imported(QStringLiteral("linear")), data(QStringLiteral("linear.cl")),
                                       {QStringLiteral("--no-timing")}, env);
        QCOMPARE(e[QStringLiteral("status")].toString(), QStringLiteral("runtime_error"));
        QVERIFY2(e[QStringLiteral("message")].toString().contains(QLatin1String("needs a Python with PyTorch")),
                 qPrintable(e[QStringLiteral("message")].toString()));
    }
};

QTEST_GUILESS_MAIN(TestTorchImport)
#include "tst_torchimport.moc"
