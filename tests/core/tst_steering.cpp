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

    void storedActionsOncePerGeneration() {
        Steering s;
        std::map<int, std::vector<store::EventRecord>> stored;
        stored[2] = {{1, 2, QStringLiteral("pin"), {{QStringLiteral("candidate"), 5}}, {}},
                     {2, 2, QStringLiteral("veto"), {{QStringLiteral("candidate"), 6}}, {}},
                     {3, 2, QStringLiteral("unpin"), {{QStringLiteral("candidate"), 5}}, {}}};
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
