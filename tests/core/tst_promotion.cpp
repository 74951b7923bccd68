// The engine's judgement of results, on plain values: impossible timing rejected with the roof it
// broke, which correct results wait for a person, which candidate is re-measured for promotion,
// when the re-measurement promotes it, and which confirmed kernel is the best.

#include "search/judgement.h"
#include "search/promotion.h"

#include <QTest>

using namespace kforge;
using namespace kforge::search;
using model::Fitness;

namespace {

// 1e9 compulsory bytes: 1 ms at the 1 TB/s DRAM roof; far more than the 1 MB cache.
spec::TaskBundle task() {
    const auto json = nlohmann::json::parse(R"({"name": "t", "title": "t", "family": "f", "description": "d",
        "sizes": {"N": 1000},
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["N"], "atol": 0.001, "rtol": 0.001}],
        "flops": "N", "bytes": "N * 1000000",
        "reference": {"opencl": "r.cl"}, "baseline": {"opencl": "b.cl"}})");
    auto spec = spec::TaskSpec::fromJson(json, "test");
    if (!spec)
        qFatal("%s", spec.error().c_str());
    spec::TaskBundle bundle;
    bundle.spec = *spec;
    return bundle;
}

diagnose::Ceilings ceilings() {
    diagnose::Ceilings c;
    c.dramBytes = 1e12;
    c.fp32Flops = 1e13;
    c.cacheBytes = 1e6;
    return c;
}

protocol::EvaluateResult timed(double us, protocol::Status status = protocol::Status::Ok) {
    protocol::EvaluateResult r;
    r.status = status;
    r.candidateTiming = protocol::TimingStats{"test", 10, us, us, us, us, 0.0};
    return r;
}

Population population(const std::vector<std::pair<qint64, Fitness>>& kernels) {
    Population p;
    for (const auto& [id, fitness] : kernels) {
        Entry e;
        e.candidate.id = id;
        e.candidate.key = QString::number(id);
        e.fitness = fitness;
        p.add(std::move(e));
    }
    return p;
}

} // namespace

class TestPromotion : public QObject {
    Q_OBJECT
private slots:
    void judgement_data() {
        QTest::addColumn<double>("us");
        QTest::addColumn<bool>("rejected");
        QTest::newRow("at half the DRAM roof") << 2000.0 << false;
        QTest::newRow("at twice the DRAM roof") << 500.0 << true;
        QTest::newRow("just under the reject margin") << 950.0 << false;
    }

    void judgement() {
        QFETCH(double, us);
        QFETCH(bool, rejected);
        const auto t = task();
        RunConfig config;
        const Judgement j = judge(timed(us), {&t, t.spec.sizes, ceilings(), nullptr, &config});
        QVERIFY(j.roofline);
        QCOMPARE(j.impossible.has_value(), rejected);
        QCOMPARE(j.result.status, rejected ? protocol::Status::Rejected : protocol::Status::Ok);
        if (rejected) {
            QVERIFY(j.result.message.starts_with("impossible timing: "));
            QCOMPARE(j.findings.size(), 1);
            QCOMPARE(j.findings.first().rule, QStringLiteral("above_roof"));
            QCOMPARE(j.result.diagnostics.back().kind, std::string("roofline"));
        }
    }

    void failedResultsAreNotJudgedByTheirTime() {
        const auto t = task();
        RunConfig config;
        const Judgement j =
            judge(timed(1.0, protocol::Status::Incorrect), {&t, t.spec.sizes, ceilings(), nullptr, &config});
        QVERIFY(!j.impossible);
        QCOMPARE(j.result.status, protocol::Status::Incorrect);
    }

    void review_data() {
        QTest::addColumn<double>("us");
        QTest::addColumn<bool>("freshInputsFailed");
        QTest::addColumn<double>("speedup");
        QTest::addColumn<double>("reviewSpeedup");
        QTest::addColumn<QString>("reason"); // a word the reason holds; empty: no review
        QTest::newRow("plausible") << 2000.0 << false << 3.0 << 0.0 << QString();
        QTest::newRow("close to the DRAM roof") << 1050.0 << false << 3.0 << 0.0 << QString(); // 95%: well tuned
        QTest::newRow("at the measured DRAM roof, within its error")
            << 980.0 << false << 3.0 << 0.0 << QString(); // 102%: the best streaming kernels get there
        QTest::newRow("above the measured DRAM roof")
            << 950.0 << false << 3.0 << 0.0 << QStringLiteral("DRAM bandwidth"); // 105%: a look
        QTest::newRow("faster on repeated inputs") << 2000.0 << true << 3.0 << 0.0 << QStringLiteral("repeated inputs");
        QTest::newRow("above the review speedup") << 2000.0 << false << 30.0 << 20.0 << QStringLiteral("30.0x");
        QTest::newRow("review speedup off") << 2000.0 << false << 30.0 << 0.0 << QString();
    }

    void review() {
        QFETCH(double, us);
        QFETCH(bool, freshInputsFailed);
        QFETCH(double, speedup);
        QFETCH(double, reviewSpeedup);
        QFETCH(QString, reason);
        const auto t = task();
        RunConfig config;
        config.reviewSpeedup = reviewSpeedup;
        Entry e;
        e.result = timed(us);
        if (freshInputsFailed)
            e.result->checks.push_back({"fresh_inputs_speed", false, "3.1x faster on repeats"});
        e.fitness = Fitness{true, speedup};
        e.roofline = judge(*e.result, {&t, t.spec.sizes, ceilings(), nullptr, &config}).roofline;
        const QString why = reviewReason(e, ceilings(), config);
        if (reason.isEmpty())
            QVERIFY2(why.isEmpty(), qPrintable(why));
        else
            QVERIFY2(why.contains(reason), qPrintable(why));
    }

    void threshold_data() {
        QTest::addColumn<qint64>("best");
        QTest::addColumn<double>("bestSpeedup");
        QTest::addColumn<double>("challenger");
        QTest::addColumn<bool>("promoted");
        QTest::newRow("anything correct beats no best") << qint64(0) << 0.0 << 0.5 << true;
        QTest::newRow("within the noise margin") << qint64(1) << 2.0 << 2.005 << false;
        QTest::newRow("beyond the noise margin") << qint64(1) << 2.0 << 2.02 << true;
        QTest::newRow("slower") << qint64(1) << 2.0 << 1.5 << false;
    }

    void threshold() {
        QFETCH(qint64, best);
        QFETCH(double, bestSpeedup);
        QFETCH(double, challenger);
        QFETCH(bool, promoted);
        const Best b{best, bestSpeedup};
        QCOMPARE(confirmsPromotion(Fitness{true, challenger}, b), promoted);
        QVERIFY(!confirmsPromotion(Fitness{false, challenger}, b));
        Population p = population({{5, Fitness{true, challenger}}});
        QCOMPARE(promotionCandidate(p, {5}, {}, b).has_value(), promoted);
    }

    void candidateForPromotion_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<qint64>("expected"); // 0: none
        // Kernels 1 (1.5x), 2 (2.5x), 3 (failed); the confirmed best is at 1.2x.
        QTest::newRow("the fittest") << QString() << qint64(2);
        QTest::newRow("not a vetoed one") << QStringLiteral("veto 2") << qint64(1);
        QTest::newRow("not one waiting for review") << QStringLiteral("review 2") << qint64(1);
        QTest::newRow("not one confirmed before") << QStringLiteral("confirmed 2") << qint64(1);
        QTest::newRow("one accepted after review") << QStringLiteral("accepted 2") << qint64(2);
    }

    void candidateForPromotion() {
        QFETCH(QString, change);
        QFETCH(qint64, expected);
        Population p = population({{1, Fitness{true, 1.5}}, {2, Fitness{true, 2.5}}, {3, Fitness{false, 0.0}}});
        std::map<qint64, double> confirmed{{9, 1.2}};
        if (change == QLatin1String("veto 2"))
            p.setVetoed(2);
        if (change.endsWith(QLatin1String(" 2"))
            && (change.startsWith(QLatin1String("review")) || change.startsWith(QLatin1String("accepted"))))
            p.at(2).review = QStringLiteral("close to a roof");
        if (change.startsWith(QLatin1String("accepted")))
            p.at(2).reviewState = model::ReviewState::Accepted;
        if (change == QLatin1String("confirmed 2"))
            confirmed[2] = 2.4;
        const auto pick = promotionCandidate(p, {1, 2, 3}, confirmed, Best{9, 1.2});
        QCOMPARE(pick.value_or(0), expected);
    }

    void bestConfirmedSkipsVetoed() {
        Population p = population({{1, Fitness{true, 1.5}}, {2, Fitness{true, 2.5}}});
        const std::map<qint64, double> confirmed{{1, 1.4}, {2, 2.4}};
        QCOMPARE(bestConfirmed(confirmed, p).candidate, qint64(2));
        p.setVetoed(2);
        const Best b = bestConfirmed(confirmed, p);
        QCOMPARE(b.candidate, qint64(1));
        QCOMPARE(b.speedup, 1.4);
        p.setVetoed(1);
        QCOMPARE(bestConfirmed(confirmed, p).candidate, qint64(0));
    }

    // A run's promotions end to end: the best of a batch is re-measured, a re-measurement that holds
    // promotes it, one that falls back is recorded as rejected with the best it had to beat, a veto
    // of the best brings back the one before, and an accepted review is considered once.
    void promotionsOfARun() {
        Population p = population({{1, Fitness{true, 1.5}}, {2, Fitness{true, 2.5}}, {3, Fitness{true, 3.0}}});
        Promotions promotions;
        QCOMPARE(promotions.next(p, {1, 2}), std::optional<qint64>(2));
        auto remeasured = [](double speedup) {
            protocol::EvaluateResult r;
            r.status = protocol::Status::Ok;
            r.speedup = speedup;
            return r;
        };
        auto v = promotions.confirm(2, remeasured(2.4), p);
        QCOMPARE(v.event, model::EventKind::NewBest);
        QVERIFY(v.bestChanged);
        QCOMPARE(promotions.best().candidate, qint64(2));
        QCOMPARE(v.data.value(QStringLiteral("first_speedup")).toDouble(), 2.5);
        QCOMPARE(v.data.value(QStringLiteral("confirmed_speedup")).toDouble(), 2.4);

        QVERIFY2(!promotions.next(p, {2}), "a confirmed candidate is not re-measured again");
        promotions.reviewAccepted(3);
        QCOMPARE(promotions.next(p, {}), std::optional<qint64>(3));
        QVERIFY2(!promotions.next(p, {}), "an accepted review is considered once");

        v = promotions.confirm(3, remeasured(2.41), p); // within the noise margin of 2.4
        QCOMPARE(v.event, model::EventKind::PromotionRejected);
        QVERIFY(!v.bestChanged);
        QCOMPARE(v.data.value(QStringLiteral("previous_best")).toDouble(), 2.4);

        v = promotions.confirm(1, remeasured(1.45), p);
        QCOMPARE(v.event, model::EventKind::PromotionRejected);
        p.setVetoed(2);
        QVERIFY(promotions.recompute(p));
        QCOMPARE(promotions.best().candidate, qint64(0)); // 1 and 3 were never confirmed
        QVERIFY(!promotions.recompute(p));
    }

    void unrequestableIsRejectedWithTheReason() {
        const auto r = unrequestable("launch plan: grid X is 0");
        QCOMPARE(r.status, protocol::Status::Rejected);
        QCOMPARE(r.message, std::string("launch plan: grid X is 0"));
        QCOMPARE(r.diagnostics.front().kind, std::string("launch_plan"));
    }

    // The evaluations that compare with PyTorch (the first seed's, the confirmed best's) carry the
    // run's rounds; the others time no PyTorch at all.
    void comparisonsWithPyTorchCarryTheRunsRounds() {
        auto bundle = task();
        bundle.referenceSource = {{"opencl", "kernel void r() {}"}, {"torch", "def reference(x): return x"}};
        bundle.referenceFile = {{"opencl", "r.cl"}, {"torch", "reference.py"}};
        bundle.baselineSource = {{"opencl", "kernel void b() {}"}};
        bundle.baselineFile = {{"opencl", "b.cl"}};
        RunConfig config;
        config.pytorchRounds = 80;
        model::Candidate candidate;
        candidate.id = 7;
        candidate.source = QStringLiteral("kernel void c() {}");
        const auto compared = candidateRequest(bundle, config, candidate, true);
        QVERIFY2(compared, compared ? "" : compared.error().c_str());
        QVERIFY(compared->options.pytorch && compared->yardstick);
        QCOMPARE(compared->options.pytorchRounds, 80);
        const auto plain = candidateRequest(bundle, config, candidate, false);
        QVERIFY(plain);
        QVERIFY(!plain->options.pytorch && !plain->yardstick);
        config.pytorch = false; // --no-pytorch
        QVERIFY(!candidateRequest(bundle, config, candidate, true)->options.pytorch);
    }
};

QTEST_GUILESS_MAIN(TestPromotion)
#include "tst_promotion.moc"
