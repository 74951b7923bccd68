// When people's commands take effect: pause, resume, stop and budget changes at once; pins,
// vetoes, injections and review decisions at the end of the generation in flight, in the order
// they were posted; nothing before the run has started. A resumed run's stored pins and vetoes
// come back once, at the generation they were made in.

#include "search/steering.h"

#include <QTest>
#include <QThread>

using namespace kforge;
using namespace kforge::search;
using K = EngineCommand::Kind;

namespace {

EngineCommand command(K kind, qint64 candidate = 0) {
    EngineCommand c;
    c.kind = kind;
    c.candidate = candidate;
    return c;
}

QList<int> kinds(const std::vector<EngineCommand>& commands) {
    QList<int> k;
    for (const auto& c : commands)
        k << int(c.kind);
    return k;
}

} // namespace

class TestSteering : public QObject {
    Q_OBJECT
private slots:
    void nothingBeforeTheStart() {
        Steering s;
        s.post(command(K::Pause));
        QVERIFY(s.take(false, true).empty());
        QCOMPARE(kinds(s.take(true, false)), QList<int>{int(K::Pause)});
    }

    void immediateOnesDoNotWait() {
        Steering s;
        s.post(command(K::Pin, 3));
        s.post(command(K::SetBudget));
        s.post(command(K::Veto, 4));
        s.post(command(K::Stop));
        QCOMPARE(kinds(s.take(true, false)), (QList<int>{int(K::SetBudget), int(K::Stop)}));
        const auto rest = s.take(true, true);
        QCOMPARE(kinds(rest), (QList<int>{int(K::Pin), int(K::Veto)}));
        QCOMPARE(rest[0].candidate, qint64(3));
        QVERIFY(s.take(true, true).empty());
    }

    void waitingOnesKeepTheirOrderWithLaterOnes() {
        Steering s;
        s.post(command(K::Pin, 1));
        QVERIFY(s.take(true, false).empty());
        s.post(command(K::Unpin, 1));
        QCOMPARE(kinds(s.take(true, true)), (QList<int>{int(K::Pin), int(K::Unpin)}));
    }

    void postedFromManyThreads() {
        Steering s;
        QList<QThread*> threads;
        for (int t = 0; t < 4; ++t)
            threads << QThread::create([&s] {
                for (int i = 0; i < 250; ++i)
                    s.post(command(K::Pin, i));
            });
        for (QThread* t : threads)
            t->start();
        for (QThread* t : threads) {
            QVERIFY(t->wait(10000));
            delete t;
        }
        QCOMPARE(s.take(true, true).size(), size_t(1000));
    }

    // Run-level commands as a table: (command, state before, at a boundary) -> state after, event,
    // whether a generation may start now; "-" where nothing changes.
    void runSteps_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("before");
        QTest::addColumn<bool>("atBoundary");
        QTest::addColumn<int>("after"); // -1: no step
        QTest::addColumn<QString>("event");
        QTest::addColumn<bool>("reschedule");
        using S = RunState;
        auto row = [](const char* name, K kind, S before, bool boundary, int after, const char* event, bool again) {
            QTest::newRow(name) << int(kind) << int(before) << boundary << after << QString::fromLatin1(event) << again;
        };
        row("pause at boundary", K::Pause, S::Running, true, int(S::Paused), "pause", false);
        row("pause mid-generation", K::Pause, S::Running, false, int(S::Pausing), "pause", false);
        row("pause while paused", K::Pause, S::Paused, true, -1, "", false);
        row("resume paused", K::Resume, S::Paused, true, int(S::Running), "resume", true);
        row("resume pausing", K::Resume, S::Pausing, false, int(S::Running), "resume", false);
        row("resume running", K::Resume, S::Running, true, -1, "", false);
        row("stop running", K::Stop, S::Running, false, int(S::Stopping), "stop", false);
        row("stop paused", K::Stop, S::Paused, true, int(S::Stopping), "stop", false);
        row("stop stopping", K::Stop, S::Stopping, false, -1, "", false);
        row("budget at boundary", K::SetBudget, S::Running, true, int(S::Running), "budget", true);
        row("budget mid-generation", K::SetBudget, S::Running, false, int(S::Running), "budget", false);
        row("budget while paused", K::SetBudget, S::Paused, true, int(S::Paused), "budget", false);
        row("pin is no run step", K::Pin, S::Running, true, -1, "", false);
    }
    void runSteps() {
        QFETCH(int, kind);
        QFETCH(int, before);
        QFETCH(bool, atBoundary);
        QFETCH(int, after);
        QFETCH(QString, event);
        QFETCH(bool, reschedule);
        RunConfig config;
        const auto step = Steering::runStep(command(K(kind)), RunState(before), atBoundary, config);
        QCOMPARE(step.has_value(), after >= 0);
        if (!step)
            return;
        QCOMPARE(int(step->state), after);
        QCOMPARE(model::eventKindName(step->event), event);
        QCOMPARE(step->reschedule, reschedule);
    }

    void budgetStepSetsOnlyWhatItNames() {
        RunConfig config;
        config.budgetEvaluations = 100;
        config.budgetSeconds = 60.0;
        EngineCommand c = command(K::SetBudget);
        c.budgetEvaluations = 250; // seconds left as they are (-1)
        const auto step = Steering::runStep(c, RunState::Running, true, config);
        QVERIFY(step);
        QCOMPARE(config.budgetEvaluations, qint64(250));
        QCOMPARE(config.budgetSeconds, 60.0);
        QCOMPARE(step->data.value(QStringLiteral("evaluations")).toInteger(), qint64(250));
    }

    void refusalsNameWhatIsWrong() {
        Population population;
        model::Candidate known;
        known.id = 3;
        known.source = QStringLiteral("__kernel void k(__global float* y) { y[0] = 1.0f; }\n");
        population.add(population.prepare(known));
        QVERIFY(Steering::refusal(command(K::Pin, 3), population, 2).isEmpty());
        QCOMPARE(Steering::refusal(command(K::Veto, 9), population, 2),
                 QStringLiteral("cannot veto candidate 9: the run has no such candidate"));
        QCOMPARE(Steering::refusal(command(K::Unpin, 9), population, 2),
                 QStringLiteral("cannot unpin candidate 9: the run has no such candidate"));
        QCOMPARE(Steering::refusal(command(K::AcceptReview, 3), population, 2),
                 QStringLiteral("candidate 3 is not waiting for review"));
        population.at(3).review = QStringLiteral("close to the DRAM roof");
        QVERIFY(Steering::refusal(command(K::RejectReview, 3), population, 2).isEmpty());
        EngineCommand again = command(K::Inject);
        again.injected.source = known.source;
        QCOMPARE(Steering::refusal(again, population, 2),
                 QStringLiteral("not injected: the run already has this kernel with these parameters"));
        again.injected.source += QStringLiteral("// a comment changes nothing\n");
        QVERIFY(!Steering::refusal(again, population, 2).isEmpty());
        again.injected.source = QStringLiteral("__kernel void k(__global float* y) { y[0] = 2.0f; }\n");
        QVERIFY(Steering::refusal(again, population, 2).isEmpty());
    }

    void injectedCandidatesAreLabelled() {
        EngineCommand c = command(K::Inject);
        c.injected.source = QStringLiteral("__kernel void k() {}\n");
        c.injected.parents = {7};
        c.injected.island = 9;
        const model::Candidate injected = Steering::injectedCandidate(c, 4);
        QCOMPARE(injected.origin, model::Origin::Human);
        QCOMPARE(injected.island, 3); // clamped to the run's islands
        QCOMPARE(injected.label, QStringLiteral("human edit of #7"));
        c.injected.parents.clear();
        QCOMPARE(Steering::injectedCandidate(c, 4).label, QStringLiteral("human"));
        c.injected.label = QStringLiteral("my tiling");
        QCOMPARE(Steering::injectedCandidate(c, 4).label, QStringLiteral("my tiling"));
    }

    void storedActionsOncePerGeneration() {
        Steering s;
        std::map<int, std::vector<store::EventRecord>> stored;
        stored[2] = {{1, 2, model::EventKind::Pin, QStringLiteral("pin"), {{QStringLiteral("candidate"), 5}}, {}},
                     {2, 2, model::EventKind::Veto, QStringLiteral("veto"), {{QStringLiteral("candidate"), 6}}, {}},
                     {3, 2, model::EventKind::Unpin, QStringLiteral("unpin"), {{QStringLiteral("candidate"), 5}}, {}}};
        s.setStoredActions(std::move(stored));
        QVERIFY(s.storedActionsAt(1).empty());
        const auto changes = s.storedActionsAt(2);
        QCOMPARE(changes.size(), size_t(3));
        QCOMPARE(changes[0].candidate, qint64(5));
        QCOMPARE(changes[0].kind, Steering::FlagChange::Kind::Pin);
        QCOMPARE(changes[1].kind, Steering::FlagChange::Kind::Veto);
        QCOMPARE(changes[2].kind, Steering::FlagChange::Kind::Unpin);
        QVERIFY(s.storedActionsAt(2).empty());
    }
};

QTEST_GUILESS_MAIN(TestSteering)
#include "tst_steering.moc"
