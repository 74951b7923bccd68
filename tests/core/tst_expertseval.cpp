// End to end on the OpenCL worker (PoCL on the CPU in CI): every built-in OpenCL expert, at its
// default parameters, is correct on every task it names at the task's small sizes.

#include "openclworker.h"
#include "propose/expertlibrary.h"
#include "task/evalrequest.h"
#include "task/taskcatalog.h"
#include "util/resourcelocator.h"

#include <QTest>

using namespace kforge;

class TestExpertsEval : public QObject {
    Q_OBJECT
private:
    kforgetest::OpenClWorker m_worker;

private slots:
    void initTestCase() {
        if (const QString why = m_worker.start(); !why.isEmpty())
            QSKIP(qPrintable(why));
    }

    void expertIsCorrect_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("task");
        const auto lib = propose::ExpertLibrary::load({util::ResourceLocator::find(QStringLiteral("experts"))});
        QVERIFY2(lib.problems().isEmpty(), qPrintable(lib.problems().join(QLatin1Char('\n'))));
        for (const auto& e : lib.experts()) {
            if (e.backend != model::Backend::OpenCL)
                continue;
            for (const QString& t : e.tasks)
                QTest::newRow(qPrintable(e.family + QLatin1Char('/') + e.name + QLatin1Char(' ') + t)) << e.file << t;
        }
    }
    void expertIsCorrect() {
        QFETCH(QString, file);
        QFETCH(QString, task);
        const auto lib = propose::ExpertLibrary::load({util::ResourceLocator::find(QStringLiteral("experts"))});
        QString source;
        for (const auto& e : lib.experts())
            if (e.file == file)
                source = e.source;
        QVERIFY(!source.isEmpty());

        auto bundle = task::TaskCatalog::load(task);
        QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str());
        task::EvalSettings settings;
        settings.variant = QStringLiteral("small");
        settings.pairWithBaseline = false;
        settings.options.timing = false; // correctness only: this suite must not depend on load
        auto request = task::makeEvalRequest(*bundle, settings, source, file);
        QVERIFY2(request.ok(), request.ok() ? "" : request.error().c_str());

        QString problem;
        const auto answer = m_worker.evaluate(std::move(*request), problem);
        QVERIFY2(answer, qPrintable(file + QStringLiteral(": ") + problem));
        const protocol::EvaluateResult& r = *answer;
        QString diagnostics;
        for (const auto& d : r.diagnostics)
            diagnostics += QLatin1Char('\n') + QString::fromStdString(d.message);
        QVERIFY2(r.status == protocol::Status::Ok, qPrintable(QString::fromStdString(r.message) + diagnostics));
        for (const auto& c : r.checks)
            QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
        for (const auto& o : r.outputs) {
            QCOMPARE(o.mismatches, 0u);
            QVERIFY(o.checked > 0);
        }
    }

    void cleanupTestCase() { m_worker.stop(); }
};

QTEST_GUILESS_MAIN(TestExpertsEval)
#include "tst_expertseval.moc"
