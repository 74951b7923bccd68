// The template tuner: proposals never repeat until the space is exhausted, neighbours come first,
// the same engine state gives the same sequence, and fixed parameters are never moved.

#include "propose/tuner.h"

#include <QTest>

#include <algorithm>
#include <cstdlib>
#include <set>

using kforge::model::ParamValues;
using kforge::propose::Tuner;
using kforge::spec::ParamDecl;

namespace {

ParamDecl tunable(const char* name, std::vector<std::int64_t> choices, std::int64_t value) {
    ParamDecl p;
    p.name = name;
    p.choices = std::move(choices);
    p.value = value;
    return p;
}

ParamDecl fixed(const char* name, std::int64_t value) {
    ParamDecl p;
    p.name = name;
    p.value = value;
    return p;
}

// 3 x 3 x 4 = 36 configurations, one list out of numeric order, and a fixed parameter.
std::vector<ParamDecl> smallSpace() {
    return {tunable("BX", {8, 16, 32}, 16), tunable("BY", {16, 4, 8}, 8), tunable("VEC", {1, 2, 4, 8}, 4),
            fixed("HD", 64)};
}

// The index of a value among a parameter's sorted choices.
int indexOf(std::vector<std::int64_t> choices, std::int64_t value) {
    std::sort(choices.begin(), choices.end());
    return static_cast<int>(std::find(choices.begin(), choices.end(), value) - choices.begin());
}

} // namespace

class TestTuner : public QObject {
    Q_OBJECT

private slots:
    void completeFillsDefaults() {
        const Tuner tuner(smallSpace());
        const ParamValues full = tuner.complete({{"BX", 32}, {"UNKNOWN", 5}});
        const ParamValues expected{{"BX", 32}, {"BY", 8}, {"VEC", 4}, {"HD", 64}};
        QCOMPARE(full, expected);
        QCOMPARE(tuner.complete({}), (ParamValues{{"BX", 16}, {"BY", 8}, {"VEC", 4}, {"HD", 64}}));
    }

    void spaceSize() {
        QCOMPARE(Tuner(smallSpace()).spaceSize(), std::uint64_t(36));
        QCOMPARE(Tuner({fixed("A", 1)}).spaceSize(), std::uint64_t(1));
        // Repeated choices are one configuration.
        QCOMPARE(Tuner({tunable("A", {4, 4, 8}, 4)}).spaceSize(), std::uint64_t(2));
        std::vector<ParamDecl> many;
        for (int i = 0; i < 30; ++i)
            many.push_back(tunable(qPrintable(QStringLiteral("P%1").arg(i)), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1));
        QCOMPARE(Tuner(many).spaceSize(), UINT64_MAX); // 10^30 saturates
    }

    void neverRepeatsUntilExhausted() {
        Tuner tuner(smallSpace());
        std::mt19937_64 rng(7);
        std::set<ParamValues> proposed;
        ParamValues around = tuner.complete({});
        for (int i = 0; i < 36; ++i) {
            const auto next = tuner.propose(around, rng);
            QVERIFY2(next, qPrintable(QStringLiteral("nothing proposed after %1").arg(i)));
            QVERIFY2(proposed.insert(*next).second, "a configuration was proposed twice");
            QCOMPARE(next->at("HD"), std::int64_t(64));
            around = *next;
        }
        QCOMPARE(proposed.size(), std::size_t(36));
        QVERIFY(tuner.exhausted());
        QCOMPARE(tuner.seenCount(), std::uint64_t(36));
        QVERIFY(!tuner.propose(around, rng));
        QVERIFY(!tuner.propose({}, rng, 1.0));
    }

    void neighboursFirst() {
        const std::vector<ParamDecl> decls = smallSpace();
        for (std::uint64_t seed = 0; seed < 20; ++seed) {
            Tuner tuner(decls);
            std::mt19937_64 rng(seed);
            const ParamValues around{{"BX", 16}, {"BY", 8}, {"VEC", 4}};
            tuner.markSeen(around);
            const auto next = tuner.propose(around, rng, 0.0);
            QVERIFY(next);
            int moved = 0;
            for (const auto& d : decls) {
                const int step = std::abs(indexOf(d.choices, next->at(d.name))
                                          - indexOf(d.choices, tuner.complete(around).at(d.name)));
                if (step != 0) {
                    ++moved;
                    QCOMPARE(step, 1);
                }
            }
            QCOMPARE(moved, 1);
        }
    }

    void twoParameterMovesWhenSingleMovesAreSeen() {
        Tuner tuner({tunable("A", {1, 2, 3}, 2), tunable("B", {1, 2, 3}, 2)});
        std::mt19937_64 rng(3);
        for (const ParamValues& v :
             {ParamValues{{"A", 2}, {"B", 2}}, ParamValues{{"A", 1}, {"B", 2}}, ParamValues{{"A", 3}, {"B", 2}},
              ParamValues{{"A", 2}, {"B", 1}}, ParamValues{{"A", 2}, {"B", 3}}})
            tuner.markSeen(v);
        const auto next = tuner.propose({}, rng, 0.0);
        QVERIFY(next);
        QVERIFY(next->at("A") != 2 && next->at("B") != 2); // a corner: both moved one step
    }

    void deterministic() {
        Tuner a(smallSpace());
        Tuner b(smallSpace());
        std::mt19937_64 ra(42);
        std::mt19937_64 rb(42);
        ParamValues aroundA, aroundB;
        for (int i = 0; i < 36; ++i) {
            const auto x = a.propose(aroundA, ra, 0.3);
            const auto y = b.propose(aroundB, rb, 0.3);
            QVERIFY(x && y);
            QCOMPARE(*x, *y);
            aroundA = *x;
            aroundB = *y;
        }
    }

    void markSeenRespected() {
        Tuner tuner(smallSpace());
        std::mt19937_64 rng(1);
        // Everything but one configuration taken already, e.g. by a resumed run.
        const ParamValues left{{"BX", 32}, {"BY", 4}, {"VEC", 1}, {"HD", 64}};
        for (std::int64_t bx : {8, 16, 32})
            for (std::int64_t by : {4, 8, 16})
                for (std::int64_t vec : {1, 2, 4, 8}) {
                    const ParamValues v{{"BX", bx}, {"BY", by}, {"VEC", vec}};
                    if (tuner.complete(v) != left)
                        tuner.markSeen(v);
                }
        QCOMPARE(tuner.seenCount(), std::uint64_t(35));
        QVERIFY(tuner.seen({{"BX", 16}})); // completed with defaults before the lookup
        QVERIFY(!tuner.seen(left));
        const auto next = tuner.propose({}, rng, 0.0);
        QVERIFY(next);
        QCOMPARE(*next, left);
        QVERIFY(tuner.seen(left));
        QVERIFY(!tuner.propose({}, rng));
    }

    void offListValuesDoNotExhaust() {
        Tuner tuner({tunable("A", {1, 2}, 1)});
        tuner.markSeen({{"A", 5}}); // hand-edited: remembered, but not one of the tuner's own
        QVERIFY(tuner.seen({{"A", 5}}));
        QCOMPARE(tuner.seenCount(), std::uint64_t(0));
        std::mt19937_64 rng(0);
        // Neighbours of an off-list value are the nearest choices.
        const auto next = tuner.propose({{"A", 5}}, rng, 0.0);
        QVERIFY(next);
        QCOMPARE(next->at("A"), std::int64_t(2));
    }

    void fixedOnlySpace() {
        Tuner tuner({fixed("HD", 64), fixed("RB", 256)});
        QCOMPARE(tuner.spaceSize(), std::uint64_t(1));
        QVERIFY(!tuner.exhausted());
        std::mt19937_64 rng(5);
        const auto only = tuner.propose({}, rng);
        QVERIFY(only);
        QCOMPARE(*only, (ParamValues{{"HD", 64}, {"RB", 256}}));
        QVERIFY(tuner.exhausted());
        QVERIFY(!tuner.propose({}, rng));

        Tuner resumed({fixed("HD", 64)});
        resumed.markSeen({});
        QVERIFY(resumed.exhausted());
        QVERIFY(!resumed.propose({}, rng));
    }

    void hugeSpace() {
        std::vector<ParamDecl> decls;
        for (int i = 0; i < 10; ++i)
            decls.push_back(tunable(qPrintable(QStringLiteral("P%1").arg(i)), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 5));
        decls.push_back(fixed("F", 3));
        Tuner tuner(decls);
        QCOMPARE(tuner.spaceSize(), std::uint64_t(10000000000));
        std::mt19937_64 rng(11);
        std::set<ParamValues> proposed;
        ParamValues around;
        for (int i = 0; i < 2000; ++i) {
            const auto next = tuner.propose(around, rng);
            QVERIFY(next);
            QVERIFY2(proposed.insert(*next).second, "a configuration was proposed twice");
            QCOMPARE(next->at("F"), std::int64_t(3));
            around = *next;
        }
        QCOMPARE(tuner.seenCount(), std::uint64_t(2000));
        QVERIFY(!tuner.exhausted());
    }
};

QTEST_GUILESS_MAIN(TestTuner)
#include "tst_tuner.moc"
