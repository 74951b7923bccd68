// The search engine end to end against kforge-worker-fake, a real worker process whose timings come
// from expressions over the kernels' parameters (`// fake:time_us=...`), so every run is
// deterministic. A test task (data/engine/tasks/fake_scale) and a small expert library
// (data/engine/experts) give the engine something to search.

#include "enginetestdata.h"
#include "eval/executorgroup.h"
#include "eval/workerpool.h"
#include "experience/experiencelibrary.h"
#include "rawdb.h"
#include "search/engine.h"
#include "search/steering.h"
#include "search/tuningmemory.h"
#include "store/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <optional>
#include <set>

using namespace kforge;
using namespace kforge::search;
using namespace kforge::model;

namespace {

QString dataDir() {
    return kforge::test::engineDataDir();
}

using kforge::test::fakeWorkerPath;

RunConfig testConfig(qint64 budget, std::uint64_t seed = 7) {
    RunConfig c;
    c.task = dataDir() + QStringLiteral("/tasks/fake_scale");
    c.backend = model::Backend::OpenCL;
    c.islands = 3;
    c.childrenPerIsland = 3;
    c.migrationInterval = 2;
    c.budgetEvaluations = budget;
    c.seed = seed;
    c.workers = 2;
    c.evalTimeoutSeconds = 30;
    return c;
}

Engine::Setup testSetup(const QString& store, const RunConfig& config) {
    return kforge::test::fakeEngineSetup(store, config);
}

// Runs an engine in this thread until it finishes and has released its workers.
RunSummary runToEnd(Engine& engine) {
    QSignalSpy finished(&engine, &Engine::finished);
    QSignalSpy released(&engine, &Engine::released);
    QMetaObject::invokeMethod(&engine, &Engine::start, Qt::QueuedConnection);
    RunSummary failed;
    failed.state = RunState::Failed;
    if (!finished.wait(120000)) {
        failed.message = QStringLiteral("the run did not finish within two minutes");
        return failed;
    }
    if (released.isEmpty() && !released.wait(30000)) {
        failed.message = QStringLiteral("the run finished but its workers were not released within 30 s");
        return failed;
    }
    if (finished.size() != 1 || released.size() != 1) {
        failed.message = QStringLiteral("finished and released must come once each");
        return failed;
    }
    return finished.takeFirst().at(0).value<RunSummary>();
}

struct Stored {
    store::RunRecord run;
    QList<Candidate> candidates;
    QList<store::EvaluationRecord> evaluations;
    QList<store::EventRecord> events;
};

Stored readStore(const QString& path) {
    Stored s;
    auto st = store::RunStore::open(path);
    if (!st) {
        qWarning("%s", st.error().c_str());
        return s;
    }
    // A child process may not have created its run yet.
    auto runs = (*st)->runs();
    if (!runs || runs->isEmpty())
        return s;
    s.run = runs->first();
    if (auto c = (*st)->candidates(s.run.id))
        s.candidates = *c;
    if (auto e = (*st)->evaluations(s.run.id))
        s.evaluations = *e;
    if (auto e = (*st)->events(s.run.id))
        s.events = *e;
    return s;
}

// What makes two runs the same run: every candidate's identity, lineage and placement.
QStringList lineage(const Stored& s) {
    QStringList out;
    for (const auto& c : s.candidates) {
        QStringList parents;
        for (qint64 p : c.parents)
            parents << QString::number(p);
        out << QStringLiteral("#%1 %2 gen%3 island%4 %5 <- %6")
                   .arg(c.id)
                   .arg(c.key)
                   .arg(c.generation)
                   .arg(c.island)
                   .arg(originName(c.origin), parents.join(QLatin1Char(',')));
    }
    return out;
}

// Posts, once generation 0 is complete, a hand-written scale kernel whose fake timing the
// `directives` ("// fake:..." lines) set.
void injectAfterFirstGeneration(Engine& engine, QObject* context, const QString& directives) {
    QObject::connect(&engine, &Engine::generationCompleted, context, [&engine, directives](int generation) {
        if (generation != 0)
            return;
        EngineCommand inject;
        inject.kind = EngineCommand::Kind::Inject;
        inject.injected.source =
            directives
            + QStringLiteral("// kforge:launch scale grid=(cdiv(N, 64)) block=(64)\n"
                             "__kernel void scale(__global const float* x, __global float* y, int N)\n"
                             "{ const int i = get_global_id(0); if (i < N) y[i] = 2.0f * x[i]; }\n");
        engine.post(inject);
    });
}

int countEvents(const Stored& s, const QString& kind) {
    return static_cast<int>(
        std::count_if(s.events.begin(), s.events.end(), [&](const auto& e) { return e.kindName == kind; }));
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY2(QFileInfo::exists(fakeWorkerPath()), qPrintable(fakeWorkerPath()));
        qRegisterMetaType<RunSummary>();
        qRegisterMetaType<RunProgress>();
    }

    void budgetStopsTheRun() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(20)));
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(QStringLiteral("budget")), qPrintable(summary.message));
        const Stored s = readStore(db);
        QVERIFY(s.evaluations.size() <= 20);
        QCOMPARE(s.run.evaluations, static_cast<qint64>(s.evaluations.size()));
        QCOMPARE(summary.evaluations, s.run.evaluations);
        QCOMPARE(model::runStateName(s.run.state), QStringLiteral("finished"));
        // Every stored evaluation says where it ran.
        for (const auto& e : s.evaluations) {
            QCOMPARE(QString::fromStdString(e.result.host), QSysInfo::machineHostName());
            QCOMPARE(e.result.deviceIndex, 0);
        }
    }

    void aFailingBaselineFailsTheRun() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        qputenv("KFORGE_FAKE_MODE", "incorrect");
        Engine engine(testSetup(db, testConfig(20)));
        const RunSummary summary = runToEnd(engine);
        qunsetenv("KFORGE_FAKE_MODE");
        QCOMPARE(summary.state, RunState::Failed);
        QVERIFY2(summary.message.contains(QStringLiteral("baseline did not pass")), qPrintable(summary.message));
        QCOMPARE(model::runStateName(readStore(db).run.state), QStringLiteral("failed"));
    }

    void badSetupIsAClearFailure_data() {
        QTest::addColumn<QString>("task");
        QTest::addColumn<QString>("variant");
        QTest::addColumn<QString>("message");
        QTest::newRow("no task") << QStringLiteral("/nonexistent/task") << QStringLiteral("default")
                                 << QStringLiteral("no task named");
        QTest::newRow("no variant") << QString() << QStringLiteral("huge") << QStringLiteral("no size variant 'huge'");
    }

    void badSetupIsAClearFailure() {
        QFETCH(QString, task);
        QFETCH(QString, variant);
        QFETCH(QString, message);
        QTemporaryDir dir;
        RunConfig config = testConfig(10);
        if (!task.isEmpty())
            config.task = task;
        config.variant = variant;
        Engine engine(testSetup(dir.filePath(QStringLiteral("runs.kforge")), config));
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Failed);
        QVERIFY2(summary.message.contains(message), qPrintable(summary.message));
    }

    void findsFasterKernelsAndConfirmsThem() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(60)));
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        // The baseline runs at 208 us against the fake baseline's 200; the landscape's best
        // (vectorised, VEC 4, BLOCK 128) at 60 us.
        QVERIFY2(summary.bestSpeedup > 2.0, qPrintable(QString::number(summary.bestSpeedup)));
        const Stored s = readStore(db);
        QCOMPARE(s.run.bestCandidate, summary.bestCandidate);
        // Promoted only after a re-measurement of that very candidate.
        const bool confirmed = std::any_of(s.evaluations.begin(), s.evaluations.end(), [&](const auto& e) {
            return e.candidateId == summary.bestCandidate && e.purpose == model::EvaluationPurpose::Confirm;
        });
        QVERIFY(confirmed);
        QVERIFY(countEvents(s, QStringLiteral("new_best")) >= 1);
        // Every origin an offline run has: the baseline seed, the experts, the tuner.
        std::set<Origin> origins;
        for (const auto& c : s.candidates)
            origins.insert(c.origin);
        QVERIFY(origins.count(Origin::Seed) && origins.count(Origin::Expert) && origins.count(Origin::Tuner));
    }

    void aKernelThatFailsItsRemeasurementIsNoParent() {
        // The first promotion's re-measurement finds the kernel incorrect (a race that passed
        // once): it is not promoted, and it leaves the archive, so no later child descends from it.
        QTemporaryDir dir;
        const auto firstConfirmation = [](const Stored& s) -> std::pair<qint64, int> {
            int searched = 0;
            for (const auto& e : s.evaluations) {
                if (e.purpose == model::EvaluationPurpose::Confirm)
                    return {e.candidateId, searched};
                ++searched;
            }
            return {0, 0};
        };
        const QString plain = dir.filePath(QStringLiteral("plain.kforge"));
        {
            Engine engine(testSetup(plain, testConfig(40)));
            runToEnd(engine);
        }
        const auto [candidate, before] = firstConfirmation(readStore(plain));
        QVERIFY(candidate > 0);
        const auto childrenOf = [](const Stored& s, qint64 parent) {
            return std::count_if(s.candidates.begin(), s.candidates.end(),
                                 [&](const Candidate& c) { return c.parents.contains(parent); });
        };
        QVERIFY2(childrenOf(readStore(plain), candidate) > 0, "the test needs a first promotion that has children");

        const QString flaky = dir.filePath(QStringLiteral("flaky.kforge"));
        qputenv("KFORGE_FAKE_COUNTER", QFile::encodeName(dir.filePath(QStringLiteral("counter"))));
        qputenv("KFORGE_FAKE_MODE_AT", QByteArray::number(before + 1) + ":incorrect");
        {
            Engine engine(testSetup(flaky, testConfig(40)));
            runToEnd(engine);
        }
        qunsetenv("KFORGE_FAKE_MODE_AT");
        qunsetenv("KFORGE_FAKE_COUNTER");
        const Stored s = readStore(flaky);
        QCOMPARE(firstConfirmation(s).first, candidate);
        const auto rejected = std::find_if(s.events.begin(), s.events.end(), [&](const store::EventRecord& e) {
            return e.kind == model::EventKind::PromotionRejected
                   && e.data.value(QStringLiteral("candidate")).toInteger() == candidate;
        });
        QVERIFY(rejected != s.events.end());
        QCOMPARE(rejected->data.value(QStringLiteral("status")).toString(), QStringLiteral("incorrect"));
        QCOMPARE(childrenOf(s, candidate), 0);
    }

    void neverEvaluatesAConfigurationTwice() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(0))); // no budget: until every configuration is tried
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        QVERIFY2(summary.message.contains(QStringLiteral("nothing left")), qPrintable(summary.message));
        const Stored s = readStore(db);
        std::set<QString> keys;
        for (const auto& c : s.candidates)
            QVERIFY2(keys.insert(c.key).second, qPrintable(QStringLiteral("candidate %1 repeats a kernel").arg(c.id)));
        std::set<qint64> evaluated;
        for (const auto& e : s.evaluations)
            if (e.purpose == model::EvaluationPurpose::Search)
                QVERIFY2(evaluated.insert(e.candidateId).second, qPrintable(QString::number(e.candidateId)));
        // The baseline's 5 x 4 and the vectorised expert's 3 x 4 configurations all got tried; the
        // incorrect expert is never a parent, so its other configuration is not.
        QCOMPARE(static_cast<int>(s.candidates.size()), 20 + 12 + 1);
    }

    void incorrectKernelsAreNeverParents() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(40)));
        runToEnd(engine);
        const Stored s = readStore(db);
        std::set<qint64> failed;
        for (const auto& e : s.evaluations)
            if (e.result.status != protocol::Status::Ok)
                failed.insert(e.candidateId);
        QVERIFY(!failed.empty()); // broken_wide with WIDE 8
        for (const auto& c : s.candidates)
            for (qint64 p : c.parents)
                QVERIFY2(!failed.count(p),
                         qPrintable(QStringLiteral("candidate %1 descends from failed %2").arg(c.id).arg(p)));
    }

    void sameSeedSameRun() {
        QTemporaryDir dir;
        QStringList runs[3];
        qint64 best[3] = {};
        const std::uint64_t seeds[3] = {11, 11, 12};
        for (int i = 0; i < 3; ++i) {
            const QString db = dir.filePath(QStringLiteral("run%1.kforge").arg(i));
            Engine engine(testSetup(db, testConfig(45, seeds[i])));
            best[i] = runToEnd(engine).bestCandidate;
            runs[i] = lineage(readStore(db));
        }
        QCOMPARE(runs[0], runs[1]);
        QCOMPARE(best[0], best[1]);
        QVERIFY(runs[0] != runs[2]);
    }

    void migrationMovesElitesAroundTheRing() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        RunConfig config = testConfig(50);
        config.migrationInterval = 1;
        Engine engine(testSetup(db, config));
        runToEnd(engine);
        const Stored s = readStore(db);
        int accepted = 0;
        std::map<int, int> perGeneration;
        for (const auto& e : s.events) {
            if (e.kind != model::EventKind::Migration)
                continue;
            const int from = e.data.value(QStringLiteral("from")).toInt();
            const int to = e.data.value(QStringLiteral("to")).toInt();
            QCOMPARE(to, (from + 1) % config.islands);
            ++perGeneration[e.generation];
            accepted += e.data.value(QStringLiteral("accepted")).toBool() ? 1 : 0;
        }
        QVERIFY(perGeneration.size() >= 2);
        for (const auto& [generation, n] : perGeneration)
            QCOMPARE(n, config.islands * config.migrants); // every island sends its best each time
        QVERIFY(accepted > 0);
    }

    void archivesAreStoredAsTheEngineHoldsThem() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        RunConfig config = testConfig(50);
        config.migrationInterval = 1;
        Engine engine(testSetup(db, config));
        qint64 vetoed = 0;
        connect(&engine, &Engine::bestChanged, this, [&](qint64 candidate, double) {
            if (!vetoed && candidate != 1) {
                vetoed = candidate;
                EngineCommand veto;
                veto.kind = EngineCommand::Kind::Veto;
                veto.candidate = candidate;
                engine.post(veto);
            }
        });
        runToEnd(engine);
        QVERIFY(vetoed != 0);
        const Stored s = readStore(db);
        auto st = store::RunStore::open(db);
        QVERIFY(st);
        auto archive = (*st)->archive(s.run.id);
        QVERIFY2(archive, archive ? "" : archive.error().c_str());
        QVERIFY(archive->has_value());
        const auto& members = **archive;
        QVERIFY(!members.isEmpty());
        std::map<qint64, const Candidate*> byId;
        for (const auto& c : s.candidates)
            byId[c.id] = &c;
        std::map<qint64, double> speedup;
        for (const auto& e : s.evaluations)
            if (e.purpose == EvaluationPurpose::Search)
                speedup[e.candidateId] = fitnessOf(e.result).speedup;
        std::set<std::pair<int, Cell>> cells;
        int migrants = 0;
        for (const auto& m : members) {
            QVERIFY(m.island >= 0 && m.island < config.islands);
            QVERIFY2(cells.insert({m.island, m.cell}).second, "one elite per cell and island");
            QVERIFY(byId.count(m.candidateId));
            const Candidate& c = *byId.at(m.candidateId);
            QVERIFY2(m.candidateId != vetoed && !c.vetoed, "a vetoed kernel leaves every archive");
            QCOMPARE(m.speedup, speedup.at(m.candidateId));
            QVERIFY(m.speedup > 0.0);
            if (c.origin != Origin::Seed && c.island != m.island)
                ++migrants;
        }
        QVERIFY2(migrants > 0, "migrants are members of the island they moved to");
    }

    void pinAndVeto() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(60)));
        qint64 vetoed = 0;
        int vetoGeneration = -1;
        qint64 best = 0;
        connect(&engine, &Engine::bestChanged, this, [&](qint64 candidate, double) { best = candidate; });
        connect(&engine, &Engine::generationCompleted, this, [&](int generation) {
            if (generation != 1 || !best)
                return;
            vetoed = best;
            vetoGeneration = generation;
            EngineCommand veto;
            veto.kind = EngineCommand::Kind::Veto;
            veto.candidate = vetoed;
            veto.reason = QStringLiteral("reads past the end of x");
            engine.post(veto);
            EngineCommand pin;
            pin.kind = EngineCommand::Kind::Pin;
            pin.candidate = 1; // the baseline
            engine.post(pin);
        });
        const RunSummary summary = runToEnd(engine);
        QVERIFY(vetoed != 0);
        QVERIFY(summary.bestCandidate != vetoed);
        const Stored s = readStore(db);
        bool pinnedIsParent = false;
        for (const auto& c : s.candidates) {
            if (c.id == vetoed)
                QVERIFY(c.vetoed);
            if (c.id == 1)
                QVERIFY(c.pinned);
            if (c.generation > vetoGeneration) {
                QVERIFY2(!c.parents.contains(vetoed),
                         qPrintable(QStringLiteral("candidate %1 has the vetoed parent").arg(c.id)));
                pinnedIsParent = pinnedIsParent || c.parents.contains(1);
            }
        }
        QVERIFY(pinnedIsParent);
        QCOMPARE(countEvents(s, QStringLiteral("veto")), 1);
        QCOMPARE(countEvents(s, QStringLiteral("pin")), 1);
        const auto veto = std::find_if(s.events.begin(), s.events.end(),
                                       [](const auto& e) { return e.kind == model::EventKind::Veto; });
        QCOMPARE(veto->data.value(QStringLiteral("reason")).toString(), QStringLiteral("reads past the end of x"));
    }

    void injectedKernelIsEvaluatedAsHuman() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        connect(&engine, &Engine::generationCompleted, this, [&](int generation) {
            if (generation != 0)
                return;
            EngineCommand inject;
            inject.kind = EngineCommand::Kind::Inject;
            inject.injected.source =
                QStringLiteral("// fake:time_us=40\n// kforge:launch scale grid=(cdiv(N, 64)) block=(64)\n"
                               "__kernel void scale(__global const float* x, __global float* y, int N)\n"
                               "{ const int i = get_global_id(0); if (i < N) y[i] = x[i] + x[i]; }\n");
            inject.injected.parents = {1};
            inject.injected.island = 1;
            inject.reason = QStringLiteral("hand-written");
            engine.post(inject);
        });
        const RunSummary summary = runToEnd(engine);
        const Stored s = readStore(db);
        const auto human = std::find_if(s.candidates.begin(), s.candidates.end(),
                                        [](const auto& c) { return c.origin == Origin::Human; });
        QVERIFY(human != s.candidates.end());
        QCOMPARE(human->generation, 1);
        QCOMPARE(human->island, 1);
        QCOMPARE(human->parents, QList<qint64>{1});
        QVERIFY(human->label.contains(QStringLiteral("human")));
        // 200 / 40: the best there is, so it becomes the run's best.
        QCOMPARE(summary.bestCandidate, human->id);
        QCOMPARE(countEvents(s, QStringLiteral("inject")), 1);
    }

    void evaluationsCarryRooflineAndFindings() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        runToEnd(engine);
        const Stored s = readStore(db);
        // The fake worker's ceilings: 1 GB/s DRAM, 10 GFLOP/s.
        QCOMPARE(countEvents(s, QStringLiteral("ceilings")), 1);
        bool sawIncorrectFinding = false;
        for (const auto& e : s.evaluations) {
            if (e.result.status == protocol::Status::Ok) {
                QVERIFY(!e.roofline.isEmpty());
                const double seconds = e.result.candidateTiming->medianUs * 1e-6;
                QCOMPARE(e.roofline.value(QStringLiteral("bytes")).toDouble(), 8.0 * 1024);
                QVERIFY(
                    qAbs(e.roofline.value(QStringLiteral("memory_fraction")).toDouble() - 8.0 * 1024 / seconds / 1e9)
                    < 1e-9);
            } else {
                QVERIFY(e.roofline.isEmpty());
                for (const auto& f : e.findings)
                    sawIncorrectFinding =
                        sawIncorrectFinding
                        || f.toObject().value(QStringLiteral("kind")).toString() == QLatin1String("correctness");
            }
        }
        QVERIFY(sawIncorrectFinding); // broken_wide is incorrect, and its evaluation says why
    }

    void nearTheRoofWaitsForReviewAndParentsNothingUntilAccepted() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(80)));
        qint64 suspicious = 0;
        connect(&engine, &Engine::generationCompleted, this, [&](int generation) {
            if (generation == 0) {
                // 6 KiB through DRAM (the task's 8 KiB less the 2 KiB of its output that the
                // fake's cache may still hold when it ends) in 5.85 us: 105 % of the fake's 1 GB/s
                // DRAM roof, faster than the measurement but within its margin (its working set
                // is four times the fake's cache, so the roof binds).
                EngineCommand inject;
                inject.kind = EngineCommand::Kind::Inject;
                inject.injected.source =
                    QStringLiteral("// fake:time_us=5.85+(BLOCK-64)\n// kforge:param BLOCK in {64, 128} = 64\n"
                                   "// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"
                                   "__kernel void scale(__global const float* x, __global float* y, int N)\n"
                                   "{ const int i = get_global_id(0); if (i < N) y[i] = 2.0f * x[i]; }\n");
                engine.post(inject);
            }
            if (generation == 1) {
                // Pinned while it waits: still no parent (a pin is a preference, not a review).
                for (const auto& c : readStore(db).candidates)
                    if (c.origin == Origin::Human)
                        suspicious = c.id;
                EngineCommand pin;
                pin.kind = EngineCommand::Kind::Pin;
                pin.candidate = suspicious;
                engine.post(pin);
            }
            if (generation == 3) {
                EngineCommand accept;
                accept.kind = EngineCommand::Kind::AcceptReview;
                accept.candidate = suspicious;
                accept.reason = QStringLiteral("checked by hand: it is a plain copy kernel on a tiny input");
                engine.post(accept);
            }
        });
        qint64 bestBeforeAccept = -1;
        connect(&engine, &Engine::bestChanged, this, [&](qint64 candidate, double) {
            if (suspicious == 0)
                bestBeforeAccept = candidate;
        });
        const RunSummary summary = runToEnd(engine);
        QVERIFY(suspicious != 0);
        QVERIFY(bestBeforeAccept != suspicious);     // never promoted while it waited
        QCOMPARE(summary.bestCandidate, suspicious); // promoted once accepted (and re-measured)
        const Stored s = readStore(db);
        auto st = store::RunStore::open(db);
        const auto reviews = *(*st)->reviews(s.run.id);
        QCOMPARE(reviews.size(), 1);
        QCOMPARE(reviews.first().candidateId, suspicious);
        QVERIFY(reviews.first().state == model::ReviewState::Accepted);
        QVERIFY2(reviews.first().reason.contains(QStringLiteral("105% of the measured DRAM bandwidth")),
                 qPrintable(reviews.first().reason));
        QCOMPARE(countEvents(s, QStringLiteral("review_requested")), 1);
        QCOMPARE(countEvents(s, QStringLiteral("review_accepted")), 1);
        // Its children would have inherited whatever made it suspicious: none before the accept
        // took effect (at the end of generation 3), and it parents the search afterwards.
        bool parentAfterwards = false;
        for (const auto& c : s.candidates) {
            if (!c.parents.contains(suspicious))
                continue;
            QVERIFY2(
                c.generation > 3,
                qPrintable(QStringLiteral("candidate %1 of generation %2 descends from a kernel waiting for review")
                               .arg(c.id)
                               .arg(c.generation)));
            parentAfterwards = true;
        }
        QVERIFY(parentAfterwards);
    }

    void aboveTheRoofIsRejectedNamingTheRoof() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        QStringList notices;
        connect(&engine, &Engine::notice, this, [&](const QString& message) { notices << message; });
        // 6 KiB through DRAM (8 KiB less the 2 KiB of output the fake's cache may hold) in 2 us:
        // 3.1 GB/s against a 1 GB/s DRAM roof. Its outputs are right; its timing cannot be.
        injectAfterFirstGeneration(engine, this, QStringLiteral("// fake:time_us=2\n"));
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        const Stored s = readStore(db);
        const auto cheat = std::find_if(s.candidates.begin(), s.candidates.end(),
                                        [](const auto& c) { return c.origin == Origin::Human; });
        QVERIFY(cheat != s.candidates.end());
        QVERIFY(summary.bestCandidate != cheat->id);
        int evaluations = 0;
        for (const auto& e : s.evaluations) {
            if (e.candidateId != cheat->id)
                continue;
            ++evaluations;
            QCOMPARE(e.result.status, protocol::Status::Rejected);
            const QString message = QString::fromStdString(e.result.message);
            QVERIFY2(message.contains(QStringLiteral("DRAM")) && message.contains(QStringLiteral("3.07x the roof")),
                     qPrintable(message));
            QVERIFY(!e.findings.isEmpty());
            QCOMPARE(e.findings.first().toObject().value(QStringLiteral("kind")).toString(),
                     QStringLiteral("integrity"));
            QVERIFY(!e.roofline.isEmpty()); // where it claimed to be, for whoever looks
        }
        QCOMPARE(evaluations, 1); // rejected: never re-measured for promotion
        auto st = store::RunStore::open(db);
        QVERIFY((*st)->reviews(s.run.id)->isEmpty()); // impossible is not a question for a person
        for (const auto& c : s.candidates)
            QVERIFY2(!c.parents.contains(cheat->id),
                     qPrintable(QStringLiteral("candidate %1 descends from the rejected kernel").arg(c.id)));
        QVERIFY(notices.join(QLatin1Char('\n'))
                    .contains(QStringLiteral("candidate %1 rejected: impossible timing").arg(cheat->id)));
        // The roof was measured again before the verdict, and held.
        QVERIFY(notices.join(QLatin1Char('\n'))
                    .contains(QStringLiteral("candidate %1 broke a measured roof of Fake Device").arg(cheat->id)));
        QCOMPARE(countEvents(s, QStringLiteral("ceilings")), 2);
    }

    // A roof measured low (a busy machine at the start) is measured again when a kernel breaks it,
    // and the kernel is judged against the new measurement: an honest kernel is not lost to it.
    void aRoofBrokenIsMeasuredAgainBeforeTheVerdict() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        const QString roofFile = dir.filePath(QStringLiteral("roof"));
        const auto writeRoof = [&](const char* factor) {
            QFile f(roofFile);
            return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(factor) > 0;
        };
        QVERIFY(writeRoof("1"));
        qputenv("KFORGE_FAKE_ROOF_FILE", QFile::encodeName(roofFile));
        const auto restore = qScopeGuard([] { qunsetenv("KFORGE_FAKE_ROOF_FILE"); });
        Engine engine(testSetup(db, testConfig(30)));
        // Measured again now, DRAM would read 4 GB/s: the kernel's 3.1 GB/s is under that roof.
        connect(&engine, &Engine::generationCompleted, this, [&](int generation) {
            if (generation == 0)
                QVERIFY(writeRoof("4"));
        });
        injectAfterFirstGeneration(engine, this, QStringLiteral("// fake:time_us=2\n"));
        QStringList notices;
        connect(&engine, &Engine::notice, this, [&](const QString& message) { notices << message; });
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        const Stored s = readStore(db);
        const auto kernel = std::find_if(s.candidates.begin(), s.candidates.end(),
                                         [](const auto& c) { return c.origin == Origin::Human; });
        QVERIFY(kernel != s.candidates.end());
        for (const auto& e : s.evaluations)
            if (e.candidateId == kernel->id)
                QVERIFY2(e.result.status == protocol::Status::Ok, e.result.message.c_str());
        QVERIFY(!notices.join(QLatin1Char('\n')).contains(QStringLiteral("impossible timing")));
        QList<double> dram;
        for (const auto& e : s.events)
            if (e.kindName == QLatin1String("ceilings"))
                dram << e.data.value(QStringLiteral("dram_bytes_per_s")).toDouble();
        QCOMPARE(dram, (QList<double>{1e9, 4e9}));
    }

    void eachResultIsJudgedAgainstItsOwnModelsRoofs() {
        // Two places with different GPU models (the second's roofs 1000 times higher): ceilings are
        // measured in both, the run's roofline is the first's, and every evaluation's roofline
        // uses the roofs of the model it ran on.
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine::Setup setup = testSetup(db, testConfig(24));
        setup.executorFactory = [](const RunConfig& c, QObject* parent) -> spec::Expected<eval::Executor*> {
            auto* group = new eval::ExecutorGroup(QStringLiteral("fake"), parent);
            group->add(new eval::WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, c.workers),
                       QStringLiteral("a"));
            auto* other = new eval::WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, c.workers);
            other->setExtraEnvironment(
                {QStringLiteral("KFORGE_FAKE_DEVICE=Fake Device B"), QStringLiteral("KFORGE_FAKE_ROOF_SCALE=1000")});
            other->setPlacement(QStringLiteral("b"), std::nullopt);
            group->add(other, QStringLiteral("b"));
            return static_cast<eval::Executor*>(group);
        };
        Engine engine(setup);
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Finished);
        const Stored s = readStore(db);
        std::map<std::string, int> timedOn;
        for (const auto& e : s.evaluations) {
            if (e.roofline.isEmpty())
                continue;
            const double roof = e.roofline.value(QStringLiteral("peak_bytes_per_s")).toDouble();
            QCOMPARE(roof, e.result.device == "Fake Device B" ? 1e12 : 1e9);
            ++timedOn[e.result.device];
        }
        QVERIFY2(timedOn["Fake Device"] > 0 && timedOn["Fake Device B"] > 0, "both places evaluated");
        int primary = 0;
        QSet<QString> models;
        for (const auto& e : s.events)
            if (e.kindName == QLatin1String("ceilings")) {
                models.insert(e.data.value(QStringLiteral("device")).toString());
                primary += e.data.value(QStringLiteral("primary")).toBool() ? 1 : 0;
            }
        QCOMPARE(models, (QSet<QString>{QStringLiteral("Fake Device"), QStringLiteral("Fake Device B")}));
        QCOMPARE(primary, 1);
    }

    void aLargeSpeedupOverTheBaselineAloneIsNotSuspicious() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        // 50x over a slow baseline (2000 us against 40 us) at 20 % of the DRAM roof: what an
        // expert kernel against a naive one looks like.
        injectAfterFirstGeneration(engine, this, QStringLiteral("// fake:time_us=40\n// fake:baseline_us=2000\n"));
        const RunSummary summary = runToEnd(engine);
        const Stored s = readStore(db);
        const auto expert = std::find_if(s.candidates.begin(), s.candidates.end(),
                                         [](const auto& c) { return c.origin == Origin::Human; });
        QVERIFY(expert != s.candidates.end());
        QCOMPARE(summary.bestCandidate, expert->id);
        QVERIFY(summary.bestSpeedup > 49.0);
        QCOMPARE(countEvents(s, QStringLiteral("review_requested")), 0);
    }

    void fasterOnRepeatedInputsWaitsForReview() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        injectAfterFirstGeneration(engine, this,
                                   QStringLiteral("// fake:time_us=40\n// fake:fresh_inputs_speed=fail\n"));
        const RunSummary summary = runToEnd(engine);
        const Stored s = readStore(db);
        const auto cached = std::find_if(s.candidates.begin(), s.candidates.end(),
                                         [](const auto& c) { return c.origin == Origin::Human; });
        QVERIFY(cached != s.candidates.end());
        QVERIFY(summary.bestCandidate != cached->id); // 5x, the best there is, but it waits
        auto st = store::RunStore::open(db);
        const auto reviews = *(*st)->reviews(s.run.id);
        QCOMPARE(reviews.size(), 1);
        QCOMPARE(reviews.first().candidateId, cached->id);
        QVERIFY(reviews.first().state == model::ReviewState::Pending);
        QVERIFY2(reviews.first().reason.contains(QStringLiteral("repeated inputs")),
                 qPrintable(reviews.first().reason));
        // The summary says that a faster kernel waits, and why.
        QCOMPARE(summary.pendingReviews.size(), 1);
        QCOMPARE(summary.pendingReviews.first().candidate, cached->id);
        QVERIFY(summary.pendingReviews.first().speedup > summary.bestSpeedup);
        QCOMPARE(summary.pendingReviews.first().reason, reviews.first().reason);
    }

    void everyEvaluationDrawsItsOwnSeeds() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine engine(testSetup(db, testConfig(30)));
        const RunSummary summary = runToEnd(engine);
        QVERIFY(summary.bestCandidate != 0);
        const Stored s = readStore(db);
        std::set<std::vector<std::uint64_t>> seen;
        for (const auto& e : s.evaluations) {
            if (e.result.status != protocol::Status::Ok)
                continue;
            // Kept with the result, so that `kforge eval --seeds` can reproduce any of them.
            QVERIFY(!e.result.seeds.empty());
            QVERIFY(!e.result.timingSeeds.empty());
            QVERIFY2(seen.insert(e.result.seeds).second, "two evaluations were verified with the same inputs");
        }
        const bool confirmed = std::any_of(s.evaluations.begin(), s.evaluations.end(), [&](const auto& e) {
            return e.candidateId == summary.bestCandidate && e.purpose == model::EvaluationPurpose::Confirm;
        });
        QVERIFY(confirmed);
    }

    void aStoreThatCannotBeWrittenStopsTheRunResumably() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        std::unique_ptr<store::RunStore> other;
        std::unique_ptr<store::RunStore::Transaction> held;
        Engine engine(testSetup(db, testConfig(40)));
        connect(&engine, &Engine::generationCompleted, this, [&](int generation) {
            if (generation != 1 || held)
                return;
            // Another program takes the write lock and keeps it past the busy timeout.
            auto opened = store::RunStore::open(db);
            QVERIFY(opened);
            other = std::move(*opened);
            held = std::make_unique<store::RunStore::Transaction>(*other);
            QVERIFY(held->begun());
        });
        const RunSummary summary = runToEnd(engine);
        QCOMPARE(summary.state, RunState::Failed);
        QVERIFY2(summary.message.contains(db) && summary.message.contains(QStringLiteral("locked")),
                 qPrintable(summary.message));
        QVERIFY2(summary.message.contains(QStringLiteral("--resume")), qPrintable(summary.message));
        held.reset();
        other.reset();

        // The summary and the store agree; the run is left resumable (its stored state is not an end).
        const Stored s = readStore(db);
        QCOMPARE(summary.evaluations, static_cast<qint64>(s.evaluations.size()));
        QCOMPARE(summary.candidates, static_cast<qint64>(s.candidates.size()));
        QCOMPARE(model::runStateName(s.run.state), QStringLiteral("running"));
        QCOMPARE(countEvents(s, QStringLiteral("run_ended")), 0);

        Engine::Setup again = testSetup(db, {});
        again.resumeRun = 0;
        Engine resumed(again);
        QCOMPARE(runToEnd(resumed).state, RunState::Finished);
        const Stored after = readStore(db);
        QCOMPARE(after.run.evaluations, static_cast<qint64>(after.evaluations.size()));
    }

    void aRunIsUsedByOneSessionAtATime() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        Engine first(testSetup(db, testConfig(30)));
        std::unique_ptr<Engine> second;
        std::optional<RunSummary> refused;
        connect(&first, &Engine::generationCompleted, this, [&](int generation) {
            if (generation != 0 || second)
                return;
            Engine::Setup again = testSetup(db, {});
            again.resumeRun = 0;
            second = std::make_unique<Engine>(again);
            connect(second.get(), &Engine::finished, this, [&](const RunSummary& s) { refused = s; });
            QMetaObject::invokeMethod(second.get(), &Engine::start, Qt::QueuedConnection);
        });
        const RunSummary summary = runToEnd(first);
        QCOMPARE(summary.state, RunState::Finished);
        QTRY_VERIFY(refused.has_value());
        QCOMPARE(refused->state, RunState::Failed);
        QVERIFY2(
            refused->message.contains(QStringLiteral("is in use by pid %1").arg(QCoreApplication::applicationPid())),
            qPrintable(refused->message));
        const Stored s = readStore(db);
        QCOMPARE(countEvents(s, QStringLiteral("run_resumed")), 0); // the refused session wrote nothing
        QCOMPARE(model::runStateName(s.run.state), QStringLiteral("finished"));
        QVERIFY(!QFileInfo::exists(store::RunLock::pathFor(db, s.run.id))); // released at the end

        // Once the first session ended, the run can be resumed.
        Engine::Setup later = testSetup(db, {});
        later.resumeRun = 0;
        later.budgetEvaluations = 34;
        Engine third(later);
        QCOMPARE(runToEnd(third).state, RunState::Finished);
        QCOMPARE(countEvents(readStore(db), QStringLiteral("run_resumed")), 1);

        // Where the workers run may change when a run is resumed; a place that is not one is named.
        Engine::Setup elsewhere = testSetup(db, {});
        elsewhere.resumeRun = 0;
        elsewhere.workerPlaces = QStringList{QStringLiteral("gpu1")};
        const auto refusedPlace = search::loadRun(elsewhere);
        QVERIFY(!refusedPlace);
        QVERIFY2(QString::fromStdString(refusedPlace.error()).contains(QStringLiteral("--worker gpu1")),
                 refusedPlace.error().c_str());
        elsewhere.workerPlaces = QStringList{QStringLiteral("local"), QStringLiteral("ssh://gpu2")};
        elsewhere.workers = 2;
        const auto moved = search::loadRun(elsewhere);
        QVERIFY2(moved, moved ? "" : moved.error().c_str());
        QCOMPARE(moved->config.workerPlaces, *elsewhere.workerPlaces);
        QCOMPARE(moved->config.workers, 2);
    }

    void laterRunStartsFromItsExperience() {
        QTemporaryDir dir;
        const QString library = dir.filePath(QStringLiteral("shared.experience"));
        auto setupWith = [&](const QString& store) {
            Engine::Setup s = testSetup(store, testConfig(40));
            s.experiencePath = library;
            return s;
        };
        qint64 vetoed = 0;
        {
            Engine first(setupWith(dir.filePath(QStringLiteral("first.kforge"))));
            connect(&first, &Engine::generationCompleted, this, [&](int generation) {
                if (generation != 1)
                    return;
                EngineCommand veto;
                veto.kind = EngineCommand::Kind::Veto;
                veto.candidate = vetoed = 1;
                veto.reason = QStringLiteral("the baseline is not worth keeping");
                first.post(veto);
            });
            QCOMPARE(runToEnd(first).state, RunState::Finished);
        }
        auto lib = experience::ExperienceLibrary::open(library);
        QVERIFY(lib);
        auto all = (*lib)->all();
        QVERIFY(all);
        int helped = 0;
        int humanVetoes = 0;
        for (const auto& insight : *all) {
            if (insight.kind == model::InsightKind::Helped) {
                ++helped;
                QCOMPARE(insight.family, QStringLiteral("fake"));
                QVERIFY(insight.speedup >= 1.1);
                QVERIFY(insight.diff.contains(QStringLiteral("@@")));
                QVERIFY(!insight.after.isEmpty());
            }
            if (insight.kind == model::InsightKind::HumanVeto) {
                ++humanVetoes;
                QCOMPARE(insight.reason, QStringLiteral("the baseline is not worth keeping"));
            }
        }
        QVERIFY(helped > 0);
        QCOMPARE(humanVetoes, 1);

        // The second run on the same task starts from what helped in the first.
        const QString second = dir.filePath(QStringLiteral("second.kforge"));
        Engine next(setupWith(second));
        QCOMPARE(runToEnd(next).state, RunState::Finished);
        const Stored s = readStore(second);
        int fromExperience = 0;
        for (const auto& c : s.candidates) {
            if (c.origin != Origin::Experience)
                continue;
            ++fromExperience;
            QCOMPARE(c.generation, 0);
            QVERIFY(c.label.startsWith(QStringLiteral("experience #")));
        }
        QVERIFY(fromExperience > 0);
        // Its best after the seeds is already as good as the first run's helpful kernels.
        double bestSeed = 0.0;
        for (const auto& e : s.evaluations) {
            const auto c = std::find_if(s.candidates.begin(), s.candidates.end(),
                                        [&](const auto& x) { return x.id == e.candidateId; });
            if (c->origin == Origin::Experience && e.result.speedup)
                bestSeed = std::max(bestSeed, *e.result.speedup);
        }
        QVERIFY2(bestSeed >= 2.0, qPrintable(QString::number(bestSeed)));
    }

    // Every tuner kernel is stored with how the tuner found it, and the times a run measured go to
    // the tuning cache: a later run on the same task, sizes and device proposes the fastest
    // configuration it holds first, as a "cache" kernel. A damaged record costs a notice.
    void laterRunStartsFromTheTuningCache() {
        QTemporaryDir dir;
        const QString library = dir.filePath(QStringLiteral("tuning.experience"));
        auto setupWith = [&](const QString& store) {
            Engine::Setup s = testSetup(store, testConfig(40));
            s.experiencePath = library;
            return s;
        };
        const QString first = dir.filePath(QStringLiteral("first.kforge"));
        {
            Engine engine(setupWith(first));
            QCOMPARE(runToEnd(engine).state, RunState::Finished);
        }
        std::map<TunerStrategy, int> used;
        for (const auto& c : readStore(first).candidates) {
            QCOMPARE(c.tunerStrategy.has_value(), c.origin == Origin::Tuner);
            if (c.tunerStrategy)
                ++used[*c.tunerStrategy];
        }
        QVERIFY2(used[TunerStrategy::Model] > 0, "the model proposes once a template has measurements");
        QCOMPARE(used[TunerStrategy::Cache], 0);

        // The fastest configuration measured of each template, and nothing but the cache for the
        // next run to start from (no kernels that helped).
        std::map<QString, std::pair<double, ParamValues>> fastest;
        std::map<QString, std::pair<double, qint64>> slowest; // time and record id
        {
            kforgetest::RawDb raw(library);
            for (const auto& row : raw.rows("SELECT kernel, params_json, median_us, device, id FROM tuning")) {
                QCOMPARE(row.at(3).toString(), QStringLiteral("Fake Device"));
                if (row.at(2).isNull())
                    continue;
                auto& slow = slowest[row.at(0).toString()];
                if (row.at(2).toDouble() > slow.first)
                    slow = {row.at(2).toDouble(), row.at(4).toLongLong()};
                ParamValues params;
                const QJsonObject json = QJsonDocument::fromJson(row.at(1).toString().toUtf8()).object();
                for (auto it = json.begin(); it != json.end(); ++it)
                    params[it.key().toStdString()] = it.value().toInteger();
                auto& best = fastest[row.at(0).toString()];
                if (best.second.empty() || row.at(2).toDouble() < best.first)
                    best = {row.at(2).toDouble(), params};
            }
            QVERIFY(!fastest.empty());
            QVERIFY(raw.exec("DELETE FROM insights"));
            for (const auto& [kernel, slow] : slowest)
                if (slow.first > fastest.at(kernel).first)
                    QVERIFY(raw.exec(QStringLiteral("UPDATE tuning SET params_json = 'damaged' WHERE id = %1")
                                         .arg(slow.second)
                                         .toUtf8()
                                         .constData()));
        }

        const QString second = dir.filePath(QStringLiteral("second.kforge"));
        QStringList notices;
        {
            Engine engine(setupWith(second));
            connect(&engine, &Engine::notice, this, [&notices](const QString& n) { notices << n; });
            QCOMPARE(runToEnd(engine).state, RunState::Finished);
        }
        const QStringList damaged = notices.filter(QStringLiteral("its parameters are not a JSON object (ignored)"));
        QVERIFY2(!damaged.isEmpty(), qPrintable(notices.join(u'\n')));
        QVERIFY(damaged.first().startsWith(QStringLiteral("tuning cache: ")));
        const Stored s = readStore(second);
        const auto tuned = std::find_if(s.candidates.begin(), s.candidates.end(),
                                        [](const Candidate& c) { return c.origin == Origin::Tuner; });
        QVERIFY(tuned != s.candidates.end());
        QCOMPARE(tuned->tunerStrategy, std::optional(TunerStrategy::Cache));
        const QString kernel = TuningMemory::templateKey(tuned->source);
        QVERIFY(fastest.count(kernel));
        QCOMPARE(tuned->params, fastest.at(kernel).second);
    }

    void pauseResumeStopAndResumeLater() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        auto engine = std::make_unique<Engine>(testSetup(db, testConfig(40)));
        QSignalSpy finished(engine.get(), &Engine::finished);
        RunState state = RunState::Starting;
        int generationsWhilePaused = 0;
        connect(engine.get(), &Engine::progressed, this, [&](const RunProgress& p) { state = p.state; });
        connect(engine.get(), &Engine::generationCompleted, this, [&](int generation) {
            if (state == RunState::Paused)
                ++generationsWhilePaused;
            if (generation == 1) {
                EngineCommand pause;
                pause.kind = EngineCommand::Kind::Pause;
                engine->post(pause);
            }
        });
        QMetaObject::invokeMethod(engine.get(), &Engine::start, Qt::QueuedConnection);
        QTRY_COMPARE_WITH_TIMEOUT(state, RunState::Paused, 30000);
        const qint64 evaluationsWhenPaused = readStore(db).evaluations.size();
        // A command round trip: the engine has handled everything queued before it, and paused at
        // a generation's end it has nothing in flight that could still arrive.
        EngineCommand sameBudget;
        sameBudget.kind = EngineCommand::Kind::SetBudget;
        engine->post(sameBudget);
        QTRY_COMPARE_WITH_TIMEOUT(countEvents(readStore(db), QStringLiteral("budget")), 1, 30000);
        QCOMPARE(readStore(db).evaluations.size(), evaluationsWhenPaused);
        QCOMPARE(generationsWhilePaused, 0);

        EngineCommand resume;
        resume.kind = EngineCommand::Kind::Resume;
        engine->post(resume);
        QTRY_VERIFY_WITH_TIMEOUT(readStore(db).evaluations.size() > evaluationsWhenPaused, 30000);
        EngineCommand stop;
        stop.kind = EngineCommand::Kind::Stop;
        engine->post(stop);
        QVERIFY(finished.wait(30000));
        QCOMPARE(finished.first().at(0).value<RunSummary>().state, RunState::Stopped);
        QCOMPARE(model::runStateName(readStore(db).run.state), QStringLiteral("stopped"));
        engine.reset();

        // A stopped run continues where it stopped.
        Engine::Setup again = testSetup(db, {});
        again.resumeRun = 0;
        Engine resumed(again);
        const RunSummary summary = runToEnd(resumed);
        QCOMPARE(summary.state, RunState::Finished);
        const Stored s = readStore(db);
        QVERIFY(s.evaluations.size() <= 40);
        QCOMPARE(countEvents(s, QStringLiteral("run_resumed")), 1);
    }

    // Steering made on a stored run waits in its store and is applied, once, when the run resumes:
    // the pin, the veto (with its reason) and the edited kernel (a human child of its parent) as
    // if they had been made live; a queued command that cannot be read is named and left out.
    void steeringQueuedOnAStoredRunAppliesWhenItResumes() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.kforge"));
        {
            auto engine = std::make_unique<Engine>(testSetup(db, testConfig(60)));
            connect(engine.get(), &Engine::generationCompleted, this, [&](int generation) {
                if (generation == 1) {
                    EngineCommand stop;
                    stop.kind = EngineCommand::Kind::Stop;
                    engine->post(stop);
                }
            });
            QCOMPARE(runToEnd(*engine).state, RunState::Stopped);
        }
        const Stored before = readStore(db);
        QVERIFY(before.candidates.size() >= 3);
        const Candidate& pinned = before.candidates.at(1);
        const Candidate& vetoed = before.candidates.at(2);
        {
            auto store = store::RunStore::open(db);
            QVERIFY(store);
            EngineCommand pin;
            pin.kind = EngineCommand::Kind::Pin;
            pin.candidate = pinned.id;
            EngineCommand veto;
            veto.kind = EngineCommand::Kind::Veto;
            veto.candidate = vetoed.id;
            veto.reason = QStringLiteral("reads out of bounds on odd sizes");
            EngineCommand edit;
            edit.kind = EngineCommand::Kind::Inject;
            edit.candidate = pinned.id;
            edit.reason = QStringLiteral("unrolled by hand");
            edit.injected.source = pinned.source;
            edit.injected.source.replace(QStringLiteral("y[i] = 2.0f * x[i];"), QStringLiteral("y[i] = x[i] + x[i];"));
            edit.injected.parents = {pinned.id};
            edit.injected.island = pinned.island;
            for (const EngineCommand& c : {pin, veto, edit}) {
                const auto json = Steering::toJson(c);
                auto back = Steering::fromJson(json);
                QVERIFY(back);
                QCOMPARE(Steering::toJson(*back), json); // kept as it was made
                QVERIFY((*store)->queueCommand(before.run.id, json));
            }
            QVERIFY(
                (*store)->queueCommand(before.run.id, QJsonObject{{QStringLiteral("kind"), QStringLiteral("shrug")}}));
            QCOMPARE((*store)->queuedCommands(before.run.id)->size(), 4);
        }

        Engine::Setup again = testSetup(db, {});
        again.resumeRun = 0;
        Engine resumed(again);
        QStringList notices;
        connect(&resumed, &Engine::notice, this, [&](const QString& n) { notices << n; });
        QCOMPARE(runToEnd(resumed).state, RunState::Finished);
        QVERIFY2(notices.join(QLatin1Char('\n')).contains(QStringLiteral("'shrug'")),
                 qPrintable(notices.join(QLatin1Char('\n'))));

        const Stored after = readStore(db);
        QCOMPARE(countEvents(after, QStringLiteral("pin")), 1);
        QCOMPARE(countEvents(after, QStringLiteral("veto")), 1);
        QCOMPARE(countEvents(after, QStringLiteral("inject")), 1);
        bool humanChild = false;
        for (const Candidate& c : after.candidates)
            if (c.origin == model::Origin::Human && c.parents == QList<qint64>{pinned.id}
                && c.source.contains(QStringLiteral("x[i] + x[i]")))
                humanChild = true;
        QVERIFY(humanChild);
        auto store = store::RunStore::open(db);
        QVERIFY(store);
        QVERIFY((*store)->queuedCommands(after.run.id)->isEmpty()); // applied once, not again
        auto flagged = (*store)->flaggedCandidates(after.run.id);
        QVERIFY(flagged);
        QVERIFY(flagged->first.contains(pinned.id));
        QVERIFY(flagged->second.contains(vetoed.id));
    }

    void resumeAfterKillNineGivesTheSameRun() {
        QTemporaryDir dir;
        const QString reference = dir.filePath(QStringLiteral("reference.kforge"));
        const QString crashed = dir.filePath(QStringLiteral("crashed.kforge"));
        {
            Engine engine(testSetup(reference, testConfig(45)));
            QCOMPARE(runToEnd(engine).state, RunState::Finished);
        }
        // The same run in a child process, killed without warning partway.
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--engine-child"), crashed});
        QVERIFY(child.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(crashed) && readStore(crashed).evaluations.size() >= 14, 60000);
        {
            // While the child runs it, the run is not this process's to resume.
            Engine::Setup meanwhile = testSetup(crashed, {});
            meanwhile.resumeRun = 0;
            Engine refused(meanwhile);
            const RunSummary s = runToEnd(refused);
            QCOMPARE(s.state, RunState::Failed);
            QVERIFY2(s.message.contains(QStringLiteral("is in use by pid %1").arg(child.processId())),
                     qPrintable(s.message));
        }
        child.kill();
        QVERIFY(child.waitForFinished());
        const Stored before = readStore(crashed);
        QCOMPARE(model::runStateName(before.run.state), QStringLiteral("running"));
        QVERIFY(before.evaluations.size() < 45);

        Engine::Setup again = testSetup(crashed, {});
        again.resumeRun = 0;
        Engine resumed(again);
        const RunSummary summary = runToEnd(resumed);
        QCOMPARE(summary.state, RunState::Finished);

        const Stored a = readStore(reference);
        const Stored b = readStore(crashed);
        QCOMPARE(lineage(b), lineage(a));
        QCOMPARE(b.run.bestCandidate, a.run.bestCandidate);
        QCOMPARE(b.run.evaluations, a.run.evaluations);
        QCOMPARE(b.evaluations.size(), a.evaluations.size());
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    // The child of resumeAfterKillNineGivesTheSameRun: runs the reference configuration until killed.
    if (argc == 3 && QByteArray(argv[1]) == "--engine-child") {
        qRegisterMetaType<RunSummary>();
        Engine engine(testSetup(QString::fromLocal8Bit(argv[2]), testConfig(45)));
        QObject::connect(&engine, &Engine::finished, &app, [] { QCoreApplication::exit(0); });
        QMetaObject::invokeMethod(&engine, &Engine::start, Qt::QueuedConnection);
        return QCoreApplication::exec();
    }
    TestEngine test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_engine.moc"
