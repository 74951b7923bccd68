// The MAP-Elites archive: insertion into empty cells, replacement only by a strictly better
// kernel, eviction, removal (a veto) and the ranking the selection and migration use.

#include "search/archive.h"

#include <QTest>

using namespace kforge::search;
using namespace kforge::model;

namespace {

Fitness ok(double speedup) {
    return Fitness{true, speedup};
}

} // namespace

class TestArchive : public QObject {
    Q_OBJECT
private slots:
    void insertion_data() {
        QTest::addColumn<double>("incumbent");
        QTest::addColumn<bool>("correct");
        QTest::addColumn<double>("challenger");
        QTest::addColumn<int>("outcome");
        QTest::newRow("better replaces") << 1.5 << true << 2.0 << int(Archive::Outcome::Improved);
        QTest::newRow("worse is rejected") << 1.5 << true << 1.2 << int(Archive::Outcome::Rejected);
        QTest::newRow("a tie keeps the incumbent") << 1.5 << true << 1.5 << int(Archive::Outcome::Rejected);
        QTest::newRow("incorrect never enters") << 1.5 << false << 9.0 << int(Archive::Outcome::Rejected);
    }

    void insertion() {
        QFETCH(double, incumbent);
        QFETCH(bool, correct);
        QFETCH(double, challenger);
        QFETCH(int, outcome);
        Archive a;
        const Cell cell{1, 2, 3};
        QCOMPARE(a.insert(cell, 1, ok(incumbent)).outcome, Archive::Outcome::NewCell);
        const auto result = a.insert(cell, 2, Fitness{correct, challenger});
        QCOMPARE(int(result.outcome), outcome);
        const bool replaced = outcome == int(Archive::Outcome::Improved);
        QCOMPARE(result.evicted.has_value(), replaced);
        if (replaced)
            QCOMPARE(*result.evicted, qint64(1));
        QCOMPARE(a.at(cell)->candidate, replaced ? qint64(2) : qint64(1));
        QCOMPARE(a.size(), 1);
    }

    void incorrectDoesNotFillAnEmptyCell() {
        Archive a;
        QCOMPARE(a.insert({0, 0, 0}, 1, Fitness{false, 0.0}).outcome, Archive::Outcome::Rejected);
        QCOMPARE(a.size(), 0);
    }

    void cellsAreIndependent() {
        Archive a;
        a.insert({0, 0, 0}, 1, ok(1.0));
        a.insert({0, 0, 1}, 2, ok(0.5));
        a.insert({3, 3, 3}, 3, ok(4.0));
        QCOMPARE(a.size(), 3);
        QCOMPARE(*a.cellOf(2), (Cell{0, 0, 1}));
        QVERIFY(!a.at({1, 1, 1}));
    }

    void removeIsAVeto() {
        Archive a;
        a.insert({0, 0, 0}, 1, ok(1.0));
        a.insert({0, 1, 0}, 2, ok(2.0));
        QVERIFY(a.remove(2));
        QVERIFY(!a.contains(2));
        QVERIFY(!a.remove(2));
        QCOMPARE(a.size(), 1);
        // The emptied cell takes a worse kernel again.
        QCOMPARE(a.insert({0, 1, 0}, 3, ok(0.1)).outcome, Archive::Outcome::NewCell);
    }

    void aRemeasuredEliteCompetesWithItsNewFigure() {
        // First measured at 3.0 (the figure it was picked for), re-measured at 2.0: a kernel at
        // 2.5 now takes the cell, which it could not have against the first figure.
        Archive a;
        const Cell cell{1, 0, 2};
        a.insert(cell, 1, ok(3.0));
        QVERIFY(a.rescore(1, ok(2.0)));
        QCOMPARE(a.at(cell)->fitness.speedup, 2.0);
        QCOMPARE(a.insert(cell, 2, ok(2.5)).outcome, Archive::Outcome::Improved);
        QVERIFY(!a.rescore(1, ok(9.0))); // no longer an elite: nothing to rescore
        QCOMPARE(a.at(cell)->candidate, qint64(2));
    }

    void anEliteThatFailsItsRemeasurementLeaves() {
        Archive a;
        a.insert({0, 0, 0}, 1, ok(1.0));
        a.insert({0, 1, 0}, 2, ok(2.0));
        QVERIFY(a.rescore(2, Fitness{false, 0.0}));
        QVERIFY(!a.contains(2));
        QCOMPARE(a.size(), 1);
        QCOMPARE(a.at({0, 0, 0})->fitness.speedup, 1.0);
    }

    void rankedBestFirstStable() {
        Archive a;
        a.insert({0, 0, 0}, 5, ok(1.0));
        a.insert({0, 0, 1}, 3, ok(2.0));
        a.insert({0, 0, 2}, 4, ok(1.0));
        a.insert({0, 0, 3}, 9, ok(3.0));
        const auto r = a.ranked();
        QCOMPARE(r.size(), size_t(4));
        QCOMPARE(r[0].candidate, qint64(9));
        QCOMPARE(r[1].candidate, qint64(3));
        QCOMPARE(r[2].candidate, qint64(4)); // equal fitness: the older (lower id) first
        QCOMPARE(r[3].candidate, qint64(5));
    }

    void reinsertingTheIncumbentIsNoChange() {
        Archive a;
        a.insert({0, 0, 0}, 1, ok(1.0));
        QCOMPARE(a.insert({0, 0, 0}, 1, ok(5.0)).outcome, Archive::Outcome::Rejected);
    }
};

QTEST_GUILESS_MAIN(TestArchive)
#include "tst_archive.moc"
