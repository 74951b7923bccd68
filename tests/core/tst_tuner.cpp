// The template tuner: proposals never repeat until the space is exhausted, neighbours come first,
// the same engine state gives the same sequence, and fixed parameters are never moved. Told the
// times measured, it finds the fastest configuration of synthetic landscapes (known optimum,
// measurement noise, a region that fails) in a fraction of the space, keeps away from failures, and
// starts from what earlier runs measured.

#include "propose/tuner.h"
#include "search/tuningmemory.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

using kforge::model::ParamValues;
using kforge::model::TunerStrategy;
using kforge::propose::Tuner;
using kforge::propose::TunerMeasurement;
using kforge::propose::TunerProposal;
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

// A synthetic tuning problem: declarations and each configuration's time in microseconds (none: it
// fails). Times carry a fixed pseudo-random noise per configuration, as a real measurement would.
struct Landscape {
    std::vector<ParamDecl> decls;
    std::function<std::optional<double>(const ParamValues&)> time;
    double optimum = 0.0; // the fastest time of any configuration
};

// Deterministic noise in [-amplitude, +amplitude] for a configuration.
double noise(const ParamValues& config, double amplitude) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const auto& [name, value] : config) {
        for (const char c : name)
            h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
        h = (h ^ static_cast<std::uint64_t>(value)) * 1099511628211ULL;
    }
    return amplitude * (2.0 * static_cast<double>(h % 10007) / 10006.0 - 1.0);
}

double optimumOf(const Landscape& l) {
    Tuner enumerate(l.decls);
    std::mt19937_64 rng(0);
    double best = 0.0;
    while (auto next = enumerate.propose({}, rng, 1.0))
        if (auto t = l.time(next->params); t && (best == 0.0 || *t < best))
            best = *t;
    return best;
}

// 6 x 5 x 4 x 4 = 480 configurations whose time is a product of one factor per parameter, with
// 2% noise; the largest tiles with the deepest pipelines (48 configurations, as if they needed
// more shared memory than there is) fail. The fastest configuration borders on the failing region.
Landscape tiles() {
    Landscape l;
    l.decls = {tunable("TILE", {16, 32, 64, 128, 256, 512}, 16), tunable("STAGES", {1, 2, 4, 8, 16}, 1),
               tunable("VEC", {1, 2, 4, 8}, 1), tunable("UNROLL", {1, 2, 3, 4}, 1)};
    l.time = [](const ParamValues& c) -> std::optional<double> {
        const int tile = indexOf({16, 32, 64, 128, 256, 512}, c.at("TILE"));
        const int stages = indexOf({1, 2, 4, 8, 16}, c.at("STAGES"));
        if (tile + stages >= 8)
            return std::nullopt;
        static const double fTile[] = {2.6, 1.9, 1.4, 1.12, 1.0, 1.2};
        static const double fStages[] = {1.7, 1.3, 1.1, 1.0, 1.15};
        static const double fVec[] = {1.5, 1.2, 1.0, 1.08};
        static const double fUnroll[] = {1.25, 1.05, 1.0, 1.1};
        return 40.0 * fTile[tile] * fStages[stages] * fVec[indexOf({1, 2, 4, 8}, c.at("VEC"))]
               * fUnroll[c.at("UNROLL") - 1] * (1.0 + noise(c, 0.02));
    };
    l.optimum = optimumOf(l);
    return l;
}

// 6 x 6 x 3 x 3 = 324 configurations where the parameters interact: the block's two sides should
// make 256 threads (any other count costs in proportion to how far it is), and a block of more than
// 512 threads fails to launch.
Landscape blocks() {
    Landscape l;
    l.decls = {tunable("BX", {4, 8, 16, 32, 64, 128}, 4), tunable("BY", {1, 2, 4, 8, 16, 32}, 1),
               tunable("ILP", {1, 2, 4}, 1), tunable("SPLIT", {1, 2, 3}, 1)};
    l.time = [](const ParamValues& c) -> std::optional<double> {
        const double threads = static_cast<double>(c.at("BX") * c.at("BY"));
        if (threads > 512)
            return std::nullopt;
        static const double fIlp[] = {1.3, 1.0, 1.1};
        static const double fSplit[] = {1.0, 1.15, 1.3};
        const double occupancy = 1.0 + 0.35 * std::abs(std::log2(threads / 256.0));
        const double shape = 1.0 + 0.05 * std::abs(std::log2(static_cast<double>(c.at("BX")) / 32.0));
        return 25.0 * occupancy * shape * fIlp[indexOf({1, 2, 4}, c.at("ILP"))] * fSplit[c.at("SPLIT") - 1]
               * (1.0 + noise(c, 0.02));
    };
    l.optimum = optimumOf(l);
    return l;
}

// 4^8 = 65536 configurations (the most a kernel file may declare), a product of one factor per
// parameter with 2% noise: too many to score one by one.
Landscape wide() {
    Landscape l;
    static const double factors[8][4] = {{1.6, 1.2, 1.0, 1.1},  {1.0, 1.15, 1.3, 1.5}, {1.3, 1.0, 1.2, 1.4},
                                         {1.1, 1.05, 1.0, 1.2}, {1.4, 1.1, 1.0, 1.05}, {1.0, 1.1, 1.2, 1.3},
                                         {1.2, 1.0, 1.1, 1.3},  {1.05, 1.0, 1.1, 1.2}};
    for (int p = 0; p < 8; ++p)
        l.decls.push_back(tunable(qPrintable(QStringLiteral("P%1").arg(p)), {1, 2, 4, 8}, 1));
    l.time = [](const ParamValues& c) -> std::optional<double> {
        double t = 10.0;
        for (int p = 0; p < 8; ++p)
            t *= factors[p][indexOf({1, 2, 4, 8}, c.at(QStringLiteral("P%1").arg(p).toStdString()))];
        return t * (1.0 + noise(c, 0.02));
    };
    l.optimum = 10.0 * 0.98; // every parameter at its best factor, 1.0, at most 2% below
    return l;
}

struct Tuning {
    std::vector<TunerProposal> proposals;
    std::vector<std::optional<double>> times;
    // How many proposals it took to measure a time within `within` of the optimum; 0: never.
    int reached(const Landscape& l, double within) const {
        for (std::size_t i = 0; i < times.size(); ++i)
            if (times[i] && *times[i] <= l.optimum * (1.0 + within))
                return static_cast<int>(i) + 1;
        return 0;
    }
    int failures(std::size_t first) const {
        int n = 0;
        for (std::size_t i = 0; i < times.size() && i < first; ++i)
            n += times[i] ? 0 : 1;
        return n;
    }
    std::vector<TunerMeasurement> measurements() const {
        std::vector<TunerMeasurement> out;
        for (std::size_t i = 0; i < times.size(); ++i)
            out.push_back({proposals[i].params, times[i]});
        return out;
    }
};

// What the tuner is told of each measurement.
enum class Told { Everything, OnlyTimes, Nothing };

// Tunes `l` from its defaults, one measurement at a time, always around the fastest configuration
// measured so far (as the engine's parent selection mostly does).
Tuning tune(const Landscape& l, std::uint64_t seed, int proposals, Told told = Told::Everything, Tuner* given = nullptr,
            double restart = 0.2) {
    Tuner own(l.decls);
    Tuner& tuner = given ? *given : own;
    std::mt19937_64 rng(seed);
    Tuning t;
    ParamValues around = tuner.complete({});
    double best = 0.0;
    for (int i = 0; i < proposals; ++i) {
        const auto next = tuner.propose(around, rng, restart);
        if (!next)
            break;
        const auto time = l.time(next->params);
        if (told == Told::Everything || (told == Told::OnlyTimes && time))
            tuner.observe(next->params, time);
        t.proposals.push_back(*next);
        t.times.push_back(time);
        if (time && (best == 0.0 || *time < best)) {
            best = *time;
            around = next->params;
        }
    }
    return t;
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

    // `// kforge:require` conditions shrink the space: the tuner proposes, and counts towards
    // exhaustion, only configurations that meet them, in small spaces (listed whole) and large
    // ones (sampled), by every strategy; ruled-out values marked seen elsewhere are not counted.
    void requirementsLimitTheSpace() {
        const std::vector<ParamDecl> decls = {tunable("TPR", {32, 64, 128, 256, 512}, 128),
                                              tunable("BLOCK", {128, 256, 512}, 256), fixed("HINT", 1)};
        kforge::spec::RequireDecl within;
        within.condition = "TPR <= BLOCK";
        Tuner tuner(decls, {within});
        QCOMPARE(tuner.spaceSize(), std::uint64_t(3 + 4 + 5));
        tuner.markSeen({{"TPR", 512}, {"BLOCK", 128}}); // as a hand edit would
        QVERIFY(tuner.seen({{"TPR", 512}, {"BLOCK", 128}}));
        QCOMPARE(tuner.seenCount(), std::uint64_t(0));
        std::mt19937_64 rng(3);
        std::set<ParamValues> proposed;
        ParamValues around = tuner.complete({});
        while (const auto next = tuner.propose(around, rng, 0.3)) {
            QVERIFY2(next->params.at("TPR") <= next->params.at("BLOCK"), "a ruled-out configuration was proposed");
            QVERIFY(proposed.insert(next->params).second);
            // Faster with more threads per row: the model has something to fit.
            tuner.observe(next->params, 100.0 / static_cast<double>(next->params.at("TPR")) + 1.0);
            around = next->params;
        }
        QCOMPARE(proposed.size(), std::size_t(12));
        QVERIFY(tuner.exhausted());

        // 4^7 = 16384 configurations, more than are listed whole: sampled, the same rule holds.
        std::vector<ParamDecl> large;
        for (const char* name : {"A", "B", "C", "D", "E", "F", "G"})
            large.push_back(tunable(name, {1, 2, 3, 4}, 2));
        kforge::spec::RequireDecl ordered;
        ordered.condition = "A <= B && B <= C";
        Tuner sampled(large, {ordered});
        QCOMPARE(sampled.spaceSize(), std::uint64_t(20 * 4 * 4 * 4 * 4)); // 20 ordered triples of 4 values
        std::mt19937_64 rng2(5);
        around = sampled.complete({});
        for (int i = 0; i < 150; ++i) {
            const auto next = sampled.propose(around, rng2, 0.5);
            QVERIFY(next);
            const auto& p = next->params;
            QVERIFY2(p.at("A") <= p.at("B") && p.at("B") <= p.at("C"), "a ruled-out configuration was proposed");
            sampled.observe(p, 10.0 + static_cast<double>(p.at("D") + p.at("E")));
            around = p;
        }
    }

    void neverRepeatsUntilExhausted() {
        Tuner tuner(smallSpace());
        std::mt19937_64 rng(7);
        std::set<ParamValues> proposed;
        ParamValues around = tuner.complete({});
        for (int i = 0; i < 36; ++i) {
            const auto next = tuner.propose(around, rng);
            QVERIFY2(next, qPrintable(QStringLiteral("nothing proposed after %1").arg(i)));
            QVERIFY2(proposed.insert(next->params).second, "a configuration was proposed twice");
            QCOMPARE(next->params.at("HD"), std::int64_t(64));
            around = next->params;
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
                const int step = std::abs(indexOf(d.choices, next->params.at(d.name))
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
        QVERIFY(next->params.at("A") != 2 && next->params.at("B") != 2); // a corner: both moved one step
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
            QCOMPARE(x->params, y->params);
            aroundA = x->params;
            aroundB = y->params;
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
        QCOMPARE(next->params, left);
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
        QCOMPARE(next->params.at("A"), std::int64_t(2));
    }

    void fixedOnlySpace() {
        Tuner tuner({fixed("HD", 64), fixed("RB", 256)});
        QCOMPARE(tuner.spaceSize(), std::uint64_t(1));
        QVERIFY(!tuner.exhausted());
        std::mt19937_64 rng(5);
        const auto only = tuner.propose({}, rng);
        QVERIFY(only);
        QCOMPARE(only->params, (ParamValues{{"HD", 64}, {"RB", 256}}));
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
            QVERIFY2(proposed.insert(next->params).second, "a configuration was proposed twice");
            QCOMPARE(next->params.at("F"), std::int64_t(3));
            around = next->params;
        }
        QCOMPARE(tuner.seenCount(), std::uint64_t(2000));
        QVERIFY(!tuner.exhausted());
    }

    // Told the times, the tuner finds the optimum in a small fraction of the space, where a search
    // that learns nothing (random configurations) needs a large part of it. Local search around the
    // fastest configuration with random restarts, which the tuner does while it knows too little, is
    // reported beside them.
    void findsTheOptimumInAFractionOfTheSpace_data() {
        QTest::addColumn<int>("landscape");
        QTest::addColumn<int>("worst");
        QTest::addColumn<double>("mean");
        QTest::newRow("product of factors, 480 configurations") << 0 << 40 << 30.0;
        QTest::newRow("interacting block sides, 324 configurations") << 1 << 60 << 40.0;
    }

    void findsTheOptimumInAFractionOfTheSpace() {
        QFETCH(int, landscape);
        QFETCH(int, worst);
        QFETCH(double, mean);
        const Landscape l = landscape == 0 ? tiles() : blocks();
        const int space = static_cast<int>(Tuner(l.decls).spaceSize());
        std::map<QString, QStringList> needed;
        std::map<QString, double> sum;
        const QString learning = QStringLiteral("told the times");
        const QString random = QStringLiteral("random");
        const QString local = QStringLiteral("local search");
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            const int n = tune(l, seed, worst + 20).reached(l, 0.02);
            QVERIFY2(n > 0 && n <= worst, qPrintable(QStringLiteral("seed %1: %2").arg(seed).arg(n)));
            const int r = tune(l, seed, space, Told::Nothing, nullptr, 1.0).reached(l, 0.02);
            const int s = tune(l, seed, space, Told::Nothing).reached(l, 0.02);
            QVERIFY(r > 0 && s > 0); // both walk the whole space eventually
            for (const auto& [name, value] : {std::pair(learning, n), std::pair(random, r), std::pair(local, s)}) {
                needed[name] << QString::number(value);
                sum[name] += value;
            }
        }
        for (const auto& [name, list] : needed)
            qInfo("%s: %s (mean %.1f)", qPrintable(name), qPrintable(list.join(u' ')), sum[name] / 10);
        QVERIFY2(sum[learning] / 10 <= mean, qPrintable(needed[learning].join(u' ')));
        QVERIFY2(sum[learning] * 3 <= sum[random], "at least three times faster than a search that learns nothing");
    }

    // The optimum borders on the failing region; told of failures, the tuner proposes fewer
    // configurations there than when it only hears of the times.
    void failuresSteerItAway() {
        const Landscape l = tiles();
        int told = 0;
        int untold = 0;
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            told += tune(l, seed, 60).failures(60);
            untold += tune(l, seed, 60, Told::OnlyTimes).failures(60);
        }
        qInfo("failing proposals among the first 60, seeds 1-10: %d told of failures, %d not", told, untold);
        QVERIFY2(told * 3 <= untold * 2, qPrintable(QStringLiteral("%1 against %2").arg(told).arg(untold)));
    }

    void largeSpacesAreSampled() {
        const Landscape l = wide();
        Tuner tuner(l.decls);
        QCOMPARE(tuner.spaceSize(), std::uint64_t(65536));
        QVERIFY(tuner.spaceSize() > Tuner::kEnumerateLimit);
        const Tuning t = tune(l, 3, 120, Told::Everything, &tuner);
        std::set<ParamValues> distinct;
        for (const auto& p : t.proposals)
            distinct.insert(p.params);
        QCOMPARE(distinct.size(), t.proposals.size());
        const int n = t.reached(l, 0.05);
        qInfo("proposals until within 5%% of the optimum of 65536: %d", n);
        QVERIFY2(n > 0 && n <= 120, qPrintable(QString::number(n)));
    }

    void measuredRunsAreDeterministic() {
        const Landscape l = tiles();
        const Tuning a = tune(l, 9, 80);
        const Tuning b = tune(l, 9, 80);
        QCOMPARE(a.proposals.size(), std::size_t(80));
        for (std::size_t i = 0; i < a.proposals.size(); ++i) {
            QCOMPARE(a.proposals[i].params, b.proposals[i].params);
            QCOMPARE(a.proposals[i].strategy, b.proposals[i].strategy);
        }
        QVERIFY(tune(l, 10, 80).measurements().front().params != a.proposals.front().params
                || tune(l, 10, 80).proposals[20].params != a.proposals[20].params);
    }

    void strategiesFollowWhatIsKnown() {
        const Landscape l = tiles();
        const Tuning t = tune(l, 4, 40);
        std::map<TunerStrategy, int> used;
        for (std::size_t i = 0; i < t.proposals.size(); ++i) {
            if (i < Tuner::kModelAfter)
                QVERIFY(t.proposals[i].strategy == TunerStrategy::Neighbour
                        || t.proposals[i].strategy == TunerStrategy::Random);
            ++used[t.proposals[i].strategy];
        }
        QVERIFY2(used[TunerStrategy::Model] > 20, "the model proposes most once it has measurements");
        QCOMPARE(used[TunerStrategy::Cache], 0);

        const Tuning blind = tune(l, 4, 40, Told::Nothing);
        for (const auto& p : blind.proposals)
            QVERIFY(p.strategy == TunerStrategy::Neighbour || p.strategy == TunerStrategy::Random);
    }

    // What an earlier run measured: its fastest configuration comes first, and the model starts
    // from all of it, so the new run is where the earlier one ended within a few proposals.
    void earlierMeasurementsComeFirst() {
        const Landscape l = tiles();
        const Tuning earlier = tune(l, 5, 30);
        const auto measured = earlier.measurements();
        const auto fastest = std::min_element(measured.begin(), measured.end(), [](const auto& a, const auto& b) {
            return a.timeUs.value_or(1e300) < b.timeUs.value_or(1e300);
        });

        Tuner tuner(l.decls);
        tuner.recall(measured);
        QCOMPARE(tuner.seenCount(), std::uint64_t(0)); // recalled, not taken: they may be measured again
        QCOMPARE(tuner.measuredCount(), measured.size());
        std::mt19937_64 rng(1);
        const auto first = tuner.propose({}, rng);
        QVERIFY(first);
        QCOMPARE(first->params, fastest->params);
        QCOMPARE(first->strategy, TunerStrategy::Cache);
        tuner.observe(first->params, l.time(first->params));

        // The rest comes from the model, which already knows the landscape.
        const auto second = tuner.propose(first->params, rng, 0.0);
        QVERIFY(second);
        QVERIFY(second->strategy == TunerStrategy::Model || second->strategy == TunerStrategy::Cache);
        Tuner again(l.decls);
        again.recall(measured);
        const int resumed = tune(l, 5, 40, Told::Everything, &again).reached(l, 0.02);
        const int fresh = tune(l, 5, 40).reached(l, 0.02);
        qInfo("within 2%% of the optimum after %d proposals with the earlier run's measurements, %d without", resumed,
              fresh);
        QVERIFY(resumed > 0 && resumed <= 5);

        // Already in this run: not proposed again.
        Tuner seen(l.decls);
        seen.markSeen(fastest->params);
        seen.recall(measured);
        const auto other = seen.propose({}, rng);
        QVERIFY(other);
        QVERIFY(other->params != fastest->params);
    }

    // An earlier run measured every configuration: this one measures again only those within 10%
    // of the fastest, then has nothing left to try.
    void earlierRunsSpendSmallSpaces() {
        Tuner tuner(smallSpace());
        std::vector<TunerMeasurement> all;
        std::map<ParamValues, double> times;
        int n = 0;
        for (std::int64_t bx : {8, 16, 32})
            for (std::int64_t by : {4, 8, 16})
                for (std::int64_t vec : {1, 2, 4, 8}) {
                    const ParamValues config = tuner.complete({{"BX", bx}, {"BY", by}, {"VEC", vec}});
                    const double us = n == 7 ? 10.0 : n == 20 ? 10.5 : n == 30 ? 10.9 : 12.0 + n;
                    all.push_back({config, n == 3 ? std::nullopt : std::optional(us)});
                    times[config] = us;
                    ++n;
                }
        tuner.recall(all);
        QVERIFY(!tuner.exhausted());
        std::mt19937_64 rng(6);
        std::vector<double> proposed;
        while (auto next = tuner.propose({}, rng, 0.0)) {
            QCOMPARE(next->strategy, TunerStrategy::Cache);
            proposed.push_back(times.at(next->params));
            tuner.observe(next->params, times.at(next->params));
        }
        QCOMPARE(proposed, (std::vector<double>{10.0, 10.5, 10.9}));
        QVERIFY(tuner.exhausted());
        QCOMPARE(tuner.seenCount(), std::uint64_t(3));
    }

    // One tuner per template: a kernel baked with other defaults is the same template, another fixed
    // value or choice list is not. The tuning cache's key leaves every parameter line out (its
    // records are complete configurations, checked against the space when recalled).
    void templatesIgnoreDefaults() {
        using kforge::model::templateKey;
        using kforge::search::TuningMemory;
        const QString source = QStringLiteral("// kforge:param BX in {8, 16, 32} = 16\n// kforge:param HD = 64\n"
                                              "__kernel void k(__global float* y) { y[0] = BX * HD; }\n");
        QString baked = source;
        baked.replace(QStringLiteral("} = 16"), QStringLiteral("} = 32"));
        QCOMPARE(templateKey(baked), templateKey(source));
        QVERIFY(kforge::model::candidateKey(baked, {}) != kforge::model::candidateKey(source, {}));
        QString fixedValue = source;
        fixedValue.replace(QStringLiteral("HD = 64"), QStringLiteral("HD = 128"));
        QVERIFY(templateKey(fixedValue) != templateKey(source));
        QString choices = source;
        choices.replace(QStringLiteral("{8, 16, 32}"), QStringLiteral("{8, 16, 32, 64}"));
        QVERIFY(templateKey(choices) != templateKey(source));

        QCOMPARE(TuningMemory::templateKey(choices), TuningMemory::templateKey(source));
        QCOMPARE(TuningMemory::templateKey(fixedValue), TuningMemory::templateKey(source));
        QString code = source;
        code.replace(QStringLiteral("BX * HD"), QStringLiteral("BX + HD"));
        QVERIFY(TuningMemory::templateKey(code) != TuningMemory::templateKey(source));
    }

    void earlierMeasurementsOutsideTheSpaceAreIgnored() {
        std::vector<ParamDecl> decls = smallSpace();
        Tuner tuner(decls);
        tuner.recall({{{{"BX", 8}, {"BY", 4}, {"VEC", 1}, {"HD", 128}}, 1.0}, // another fixed value
                      {{{"BX", 24}, {"BY", 4}, {"VEC", 1}}, 1.0},             // not a choice
                      {{{"BX", 32}, {"BY", 16}, {"VEC", 2}}, std::nullopt}}); // failed: never first
        QCOMPARE(tuner.measuredCount(), std::size_t(1));
        std::mt19937_64 rng(2);
        const auto first = tuner.propose({}, rng, 0.0);
        QVERIFY(first);
        QCOMPARE(first->strategy, TunerStrategy::Neighbour);
    }
};

QTEST_GUILESS_MAIN(TestTuner)
#include "tst_tuner.moc"
