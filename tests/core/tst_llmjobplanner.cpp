// Which LLM job an island gets, on plain ids: a repair while a failed kernel waits for one, a
// mutation of a selected parent, a crossover with a second one (another elite, else one of the
// run's best kernels), and nothing without a parent.

#include "propose/llmjobplanner.h"

#include <QTest>

using namespace kforge;
using namespace kforge::propose;

namespace {

// A parent selection that hands out `ids` in turn (and nothing once they are used up).
std::function<std::optional<qint64>(std::mt19937_64&)> handOut(std::vector<qint64> ids) {
    auto next = std::make_shared<size_t>(0);
    return [ids, next](std::mt19937_64&) -> std::optional<qint64> {
        if (*next >= ids.size())
            return std::nullopt;
        return ids[(*next)++];
    };
}

} // namespace

class TestLlmJobPlanner : public QObject {
    Q_OBJECT
private slots:
    void plan_data() {
        QTest::addColumn<double>("repairRate");
        QTest::addColumn<double>("crossoverRate");
        QTest::addColumn<bool>("failedKernel");
        QTest::addColumn<QList<qint64>>("selections");
        QTest::addColumn<QList<qint64>>("strong");
        QTest::addColumn<int>("op"); // -1: no plan
        QTest::addColumn<QList<qint64>>("parents");
        QTest::newRow("repair") << 1.0 << 0.0 << true << QList<qint64>{5} << QList<qint64>{}
                                << int(llm::Operator::Repair) << QList<qint64>{9};
        QTest::newRow("nothing to repair: mutate") << 1.0 << 0.0 << false << QList<qint64>{5} << QList<qint64>{}
                                                   << int(llm::Operator::Mutate) << QList<qint64>{5};
        QTest::newRow("mutate") << 0.0 << 0.0 << true << QList<qint64>{5} << QList<qint64>{}
                                << int(llm::Operator::Mutate) << QList<qint64>{5};
        QTest::newRow("crossover of two elites") << 0.0 << 1.0 << false << QList<qint64>{5, 6} << QList<qint64>{}
                                                 << int(llm::Operator::Crossover) << QList<qint64>{5, 6};
        QTest::newRow("crossover with a strong kernel")
            << 0.0 << 1.0 << false << QList<qint64>{5, 5} << QList<qint64>{5, 8} << int(llm::Operator::Crossover)
            << QList<qint64>{5, 8};
        QTest::newRow("no second parent: mutate") << 0.0 << 1.0 << false << QList<qint64>{5} << QList<qint64>{5}
                                                  << int(llm::Operator::Mutate) << QList<qint64>{5};
        QTest::newRow("no parent: no job")
            << 0.0 << 0.0 << false << QList<qint64>{} << QList<qint64>{} << -1 << QList<qint64>{};
    }

    void plan() {
        QFETCH(double, repairRate);
        QFETCH(double, crossoverRate);
        QFETCH(bool, failedKernel);
        QFETCH(QList<qint64>, selections);
        QFETCH(QList<qint64>, strong);
        QFETCH(int, op);
        QFETCH(QList<qint64>, parents);
        LlmPlanInputs in;
        in.repairRate = repairRate;
        in.crossoverRate = crossoverRate;
        if (failedKernel)
            in.repairable = {9, 4};
        in.selectParent = handOut({selections.begin(), selections.end()});
        in.strongKernels = [strong] {
            std::vector<std::pair<qint64, model::Fitness>> s;
            for (qint64 id : strong)
                s.emplace_back(id, model::Fitness{true, double(id)});
            return s;
        };
        std::mt19937_64 rng(3);
        const auto plan = planLlmJob(in, rng);
        QCOMPARE(plan.has_value(), op >= 0);
        if (!plan)
            return;
        QCOMPARE(int(plan->op), op);
        QCOMPARE(QList<qint64>(plan->parents.begin(), plan->parents.end()), parents);
    }

    void secondParentFromTheTopFive() {
        LlmPlanInputs in;
        in.repairRate = 0.0;
        in.crossoverRate = 1.0;
        in.selectParent = [](std::mt19937_64&) { return std::optional<qint64>(1); };
        in.strongKernels = [] {
            std::vector<std::pair<qint64, model::Fitness>> s;
            for (qint64 id = 1; id <= 20; ++id)
                s.emplace_back(id, model::Fitness{true, double(id)});
            return s;
        };
        for (std::uint64_t seed = 0; seed < 50; ++seed) {
            std::mt19937_64 rng(seed);
            const auto plan = planLlmJob(in, rng);
            QVERIFY(plan);
            QCOMPARE(plan->op, llm::Operator::Crossover);
            QVERIFY2(plan->parents[1] >= 16, "the second parent is one of the five fastest");
        }
    }
};

QTEST_GUILESS_MAIN(TestLlmJobPlanner)
#include "tst_llmjobplanner.moc"
