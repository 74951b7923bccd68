// The run model layer: a stored run read in chunks by the reader thread, changes in the store
// followed incrementally, the candidate table and its filters (under QAbstractItemModelTester),
// details loaded on demand, and a live run driven through RunSession against the fake worker.

#include "candidatetablemodel.h"
#include "enginetestdata.h"
#include "eval/workerpool.h"
#include "runreader.h"
#include "runsession.h"
#include "syntheticrun.h"
#include "timeformat.h"
#include "workerthread.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QFont>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>

using namespace kforge;
using namespace kforge::ui;

class TestRunModel : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase() {
        QVERIFY2(joinWorkerThreads(), "the reader and engine threads end once their work is done");
    }

    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void readsStoredRunInChunks() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("big.kforge"));
        const int n = RunReader::kChunk * 2 + 500;
        qint64 runId = 0;
        QVERIFY(kforgetest::writeSyntheticRun(path, n, 4, &runId));
        {
            // Flags on candidates of the first chunk and of the last: each row shows its own.
            auto store = store::RunStore::open(path);
            QVERIFY(store);
            QVERIFY((*store)->setCandidateFlags(runId, 5, true, false));
            QVERIFY((*store)->setCandidateFlags(runId, n - 1, false, true));
        }

        RunSession session;
        CandidateTableModel table(session.data());
        CandidateFilterModel filter;
        filter.setSourceModel(&table);
        // (The model testers run in followsChangesInTheStore: they check every row on every change.)
        QSignalSpy added(session.data(), &RunData::candidatesAdded);
        QVERIFY(session.openStored(path));
        QTRY_COMPARE_WITH_TIMEOUT(session.data()->candidateCount(), n, 30000);
        QTRY_VERIFY(!session.data()->loading());
        QVERIFY(added.count() >= 3); // arrived in chunks
        QCOMPARE(table.rowCount(), n);
        QCOMPARE(session.data()->loaded(), qint64(n));
        QCOMPARE(session.data()->total(), qint64(n));
        // Every candidate once, in id order, with its own evaluation.
        for (int row = 0; row < n; ++row) {
            const CandidateRow& r = session.data()->candidateAt(row);
            QCOMPARE(r.id, qint64(row + 1));
            QVERIFY2(r.evaluated(), qPrintable(QStringLiteral("candidate %1 has no result").arg(r.id)));
            QCOMPARE(r.correct, r.id % 7 != 3);
            QCOMPARE(r.pinned, r.id == 5);
            QCOMPARE(r.vetoed, r.id == n - 1);
        }
        {
            // What the views say of PyTorch is what the store says.
            auto store = store::RunStore::open(path, store::OpenMode::ReadOnly);
            QVERIFY(store);
            auto records = (*store)->pytorchEvaluations(runId);
            QVERIFY(records);
            const auto expected = store::yardstickFigures(*records, session.data()->run().bestCandidate);
            QCOMPARE(session.data()->pytorch().note, expected.note);
            QCOMPARE(session.data()->pytorch().speedupBase, expected.speedupBase);
            QCOMPARE(session.data()->pytorch().timed(), expected.timed());
        }
        QCOMPARE(session.data()->islands(), 4);
        QVERIFY(session.data()->ceilings().valid());
        QVERIFY(!session.data()->events().isEmpty());

        // Rows: results, cells from the sources, roofline points, lineage.
        const CandidateRow* ok = session.data()->candidate(11); // every 7th from the 3rd is wrong
        QVERIFY(ok);
        QVERIFY(ok->correct);
        QVERIFY(ok->speedup > 0);
        QVERIFY(ok->cell.has_value());
        QVERIFY(ok->hasRoofline);
        QCOMPARE(ok->findings, 1);
        QVERIFY(session.data()->candidate(3)->evaluated());
        QVERIFY(!session.data()->candidate(3)->correct);
        QVERIFY(session.data()->childrenOf(1).contains(17));
        QCOMPARE(table.indexOf(11).data(CandidateTableModel::CandidateRole).toLongLong(), qint64(11));
        // How the tuner found a kernel, beside its origin.
        QCOMPARE(session.data()->candidate(12)->tunerStrategy, std::optional(model::TunerStrategy::Model));
        QCOMPARE(table.indexOf(12, CandidateTableModel::Origin).data().toString(), QStringLiteral("tuner (model)"));
        QCOMPARE(table.indexOf(11, CandidateTableModel::Origin).data().toString(), QStringLiteral("tuner (neighbour)"));
        QCOMPARE(table.indexOf(1, CandidateTableModel::Origin).data().toString(), QStringLiteral("seed"));

        // Filters.
        filter.setState(CandidateFilterModel::State::Failed);
        QVERIFY(filter.rowCount() > 0);
        for (int r = 0; r < filter.rowCount(); ++r)
            QVERIFY(!filter.index(r, 0).data(CandidateTableModel::CorrectRole).toBool());
        filter.setState(CandidateFilterModel::State::Any);
        filter.setText(QStringLiteral("variant 1234"));
        QCOMPARE(filter.rowCount(), 1);
        filter.setText(QString());
        filter.setIsland(2);
        QCOMPARE(filter.rowCount(), n / 4);
        filter.setIsland(-1);
        filter.sort(CandidateTableModel::Speedup, Qt::DescendingOrder);
        QVERIFY(filter.index(0, 0).data(CandidateTableModel::CorrectRole).toBool());
        QCOMPARE(filter.rowCount(), n);
        for (int r = 1; r < filter.rowCount(); ++r)
            QVERIFY(filter.index(r - 1, CandidateTableModel::Speedup).data(CandidateTableModel::SortRole).toDouble()
                    >= filter.index(r, CandidateTableModel::Speedup).data(CandidateTableModel::SortRole).toDouble());
        // By id, both ways (rows compare by position: the table is in id order).
        for (const Qt::SortOrder order : {Qt::DescendingOrder, Qt::AscendingOrder}) {
            filter.sort(CandidateTableModel::Id, order);
            QCOMPARE(filter.rowCount(), n);
            for (int r = 1; r < filter.rowCount(); ++r) {
                const qint64 before =
                    filter.index(r - 1, CandidateTableModel::Id).data(CandidateTableModel::SortRole).toLongLong();
                const qint64 after =
                    filter.index(r, CandidateTableModel::Id).data(CandidateTableModel::SortRole).toLongLong();
                QVERIFY(order == Qt::AscendingOrder ? before < after : before > after);
            }
        }

        // Details on demand.
        QSignalSpy loaded(session.details(), &CandidateDetails::loaded);
        QVERIFY(!session.details()->details(10));
        QVERIFY(loaded.wait());
        const CandidateDetail* detail = session.details()->details(10);
        QVERIFY(detail);
        QVERIFY(detail->error.isEmpty());
        QVERIFY(detail->candidate.source.contains(QStringLiteral("__global__")));
        QVERIFY(detail->searchEvaluation());
        // A candidate of the last chunk, read through its own slice of the store.
        QVERIFY(!session.details()->details(n - 2));
        QVERIFY(loaded.wait());
        QCOMPARE(session.details()->details(n - 2)->candidate.id, qint64(n - 2));
        QVERIFY(session.details()->details(n - 2)->searchEvaluation());
        QVERIFY(!session.details()->details(n + 50)); // unknown: an error, not a hang
        QVERIFY(loaded.wait());
        QVERIFY(!session.details()->details(n + 50)->error.isEmpty());
    }

    void rowsNameTheModelTheyWereTimedOn() {
        // Each row names the model it was timed on (the candidate list shows that column when a
        // run has more than one); a time's tooltip names it too.
        QTemporaryDir dir;
        for (const bool mixed : {false, true}) {
            const QString path = dir.filePath(mixed ? QStringLiteral("mixed.kforge") : QStringLiteral("one.kforge"));
            QVERIFY(kforgetest::writeSyntheticRun(path, 30, 2, nullptr, mixed ? "NVIDIA A100" : nullptr));
            RunSession session;
            CandidateTableModel table(session.data());
            QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
            QVERIFY(session.openStored(path));
            QTRY_VERIFY(session.data()->candidateCount() == 30 && !session.data()->loading());
            QCOMPARE(session.data()->deviceModels().size(), mixed ? 2 : 1);
            const CandidateRow* onA100 = session.data()->candidate(15); // every fifth, when mixed
            const CandidateRow* onH200 = session.data()->candidate(16);
            QVERIFY(onA100 && onH200 && onA100->candidateUs > 0 && onH200->candidateUs > 0);
            QCOMPARE(onA100->device, mixed ? QStringLiteral("NVIDIA A100") : QStringLiteral("NVIDIA H200"));
            QCOMPARE(table.indexOf(15, CandidateTableModel::Device).data().toString(), onA100->device);
            QCOMPARE(table.indexOf(16, CandidateTableModel::Device).data().toString(), QStringLiteral("NVIDIA H200"));
            const QString tip = table.indexOf(16, CandidateTableModel::Time).data(Qt::ToolTipRole).toString();
            QVERIFY2(tip.contains(QStringLiteral("NVIDIA H200")), qPrintable(tip));
            // The column reads in the unit that suits the time; the tooltip keeps the exact figure.
            QCOMPARE(table.indexOf(16, CandidateTableModel::Time).data().toString(),
                     formatKernelTime(onH200->candidateUs));
            QVERIFY2(tip.contains(QString::number(onH200->candidateUs, 'f', 2) + QStringLiteral(" µs")),
                     qPrintable(tip));
        }
    }

    void kernelTimesReadInTheirUnit_data() {
        QTest::addColumn<double>("microseconds");
        QTest::addColumn<QString>("text");
        QTest::newRow("never timed") << 0.0 << QString();
        QTest::newRow("negative") << -3.0 << QString();
        QTest::newRow("not a number") << std::nan("") << QString();
        QTest::newRow("infinite") << std::numeric_limits<double>::infinity() << QString();
        QTest::newRow("nanoseconds") << 0.85 << QStringLiteral("850 ns");
        QTest::newRow("rounds up to a microsecond") << 0.9996 << QStringLiteral("1.000 µs");
        QTest::newRow("microseconds") << 1.5 << QStringLiteral("1.500 µs");
        QTest::newRow("carry into two digits") << 9.99961 << QStringLiteral("10.00 µs");
        QTest::newRow("tens") << 21.6 << QStringLiteral("21.60 µs");
        QTest::newRow("hundreds") << 451.54 << QStringLiteral("451.5 µs");
        QTest::newRow("rounds up to a millisecond") << 999.96 << QStringLiteral("1.000 ms");
        QTest::newRow("milliseconds") << 11269.83 << QStringLiteral("11.27 ms");
        QTest::newRow("hundred milliseconds") << 103856.2 << QStringLiteral("103.9 ms");
        QTest::newRow("seconds") << 1234567.0 << QStringLiteral("1.235 s");
        QTest::newRow("long") << 2.5e9 << QStringLiteral("2500.0 s");
    }

    void kernelTimesReadInTheirUnit() {
        QFETCH(double, microseconds);
        QFETCH(QString, text);
        QCOMPARE(formatKernelTime(microseconds), text);
    }

    // The run's best is judged by confirmed speedups (re-measured before promotion): the Confirmed
    // column ranks the run's best first, where the first measurements rank a candidate whose
    // re-measurement fell short above it; a speedup never re-measured is marked unconfirmed.
    void confirmedSpeedupsRankTheBest() {
        // A real run on an H200: #4 measured 1.344x and was confirmed at 1.376x, the run's best;
        // #5 measured 1.384x but re-measured at 1.334x.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("llm.kforge"));
        QVERIFY(QFile::copy(QStringLiteral(KFORGE_SOURCE_DIR "/tests/gpu/runs/h200-llm-2026-11-30.kforge"), path));
        RunSession session;
        CandidateTableModel table(session.data());
        CandidateFilterModel filter;
        filter.setSourceModel(&table);
        QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(session.openStored(path));
        QTRY_VERIFY(session.data()->hasRun() && session.data()->complete() && session.data()->candidateCount() > 0);
        const qint64 best = session.data()->run().bestCandidate;
        QCOMPARE(best, qint64(4));
        QCOMPARE(table.headerData(CandidateTableModel::Confirmed, Qt::Horizontal).toString(),
                 QStringLiteral("Confirmed"));

        filter.sort(CandidateTableModel::Speedup, Qt::DescendingOrder);
        QCOMPARE(filter.index(0, 0).data(CandidateTableModel::CandidateRole).toLongLong(), qint64(5));
        filter.sort(CandidateTableModel::Confirmed, Qt::DescendingOrder);
        QCOMPARE(filter.index(0, 0).data(CandidateTableModel::CandidateRole).toLongLong(), best);
        QCOMPARE(filter.index(1, 0).data(CandidateTableModel::CandidateRole).toLongLong(), qint64(5));
        QCOMPARE(table.indexOf(best, CandidateTableModel::Confirmed).data().toString(), QStringLiteral("1.376×"));
        QCOMPARE(session.data()->run().bestSpeedup, session.data()->candidate(best)->confirmedSpeedup);
        QVERIFY(table.indexOf(best, CandidateTableModel::Flags).data().toString().contains(QStringLiteral("best")));

        // Unconfirmed speedups are marked: italic, and their tooltip says so; re-measured ones are not.
        qint64 once = 0;
        for (int r = 0; r < session.data()->candidateCount() && !once; ++r) {
            const CandidateRow& row = session.data()->candidateAt(r);
            if (row.correct && row.speedup > 0.0 && !row.confirmed())
                once = row.id;
        }
        QVERIFY(once);
        const QModelIndex unconfirmed = table.indexOf(once, CandidateTableModel::Speedup);
        QVERIFY(unconfirmed.data(Qt::FontRole).value<QFont>().italic());
        QVERIFY(unconfirmed.data(Qt::ToolTipRole).toString().contains(QStringLiteral("Unconfirmed")));
        QVERIFY(table.indexOf(once, CandidateTableModel::Confirmed).data().toString().isEmpty());
        const QModelIndex remeasured = table.indexOf(5, CandidateTableModel::Speedup);
        QVERIFY(!remeasured.data(Qt::FontRole).value<QFont>().italic());
        QVERIFY(remeasured.data(Qt::ToolTipRole).toString().contains(QStringLiteral("re-measured 1.334×")));
    }

    void followsChangesInTheStore() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run.kforge"));
        qint64 run = 0;
        QVERIFY(kforgetest::writeSyntheticRun(path, 40, 2, &run));
        RunSession session;
        CandidateTableModel table(session.data());
        CandidateFilterModel filter;
        filter.setSourceModel(&table);
        filter.setState(CandidateFilterModel::State::Correct);
        filter.sort(CandidateTableModel::Speedup, Qt::DescendingOrder);
        QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester filterTester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(session.openStored(path));
        QTRY_COMPARE(session.data()->candidateCount(), 40);

        // Another connection writes, as the engine does during a live run.
        auto writer = store::RunStore::open(path);
        QVERIFY(writer);
        model::Candidate c;
        c.id = 41;
        c.parents = {7};
        c.island = 1;
        c.generation = 9;
        c.origin = model::Origin::Human;
        c.label = QStringLiteral("human edit of #7");
        c.source = QStringLiteral("__kernel void k() {}\n");
        c.key = QStringLiteral("k41");
        QVERIFY((*writer)->insertCandidate(run, c));
        QVERIFY((*writer)->setCandidateFlags(run, 7, true, false));
        QVERIFY((*writer)->setCandidateFlags(run, 8, false, true));
        QVERIFY((*writer)->insertEvent(run, 9, model::EventKind::Pin, {{QStringLiteral("candidate"), 7}}));

        QSignalSpy changed(session.data(), &RunData::candidatesChanged);
        QSignalSpy events(session.data(), &RunData::eventsAdded);
        session.refresh();
        QTRY_COMPARE(session.data()->candidateCount(), 41);
        QTRY_VERIFY(changed.count() > 0);
        QVERIFY(session.data()->candidate(7)->pinned);
        QVERIFY(session.data()->candidate(8)->vetoed);
        QVERIFY(!session.data()->candidate(41)->evaluated());
        QCOMPARE(session.data()->candidate(41)->origin, model::Origin::Human);
        QVERIFY(session.data()->childrenOf(7).contains(41));
        QTRY_COMPARE(events.count(), 1);
        QCOMPARE(session.data()->events().last().kind, model::EventKind::Pin);

        // Its result arrives later.
        protocol::EvaluateResult r;
        r.status = protocol::Status::Ok;
        r.speedup = 3.0;
        r.compile.push_back({"candidate", true, 0.1, "", {}});
        QVERIFY((*writer)->insertEvaluation(run, 41, kforge::model::EvaluationPurpose::Search, r));
        session.refresh();
        QTRY_VERIFY(session.data()->candidate(41)->correct);
        QCOMPARE(session.data()->candidate(41)->speedup, 3.0);
        QVERIFY(session.data()->candidate(41)->cell.has_value());
    }

    void badStoreIsReported() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("not-a-store.kforge"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not sqlite");
        f.close();
        RunSession session;
        QSignalSpy failed(&session, &RunSession::failed);
        QVERIFY(session.openStored(path));
        QTRY_COMPARE(failed.count(), 1);
        QVERIFY(failed.first().first().toString().contains(QStringLiteral("not-a-store.kforge")));
        QVERIFY(!session.openStored(dir.filePath(QStringLiteral("missing.kforge"))));
    }

    void drivesALiveRun() {
        QTemporaryDir dir;
        search::RunConfig config;
        config.task = test::engineDataDir() + QStringLiteral("/tasks/fake_scale");
        config.backend = model::Backend::OpenCL;
        config.islands = 2;
        config.childrenPerIsland = 3;
        config.budgetEvaluations = 40;
        config.workers = 2;
        config.evalTimeoutSeconds = 30;
        const search::Engine::Setup setup = test::fakeEngineSetup(dir.filePath(QStringLiteral("live.kforge")), config);

        RunSession session;
        CandidateTableModel table(session.data());
        QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy finished(&session, &RunSession::finished);
        QSignalSpy opened(&session, &RunSession::opened);
        QVERIFY(session.start(setup));
        QVERIFY(session.isLive());
        QVERIFY(!session.start(setup)); // one at a time
        QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 30000);
        // Steer as soon as there is a correct candidate other than the seeds.
        QTRY_VERIFY_WITH_TIMEOUT(session.data()->candidateCount() > 4, 60000);
        const qint64 pinned = session.data()->candidateAt(0).id;
        QVERIFY(session.pin(pinned));
        QTRY_VERIFY_WITH_TIMEOUT(session.data()->candidate(pinned)->pinned || !finished.isEmpty(), 60000);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        QVERIFY(!session.isLive());
        const auto summary = finished.first().first().value<search::RunSummary>();
        QCOMPARE(summary.state, search::RunState::Finished);
        QTRY_COMPARE(session.data()->candidateCount(), int(summary.candidates));
        QTRY_VERIFY(session.data()->candidate(pinned)->pinned);
        QVERIFY(session.data()->progress().evaluations > 0);
        // Steering the stored run waits in its store for the run to resume; pause and stop need
        // a live run.
        QSignalSpy queued(&session, &RunSession::queued);
        QVERIFY(session.pin(pinned, false));
        QTRY_COMPARE(queued.count(), 1);
        QCOMPARE(queued.first().first().toInt(), 1);
        QVERIFY(!session.pause());
        QVERIFY(!session.stop());
    }
};

QTEST_MAIN(TestRunModel)
#include "tst_runmodel.moc"
