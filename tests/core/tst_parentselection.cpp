// Parent selection and the island model, on plain values: which kernels an island offers as
// parents, how the tournament and the roulette choose among them, how admission feeds the
// curiosity of a parent's cell, and how elites migrate around the ring.

#include "search/islandmodel.h"
#include "search/parentselector.h"
#include "search/population.h"

#include <QTest>

#include <map>

using namespace kforge;
using namespace kforge::search;
using model::Cell;
using model::Fitness;

namespace {

Fitness ok(double speedup) {
    return Fitness{true, speedup};
}

// A population of correct kernels 1..n (unparseable sources: no tuner, so never "tunable").
Population population(int n) {
    Population p;
    for (int i = 1; i <= n; ++i) {
        Entry e;
        e.candidate.id = i;
        e.candidate.source = QStringLiteral("kernel %1").arg(i);
        e.candidate.key = e.candidate.source;
        e.fitness = ok(1.0);
        p.add(std::move(e));
    }
    return p;
}

// How often each id is chosen over `draws` seeds.
std::map<qint64, int> tally(const std::vector<ParentOption>& options, double exploitation, int draws = 3000) {
    std::map<qint64, int> counts;
    for (int seed = 0; seed < draws; ++seed) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
        if (auto id = chooseParent(options, exploitation, rng))
            ++counts[*id];
    }
    return counts;
}

} // namespace

Q_DECLARE_METATYPE(std::vector<kforge::search::ParentOption>)

class TestParentSelection : public QObject {
    Q_OBJECT
private slots:
    void noOptionsNoParent() {
        std::mt19937_64 rng(1);
        QVERIFY(!chooseParent({}, 0.5, rng).has_value());
    }

    void choice_data() {
        QTest::addColumn<std::vector<ParentOption>>("options");
        QTest::addColumn<double>("exploitation");
        QTest::addColumn<qint64>("favourite");
        QTest::addColumn<double>("minShare");
        QTest::addColumn<double>("maxShare");
        const std::vector<ParentOption> three{
            {1, ok(1.0), 1.0, false}, {2, ok(2.0), 1.0, false}, {3, ok(3.0), 1.0, false}};
        // A tournament of three among three: the best wins unless it is never drawn, 1 - (2/3)^3.
        QTest::newRow("tournament favours the fittest") << three << 1.0 << qint64(3) << 0.66 << 0.75;
        // Roulette over equal weights: a third each, fitness plays no part.
        QTest::newRow("roulette ignores fitness") << three << 0.0 << qint64(3) << 0.29 << 0.38;
        std::vector<ParentOption> curious = three;
        curious[0].weight = 8.0; // 8 of 10
        QTest::newRow("roulette follows curiosity") << curious << 0.0 << qint64(1) << 0.76 << 0.84;
        std::vector<ParentOption> pinned = three;
        pinned[0].pinned = true; // enters the tournament twice: 1 - (3/4)^3 of being drawn, but loses to both
        QTest::newRow("a pinned weak kernel still loses a fair tournament")
            << pinned << 1.0 << qint64(3) << 0.5 << 0.75;
        const std::vector<ParentOption> one{{7, ok(0.5), 1.0, false}};
        QTest::newRow("a single option is always chosen") << one << 0.5 << qint64(7) << 1.0 << 1.0;
    }

    void choice() {
        QFETCH(std::vector<ParentOption>, options);
        QFETCH(double, exploitation);
        QFETCH(qint64, favourite);
        QFETCH(double, minShare);
        QFETCH(double, maxShare);
        const int draws = 3000;
        const auto counts = tally(options, exploitation, draws);
        const double share = counts.count(favourite) ? counts.at(favourite) / double(draws) : 0.0;
        QVERIFY2(share >= minShare && share <= maxShare, qPrintable(QStringLiteral("share %1").arg(share)));
    }

    void sameSeedSameParent() {
        const std::vector<ParentOption> options{
            {1, ok(1.0), 1.0, false}, {2, ok(2.0), 3.0, true}, {3, ok(1.5), 2.0, false}};
        for (double exploitation : {0.0, 0.5, 1.0}) {
            std::mt19937_64 a(42), b(42);
            for (int i = 0; i < 20; ++i)
                QCOMPARE(chooseParent(options, exploitation, a), chooseParent(options, exploitation, b));
        }
    }

    void optionsOfAnIsland_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QList<qint64>>("expected");
        // Kernels 1 and 2 are elites of island 0 (2 the better), 3 is elite of island 1.
        QTest::newRow("elites best first") << QString() << QList<qint64>{2, 1};
        QTest::newRow("a vetoed elite is no parent") << QStringLiteral("veto 2") << QList<qint64>{1};
        QTest::newRow("a pinned kernel of another island joins") << QStringLiteral("pin 3") << QList<qint64>{2, 1, 3};
        QTest::newRow("a pinned kernel waiting for review does not")
            << QStringLiteral("pin 3 review") << QList<qint64>{2, 1};
        QTest::newRow("a pinned failed kernel does not") << QStringLiteral("pin 3 failed") << QList<qint64>{2, 1};
        QTest::newRow("a pinned elite is listed once") << QStringLiteral("pin 1") << QList<qint64>{2, 1};
    }

    void optionsOfAnIsland() {
        QFETCH(QString, change);
        QFETCH(QList<qint64>, expected);
        Population p = population(3);
        p.at(2).fitness = ok(2.0);
        IslandModel islands(2);
        for (qint64 id : {1, 2}) {
            p.at(id).cell = Cell{0, 0, int(id)};
            islands.admit(id, *p.at(id).cell, p.at(id).fitness, 0, false, std::nullopt);
        }
        p.at(3).cell = Cell{1, 1, 1};
        islands.admit(3, *p.at(3).cell, p.at(3).fitness, 1, false, std::nullopt);
        if (change == QLatin1String("veto 2"))
            p.setVetoed(2);
        if (change.startsWith(QLatin1String("pin 3")))
            p.setPinned(3, true);
        if (change == QLatin1String("pin 1"))
            p.setPinned(1, true);
        if (change.endsWith(QLatin1String("review")))
            p.at(3).review = QStringLiteral("suspicious");
        if (change.endsWith(QLatin1String("failed")))
            p.at(3).fitness = Fitness{false, 0.0};
        QList<qint64> ids;
        for (const auto& o : parentOptions(islands, 0, p, false))
            ids << o.id;
        QCOMPARE(ids, expected);
    }

    void pinnedWeighThreeTimes() {
        Population p = population(2);
        IslandModel islands(1);
        p.at(1).cell = Cell{0, 0, 0};
        islands.admit(1, *p.at(1).cell, p.at(1).fitness, 0, false, std::nullopt);
        p.setPinned(1, true);
        p.setPinned(2, true);
        const auto options = parentOptions(islands, 0, p, false);
        QCOMPARE(options.size(), size_t(2));
        QCOMPARE(options[0].weight, 3.0);
        QVERIFY(options[0].pinned);
        QCOMPARE(options[1].weight, 3.0);
    }

    void spentTemplatesAreNoTunableParents() {
        Population p = population(1); // its source does not parse: no tuner, nothing to tune
        IslandModel islands(1);
        p.at(1).cell = Cell{0, 0, 0};
        islands.admit(1, *p.at(1).cell, p.at(1).fitness, 0, false, std::nullopt);
        QCOMPARE(parentOptions(islands, 0, p, false).size(), size_t(1));
        QVERIFY(parentOptions(islands, 0, p, true).empty());
    }

    void seedsEnterEveryIsland() {
        IslandModel islands(3);
        islands.admit(1, Cell{0, 0, 0}, ok(1.0), 0, true, std::nullopt);
        islands.admit(2, Cell{0, 0, 1}, ok(1.2), 2, false, std::nullopt);
        for (int i = 0; i < 3; ++i)
            QVERIFY(islands.island(i).archive.contains(1));
        QVERIFY(!islands.island(0).archive.contains(2));
        QVERIFY(islands.island(2).archive.contains(2));
        QCOMPARE(islands.filledCells(), 2);
        QCOMPARE(islands.members().size(), size_t(4));
    }

    void curiosity_data() {
        QTest::addColumn<QList<double>>("children"); // speedups of children of the elite in cell A, in order
        QTest::addColumn<double>("expected");
        // Each child that makes it in adds one; each that does not decays it by a fifth.
        QTest::newRow("none") << QList<double>{} << 0.0;
        QTest::newRow("one improves") << QList<double>{2.0} << 1.0;
        QTest::newRow("two improve") << QList<double>{2.0, 3.0} << 2.0;
        QTest::newRow("improve then fail") << QList<double>{2.0, 1.0} << 0.8;
        QTest::newRow("any child that opens a new cell counts") << QList<double>{0.5} << 1.0;
    }

    void curiosity() {
        QFETCH(QList<double>, children);
        QFETCH(double, expected);
        IslandModel islands(1);
        const Cell a{0, 0, 0}, b{1, 1, 1};
        islands.admit(1, a, ok(1.0), 0, false, std::nullopt);
        qint64 id = 10;
        for (double s : children)
            islands.admit(id++, b, ok(s), 0, false, qint64(1)); // all into cell B: better ones replace
        QCOMPARE(islands.curiosity(0, a), expected);
    }

    void migration_data() {
        QTest::addColumn<int>("islands");
        QTest::addColumn<int>("migrants");
        QTest::addColumn<int>("moves");
        QTest::newRow("one island: nowhere to go") << 1 << 2 << 0;
        QTest::newRow("a ring of three, one each") << 3 << 1 << 3;
        QTest::newRow("a ring of three, two each") << 3 << 2 << 6;
        QTest::newRow("no migrants") << 3 << 0 << 0;
    }

    void migration() {
        QFETCH(int, islands);
        QFETCH(int, migrants);
        QFETCH(int, moves);
        IslandModel model(islands);
        // Island i holds kernels 10i+1 (speedup i+1) and 10i+2 (speedup i+0.5) in cells of its own.
        for (int i = 0; i < islands; ++i) {
            model.admit(10 * i + 1, Cell{i, 0, 0}, ok(i + 1.0), i, false, std::nullopt);
            model.admit(10 * i + 2, Cell{i, 1, 0}, ok(i + 0.5), i, false, std::nullopt);
        }
        const auto done = model.migrate(migrants, [](qint64) { return true; });
        QCOMPARE(int(done.size()), moves);
        for (const Migration& m : done) {
            QCOMPARE(m.to, (m.from + 1) % islands);
            QVERIFY(m.accepted); // every cell is new to the receiving island
            QVERIFY(model.island(m.to).archive.contains(m.candidate));
            QCOMPARE(model.island(m.to).archive.cellOf(m.candidate), model.island(m.from).archive.cellOf(m.candidate));
        }
    }

    void ineligibleElitesStayHome() {
        IslandModel model(2);
        model.admit(1, Cell{0, 0, 0}, ok(2.0), 0, false, std::nullopt);
        model.admit(2, Cell{0, 0, 1}, ok(1.0), 0, false, std::nullopt);
        const auto done = model.migrate(1, [](qint64 id) { return id != 1; });
        QCOMPARE(done.size(), size_t(1));
        QCOMPARE(done[0].candidate, qint64(2));
        QVERIFY(!model.island(1).archive.contains(1));
    }

    void removeTakesAKernelOutEverywhere() {
        IslandModel model(2);
        model.admit(1, Cell{0, 0, 0}, ok(1.0), 0, true, std::nullopt);
        model.remove(1);
        QCOMPARE(model.filledCells(), 0);
        QVERIFY(model.members().empty());
    }
};

QTEST_GUILESS_MAIN(TestParentSelection)
#include "tst_parentselection.moc"
