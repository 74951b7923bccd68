// What people's decisions about candidates change, stored before they count: a suspicious result
// waits in the review queue (requested once, also when a resumed run replays it) instead of
// entering an archive; accepting admits it and puts it up for promotion; rejecting or vetoing
// takes it out of every archive and can move the confirmed best, and the cell it leaves goes to
// the island's next best kernel of that behaviour, a migrant it took in included (as it does when
// an elite's re-measurement falls short); pins are stored as flags; a resumed run's stored pins
// and vetoes come back; a decision the store refuses stops the run.

#include "search/curation.h"

#include <QTemporaryDir>
#include <QTest>

using namespace kforge;
using namespace kforge::search;
using K = EngineCommand::Kind;

namespace {

EngineCommand command(K kind, qint64 candidate, const QString& reason = {}) {
    EngineCommand c;
    c.kind = kind;
    c.candidate = candidate;
    c.reason = reason;
    return c;
}

protocol::EvaluateResult result(double speedup) {
    protocol::EvaluateResult r;
    r.status = protocol::Status::Ok;
    r.speedup = speedup;
    return r;
}

// A run of two islands in a fresh store: the baseline (1) and three children on island 1, in
// different cells, at 2x, 3x and 50x; the run asks for a review above 20x.
struct Fixture {
    QTemporaryDir dir;
    std::unique_ptr<store::RunStore> store;
    qint64 runId = 0;
    RunRecorder record;
    QStringList failures;
    Population population;
    IslandModel islands{2};
    Promotions promotions;
    RunLearning learning; // without a library: learns nothing
    Curation curation;
    RunConfig config;

    explicit Fixture(std::map<qint64, model::ReviewState> storedReviews = {}, bool readOnly = false) {
        const QString path = dir.filePath(QStringLiteral("runs.kforge"));
        {
            auto created = store::RunStore::open(path);
            if (!created)
                qFatal("%s", created.error().c_str());
            store = std::move(*created);
            store::RunRecord run;
            run.task = QStringLiteral("t");
            run.backend = model::Backend::OpenCL;
            runId = *store->createRun(run);
            const std::vector<std::pair<qint64, double>> kernels{{1, 1.0}, {2, 2.0}, {3, 3.0}, {4, 50.0}};
            for (const auto& [id, speedup] : kernels) {
                Entry e;
                e.candidate.id = id;
                e.candidate.key = QString::number(id);
                e.candidate.island = 1;
                e.candidate.origin = id == 1 ? model::Origin::Seed : model::Origin::Tuner;
                if (id > 1)
                    e.candidate.parents = {1};
                e.result = result(speedup);
                e.fitness = model::fitnessOf(*e.result);
                e.cell = model::Cell{};
                e.cell->front() = static_cast<int>(id);
                if (!store->insertCandidate(runId, e.candidate))
                    qFatal("candidate not stored");
                population.add(std::move(e));
            }
        }
        if (readOnly)
            store = std::move(*store::RunStore::open(store->path(), store::OpenMode::ReadOnly));
        record.attach(store.get(), runId, [this](const QString& m) { failures << m; });
        config.reviewSpeedup = 20.0;
        curation.attach({store.get(), runId, &record, &population, &islands, &promotions, &learning},
                        std::move(storedReviews));
    }

    QString place(qint64 id) { return curation.place(population.at(id), {}, config); }
    // Puts candidates in the cell of `id` (where they would have lost to it or to each other).
    void sameCellAs(qint64 id, std::initializer_list<qint64> others) {
        for (qint64 other : others)
            population.at(other).cell = population.at(id).cell;
    }
    std::optional<Elite> eliteOfCell(int island, qint64 id) const {
        return islands.island(island).archive.at(*population.at(id).cell);
    }
    bool inArchive(int island, qint64 id) const {
        for (const auto& m : islands.members())
            if (m.island == island && m.candidate == id)
                return true;
        return false;
    }
    QList<store::ReviewRecord> reviews() const { return *store->reviews(runId); }
    QList<model::EventKind> events() const {
        QList<model::EventKind> kinds;
        const auto stored = store->events(runId);
        for (const auto& e : *stored)
            kinds << e.kind;
        return kinds;
    }
};

} // namespace

class TestCuration : public QObject {
    Q_OBJECT
private slots:
    void baselineEntersEveryIsland() {
        Fixture f;
        QVERIFY(f.place(1).isEmpty());
        QVERIFY(f.inArchive(0, 1));
        QVERIFY(f.inArchive(1, 1));
    }

    void childEntersItsIsland() {
        Fixture f;
        QVERIFY(f.place(2).isEmpty());
        QVERIFY(f.inArchive(1, 2));
        QVERIFY(!f.inArchive(0, 2));
    }

    void suspiciousResultWaitsForReviewRequestedOnce() {
        Fixture f;
        const QString notice = f.place(4);
        QVERIFY2(notice.contains(QLatin1String("candidate 4 waits for review")), qPrintable(notice));
        QVERIFY(!f.inArchive(1, 4));
        QVERIFY(f.population.at(4).awaitingReview());
        QCOMPARE(f.reviews().size(), 1);
        QCOMPARE(f.reviews().front().state, model::ReviewState::Pending);
        QVERIFY(f.place(4).isEmpty()); // asked once
        QCOMPARE(f.reviews().size(), 1);
    }

    void replayedReviewsAreNotAskedAgain_data() {
        QTest::addColumn<int>("state");
        QTest::addColumn<bool>("admitted");
        QTest::newRow("still pending") << int(model::ReviewState::Pending) << false;
        QTest::newRow("accepted") << int(model::ReviewState::Accepted) << true;
        QTest::newRow("rejected") << int(model::ReviewState::Rejected) << false;
    }
    void replayedReviewsAreNotAskedAgain() {
        QFETCH(int, state);
        QFETCH(bool, admitted);
        Fixture f({{4, model::ReviewState(state)}});
        QVERIFY(f.place(4).isEmpty());
        QCOMPARE(f.inArchive(1, 4), admitted);
        QVERIFY(f.reviews().isEmpty());
    }

    void acceptedReviewIsAdmittedAndUpForPromotion() {
        Fixture f;
        f.place(4);
        QVERIFY(!f.curation.apply(command(K::AcceptReview, 4, QStringLiteral("checked by hand")), 3));
        QVERIFY(f.inArchive(1, 4));
        QCOMPARE(f.population.at(4).reviewState, model::ReviewState::Accepted);
        QCOMPARE(f.reviews().front().state, model::ReviewState::Accepted);
        QCOMPARE(f.reviews().front().note, QStringLiteral("checked by hand"));
        QCOMPARE(f.promotions.next(f.population, {}), std::optional<qint64>(4));
        const auto events = *f.store->events(f.runId);
        QCOMPARE(events.back().kind, model::EventKind::ReviewAccepted);
        QCOMPARE(events.back().generation, 3);
        QCOMPARE(events.back().data.value(QStringLiteral("reason")).toString(), QStringLiteral("checked by hand"));
    }

    void rejectedReviewIsVetoed() {
        Fixture f;
        f.place(4);
        f.curation.apply(command(K::RejectReview, 4), 0);
        QVERIFY(f.population.at(4).candidate.vetoed);
        QVERIFY(!f.inArchive(1, 4));
        QCOMPARE(f.reviews().front().state, model::ReviewState::Rejected);
        QCOMPARE(f.store->flaggedCandidates(f.runId)->second, QList<qint64>{4});
        QVERIFY(f.events().contains(model::EventKind::ReviewRejected));
    }

    void vetoOfTheBestMovesIt() {
        Fixture f;
        for (qint64 id : {1, 2, 3})
            f.place(id);
        f.promotions.confirm(2, result(2.0), f.population);
        f.promotions.confirm(3, result(3.0), f.population);
        QCOMPARE(f.promotions.best().candidate, qint64(3));
        QVERIFY(f.curation.apply(command(K::Veto, 3), 1));
        QCOMPARE(f.promotions.best().candidate, qint64(2));
        QVERIFY(!f.inArchive(1, 3));
        QVERIFY(!f.curation.apply(command(K::Veto, 1), 1)); // never confirmed: the best stays
        QCOMPARE(f.events(), (QList<model::EventKind>{model::EventKind::Veto, model::EventKind::Veto}));
    }

    void aVetoedElitesCellGoesToTheNextBest() {
        Fixture f;
        f.sameCellAs(4, {2, 3});
        f.config.reviewSpeedup = 0.0; // 4 (50x) enters without review here
        for (qint64 id : {1, 2, 3, 4})
            f.place(id);
        QCOMPARE(f.eliteOfCell(1, 4)->candidate, qint64(4)); // 2 and 3 lost to it
        f.curation.apply(command(K::Veto, 4), 1);
        QCOMPARE(f.eliteOfCell(1, 4)->candidate, qint64(3));
        f.curation.apply(command(K::Veto, 3), 1);
        QCOMPARE(f.eliteOfCell(1, 4)->candidate, qint64(2));
        QVERIFY(!f.eliteOfCell(0, 4)); // island 0 never had a kernel of that cell
        f.curation.apply(command(K::Veto, 2), 1);
        QVERIFY(!f.eliteOfCell(1, 4));                       // nothing left: the cell is empty
        QCOMPARE(f.eliteOfCell(1, 1)->candidate, qint64(1)); // other cells are untouched
    }

    void aMigrantTakesBackACellItOnceHeld() {
        Fixture f;
        const auto anyone = [](qint64) { return true; };
        for (qint64 id : {1, 2})
            f.place(id);
        f.islands.migrate(1, anyone); // 2 (2x), island 1's best, moves into island 0's cell
        QCOMPARE(f.eliteOfCell(0, 2)->candidate, qint64(2));
        f.sameCellAs(2, {3});
        f.place(3);
        f.islands.migrate(1, anyone); // 3 (3x) follows it and takes that cell from it
        QCOMPARE(f.eliteOfCell(0, 2)->candidate, qint64(3));
        QVERIFY(!f.islands.arrived(1, 3) && !f.islands.arrived(0, 4));
        f.curation.apply(command(K::Veto, 3), 1);
        QCOMPARE(f.eliteOfCell(1, 2).value_or(Elite{}).candidate, qint64(2)); // its own island's
        QCOMPARE(f.eliteOfCell(0, 2).value_or(Elite{}).candidate, qint64(2)); // and the island it migrated to
    }

    void aKernelWaitingForReviewDoesNotTakeAVetoedCell() {
        Fixture f;
        f.sameCellAs(2, {4});
        for (qint64 id : {1, 2, 4})
            f.place(id); // 4 (50x) waits for review
        f.curation.apply(command(K::Veto, 2), 1);
        QVERIFY(!f.eliteOfCell(1, 2));
        f.curation.apply(command(K::AcceptReview, 4), 1);
        QCOMPARE(f.eliteOfCell(1, 2)->candidate, qint64(4));
    }

    void aRemeasuredEliteYieldsToAKernelThatBeatsItsNewFigure() {
        Fixture f;
        f.sameCellAs(3, {2});
        for (qint64 id : {1, 2, 3})
            f.place(id);
        QCOMPARE(f.eliteOfCell(1, 3)->candidate, qint64(3)); // 3x beat 2x
        // Re-measured at 1.5x: the 2x kernel it turned away takes the cell.
        f.population.at(3).fitness = model::fitnessOf(result(1.5));
        f.curation.remeasured(3);
        QCOMPARE(f.eliteOfCell(1, 3)->candidate, qint64(2));
        // Re-measured at a figure that still wins: it keeps the cell with that figure.
        Fixture g;
        g.sameCellAs(3, {2});
        for (qint64 id : {1, 2, 3})
            g.place(id);
        g.population.at(3).fitness = model::fitnessOf(result(2.5));
        g.curation.remeasured(3);
        QCOMPARE(g.eliteOfCell(1, 3)->candidate, qint64(3));
        QCOMPARE(g.eliteOfCell(1, 3)->fitness.speedup, 2.5);
        // Not correct the second time: out, and the cell goes to the 2x kernel.
        g.population.at(3).fitness = model::Fitness{};
        g.curation.remeasured(3);
        QCOMPARE(g.eliteOfCell(1, 3)->candidate, qint64(2));
    }

    void pinsAreStoredFlags() {
        Fixture f;
        f.curation.apply(command(K::Pin, 2), 0);
        QCOMPARE(f.store->flaggedCandidates(f.runId)->first, QList<qint64>{2});
        QVERIFY(f.population.pinned().count(2));
        f.curation.apply(command(K::Unpin, 2), 0);
        QVERIFY(f.store->flaggedCandidates(f.runId)->first.isEmpty());
        QCOMPARE(f.events(), (QList<model::EventKind>{model::EventKind::Pin, model::EventKind::Unpin}));
    }

    void storedActionsReplay() {
        Fixture f;
        f.place(2);
        f.promotions.confirm(2, result(2.0), f.population);
        using Change = Steering::FlagChange;
        QVERIFY(f.curation.replay({{3, Change::Kind::Pin}, {99, Change::Kind::Veto}, {2, Change::Kind::Veto}}));
        QVERIFY(f.population.pinned().count(3));
        QVERIFY(f.population.at(2).candidate.vetoed);
        QCOMPARE(f.promotions.best().candidate, qint64(0));
        QVERIFY(f.events().isEmpty()); // stored before: not recorded again
    }

    void refusedWriteStopsTheRun() {
        Fixture f({}, /*readOnly=*/true);
        QVERIFY(f.place(4).isEmpty());
        QVERIFY(!f.inArchive(1, 4));
        QCOMPARE(f.failures.size(), 1);
        QVERIFY2(f.failures.front().contains(QLatin1String("the review request of candidate 4")),
                 qPrintable(f.failures.front()));
        f.curation.apply(command(K::Pin, 2), 0);
        QCOMPARE(f.failures.size(), 1); // reported once
    }
};

QTEST_GUILESS_MAIN(TestCuration)
#include "tst_curation.moc"
