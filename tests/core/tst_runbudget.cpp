// What a run may still start: evaluations counted once stored, over all sessions, with the ones in
// flight and one re-measurement in reserve; the stop message gives the real figures. And the LLM
// budgets: spent, not guarded (a call waits while others are in flight, and the run stops only
// when a call cannot fit with nothing in flight).

#include "propose/llmbudget.h"
#include "search/runbudget.h"

#include <QTest>

#include <climits>
#include <deque>

using namespace kforge::search;
using kforge::propose::LlmBudget;

class TestRunBudget : public QObject {
    Q_OBJECT
private slots:
    void noLimitNeverSpends() {
        RunConfig config;
        config.budgetEvaluations = 0;
        config.budgetSeconds = 0.0;
        RunBudget b;
        b.startSession();
        for (int i = 0; i < 1000; ++i)
            b.counted();
        QCOMPARE(b.left(config, 50), INT_MAX);
        QVERIFY(!b.spent(config, 50));
        QCOMPARE(b.etaSeconds(config), -1.0);
    }

    void evaluationsLeftCountInFlightAndReserve() {
        RunConfig config;
        config.budgetEvaluations = 10;
        config.confirmBest = true;
        RunBudget b;
        b.resume(4, 12.0); // an earlier session
        b.startSession();
        b.counted();
        QCOMPARE(b.evaluations(), qint64(5));
        QCOMPARE(b.left(config, 2), 10 - 5 - 2 - 1);
        config.confirmBest = false;
        QCOMPARE(b.left(config, 2), 10 - 5 - 2);
        QCOMPARE(b.left(config, 20), 0); // never negative
        QVERIFY(!b.spent(config, 0));
        for (int i = 0; i < 5; ++i)
            b.counted();
        const auto spent = b.spent(config, 0);
        QVERIFY(spent);
        QCOMPARE(*spent, QStringLiteral("evaluation budget reached (10 of 10)"));

        // One short, kept for re-measuring the best (and some still running): the message says so.
        RunBudget reserved;
        config.confirmBest = true;
        reserved.startSession();
        for (int i = 0; i < 7; ++i)
            reserved.counted();
        QCOMPARE(*reserved.spent(config, 2),
                 QStringLiteral(
                     "evaluation budget reached (7 of 10, 2 in flight, the last kept for re-measuring the best)"));
        reserved.counted();
        reserved.counted();
        QCOMPARE(*reserved.spent(config, 0),
                 QStringLiteral("evaluation budget reached (9 of 10, the last kept for re-measuring the best)"));
        reserved.counted(); // the re-measurement itself
        QCOMPARE(*reserved.spent(config, 0), QStringLiteral("evaluation budget reached (10 of 10)"));
    }

    void wallTimeCountsEarlierSessions() {
        RunConfig config;
        config.budgetEvaluations = 0;
        config.budgetSeconds = 30.0;
        RunBudget b;
        b.resume(0, 31.0);
        b.startSession();
        QVERIFY(b.elapsedSeconds() >= 31.0);
        const auto spent = b.spent(config, 0);
        QVERIFY(spent);
        QCOMPARE(*spent, QStringLiteral("time budget reached (30 s)"));
    }

    // A run's calls as the proposer sends them: up to `parallel` in flight, each reserving its worst
    // case and charged less when it settles, until a call no longer fits with nothing in flight.
    void llmBudgetIsSpentNotGuarded_data() {
        QTest::addColumn<qint64>("tokens");
        QTest::addColumn<double>("usd");
        QTest::addColumn<int>("parallel");
        // gpt-4.1-mini: 3000 input and 800 output tokens used, 1024 output tokens allowed.
        QTest::newRow("usd 0.05, 6 in flight") << qint64(0) << 0.05 << 6;
        QTest::newRow("usd 0.05, 1 in flight") << qint64(0) << 0.05 << 1;
        QTest::newRow("tokens 60000, 6 in flight") << qint64(60000) << 0.0 << 6;
        QTest::newRow("tokens 60000, 2 in flight") << qint64(60000) << 0.0 << 2;
    }

    void llmBudgetIsSpentNotGuarded() {
        QFETCH(qint64, tokens);
        QFETCH(double, usd);
        QFETCH(int, parallel);
        const LlmBudget::Amount worst{3000 + 1024, 3000 * 0.4e-6 + 1024 * 1.6e-6};
        const LlmBudget::Amount used{3000 + 800, 3000 * 0.4e-6 + 800 * 1.6e-6};
        LlmBudget budget(tokens, usd);
        LlmBudget::Amount spent;
        std::deque<LlmBudget::Amount> inFlight;
        std::optional<QString> stop;
        for (int step = 0; step < 10000 && !stop; ++step) {
            const auto admission = budget.admit(spent, worst);
            if (admission == LlmBudget::Admission::Send && static_cast<int>(inFlight.size()) < parallel) {
                budget.reserve(worst);
                inFlight.push_back(worst);
                // Never over: what is spent plus every worst case in flight fits.
                QVERIFY(tokens == 0 || spent.tokens + budget.reserved().tokens <= tokens);
                QVERIFY(usd == 0.0 || spent.usd + budget.reserved().usd <= usd + 1e-12);
                continue;
            }
            if (admission == LlmBudget::Admission::Spent) {
                QVERIFY(inFlight.empty()); // the worst case of calls in flight is never counted as spent
                stop = budget.stopMessage(spent, worst);
                break;
            }
            QVERIFY(!inFlight.empty()); // Wait, or the concurrency limit: a call settles
            budget.release(inFlight.front());
            inFlight.pop_front();
            spent.tokens += used.tokens;
            spent.usd += used.usd;
        }
        QVERIFY(stop);
        QCOMPARE(budget.inFlight(), 0);
        if (tokens > 0) {
            QVERIFY2(spent.tokens <= tokens && spent.tokens >= tokens * 9 / 10, qPrintable(*stop));
            QVERIFY2(stop->startsWith(
                         QStringLiteral("LLM token budget reached: %1 of 60000 tokens used (").arg(spent.tokens)),
                     qPrintable(*stop));
        } else {
            QVERIFY2(spent.usd <= usd && spent.usd >= 0.9 * usd, qPrintable(*stop));
            QVERIFY2(stop->startsWith(
                         QStringLiteral("LLM money budget reached: $%1 of $0.0500 spent (").arg(spent.usd, 0, 'f', 4)),
                     qPrintable(*stop));
        }
        QVERIFY2(stop->contains(QLatin1String(" %)")), qPrintable(*stop));
    }

    void llmBudgetWaitsWhileCallsAreInFlight() {
        LlmBudget budget(10000, 0.0);
        const LlmBudget::Amount worst{4000, 0.0};
        QCOMPARE(budget.admit({}, worst), LlmBudget::Admission::Send);
        budget.reserve(worst);
        budget.reserve(worst);
        // 8000 reserved: a third would go over, but only while the two are in flight.
        QCOMPARE(budget.admit({}, worst), LlmBudget::Admission::Wait);
        budget.release(worst);
        budget.release(worst);
        QCOMPARE(budget.admit({3000, 0.0}, worst), LlmBudget::Admission::Send);
        QCOMPARE(budget.admit({7000, 0.0}, worst), LlmBudget::Admission::Spent);
        QVERIFY(!budget.stopMessage({3000, 0.0}, worst));
        QCOMPARE(*budget.stopMessage({7000, 0.0}, worst),
                 QStringLiteral("LLM token budget reached: 7000 of 10000 tokens used (70.0 %); the next call may "
                                "take up to 4000"));
        QCOMPARE(LlmBudget().admit({1000000, 1000.0}, worst), LlmBudget::Admission::Send); // no limit
    }
};

QTEST_GUILESS_MAIN(TestRunBudget)
#include "tst_runbudget.moc"
