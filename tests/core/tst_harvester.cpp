// What a run teaches the experience library, on plain values: a clear win or loss against the
// parent is remembered with its prose, noise is not, and people's pins, vetoes and edits are.

#include "experience/harvester.h"

#include <QTest>

using namespace kforge;
using namespace kforge::experience;

namespace {

KernelOutcome kernel(qint64 id, QString label, model::Origin origin, bool correct, double speedup) {
    KernelOutcome k;
    k.id = id;
    k.label = std::move(label);
    k.origin = origin;
    k.source = QStringLiteral("__kernel void k%1() {}\n").arg(id);
    k.evaluated = true;
    k.fitness = model::Fitness{correct, speedup};
    return k;
}

HarvestContext context() {
    return {QStringLiteral("gemm"), QStringLiteral("sgemm"), QStringLiteral("opencl"),
            QStringLiteral("/tmp/runs.kforge"), 3};
}

} // namespace

class TestHarvester : public QObject {
    Q_OBJECT
private slots:
    void change_data() {
        QTest::addColumn<int>("origin");
        QTest::addColumn<bool>("parentCorrect");
        QTest::addColumn<bool>("childCorrect");
        QTest::addColumn<double>("childSpeedup"); // the parent is at 2.0x
        QTest::addColumn<QString>("kind");        // empty: nothing remembered
        QTest::newRow("a clear win") << int(model::Origin::Tuner) << true << true << 2.4 << QStringLiteral("helped");
        QTest::newRow("a clear loss") << int(model::Origin::Llm) << true << true << 1.6 << QStringLiteral("hurt");
        QTest::newRow("noise") << int(model::Origin::Tuner) << true << true << 2.1 << QString();
        QTest::newRow("a broken child") << int(model::Origin::Expert) << true << false << 0.0 << QStringLiteral("hurt");
        QTest::newRow("a failed parent teaches nothing")
            << int(model::Origin::Tuner) << false << true << 2.4 << QString();
        QTest::newRow("seeds are the yardstick") << int(model::Origin::Seed) << true << true << 3.0 << QString();
        QTest::newRow("experience kernels are known")
            << int(model::Origin::Experience) << true << true << 3.0 << QString();
    }

    void change() {
        QFETCH(int, origin);
        QFETCH(bool, parentCorrect);
        QFETCH(bool, childCorrect);
        QFETCH(double, childSpeedup);
        QFETCH(QString, kind);
        const auto parent =
            kernel(1, QStringLiteral("baseline"), model::Origin::Seed, parentCorrect, parentCorrect ? 2.0 : 0.0);
        auto child = kernel(7, QStringLiteral("tuner BX=32"), model::Origin(origin), childCorrect, childSpeedup);
        child.message = QStringLiteral("output y differs at 17");
        const auto insight = changeInsight(parent, child, context());
        QCOMPARE(insight.has_value(), !kind.isEmpty());
        if (!insight)
            return;
        QCOMPARE(model::insightKindName(insight->kind), kind);
        QCOMPARE(insight->task, QStringLiteral("sgemm"));
        QCOMPARE(insight->transformation, QStringLiteral("tuner BX=32"));
        QCOMPARE(insight->origin, QStringLiteral("/tmp/runs.kforge#run3/candidate7"));
        QVERIFY(insight->diff.contains(QStringLiteral("#1")));
        if (childCorrect) {
            QVERIFY(
                insight->summary.contains(childSpeedup > 2.0 ? QStringLiteral("faster") : QStringLiteral("slower")));
            QCOMPARE(insight->speedup, childSpeedup / 2.0);
        } else {
            QVERIFY(insight->summary.contains(QStringLiteral("broke the kernel: output y differs at 17")));
        }
    }

    // An insight's origin is read back as written: the UI names the store, run and candidate.
    void originsReadBack() {
        HarvestContext context;
        context.storePath = QStringLiteral("/runs/demo#2.kforge");
        context.runId = 3;
        const auto back = parseOrigin(context.originOf(17));
        QVERIFY(back);
        QCOMPARE(back->storePath, QStringLiteral("/runs/demo#2.kforge"));
        QCOMPARE(back->runId, 3);
        QCOMPARE(back->candidate, 17);
        QVERIFY(!parseOrigin(QStringLiteral("/runs/demo.kforge#1/17")));
        QVERIFY(!parseOrigin(QStringLiteral("imported from a colleague")));
        QVERIFY(!parseOrigin(QStringLiteral("/runs/demo.kforge#run99999999999999999999/candidate1")));
    }

    void unevaluatedChildrenTeachNothing() {
        const auto parent = kernel(1, QStringLiteral("baseline"), model::Origin::Seed, true, 1.0);
        auto child = kernel(2, QStringLiteral("tuner"), model::Origin::Tuner, false, 0.0);
        child.evaluated = false;
        QVERIFY(!changeInsight(parent, child, context()));
    }

    void bottleneckAndDeviceInTheProse() {
        auto parent = kernel(1, QStringLiteral("baseline"), model::Origin::Seed, true, 1.0);
        parent.bottleneck = QStringLiteral("memory");
        auto child = kernel(2, QStringLiteral("vectorised loads"), model::Origin::Llm, true, 1.5);
        child.device = QStringLiteral("NVIDIA H200");
        const auto insight = changeInsight(parent, child, context());
        QVERIFY(insight);
        QCOMPARE(insight->bottleneck, QStringLiteral("memory"));
        QVERIFY(insight->summary.contains(QStringLiteral("NVIDIA H200")));
        QVERIFY(insight->summary.contains(QStringLiteral("memory-bound")));
    }

    void humanActions_data() {
        QTest::addColumn<int>("action");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("verb");
        QTest::newRow("pin") << int(HumanAction::Pin) << QStringLiteral("human_pin") << QStringLiteral("pinned");
        QTest::newRow("veto") << int(HumanAction::Veto) << QStringLiteral("human_veto") << QStringLiteral("vetoed");
        QTest::newRow("edit") << int(HumanAction::Edit) << QStringLiteral("human_edit") << QStringLiteral("wrote");
    }

    void humanActions() {
        QFETCH(int, action);
        QFETCH(QString, kind);
        QFETCH(QString, verb);
        auto k = kernel(4, QStringLiteral("register tiling"), model::Origin::Human, true, 2.0);
        const auto insight = humanInsight(HumanAction(action), k, QStringLiteral("__kernel void old() {}\n"),
                                          QStringLiteral("reads coalesce"), context());
        QCOMPARE(model::insightKindName(insight.kind), kind);
        QCOMPARE(insight.reason, QStringLiteral("reads coalesce"));
        QVERIFY(insight.summary.contains(verb));
        QVERIFY(insight.summary.endsWith(QStringLiteral(": reads coalesce")));
        QCOMPARE(insight.after, k.source);
        QCOMPARE(!insight.diff.isEmpty(), HumanAction(action) == HumanAction::Edit);
        QCOMPARE(insight.speedup, HumanAction(action) == HumanAction::Edit ? 0.0 : 2.0);
    }

    void anUnnamedEditIsAHandEdit() {
        auto k = kernel(0, QString(), model::Origin::Human, false, 0.0);
        const auto insight = humanInsight(HumanAction::Edit, k, QString(), QString(), context());
        QCOMPARE(insight.transformation, QStringLiteral("a hand edit"));
        QVERIFY(insight.summary.endsWith(QLatin1Char('.')));
    }
};

QTEST_GUILESS_MAIN(TestHarvester)
#include "tst_harvester.moc"
