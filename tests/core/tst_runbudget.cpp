// What a run may still start: evaluations counted once stored, over all sessions, with the ones in
// flight and one re-measurement in reserve; the stop message gives the real figures.

#include "search/runbudget.h"

#include <QTest>

#include <climits>

using namespace kforge::search;

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
};

QTEST_GUILESS_MAIN(TestRunBudget)
#include "tst_runbudget.moc"
