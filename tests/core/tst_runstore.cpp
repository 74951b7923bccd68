// The run store on real files: creating, reopening and upgrading them, refusing files that are not
// run stores, round trips of every record, transactions, a second connection reading beside the
// first, and a writer process killed with SIGKILL in the middle of its writes.
//
// The same executable is that writer: `tst_runstore --writer FILE` writes in a loop until killed;
// and `tst_runstore --lock FILE RUN` holds a run's lock until killed.

#include "eval/resultformat.h"
#include "rawdb.h"
#include "store/runexport.h"
#include "store/runstore.h"
#include "store/torchexport.h"
#include "store/yardstick.h"

#include <sqlite3.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

#include <QScopeGuard>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

Q_DECLARE_METATYPE(kforge::model::Candidate)

using kforge::model::Candidate;
using kforge::model::Origin;
using kforge::protocol::Diagnostic;
using kforge::protocol::EvaluateResult;
using kforge::protocol::TimingStats;
using kforge::store::OpenMode;
using kforge::store::RunLock;
using kforge::store::RunRecord;
using kforge::store::RunStore;

using kforgetest::RawDb;

namespace {

constexpr qint64 kApplicationId = 0x6b667267; // as runstore.cpp writes it

// A candidate whose source is the kernel file at `path` (empty where it cannot be read).
Candidate candidateFromFile(const QString& path) {
    QFile file(path);
    Candidate c;
    if (file.open(QIODevice::ReadOnly))
        c.source = QString::fromUtf8(file.readAll());
    return c;
}

// Whether `kforge export --torch` refuses `c` for `task` with a message containing `expected`.
bool torchPlanRefused(const kforge::spec::TaskBundle& task, const Candidate& c, const QString& expected) {
    auto refused = kforge::store::torchPlan(task, c, QStringLiteral("kernel.cu"));
    if (refused.ok()) {
        qWarning("the plan was exported");
        return false;
    }
    if (!QString::fromStdString(refused.error()).contains(expected)) {
        qWarning("%s", refused.error().c_str());
        return false;
    }
    return true;
}

std::unique_ptr<RunStore> openStore(const QString& path) {
    auto store = RunStore::open(path);
    if (!store) {
        qWarning("%s", store.error().c_str());
        return nullptr;
    }
    return std::move(*store);
}

RunRecord makeRun(const QString& task = QStringLiteral("sgemm")) {
    RunRecord r;
    r.task = task;
    r.taskDir = QStringLiteral("/tasks/") + task;
    r.backend = kforge::model::Backend::Cuda;
    r.variant = QStringLiteral("default");
    r.config = QJsonObject{{QStringLiteral("population"), 32},
                           {QStringLiteral("islands"), QJsonArray{1, 2}},
                           {QStringLiteral("llm"), QJsonObject{{QStringLiteral("model"), QStringLiteral("m")}}}};
    r.state = kforge::model::RunState::Running;
    return r;
}

Candidate makeCandidate(qint64 id, QList<qint64> parents = {}) {
    Candidate c;
    c.id = id;
    c.source = QStringLiteral("// kforge:param BX 16\n__global__ void k%1() {}\n").arg(id);
    c.params = {{"BX", 16 * id}};
    c.parents = std::move(parents);
    c.island = static_cast<int>(id % 3);
    c.generation = static_cast<int>(id / 4);
    c.origin = c.parents.isEmpty() ? Origin::Seed : Origin::Tuner;
    c.label = QStringLiteral("candidate %1").arg(id);
    c.key = QStringLiteral("key-%1").arg(id);
    return c;
}

EvaluateResult makeResult(qint64 id, bool timed) {
    EvaluateResult r;
    r.id = id;
    r.status = timed ? kforge::protocol::Status::Ok : kforge::protocol::Status::CompileError;
    r.message = timed ? "ok" : "candidate does not compile";
    r.device = "NVIDIA H200";
    r.wallSeconds = 1.25;
    r.compile.push_back(
        {"candidate", timed, 0.5, timed ? "" : "error: expected ';'\n\xff not utf-8", {{"registers", 32}}});
    if (timed) {
        r.candidateTiming = TimingStats{"cupti-activity", 20, 10.5, 10.75, 10.0, 12.0, 0.02};
        r.baselineTiming = TimingStats{"cupti-activity", 20, 21.0, 21.5, 20.0, 23.0, 0.03};
        r.speedup = 2.0;
        r.timingMode = "default";
        r.diagnostics.push_back({"timing", "warning", "noisy timing", "candidate", 0, 0});
    } else {
        r.diagnostics.push_back({"compile", "error", "expected ';'", "candidate", 12, 7});
        r.diagnostics.push_back({"compile", "warning", "unused variable 'x'", "candidate", 3, 9});
    }
    return r;
}

std::string encoded(const EvaluateResult& r) {
    return kforge::protocol::toJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// For QVERIFY2, which evaluates its message whether or not the check fails.
template <typename T> QByteArray why(const kforge::spec::Expected<T>& e) {
    return e ? QByteArray() : QByteArray::fromStdString(e.error());
}

bool says(const std::string& error, const QString& fragment) {
    return QString::fromStdString(error).contains(fragment);
}

// The writer of killAtAnyMoment: one candidate, its evaluation, an event and the run's counters
// per transaction, as fast as it can, until it is killed.
int runWriter(const QString& path) {
    auto opened = RunStore::open(path);
    if (!opened) {
        std::fprintf(stderr, "%s\n", opened.error().c_str());
        return 1;
    }
    RunStore& store = **opened;
    auto run = store.run(1);
    auto existing = store.candidates(1);
    if (!run || !existing) {
        std::fprintf(stderr, "%s\n", (!run ? run.error() : existing.error()).c_str());
        return 1;
    }
    for (qint64 id = existing->size() + 1;; ++id) {
        RunStore::Transaction transaction(store);
        auto step = transaction.begun();
        if (step)
            step = store.insertCandidate(1, makeCandidate(id, id > 1 ? QList<qint64>{id - 1} : QList<qint64>{}));
        if (step) {
            auto evaluation =
                store.insertEvaluation(1, id, kforge::model::EvaluationPurpose::Search, makeResult(id, id % 2 == 0));
            if (!evaluation)
                step = kforge::spec::fail(evaluation.error());
        }
        if (step) {
            auto event =
                store.insertEvent(1, 0, kforge::model::EventKind::Inject, QJsonObject{{QStringLiteral("id"), id}});
            if (!event)
                step = kforge::spec::fail(event.error());
        }
        if (step) {
            run->evaluations = id;
            step = store.updateRun(*run);
        }
        if (step)
            step = transaction.commit();
        if (!step) {
            std::fprintf(stderr, "%s\n", step.error().c_str());
            return 2;
        }
    }
}

} // namespace

class TestRunStore : public QObject {
    Q_OBJECT

private slots:
    void createOpenReopen();
    void schema();
    void archivesReplaceAsAWhole();
    void llmOperatorIsStoredAndDerivedForOlderRuns();
    void tunerStrategyIsStoredAndUnknownForOlderRuns();
    void upgradesARealVersion1Store();
    void reviewQueue();
    void unknownStoredNamesAreNamed();
    void llmCallsAndStrategies();
    void llmCallStoredWhenSentCompletedWhenEnded();
    void analysisRoundTrips();
    void slicesSummariesAndCells();
    void slicesKeepToTheirRun();
    void upgradesEmptyFile_data();
    void upgradesEmptyFile();
    void refusesForeignFile_data();
    void refusesForeignFile();
    void runsNewestFirst();
    void updateRun();
    void missingRun();
    void candidatesRoundTrip_data();
    void candidatesRoundTrip();
    void lineage();
    void candidateFlags();
    void evaluationsAndDiagnostics();
    void pytorchFigures();
    void events();
    void listingsAreKeptPerCandidateAndTarget();
    void transactionRollsBack();
    void nestedTransactions();
    void failedWriteSpoilsTransaction();
    void secondStoreReads();
    void killAtAnyMoment();
    void readingChangesNothing();
    void readingAReadOnlyStore();
    void readOnlyRefusesWrites();
    void aReaderLeavesNoWriteAheadLogBehind();
    void aBusyStoreFailsTheWriteNamingIt();
    void runLockIsExclusive();
    void runLockOfAKilledProcessIsFree();
    void torchExportFollowsWhenAndRefusesTensorMaps();
    void torchExportRefusesClusters();
    void exportedLaunchPlanNamesClusters();
    void exportedLaunchPlanAssumesSms();

private:
    QString newPath() { return m_dir.filePath(QStringLiteral("run%1.kforge").arg(++m_files)); }

    QTemporaryDir m_dir;
    int m_files = 0;
};

void TestRunStore::createOpenReopen() {
    QVERIFY(m_dir.isValid());
    const QString path = newPath();
    qint64 id = 0;
    {
        auto store = openStore(path);
        QVERIFY(store);
        QCOMPARE(store->path(), path);
        auto created = store->createRun(makeRun());
        QVERIFY2(created, why(created));
        id = *created;
        QVERIFY(id > 0);
    }
    QVERIFY(QFile::exists(path));
    auto store = openStore(path);
    QVERIFY(store);
    auto run = store->run(id);
    QVERIFY2(run, why(run));
    QCOMPARE(run->task, QStringLiteral("sgemm"));
    QCOMPARE(run->name, QStringLiteral("sgemm on cuda")); // the default name
    QCOMPARE(run->config, makeRun().config);
}

void TestRunStore::schema() {
    const QString path = newPath();
    QVERIFY(openStore(path));
    QCOMPARE(RunStore::schemaVersion(), 10);
    RawDb db(path);
    QCOMPARE(db.value("SELECT max(version) FROM schema_version").toInt(), RunStore::schemaVersion());
    QCOMPARE(db.value("SELECT count(*) FROM schema_version").toInt(), 1);
    QCOMPARE(db.value("PRAGMA application_id").toLongLong(), kApplicationId);
    QCOMPARE(db.value("PRAGMA journal_mode").toString(), QStringLiteral("wal"));
    QCOMPARE(
        db.value("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'candidates', "
                 "'candidate_parents', 'evaluations', 'diagnostics', 'events', 'reviews', 'llm_calls', 'strategies', "
                 "'archive_members')")
            .toInt(),
        10);
}

void TestRunStore::archivesReplaceAsAWhole() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto id = store->createRun(makeRun());
    QVERIFY2(id, why(id));
    auto never = store->archive(*id);
    QVERIFY2(never, why(never));
    QVERIFY2(!never->has_value(), "a run that never stored archives says so, so views can derive them");
    const QList<kforge::store::ArchiveMemberRecord> first{
        {0, {0, 1, 2}, 1, 1.0}, {1, {0, 1, 2}, 1, 1.0}, {1, {2, 2, 0}, 4, 2.5}};
    QVERIFY(store->setArchive(*id, first));
    auto read = store->archive(*id);
    QVERIFY2(read, why(read));
    QCOMPARE(**read, first);
    const QList<kforge::store::ArchiveMemberRecord> second{{1, {2, 2, 0}, 6, 3.0}};
    QVERIFY(store->setArchive(*id, second));
    read = store->archive(*id);
    QCOMPARE(**read, second);
    QVERIFY(store->setArchive(*id, {}));
    read = store->archive(*id);
    QVERIFY2(read->has_value() && (*read)->isEmpty(), "empty archives stay stored as empty");
    const auto missing = store->setArchive(*id + 7, first);
    QVERIFY(!missing);
    QVERIFY2(QString::fromStdString(missing.error()).contains(QString::number(*id + 7)), missing.error().c_str());
}

void TestRunStore::llmOperatorIsStoredAndDerivedForOlderRuns() {
    using kforge::model::LlmOperator;
    const QString path = newPath();
    {
        auto store = openStore(path);
        QVERIFY(store);
        auto id = store->createRun(makeRun());
        QVERIFY2(id, why(id));
        Candidate seed = makeCandidate(1);
        Candidate repair = makeCandidate(2, {1});
        repair.origin = Origin::Llm;
        repair.llmOperator = LlmOperator::Repair;
        repair.label = QStringLiteral("llm repair of #1 (local:model, structure)");
        Candidate crossover = makeCandidate(3, {1, 2});
        crossover.origin = Origin::Llm;
        crossover.llmOperator = LlmOperator::Crossover;
        crossover.label = QStringLiteral("llm crossover of #1 x #2 (local:model, tuning)");
        for (const Candidate& c : {seed, repair, crossover})
            QVERIFY(store->insertCandidate(*id, c));
        auto read = store->candidates(*id);
        QVERIFY2(read, why(read));
        QVERIFY(!read->at(0).llmOperator);
        QCOMPARE(read->at(1).llmOperator, std::optional(LlmOperator::Repair));
        QCOMPARE(read->at(2).llmOperator, std::optional(LlmOperator::Crossover));
    }
    {
        // As schema 5 wrote it: no column, the operator only in the label.
        RawDb db(path);
        QVERIFY(db.exec("ALTER TABLE candidates DROP COLUMN llm_operator"));
        QVERIFY(db.exec("ALTER TABLE candidates DROP COLUMN tuner_strategy"));
        QVERIFY(db.exec("DROP TABLE queued_commands"));
        QVERIFY(db.exec("DROP TABLE listings"));
        QVERIFY(db.exec("ALTER TABLE llm_calls DROP COLUMN cached_input_tokens"));
        QVERIFY(db.exec("ALTER TABLE llm_calls DROP COLUMN cache_write_tokens"));
        QVERIFY(db.exec("UPDATE schema_version SET version = 5"));
    }
    auto store = openStore(path);
    QVERIFY(store);
    auto runs = store->runs();
    QVERIFY2(runs, why(runs));
    auto read = store->candidates(runs->first().id);
    QVERIFY2(read, why(read));
    QVERIFY2(!read->at(0).llmOperator, "a seed has no operator");
    QCOMPARE(read->at(1).llmOperator, std::optional(LlmOperator::Repair));
    QCOMPARE(read->at(2).llmOperator, std::optional(LlmOperator::Crossover));
    {
        RawDb db(path);
        QVERIFY(db.exec("UPDATE candidates SET llm_operator = 'rewrite' WHERE id = 2"));
    }
    const auto unknown = store->candidates(runs->first().id);
    QVERIFY(!unknown);
    QVERIFY2(says(unknown.error(), QStringLiteral("unknown language-model operator 'rewrite'")),
             unknown.error().c_str());
}

void TestRunStore::tunerStrategyIsStoredAndUnknownForOlderRuns() {
    using kforge::model::TunerStrategy;
    const QString path = newPath();
    {
        auto store = openStore(path);
        QVERIFY(store);
        auto id = store->createRun(makeRun());
        QVERIFY2(id, why(id));
        Candidate seed = makeCandidate(1);
        Candidate modelled = makeCandidate(2, {1});
        modelled.tunerStrategy = TunerStrategy::Model;
        Candidate cached = makeCandidate(3, {1});
        cached.tunerStrategy = TunerStrategy::Cache;
        for (const Candidate& c : {seed, modelled, cached})
            QVERIFY(store->insertCandidate(*id, c));
        auto read = store->candidates(*id);
        QVERIFY2(read, why(read));
        QVERIFY(!read->at(0).tunerStrategy);
        QCOMPARE(read->at(1).tunerStrategy, std::optional(TunerStrategy::Model));
        QCOMPARE(read->at(2).tunerStrategy, std::optional(TunerStrategy::Cache));
    }
    {
        // As schema 6 wrote it: no column.
        RawDb db(path);
        QVERIFY(db.exec("ALTER TABLE candidates DROP COLUMN tuner_strategy"));
        QVERIFY(db.exec("DROP TABLE queued_commands"));
        QVERIFY(db.exec("DROP TABLE listings"));
        QVERIFY(db.exec("ALTER TABLE llm_calls DROP COLUMN cached_input_tokens"));
        QVERIFY(db.exec("ALTER TABLE llm_calls DROP COLUMN cache_write_tokens"));
        QVERIFY(db.exec("UPDATE schema_version SET version = 6"));
    }
    {
        // Read through an upgraded copy, the file left as it was.
        auto reader = RunStore::open(path, kforge::store::OpenMode::ReadOnly);
        QVERIFY2(reader, why(reader));
        auto runs = (*reader)->runs();
        QVERIFY2(runs, why(runs));
        auto read = (*reader)->candidates(runs->first().id);
        QVERIFY2(read, why(read));
        QCOMPARE(read->size(), 3);
        for (const Candidate& c : *read)
            QVERIFY2(!c.tunerStrategy, "earlier runs never said how the tuner found a kernel");
        QCOMPARE(RawDb(path).value("SELECT max(version) FROM schema_version").toInt(), 6);
    }
    auto store = openStore(path); // upgraded in place
    QVERIFY(store);
    QCOMPARE(RawDb(path).value("SELECT max(version) FROM schema_version").toInt(), RunStore::schemaVersion());
    auto runs = store->runs();
    QVERIFY2(runs, why(runs));
    {
        RawDb db(path);
        QVERIFY(db.exec("UPDATE candidates SET tuner_strategy = 'annealing' WHERE id = 2"));
    }
    const auto unknown = store->candidates(runs->first().id);
    QVERIFY(!unknown);
    QVERIFY2(says(unknown.error(), QStringLiteral("unknown tuner strategy 'annealing'")), unknown.error().c_str());
}

void TestRunStore::upgradesARealVersion1Store() {
    // A run store written by schema 1 on the H200 (kept with the GPU results).
    const QString original = QStringLiteral(KFORGE_SOURCE_DIR "/tests/gpu/runs/h200-offline-2026-11-30-a.kforge");
    const QString path = newPath();
    QVERIFY(QFile::copy(original, path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    {
        RawDb before(path);
        QCOMPARE(before.value("SELECT max(version) FROM schema_version").toInt(), 1);
    }
    auto store = openStore(path);
    QVERIFY(store);
    RawDb db(path);
    QCOMPARE(db.value("SELECT max(version) FROM schema_version").toInt(), RunStore::schemaVersion());
    auto runs = store->runs();
    QVERIFY2(runs, why(runs));
    QCOMPARE(runs->size(), 6);
    auto archives = store->archive(runs->last().id);
    QVERIFY2(archives && !archives->has_value(), "a run recorded before archives were stored has none");
    auto evaluations = store->evaluations(runs->last().id);
    QVERIFY2(evaluations, why(evaluations));
    QVERIFY(!evaluations->isEmpty());
    QVERIFY(evaluations->first().findings.isEmpty());
    QVERIFY(evaluations->first().roofline.isEmpty());
    auto reviews = store->reviews(runs->last().id);
    QVERIFY2(reviews, why(reviews));
    QVERIFY(reviews->isEmpty());
}

// `kforge export --torch` resolves the plan per size variant, so when= picks each variant's
// launches; a launch that takes a TMA tensor map is refused, naming the directive, since ModelNew
// cannot encode descriptors.
void TestRunStore::torchExportFollowsWhenAndRefusesTensorMaps() {
    const QString dir = qEnvironmentVariable("KFORGE_TEST_KERNELS") + QStringLiteral("/tensormap");
    auto task = kforge::spec::loadTaskDir(dir.toStdString());
    QVERIFY2(task.ok(), task.ok() ? "" : task.error().c_str());
    Candidate c = candidateFromFile(dir + QStringLiteral("/tile_add_tma.cu"));
    QVERIFY(!c.source.isEmpty());
    QVERIFY(
        torchPlanRefused(*task, c,
                         QStringLiteral("launch tile_add_tma takes the tensor map tmX (// kforge:tensormap, line 9), "
                                        "which ModelNew cannot encode")));

    // With the TMA launch never chosen, every variant exports its plain launch.
    c.source.replace(QStringLiteral("when=mod(N, 4) == 0"), QStringLiteral("when=N < 0"));
    c.source.replace(QStringLiteral("when=mod(N, 4) != 0"), QStringLiteral("when=N > 0"));
    auto plan = kforge::store::torchPlan(*task, c, QStringLiteral("kernel.cu"));
    QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
    const QJsonArray variants = plan->value(QStringLiteral("variants")).toArray();
    QCOMPARE(variants.size(), 3);
    for (const auto& v : variants) {
        const QJsonArray launches = v.toObject().value(QStringLiteral("launches")).toArray();
        QCOMPARE(launches.size(), 1);
        QCOMPARE(launches.at(0).toObject().value(QStringLiteral("kernel")).toString(),
                 QStringLiteral("tile_add_plain"));
    }
}

// A launch in thread block clusters is refused too (CuPy, which ModelNew launches through, has no
// clusters); a cluster of one block is no cluster and exports.
void TestRunStore::torchExportRefusesClusters() {
    auto task = kforge::spec::loadTaskDir(qEnvironmentVariable("KFORGE_TASKS_DIR").toStdString() + "/vector_add");
    QVERIFY2(task.ok(), task.ok() ? "" : task.error().c_str());
    Candidate c = candidateFromFile(qEnvironmentVariable("KFORGE_TEST_KERNELS")
                                    + QStringLiteral("/cluster/vector_add_cluster.cu"));
    QVERIFY(!c.source.isEmpty());
    QVERIFY(torchPlanRefused(*task, c,
                             QStringLiteral("line 9: launch vector_add_cluster runs in thread block clusters of 2 "
                                            "blocks (cluster=), which ModelNew cannot launch")));

    c.source.replace(QStringLiteral("cluster=(2)\n"), QStringLiteral("cluster=(1)\n"));
    auto plan = kforge::store::torchPlan(*task, c, QStringLiteral("kernel.cu"));
    QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().c_str());
    const QJsonObject launch = plan->value(QStringLiteral("variants"))
                                   .toArray()
                                   .at(0)
                                   .toObject()
                                   .value(QStringLiteral("launches"))
                                   .toArray()
                                   .at(0)
                                   .toObject();
    QCOMPARE(launch.value(QStringLiteral("kernel")).toString(), QStringLiteral("vector_add_cluster"));
}

// launch-plan.json lists a launch's cluster where it has one of more than one block, and only there.
namespace {

// launch-plan.json of each of `sources`, inserted as candidates 1, 2, ... of a vector_add run at
// the small sizes and exported; an empty object where the export wrote none.
std::vector<QJsonObject> exportedPlans(const QString& storePath, const QString& outDir, const QStringList& sources) {
    std::vector<QJsonObject> plans;
    auto store = openStore(storePath);
    if (!store)
        return plans;
    RunRecord r = makeRun(QStringLiteral("vector_add"));
    r.taskDir = qEnvironmentVariable("KFORGE_TASKS_DIR") + QStringLiteral("/vector_add");
    r.variant = QStringLiteral("small");
    const qint64 run = *store->createRun(r);
    for (qsizetype i = 0; i < sources.size(); ++i) {
        Candidate c;
        c.id = i + 1;
        c.origin = Origin::Seed;
        c.key = QStringLiteral("k%1").arg(c.id);
        c.source = sources[i];
        QJsonObject plan;
        if (store->insertCandidate(run, c)) {
            const QString out = outDir + QStringLiteral("/export-%1").arg(c.id);
            if (auto written = kforge::store::exportCandidate(*store, run, c.id, out); !written)
                qWarning("%s", written.error().c_str());
            QFile file(out + QStringLiteral("/launch-plan.json"));
            if (file.open(QIODevice::ReadOnly))
                plan = QJsonDocument::fromJson(file.readAll()).object();
        }
        plans.push_back(plan);
    }
    return plans;
}

QJsonObject firstLaunch(const QJsonObject& plan) {
    return plan.value(QStringLiteral("launches")).toArray().at(0).toObject();
}

} // namespace

void TestRunStore::exportedLaunchPlanNamesClusters() {
    const Candidate c = candidateFromFile(qEnvironmentVariable("KFORGE_TEST_KERNELS")
                                          + QStringLiteral("/cluster/vector_add_cluster.cu"));
    QVERIFY(!c.source.isEmpty());
    QString plainSource = c.source;
    plainSource.replace(QStringLiteral("cluster=(2)\n"), QStringLiteral("cluster=(1)\n"));
    const auto plans = exportedPlans(newPath(), m_dir.filePath(QStringLiteral("clusters")), {c.source, plainSource});
    QCOMPARE(plans.size(), std::size_t{2});
    const QJsonObject clustered = firstLaunch(plans[0]);
    QCOMPARE(clustered.value(QStringLiteral("kernel")).toString(), QStringLiteral("vector_add_cluster"));
    QCOMPARE(clustered.value(QStringLiteral("cluster")).toArray(), (QJsonArray{2, 1, 1}));
    const QJsonObject plain = firstLaunch(plans[1]);
    QCOMPARE(plain.value(QStringLiteral("kernel")).toString(), QStringLiteral("vector_add_cluster"));
    QVERIFY(!plain.contains(QStringLiteral("cluster")));
}

void TestRunStore::exportedLaunchPlanAssumesSms() {
    // A persistent kernel sizes its grid by SMS, which the run does not record: the exported plan
    // is resolved for an H100's or H200's 132 SMs and says so; a plan without SMS assumes nothing.
    const QString taskDir = qEnvironmentVariable("KFORGE_TASKS_DIR") + QStringLiteral("/vector_add");
    Candidate c = candidateFromFile(taskDir + QStringLiteral("/baseline.cu"));
    QVERIFY(c.source.contains(QStringLiteral("grid=(cdiv(N, BLOCK))")));
    const QString plainSource = c.source;
    c.source.replace(QStringLiteral("grid=(cdiv(N, BLOCK))"), QStringLiteral("grid=(4 * SMS)"));
    const auto plans = exportedPlans(newPath(), m_dir.filePath(QStringLiteral("sms")), {c.source, plainSource});
    QCOMPARE(plans.size(), std::size_t{2});
    const QJsonObject& persistent = plans[0];
    QVERIFY2(!persistent.contains(QStringLiteral("error")),
             qPrintable(persistent.value(QStringLiteral("error")).toString()));
    QCOMPARE(persistent.value(QStringLiteral("multiprocessors_assumed")).toInt(), 132);
    QCOMPARE(firstLaunch(persistent).value(QStringLiteral("grid")), QJsonValue(QJsonArray{528, 1, 1}));
    QVERIFY(!plans[1].contains(QStringLiteral("error")));
    QVERIFY(!plans[1].contains(QStringLiteral("multiprocessors_assumed")));

    // ModelNew's plan says the same for each size variant.
    auto task = kforge::spec::loadTaskDir(taskDir.toStdString());
    QVERIFY2(task.ok(), task.ok() ? "" : task.error().c_str());
    auto torch = kforge::store::torchPlan(*task, c, QStringLiteral("kernel.cu"));
    QVERIFY2(torch.ok(), torch.ok() ? "" : torch.error().c_str());
    const QJsonArray variants = torch->value(QStringLiteral("variants")).toArray();
    QVERIFY(!variants.isEmpty());
    for (const auto& v : variants)
        QCOMPARE(v.toObject().value(QStringLiteral("multiprocessors_assumed")).toInt(), 132);
}

void TestRunStore::pytorchFigures() {
    // PyTorch timed beside the first seed at the start and beside the best at the end: read back
    // without every result, and a candidate's speedup over eager through the seed.
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    for (qint64 id : {1, 2, 3})
        QVERIFY(store->insertCandidate(run, makeCandidate(id)));
    EvaluateResult seed = makeResult(1, true);
    seed.speedup = 1.0;
    seed.eagerTiming = TimingStats{"torch-profiler", 20, 5.25, 5.5, 5.0, 6.0, 0.01};
    seed.compileTiming = TimingStats{"torch-profiler", 20, 4.2, 4.4, 4.0, 5.0, 0.01};
    seed.speedupVsEager = 0.5;
    seed.speedupVsCompile = 0.4;
    seed.speedupVsEagerInterval = kforge::protocol::RatioInterval{0.45, 0.55, 20};
    seed.pytorchNote = "PyTorch 2.11 on cuda:0";
    QVERIFY(store->insertEvaluation(run, 1, kforge::model::EvaluationPurpose::Search, seed));
    QVERIFY(store->insertEvaluation(run, 2, kforge::model::EvaluationPurpose::Search, makeResult(2, true)));
    QVERIFY(store->insertEvaluation(run, 3, kforge::model::EvaluationPurpose::Search, makeResult(3, true)));
    EvaluateResult last = makeResult(2, true);
    last.speedupVsEager = 1.25;
    last.speedupVsCompile = 1.1;
    last.besideTiming = TimingStats{"torch-profiler, side by side in one process", 20, 3.2, 3.3, 3.1, 3.6, 0.01};
    last.speedupVsCompileInterval = kforge::protocol::RatioInterval{0.98, 1.21, 20};
    QVERIFY(store->insertEvaluation(run, 2, kforge::model::EvaluationPurpose::Yardstick, last, {},
                                    QJsonObject{{QStringLiteral("fraction_of_bound"), 0.42}}));

    auto records = store->pytorchEvaluations(run);
    QVERIFY2(records, why(records));
    QCOMPARE(records->size(), 2); // the first seed's search evaluation and the yardstick one
    const auto f = kforge::store::yardstickFigures(*records, 2);
    QCOMPARE(f.startEagerUs.value_or(0), 5.25);
    QCOMPARE(f.startCompileUs.value_or(0), 4.2);
    QCOMPARE(f.bestVsEager.value_or(0), 1.25);
    QCOMPARE(f.bestVsCompile.value_or(0), 1.1);
    QCOMPARE(f.bestFractionOfBound.value_or(0), 0.42);
    QVERIFY(!f.bestSplitTf32Fraction);
    QVERIFY(f.toJson().value(QStringLiteral("best_split_tf32_fraction")).isNull());
    QCOMPARE(f.speedupBase, QStringLiteral("the baseline"));
    // A float32 kernel on TF32 tensor cores: the headline also says how far along the third of that
    // roof a 3xTF32 kernel can reach the best is.
    const auto split = kforge::store::yardstickFigures(
        &seed, &last,
        QJsonObject{{QStringLiteral("fraction_of_bound"), 0.2}, {QStringLiteral("split_tf32_fraction"), 0.59}});
    QVERIFY2(split.headline().contains(QStringLiteral("20.0% of its roofline bound (59% of the third of the TF32 roof "
                                                      "that a 3xTF32 kernel can reach)")),
             qPrintable(split.headline()));
    QCOMPARE(split.toJson().value(QStringLiteral("best_split_tf32_fraction")).toDouble(), 0.59);
    // The best was timed in PyTorch's process too: kept, and the text says where the speedups are from.
    const auto& stored = records->at(1).result;
    QVERIFY(stored.besideTiming);
    QCOMPARE(stored.besideTiming->medianUs, 3.2);
    const QString text = kforge::eval::formatResultText(stored, QStringLiteral("t"), QStringLiteral("cuda"));
    // Side by side, the speedup says how sure it is: here the rounds cannot tell 1.1x from 1.
    QVERIFY2(text.contains(QStringLiteral("1.100x over torch.compile, timed side by side in one process: a tie, 95% "
                                          "interval 0.980x-1.210x over 20 paired rounds")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("candidate in PyTorch's process 3.20 us median")), qPrintable(text));
    QVERIFY(kforge::eval::formatResultText(records->at(0).result, QStringLiteral("t"), QStringLiteral("cuda"))
                .contains(QStringLiteral("0.400x over torch.compile, timed in this run")));
    QCOMPARE(f.overEager(2.0).value_or(0), 1.0); // twice the seed, which was half as fast as eager
    QVERIFY(f.headline().contains(QStringLiteral("1.250x over PyTorch eager, 1.100x over torch.compile (a tie, ")));
    QCOMPARE(
        f.toJson().value(QStringLiteral("best_speedup_vs_compile_interval")).toObject().value(QStringLiteral("low")),
        QJsonValue(0.98));
    QCOMPARE(f.toJson()
                 .value(QStringLiteral("best_speedup_vs_compile_interval"))
                 .toObject()
                 .value(QStringLiteral("verdict")),
             QJsonValue(QStringLiteral("a tie"))); // so that scripts need not re-derive it from low and high
    QVERIFY(f.toJson().value(QStringLiteral("best_speedup_vs_eager_interval")).isNull());
    QVERIFY(f.headline().contains(QStringLiteral("42.0% of its roofline bound")));

    // A candidate's exported report gives each speedup over PyTorch with its verdict.
    const QString out = m_dir.filePath(QStringLiteral("pytorch-figures"));
    auto written = kforge::store::exportCandidate(*store, run, 1, out);
    QVERIFY2(written, why(written));
    QFile report(out + QStringLiteral("/report.md"));
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(report.readAll());
    QVERIFY2(md.contains(QStringLiteral("0.500x over PyTorch eager (slower, 95% interval 0.450x-0.550x over 20 "
                                        "paired rounds), 0.400x over torch.compile (")),
             qPrintable(md));

    // Not the best: no last comparison; a run that never timed PyTorch says so.
    QVERIFY(!kforge::store::yardstickFigures(*records, 3).bestVsEager);
    const auto none = kforge::store::yardstickFigures(QList<kforge::store::EvaluationRecord>{}, 0);
    QVERIFY(!none.timed());
    QVERIFY(none.headline().startsWith(QStringLiteral("no speedup over PyTorch")));
    QVERIFY(!none.overEager(2.0));
}

void TestRunStore::llmCallStoredWhenSentCompletedWhenEnded() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    kforge::store::LlmCallRecord sent;
    sent.generation = 3;
    sent.op = QStringLiteral("meta");
    sent.endpoint = QStringLiteral("anthropic");
    sent.model = QStringLiteral("claude-sonnet-4-5");
    sent.status = QStringLiteral("in-flight");
    sent.systemPrompt = QStringLiteral("You rewrite strategies.");
    sent.prompt = QStringLiteral("The strategy to rewrite");
    auto id = store->insertLlmCall(run, sent);
    QVERIFY2(id, why(id));
    auto calls = store->llmCalls(run);
    QVERIFY(calls);
    QCOMPARE(calls->size(), 1);
    QCOMPARE(calls->at(0).status, QStringLiteral("in-flight"));
    QVERIFY(calls->at(0).answer.isEmpty() && !calls->at(0).costUsd);

    kforge::store::LlmCallRecord ended = sent;
    ended.status = QStringLiteral("cancelled");
    ended.message = QStringLiteral("anthropic: cancelled, the run ended while the call was in flight");
    ended.inputTokens = 1500; // what a stream had reported before it was cut
    ended.cacheWriteTokens = 1100;
    ended.answer = QStringLiteral("Rewrite: fuse the");
    ended.attempts = 1;
    ended.latencySeconds = 2.5;
    ended.generation = 99; // not part of the completion
    QVERIFY(store->completeLlmCall(run, *id, ended));
    calls = store->llmCalls(run);
    QVERIFY(calls);
    QCOMPARE(calls->size(), 1);
    const auto& c = calls->at(0);
    QCOMPARE(c.id, *id);
    QCOMPARE(c.status, QStringLiteral("cancelled"));
    QCOMPARE(c.message, ended.message);
    QCOMPARE(c.answer, ended.answer);
    QCOMPARE(c.inputTokens, std::optional<qint64>(1500));
    QCOMPARE(c.cacheWriteTokens, std::optional<qint64>(1100));
    QVERIFY(!c.outputTokens && !c.costUsd && !c.cachedInputTokens);
    QCOMPARE(c.attempts, 1);
    QCOMPARE(c.latencySeconds, 2.5);
    QCOMPARE(c.generation, 3);
    QCOMPARE(c.prompt, sent.prompt);
}

void TestRunStore::llmCallsAndStrategies() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    QVERIFY(store->insertCandidate(run, makeCandidate(1)));

    kforge::store::LlmCallRecord known;
    known.generation = 2;
    known.island = 1;
    known.op = QStringLiteral("crossover");
    known.stage = QStringLiteral("tuning");
    known.endpoint = QStringLiteral("openai");
    known.model = QStringLiteral("gpt-4.1-mini");
    known.strategyId = 4;
    known.parents = {1, 3};
    known.status = QStringLiteral("ok");
    known.inputTokens = 1200;
    known.outputTokens = 340;
    known.cachedInputTokens = 800;
    known.costUsd = 0.001024;
    known.latencySeconds = 3.5;
    known.attempts = 2;
    known.systemPrompt = QStringLiteral("You write kernels.");
    known.prompt = QStringLiteral("Combine these two.");
    known.answer = QStringLiteral("```c\n...\n```");
    auto first = store->insertLlmCall(run, known);
    QVERIFY2(first, why(first));
    kforge::store::LlmCallRecord unknown; // usage never arrived: unknown, not zero
    unknown.op = QStringLiteral("mutate");
    unknown.status = QStringLiteral("truncated");
    auto second = store->insertLlmCall(run, unknown);
    QVERIFY(second);
    QVERIFY(store->setLlmCallCandidate(run, *first, 1));

    auto calls = store->llmCalls(run);
    QVERIFY2(calls, why(calls));
    QCOMPARE(calls->size(), 2);
    const auto& a = calls->at(0);
    QCOMPARE(a.op, QStringLiteral("crossover"));
    QCOMPARE(a.parents, (QList<qint64>{1, 3}));
    QCOMPARE(a.candidateId, std::optional<qint64>(1));
    QCOMPARE(a.strategyId, std::optional<qint64>(4));
    QCOMPARE(*a.inputTokens, 1200);
    QCOMPARE(a.cachedInputTokens, std::optional<qint64>(800));
    QVERIFY2(!a.cacheWriteTokens, "a count the server never gave stays unknown");
    QCOMPARE(*a.costUsd, 0.001024);
    QCOMPARE(a.attempts, 2);
    QCOMPARE(a.answer, known.answer);
    const auto& b = calls->at(1);
    QVERIFY(!b.inputTokens && !b.outputTokens && !b.costUsd && !b.candidateId && !b.strategyId);
    QVERIFY(!b.cachedInputTokens && !b.cacheWriteTokens);

    kforge::store::StrategyRecord seed{1, QStringLiteral("structure"), std::nullopt, QStringLiteral("structure-fuse"),
                                       0, QStringLiteral("Fuse."),     false,        {}};
    kforge::store::StrategyRecord rewrite{2, QStringLiteral("structure"),    1,     QStringLiteral("structure-fuse"),
                                          3, QStringLiteral("Fuse better."), false, {}};
    QVERIFY(store->insertStrategy(run, seed));
    QVERIFY(store->insertStrategy(run, rewrite));
    QVERIFY(store->retireStrategy(run, 1));
    auto strategies = store->strategies(run);
    QVERIFY(strategies);
    QCOMPARE(strategies->size(), 2);
    QVERIFY(strategies->at(0).retired);
    QCOMPARE(strategies->at(1).parent, std::optional<qint64>(1));
    QCOMPARE(strategies->at(1).generation, 3);
    QCOMPARE(strategies->at(1).text, QStringLiteral("Fuse better."));
}

// A name this build does not know, in a store written by a newer one or edited by hand: a run's
// backend or state fails naming the run and the value; an event kind is kept with its name.
void TestRunStore::unknownStoredNamesAreNamed() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto id = store->createRun(makeRun());
    QVERIFY2(id, why(id));
    QVERIFY(store->insertEvent(*id, 0, kforge::model::EventKind::Pause, {}));
    {
        RawDb db(path);
        QVERIFY(db.exec("UPDATE events SET kind = 'snapshot'"));
        QVERIFY(db.exec("UPDATE runs SET backend = 'metal'"));
    }
    auto events = store->events(*id);
    QVERIFY2(events, why(events));
    QCOMPARE(events->at(0).kind, kforge::model::EventKind::Unknown);
    QCOMPARE(events->at(0).kindName, QStringLiteral("snapshot"));
    auto run = store->run(*id);
    QVERIFY(!run);
    QVERIFY2(says(run.error(), QStringLiteral("has an unknown backend 'metal' (known: cuda, opencl)")),
             run.error().c_str());
    {
        RawDb db(path);
        QVERIFY(db.exec("UPDATE runs SET backend = 'cuda', state = 'sleeping'"));
    }
    run = store->run(*id);
    QVERIFY(!run);
    QVERIFY2(says(run.error(), QStringLiteral("has an unknown state 'sleeping'")), run.error().c_str());
    {
        RawDb db(path);
        QVERIFY(db.exec("UPDATE runs SET state = 'created'")); // what earlier versions wrote
    }
    run = store->run(*id);
    QVERIFY2(run, why(run));
    QCOMPARE(run->state, kforge::model::RunState::Starting);
}

void TestRunStore::reviewQueue() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    QVERIFY(store->insertCandidate(run, makeCandidate(1)));
    QVERIFY(store->insertCandidate(run, makeCandidate(2)));
    auto queued = store->requestReview(run, 2, QStringLiteral("52x over the baseline"));
    QVERIFY2(queued, why(queued));
    QVERIFY(*queued);
    QCOMPARE(*store->requestReview(run, 2, QStringLiteral("again")), false); // already queued
    QVERIFY(!store->requestReview(run, 9, QStringLiteral("no such candidate")));
    auto pending = store->reviews(run);
    QCOMPARE(pending->size(), 1);
    QVERIFY(pending->first().state == kforge::model::ReviewState::Pending);
    QCOMPARE(pending->first().reason, QStringLiteral("52x over the baseline"));
    QVERIFY(!pending->first().decided.isValid());
    QVERIFY(store->decideReview(run, 2, true, QStringLiteral("checked")));
    auto decided = store->reviews(run);
    QVERIFY(decided->first().state == kforge::model::ReviewState::Accepted);
    QCOMPARE(decided->first().note, QStringLiteral("checked"));
    QVERIFY(decided->first().decided.isValid());
    {
        // A state this build does not know is named, not read as pending or accepted.
        RawDb db(path);
        QVERIFY(db.exec("UPDATE reviews SET state = 'maybe'"));
        auto unknown = store->reviews(run);
        QVERIFY(!unknown);
        QVERIFY2(
            says(unknown.error(), QStringLiteral("has an unknown state 'maybe' (known: pending, accepted, rejected)")),
            why(unknown));
        QVERIFY(db.exec("UPDATE reviews SET state = 'accepted'"));
    }
    const auto missing = store->decideReview(run, 1, false, {});
    QVERIFY(!missing);
    QVERIFY(says(missing.error(), QStringLiteral("is not in the review queue")));
}

void TestRunStore::analysisRoundTrips() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    QVERIFY(store->insertCandidate(run, makeCandidate(1)));
    kforge::protocol::EvaluateResult result;
    result.status = kforge::protocol::Status::Ok;
    const QJsonArray findings{QJsonObject{{QStringLiteral("rule"), QStringLiteral("register-spills")}}};
    const QJsonObject roofline{{QStringLiteral("memory_fraction"), 0.41}};
    QVERIFY(store->insertEvaluation(run, 1, kforge::model::EvaluationPurpose::Search, result, findings, roofline));
    auto e = store->evaluations(run);
    QCOMPARE(e->first().findings, findings);
    QCOMPARE(e->first().roofline, roofline);
}

// What readers that follow a run use: rows after an id, one candidate's rows, candidates without
// their sources, evaluation summaries with the stored cell (or, for rows without one, the result).
void TestRunStore::slicesSummariesAndCells() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 run = *store->createRun(makeRun());
    for (qint64 id = 1; id <= 5; ++id)
        QVERIFY(store->insertCandidate(run, makeCandidate(id, id > 1 ? QList<qint64>{id - 1} : QList<qint64>{})));
    kforge::protocol::EvaluateResult ok;
    ok.status = kforge::protocol::Status::Ok;
    ok.speedup = 1.5;
    ok.candidateTiming = kforge::protocol::TimingStats{"cupti-activity", 20, 10.0, 10.0, 9.0, 11.0, 0.01};
    const kforge::model::Cell cell{1, 3, 0};
    QVERIFY(store->insertEvaluation(run, 2, kforge::model::EvaluationPurpose::Search, ok, {}, {}, cell));
    QVERIFY(
        store->insertEvaluation(run, 3, kforge::model::EvaluationPurpose::Search, ok)); // as before cells were stored
    kforge::protocol::EvaluateResult broken;
    broken.status = kforge::protocol::Status::CompileError;
    broken.message = "error: expected ';'";
    QVERIFY(store->insertEvaluation(run, 4, kforge::model::EvaluationPurpose::Search, broken));
    QVERIFY(store->insertEvaluation(run, 5, kforge::model::EvaluationPurpose::Search, ok, {}, {}, cell));
    QVERIFY(store->setCandidateFlags(run, 4, true, false));
    QVERIFY(store->setCandidateFlags(run, 5, false, true));

    auto after = store->candidates(run, {2, 2, 0, false});
    QVERIFY(after);
    QCOMPARE(after->size(), 2);
    QCOMPARE(after->at(0).id, qint64(3));
    QVERIFY(after->at(0).source.isEmpty());
    QCOMPARE(after->at(0).parents, QList<qint64>{2});
    auto one = store->candidates(run, {0, -1, 4});
    QCOMPARE(one->size(), 1);
    QVERIFY(!one->first().source.isEmpty());
    QCOMPARE(*store->candidateCount(run), qint64(5));
    auto flagged = store->flaggedCandidates(run);
    QCOMPARE(flagged->first, QList<qint64>{4});
    QCOMPARE(flagged->second, QList<qint64>{5});

    auto summaries = store->evaluationSummaries(run);
    QVERIFY(summaries);
    QCOMPARE(summaries->size(), 4);
    QCOMPARE(summaries->at(0).candidateId, qint64(2));
    QCOMPARE(summaries->at(0).status, QStringLiteral("ok"));
    QCOMPARE(*summaries->at(0).speedup, 1.5);
    QCOMPARE(*summaries->at(0).candidateUs, 10.0);
    QVERIFY(summaries->at(0).cell == cell);
    QVERIFY(!summaries->at(0).result);
    QVERIFY(!summaries->at(1).cell);
    QVERIFY(summaries->at(1).result); // no cell: the whole result, to place it
    QCOMPARE(summaries->at(2).status, QStringLiteral("compile_error"));
    QCOMPARE(summaries->at(2).message, QStringLiteral("error: expected ';'"));
    QVERIFY(!summaries->at(2).cell);
    QVERIFY(!summaries->at(2).result); // nothing compiled, nothing to place: the result is not decoded
    // Texts that repeat from row to row are one string, not a copy per row.
    QCOMPARE(summaries->at(3).status, QStringLiteral("ok"));
    QCOMPARE(summaries->at(3).status.constData(), summaries->at(0).status.constData());
    QCOMPARE(store->evaluationSummaries(run, {summaries->at(0).id, -1, 0})->size(), 3);
    QCOMPARE(store->evaluationSummaries(run, {0, -1, 3})->first().candidateId, qint64(3));
    QVERIFY(store->evaluations(run, {0, -1, 2})->first().cell == cell);
}

// Slices of one run of a store whose runs' rows are interleaved (two runs recorded side by side):
// rows after an id, with a limit, one candidate's rows, and counts after an id never include
// another run's rows, and come in id order.
void TestRunStore::slicesKeepToTheirRun() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const qint64 first = *store->createRun(makeRun());
    const qint64 second = *store->createRun(makeRun());
    kforge::protocol::EvaluateResult ok;
    ok.status = kforge::protocol::Status::Ok;
    for (qint64 id = 1; id <= 6; ++id)
        for (const qint64 run : {first, second}) {
            QVERIFY(store->insertCandidate(run, makeCandidate(id)));
            for (int repeat = 0; repeat < 2; ++repeat)
                QVERIFY(store->insertEvaluation(run, id, kforge::model::EvaluationPurpose::Search, ok));
        }
    QCOMPARE(*store->candidateCount(first), qint64(6));
    QCOMPARE(*store->candidateCount(first, 4), qint64(2));
    QCOMPARE(*store->candidateCount(second, 6), qint64(0));

    const auto ids = [](const auto& rows) {
        QList<qint64> list;
        for (const auto& r : rows)
            list.push_back(r.candidateId);
        return list;
    };
    auto all = store->evaluationSummaries(second);
    QVERIFY(all);
    QCOMPARE(ids(*all), (QList<qint64>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
    for (qsizetype i = 1; i < all->size(); ++i)
        QVERIFY(all->at(i - 1).id < all->at(i).id);
    auto page = store->evaluationSummaries(second, {all->at(3).id, 4, 0, false});
    QVERIFY(page);
    QCOMPARE(ids(*page), (QList<qint64>{3, 3, 4, 4}));
    QCOMPARE(page->first().id, all->at(4).id);
    auto one = store->evaluations(second, {0, -1, 5});
    QVERIFY(one);
    QCOMPARE(one->size(), 2);
    QCOMPARE(one->at(0).id, all->at(8).id);
    QCOMPARE(one->at(1).id, all->at(9).id);
    QCOMPARE(store->evaluations(second, {all->at(8).id, -1, 5})->size(), 1);
    QCOMPARE(store->evaluations(first, {0, 1, 5})->size(), 1);
    auto candidates = store->candidates(first, {2, 3, 0, false});
    QVERIFY(candidates);
    QCOMPARE(candidates->size(), 3);
    QCOMPARE(candidates->at(0).id, qint64(3));
    QCOMPARE(store->candidates(second, {0, -1, 6})->size(), 1);
    QVERIFY(store->candidates(second, {6, -1, 6})->isEmpty());
}

void TestRunStore::upgradesEmptyFile_data() {
    QTest::addColumn<QByteArray>("setup"); // SQL run on the file first; empty: a file of zero bytes
    QTest::newRow("zero bytes") << QByteArray();
    QTest::newRow("SQLite without tables") << QByteArray("PRAGMA user_version = 7; VACUUM;");
    QTest::newRow("SQLite in WAL mode") << QByteArray("PRAGMA journal_mode = WAL; PRAGMA user_version = 1;");
}

void TestRunStore::upgradesEmptyFile() {
    QFETCH(QByteArray, setup);
    const QString path = newPath();
    if (setup.isEmpty()) {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
    } else {
        RawDb db(path);
        QVERIFY(db.exec(setup.constData()));
    }
    {
        auto store = openStore(path);
        QVERIFY(store);
        QVERIFY(store->createRun(makeRun()));
    }
    RawDb db(path);
    QCOMPARE(db.value("SELECT max(version) FROM schema_version").toInt(), RunStore::schemaVersion());
    QCOMPARE(db.value("PRAGMA application_id").toLongLong(), kApplicationId);
    QCOMPARE(db.value("SELECT count(*) FROM runs").toInt(), 1);
}

void TestRunStore::refusesForeignFile_data() {
    QTest::addColumn<QByteArray>("content"); // raw bytes, or SQL after "sql:"
    QTest::addColumn<QString>("expected");
    QTest::newRow("text file") << QByteArray("name,speedup\nsgemm,2.0\n")
                               << QStringLiteral("not a kforge run store (not a SQLite database)");
    QTest::newRow("short file") << QByteArray("SQL") << QStringLiteral("not a SQLite database");
    QTest::newRow("foreign tables") << QByteArray("sql:CREATE TABLE notes(id INTEGER, text TEXT);"
                                                  "INSERT INTO notes VALUES (1, 'keep me');")
                                    << QStringLiteral("not a kforge run store (no schema_version table)");
    QTest::newRow("foreign schema_version") << QByteArray("sql:CREATE TABLE schema_version(version INTEGER);"
                                                          "INSERT INTO schema_version VALUES (1);")
                                            << QStringLiteral("not a kforge run store");
    QTest::newRow("other application") << QByteArray("sql:PRAGMA application_id = 1234;")
                                       << QStringLiteral("belongs to another application, id 0x000004d2");
    QTest::newRow("newer kforge") << QByteArray("newer")
                                  << QStringLiteral("written by a newer kforge (schema 11, this build reads up to 10)");
    QTest::newRow("damaged kforge") << QByteArray("damaged")
                                    << QStringLiteral("damaged kforge run store (no schema_version table)");
    QTest::newRow("folder") << QByteArray("folder") << QStringLiteral("is a folder, not a run store");
}

void TestRunStore::refusesForeignFile() {
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    const QString path = newPath();
    if (content == "folder") {
        QVERIFY(QDir().mkpath(path));
    } else if (content == "newer" || content == "damaged") {
        QVERIFY(openStore(path));
        RawDb db(path);
        QVERIFY(db.exec(content == "newer" ? "UPDATE schema_version SET version = 11" : "DROP TABLE schema_version"));
    } else if (content.startsWith("sql:")) {
        RawDb db(path);
        QVERIFY(db.exec(content.mid(4).constData()));
    } else {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(content);
    }
    QByteArray before;
    if (QFile file(path); file.open(QIODevice::ReadOnly))
        before = file.readAll();

    auto store = RunStore::open(path);
    QVERIFY(!store);
    QVERIFY2(says(store.error(), QDir::toNativeSeparators(path)), why(store));
    QVERIFY2(says(store.error(), expected), why(store));

    if (QFile file(path); file.open(QIODevice::ReadOnly))
        QCOMPARE(file.readAll(), before); // refused means untouched
}

void TestRunStore::runsNewestFirst() {
    auto store = openStore(newPath());
    QVERIFY(store);
    const QDateTime base = QDateTime(QDate(2024, 5, 1), QTime(10, 0, 0, 123), Qt::UTC);
    QList<qint64> ids;
    for (int days : {1, 3, 2}) {
        RunRecord r = makeRun(QStringLiteral("task%1").arg(days));
        r.name = QStringLiteral("run %1").arg(days);
        r.created = base.addDays(days);
        auto id = store->createRun(r);
        QVERIFY2(id, why(id));
        ids << *id;
    }
    auto runs = store->runs();
    QVERIFY2(runs, why(runs));
    QCOMPARE(runs->size(), 3);
    QCOMPARE(runs->at(0).id, ids.at(1));
    QCOMPARE(runs->at(1).id, ids.at(2));
    QCOMPARE(runs->at(2).id, ids.at(0));
    QCOMPARE(runs->at(0).name, QStringLiteral("run 3"));
    QCOMPARE(runs->at(0).created, base.addDays(3)); // milliseconds kept
    QCOMPARE(runs->at(0).created.timeSpec(), Qt::UTC);
    QCOMPARE(runs->at(0).state, kforge::model::RunState::Running);
    QCOMPARE(runs->at(0).bestCandidate, 0);
}

void TestRunStore::updateRun() {
    auto store = openStore(newPath());
    QVERIFY(store);
    RunRecord r = makeRun();
    r.created = QDateTime(QDate(2024, 1, 2), QTime(3, 4, 5, 6), Qt::UTC);
    r.updated = r.created;
    auto id = store->createRun(r);
    QVERIFY(id);

    auto run = store->run(*id);
    QVERIFY(run);
    run->name = QStringLiteral("renamed");
    run->state = kforge::model::RunState::Stopped;
    run->message = QStringLiteral("stopped by the user");
    run->config[QStringLiteral("population")] = 64;
    run->bestCandidate = 17;
    run->bestSpeedup = 3.5;
    run->evaluations = 120;
    run->wallSeconds = 3600.5;
    run->generation = 9;
    run->created = QDateTime::currentDateTimeUtc(); // ignored
    auto updated = store->updateRun(*run);
    QVERIFY2(updated, why(updated));

    auto again = store->run(*id);
    QVERIFY(again);
    QCOMPARE(again->name, run->name);
    QCOMPARE(again->state, run->state);
    QCOMPARE(again->message, run->message);
    QCOMPARE(again->config, run->config);
    QCOMPARE(again->bestCandidate, 17);
    QCOMPARE(again->bestSpeedup, 3.5);
    QCOMPARE(again->evaluations, 120);
    QCOMPARE(again->wallSeconds, 3600.5);
    QCOMPARE(again->generation, 9);
    QCOMPARE(again->created, r.created);
    QVERIFY(again->updated > r.updated); // the time of the write

    run->id = 99;
    auto missing = store->updateRun(*run);
    QVERIFY(!missing);
    QVERIFY2(says(missing.error(), QStringLiteral("run 99 does not exist")), why(missing));
}

void TestRunStore::missingRun() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    const QString expected = QDir::toNativeSeparators(path) + QStringLiteral(": run 7 does not exist");
    auto run = store->run(7);
    QVERIFY(!run);
    QCOMPARE(QString::fromStdString(run.error()), expected);
    QCOMPARE(QString::fromStdString(store->candidates(7).error()), expected);
    QCOMPARE(QString::fromStdString(store->evaluations(7).error()), expected);
    QCOMPARE(QString::fromStdString(store->events(7).error()), expected);
    QCOMPARE(QString::fromStdString(store->insertCandidate(7, makeCandidate(1)).error()), expected);
    QCOMPARE(QString::fromStdString(store->insertEvent(7, 0, kforge::model::EventKind::Pause, {}).error()), expected);
}

void TestRunStore::candidatesRoundTrip_data() {
    QTest::addColumn<Candidate>("candidate");
    Candidate seed = makeCandidate(10);
    seed.params.clear();
    seed.label = QStringLiteral("baseline");
    QTest::newRow("seed") << seed;

    Candidate tuner = makeCandidate(11, {2});
    tuner.params = {{"BX", 32},
                    {"BY", -8},
                    {"BIG", std::numeric_limits<std::int64_t>::max()},
                    {"SMALL", std::numeric_limits<std::int64_t>::min()}};
    tuner.label = QStringLiteral("tuner BX=32");
    QTest::newRow("tuner, extreme params") << tuner;

    Candidate expert = makeCandidate(12, {3, 1, 2});
    expert.origin = Origin::Expert;
    expert.island = 4;
    expert.generation = 17;
    QTest::newRow("expert, three parents in order") << expert;

    Candidate llm = makeCandidate(13, {1});
    llm.origin = Origin::Llm;
    llm.source =
        QStringLiteral("// ü ∑ \"quotes\" 'apostrophes' \\ backslash\n") + QChar(0) + QStringLiteral("after a NUL");
    llm.label = QStringLiteral("llm: tiled — 2×2 “register” blocking");
    QTest::newRow("llm, unicode") << llm;

    Candidate human = makeCandidate(14, {1});
    human.origin = Origin::Human;
    human.pinned = true;
    human.vetoed = true;
    QTest::newRow("human, pinned and vetoed") << human;
}

void TestRunStore::candidatesRoundTrip() {
    QFETCH(Candidate, candidate);
    auto store = openStore(newPath());
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    for (qint64 id : {1, 2, 3}) {
        auto s = store->insertCandidate(*run, makeCandidate(id));
        QVERIFY2(s, why(s));
    }
    auto inserted = store->insertCandidate(*run, candidate);
    QVERIFY2(inserted, why(inserted));

    auto list = store->candidates(*run);
    QVERIFY2(list, why(list));
    QCOMPARE(list->size(), 4);
    QCOMPARE(list->at(0).id, 1);
    const Candidate& back = list->last();
    QCOMPARE(back.id, candidate.id);
    QCOMPARE(back.source, candidate.source);
    QVERIFY2(back.params == candidate.params, qPrintable(kforge::model::formatParams(back.params)));
    QCOMPARE(back.parents, candidate.parents);
    QCOMPARE(back.island, candidate.island);
    QCOMPARE(back.generation, candidate.generation);
    QCOMPARE(back.origin, candidate.origin);
    QCOMPARE(back.label, candidate.label);
    QCOMPARE(back.key, candidate.key);
    QCOMPARE(back.pinned, candidate.pinned);
    QCOMPARE(back.vetoed, candidate.vetoed);
}

void TestRunStore::lineage() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    auto other = store->createRun(makeRun(QStringLiteral("softmax")));
    QVERIFY(run && other);
    QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
    QVERIFY(store->insertCandidate(*run, makeCandidate(2)));
    QVERIFY(store->insertCandidate(*run, makeCandidate(3, {1})));
    QVERIFY(store->insertCandidate(*run, makeCandidate(4, {2, 1})));
    QVERIFY(store->insertCandidate(*run, makeCandidate(5, {4})));
    QVERIFY(store->insertCandidate(*other, makeCandidate(1)));
    QVERIFY(store->insertCandidate(*other, makeCandidate(6, {1}))); // same ids, another run

    RawDb db(path);
    const auto children =
        db.rows("SELECT child FROM candidate_parents WHERE run_id = ?1 AND parent = ?2 ORDER BY child", {*run, 1});
    QCOMPARE(children, (QList<QVariantList>{{qint64{3}}, {qint64{4}}}));

    auto missingParent = store->insertCandidate(*run, makeCandidate(7, {1, 42}));
    QVERIFY(!missingParent);
    QVERIFY2(says(missingParent.error(),
                  QStringLiteral("candidate 7 of run %1 names parent 42, which does not exist").arg(*run)),
             why(missingParent));
    auto duplicate = store->insertCandidate(*run, makeCandidate(3));
    QVERIFY(!duplicate);
    QVERIFY2(says(duplicate.error(), QStringLiteral("candidate 3 of run %1 already exists").arg(*run)), why(duplicate));

    auto list = store->candidates(*run);
    QVERIFY(list);
    QCOMPARE(list->size(), 5); // the failed inserts left nothing behind
    QCOMPARE(list->at(3).parents, (QList<qint64>{2, 1}));
    QVERIFY(list->at(0).parents.isEmpty());
}

void TestRunStore::candidateFlags() {
    auto store = openStore(newPath());
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
    QVERIFY(store->insertCandidate(*run, makeCandidate(2)));
    for (auto [pinned, vetoed] :
         {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}, std::pair{false, false}}) {
        auto s = store->setCandidateFlags(*run, 2, pinned, vetoed);
        QVERIFY2(s, why(s));
        auto list = store->candidates(*run);
        QVERIFY(list);
        QCOMPARE(list->at(1).pinned, pinned);
        QCOMPARE(list->at(1).vetoed, vetoed);
        QVERIFY(!list->at(0).pinned && !list->at(0).vetoed);
    }
    auto missing = store->setCandidateFlags(*run, 9, true, false);
    QVERIFY(!missing);
    QVERIFY2(says(missing.error(), QStringLiteral("run %1 has no candidate 9").arg(*run)), why(missing));
}

void TestRunStore::evaluationsAndDiagnostics() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
    QVERIFY(store->insertCandidate(*run, makeCandidate(2, {1})));

    const EvaluateResult failed = makeResult(5, false);
    EvaluateResult timed = makeResult(6, true);
    timed.profile = kforge::protocol::ProfileResult{"ok", "", {{"dram_bytes", 1.5e9}, {"achieved_occupancy", 0.5}}};
    auto first = store->insertEvaluation(*run, 2, kforge::model::EvaluationPurpose::Search, failed);
    auto second = store->insertEvaluation(*run, 1, kforge::model::EvaluationPurpose::Search, timed);
    auto third = store->insertEvaluation(*run, 1, kforge::model::EvaluationPurpose::Confirm, timed);
    QVERIFY2(first, why(first));
    QVERIFY2(second, why(second));
    QVERIFY2(third, why(third));
    QVERIFY(*first < *second && *second < *third);

    auto list = store->evaluations(*run);
    QVERIFY2(list, why(list));
    QCOMPARE(list->size(), 3);
    QCOMPARE(list->at(0).id, *first);
    QCOMPARE(list->at(0).candidateId, 2);
    QVERIFY(list->at(0).purpose == kforge::model::EvaluationPurpose::Search);
    QCOMPARE(encoded(list->at(0).result), encoded(failed));
    QCOMPARE(encoded(list->at(1).result), encoded(timed));
    QVERIFY(list->at(2).purpose == kforge::model::EvaluationPurpose::Confirm);
    QVERIFY(list->at(2).at.isValid());
    QCOMPARE(list->at(2).at.timeSpec(), Qt::UTC);

    RawDb db(path);
    const auto columns = db.rows("SELECT status, speedup, candidate_us, baseline_us, message, device, wall_seconds "
                                 "FROM evaluations WHERE run_id = ?1 ORDER BY id",
                                 {*run});
    QCOMPARE(columns.size(), 3);
    QCOMPARE(columns.at(0),
             (QVariantList{QStringLiteral("compile_error"), QVariant(), QVariant(), QVariant(),
                           QStringLiteral("candidate does not compile"), QStringLiteral("NVIDIA H200"), 1.25}));
    QCOMPARE(columns.at(1), (QVariantList{QStringLiteral("ok"), 2.0, 10.5, 21.0, QStringLiteral("ok"),
                                          QStringLiteral("NVIDIA H200"), 1.25}));

    const auto diagnostics = db.rows("SELECT candidate_id, evaluation_id, kind, severity, role, line, \"column\", "
                                     "message FROM diagnostics WHERE run_id = ?1 ORDER BY id",
                                     {*run});
    QCOMPARE(diagnostics.size(), 4);
    QCOMPARE(diagnostics.at(0),
             (QVariantList{qint64{2}, *first, QStringLiteral("compile"), QStringLiteral("error"),
                           QStringLiteral("candidate"), qint64{12}, qint64{7}, QStringLiteral("expected ';'")}));
    QCOMPARE(diagnostics.at(2).at(1), QVariant(*second));
    QCOMPARE(db.value("SELECT count(*) FROM diagnostics WHERE run_id = ?1 AND candidate_id = 1", {*run}).toInt(), 2);

    auto missing = store->insertEvaluation(*run, 3, kforge::model::EvaluationPurpose::Search, timed);
    QVERIFY(!missing);
    QVERIFY2(says(missing.error(), QStringLiteral("run %1 has no candidate 3").arg(*run)), why(missing));

    // A purpose this build does not know (a damaged or newer file) is named, not guessed.
    QVERIFY(db.exec("UPDATE evaluations SET purpose = 'warmup' WHERE id = (SELECT max(id) FROM evaluations)"));
    auto unknown = store->evaluations(*run);
    QVERIFY(!unknown);
    QVERIFY2(
        says(unknown.error(), QStringLiteral("has an unknown purpose 'warmup' (known: search, confirm, yardstick)")),
        why(unknown));
}

void TestRunStore::events() {
    auto store = openStore(newPath());
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    const QJsonObject migration{{QStringLiteral("from"), 1}, {QStringLiteral("to"), 2}};
    auto a = store->insertEvent(*run, 0, kforge::model::EventKind::RunStarted, {});
    auto b = store->insertEvent(*run, 3, kforge::model::EventKind::Migration, migration);
    auto c = store->insertEvent(*run, 4, kforge::model::EventKind::Pin, {{QStringLiteral("candidate"), 12}});
    QVERIFY(a && b && c);
    QVERIFY(*a < *b && *b < *c);

    auto list = store->events(*run);
    QVERIFY2(list, why(list));
    QCOMPARE(list->size(), 3);
    QCOMPARE(list->at(0).kind, kforge::model::EventKind::RunStarted);
    QCOMPARE(list->at(0).kindName, QStringLiteral("run_started"));
    QVERIFY(list->at(0).data.isEmpty());
    QCOMPARE(list->at(1).id, *b);
    QCOMPARE(list->at(1).generation, 3);
    QCOMPARE(list->at(1).data, migration);
    QCOMPARE(list->at(2).kind, kforge::model::EventKind::Pin);
    QVERIFY(list->at(2).at.isValid());
}

void TestRunStore::listingsAreKeptPerCandidateAndTarget() {
    auto store = openStore(newPath());
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
    auto none = store->listing(*run, 1, 90);
    QVERIFY2(none, why(none));
    QVERIFY(!none->has_value());

    kforge::protocol::DisassembleResult listing;
    listing.ok = true;
    listing.arch = "sm_90a";
    listing.intermediate = ".version 9.0\n\t.loc\t1 9 0\n";
    listing.machineCodeNote = "no nvdisasm here";
    QVERIFY(store->storeListing(*run, 1, 90, listing));
    auto kept = store->listing(*run, 1, 90);
    QVERIFY2(kept && kept->has_value(), kept ? "none" : why(kept));
    QCOMPARE((*kept)->arch, std::string("sm_90a"));
    QCOMPARE((*kept)->intermediate, listing.intermediate);
    QCOMPARE((*kept)->machineCodeNote, listing.machineCodeNote);
    QVERIFY(!store->listing(*run, 1, 80)->has_value()); // another target is another listing

    // Listed again (a newer toolkit): replaced.
    listing.arch = "sm_90";
    QVERIFY(store->storeListing(*run, 1, 90, listing));
    QCOMPARE((*store->listing(*run, 1, 90))->arch, std::string("sm_90"));

    const auto missing = store->storeListing(*run, 7, 90, listing);
    QVERIFY(!missing);
    QVERIFY2(QString::fromStdString(missing.error()).contains(QStringLiteral("has no candidate 7")),
             missing.error().c_str());
}

void TestRunStore::transactionRollsBack() {
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    {
        RunStore::Transaction transaction(*store);
        QVERIFY(transaction.begun());
        QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
        QVERIFY(store->insertEvaluation(*run, 1, kforge::model::EvaluationPurpose::Search, makeResult(1, true)));
        QVERIFY(store->insertEvent(*run, 0, kforge::model::EventKind::Inject, {}));
        QCOMPARE(store->candidates(*run)->size(), 1); // visible to its own connection
    }
    QCOMPARE(store->candidates(*run)->size(), 0);
    QCOMPARE(store->evaluations(*run)->size(), 0);
    QCOMPARE(store->events(*run)->size(), 0);
    RawDb db(path);
    QCOMPARE(db.value("SELECT count(*) FROM diagnostics").toInt(), 0);

    // The store is usable afterwards.
    QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
    QCOMPARE(store->candidates(*run)->size(), 1);
}

void TestRunStore::nestedTransactions() {
    const QString path = newPath();
    auto store = openStore(path);
    auto reader = openStore(path);
    QVERIFY(store && reader);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    {
        RunStore::Transaction outer(*store);
        QVERIFY(outer.begun());
        QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
        {
            RunStore::Transaction inner(*store);
            QVERIFY(inner.begun());
            QVERIFY(store->insertCandidate(*run, makeCandidate(2, {1})));
            QVERIFY(inner.commit()); // no-op: the outer one decides
            QVERIFY(!inner.commit());
        }
        QCOMPARE(reader->candidates(*run)->size(), 0);
        QVERIFY(outer.commit());
        auto again = outer.commit();
        QVERIFY(!again);
        QVERIFY2(says(again.error(), QStringLiteral("already committed")), why(again));
    }
    QCOMPARE(reader->candidates(*run)->size(), 2);

    // An inner transaction abandoned: the outer one may not commit its half.
    {
        RunStore::Transaction outer(*store);
        QVERIFY(store->insertCandidate(*run, makeCandidate(3)));
        {
            RunStore::Transaction inner(*store);
            QVERIFY(store->insertCandidate(*run, makeCandidate(4)));
        }
        auto committed = outer.commit();
        QVERIFY(!committed);
        QVERIFY2(says(committed.error(), QStringLiteral("nothing was written")), why(committed));
    }
    QCOMPARE(store->candidates(*run)->size(), 2);
    QCOMPARE(reader->candidates(*run)->size(), 2);
}

void TestRunStore::failedWriteSpoilsTransaction() {
    auto store = openStore(newPath());
    QVERIFY(store);
    auto run = store->createRun(makeRun());
    QVERIFY(run);
    {
        RunStore::Transaction transaction(*store);
        QVERIFY(store->insertCandidate(*run, makeCandidate(1)));
        QVERIFY(!store->insertCandidate(*run, makeCandidate(2, {9}))); // half written, then refused
        QVERIFY(!transaction.commit());
    }
    QCOMPARE(store->candidates(*run)->size(), 0);
}

void TestRunStore::secondStoreReads() {
    const QString path = newPath();
    auto writer = openStore(path);
    QVERIFY(writer);
    auto run = writer->createRun(makeRun());
    QVERIFY(run);
    QVERIFY(writer->insertCandidate(*run, makeCandidate(1)));

    auto reader = openStore(path);
    QVERIFY(reader);
    QCOMPARE(reader->runs()->size(), 1);
    QCOMPARE(reader->candidates(*run)->size(), 1);
    {
        RunStore::Transaction transaction(*writer);
        QVERIFY(writer->insertCandidate(*run, makeCandidate(2)));
        QVERIFY(writer->insertEvaluation(*run, 2, kforge::model::EvaluationPurpose::Search, makeResult(1, true)));
        QCOMPARE(reader->candidates(*run)->size(), 1); // not committed yet
        QCOMPARE(reader->evaluations(*run)->size(), 0);
        QVERIFY(transaction.commit());
    }
    QCOMPARE(reader->candidates(*run)->size(), 2);
    QCOMPARE(reader->evaluations(*run)->size(), 1);
    QCOMPARE(encoded(reader->evaluations(*run)->first().result), encoded(makeResult(1, true)));
}

void TestRunStore::killAtAnyMoment() {
    const QString path = newPath();
    {
        auto store = openStore(path);
        QVERIFY(store);
        QCOMPARE(*store->createRun(makeRun()), 1);
    }
    qint64 previous = 0;
    for (int round = 1; round <= 3; ++round) {
        QProcess writer;
        writer.setProcessChannelMode(QProcess::ForwardedOutputChannel); // stderr is read on failure
        writer.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--writer"), path});
        QVERIFY2(writer.waitForStarted(), qPrintable(writer.errorString()));
        const qint64 target = previous + 50;
        {
            RawDb db(path);
            QTRY_VERIFY_WITH_TIMEOUT(writer.state() != QProcess::Running
                                         || db.value("SELECT count(*) FROM evaluations").toLongLong() >= target,
                                     60000);
        }
        QVERIFY2(writer.state() == QProcess::Running, writer.readAllStandardError().constData());
        writer.kill(); // SIGKILL, most likely in the middle of a transaction
        QVERIFY(writer.waitForFinished(10000));
        QCOMPARE(writer.exitStatus(), QProcess::CrashExit);

        auto store = openStore(path);
        QVERIFY(store);
        {
            RawDb db(path);
            QCOMPARE(db.value("PRAGMA integrity_check").toString(), QStringLiteral("ok"));
            QVERIFY(db.rows("PRAGMA foreign_key_check").isEmpty());
        }
        // Each transaction wrote a candidate, its evaluation, an event and the run's counter:
        // all of them or none.
        auto candidates = store->candidates(1);
        auto evaluations = store->evaluations(1);
        auto events = store->events(1);
        auto run = store->run(1);
        QVERIFY(candidates && evaluations && events && run);
        const qint64 count = candidates->size();
        QVERIFY(count >= target);
        QCOMPARE(evaluations->size(), count);
        QCOMPARE(events->size(), count);
        QCOMPARE(run->evaluations, count);
        for (qint64 i = 0; i < count; ++i) {
            QCOMPARE(candidates->at(i).id, i + 1);
            QCOMPARE(candidates->at(i).parents, i == 0 ? QList<qint64>{} : QList<qint64>{i});
            QCOMPARE(evaluations->at(i).candidateId, i + 1);
            QCOMPARE(encoded(evaluations->at(i).result), encoded(makeResult(i + 1, (i + 1) % 2 == 0)));
        }
        previous = count;
    }
}

QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void TestRunStore::readingChangesNothing() {
    // A store of schema 1, read by this build: readable as it is, and left as it was (another,
    // older kforge may still be writing it).
    const QString path = newPath();
    QVERIFY(QFile::copy(QStringLiteral(KFORGE_SOURCE_DIR "/tests/gpu/runs/h200-offline-2026-11-30-a.kforge"), path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    const QByteArray before = fileBytes(path);
    {
        auto store = RunStore::open(path, OpenMode::ReadOnly);
        QVERIFY2(store, why(store));
        QVERIFY((*store)->readOnly());
        auto runs = (*store)->runs();
        QVERIFY2(runs, why(runs));
        QCOMPARE(runs->size(), 6);
        auto evaluations = (*store)->evaluations(runs->last().id);
        QVERIFY2(evaluations, why(evaluations));
        QVERIFY(!evaluations->isEmpty());
        auto summaries = (*store)->evaluationSummaries(runs->last().id); // columns of schema 2 and 4
        QVERIFY2(summaries, why(summaries));
        auto reviews = (*store)->reviews(runs->last().id);
        QVERIFY2(reviews, why(reviews));
    }
    QCOMPARE(fileBytes(path), before);
    RawDb db(path);
    QCOMPARE(db.value("SELECT max(version) FROM schema_version").toInt(), 1);
}

void TestRunStore::readingAReadOnlyStore() {
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("archive"));
    QVERIFY(QDir().mkpath(folder));
    const QString path = folder + QStringLiteral("/runs.kforge");
    {
        auto store = openStore(path);
        QVERIFY(store);
        auto id = store->createRun(makeRun());
        QVERIFY2(id, why(id));
        QVERIFY(store->insertCandidate(*id, makeCandidate(1)));
    }
    QFile::remove(path + QStringLiteral("-wal"));
    QFile::remove(path + QStringLiteral("-shm"));
    QVERIFY(QFile::setPermissions(path, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther));
    QVERIFY(QFile::setPermissions(folder, QFile::ReadOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup));
    auto restore =
        qScopeGuard([&] { QFile::setPermissions(folder, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner); });
    const QByteArray before = fileBytes(path);
    {
        auto store = RunStore::open(path, OpenMode::ReadOnly);
        QVERIFY2(store, why(store));
        auto runs = (*store)->runs();
        QVERIFY2(runs, why(runs));
        QCOMPARE(runs->size(), 1);
        auto candidates = (*store)->candidates(runs->first().id);
        QVERIFY2(candidates, why(candidates));
        QCOMPARE(candidates->size(), 1);
    }
    QCOMPARE(fileBytes(path), before);
    if (::geteuid() != 0) { // root may write anywhere: only a user shows that writing is refused
        auto writer = RunStore::open(path);
        QVERIFY(!writer || !(*writer)->createRun(makeRun()));
    }
}

void TestRunStore::readOnlyRefusesWrites() {
    const QString path = newPath();
    {
        auto store = openStore(path);
        QVERIFY(store);
        QVERIFY(store->createRun(makeRun()));
    }
    auto store = RunStore::open(path, OpenMode::ReadOnly);
    QVERIFY2(store, why(store));
    auto event = (*store)->insertEvent(1, 0, kforge::model::EventKind::Pause, {});
    QVERIFY(!event);
    QVERIFY2(says(event.error(), QStringLiteral("opened for reading only")), event.error().c_str());
    QVERIFY(!RunStore::open(m_dir.filePath(QStringLiteral("missing.kforge")), OpenMode::ReadOnly));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("missing.kforge")))); // reading never creates
}

void TestRunStore::aReaderLeavesNoWriteAheadLogBehind() {
    // A read-only connection cannot remove -wal and -shm when it closes last; every look at a run
    // (`kforge runs`, the views) used to leave both beside the file.
    const QString path = newPath();
    const auto besides = [&] {
        return QFile::exists(path + QStringLiteral("-wal")) || QFile::exists(path + QStringLiteral("-shm"));
    };
    {
        auto store = openStore(path);
        QVERIFY(store);
        QVERIFY(store->createRun(makeRun()));
    }
    QVERIFY(!besides());
    const QByteArray before = fileBytes(path);
    {
        auto reader = RunStore::open(path, OpenMode::ReadOnly);
        QVERIFY2(reader, why(reader));
        QVERIFY((*reader)->runs());
        QVERIFY(besides()); // a reader needs the log's index while it reads
    }
    QVERIFY(!besides());
    QCOMPARE(fileBytes(path), before);

    // While a writer has the file open, its log stays: a reader's close must not take it away.
    auto writer = openStore(path);
    QVERIFY(writer);
    QVERIFY(writer->createRun(makeRun()));
    const auto runsReadBack = [&]() -> qsizetype {
        auto reader = RunStore::open(path, OpenMode::ReadOnly);
        if (!reader)
            return -1;
        auto runs = (*reader)->runs();
        return runs ? runs->size() : -1;
    };
    QCOMPARE(runsReadBack(), 2);
    QVERIFY(besides());
    QVERIFY(writer->createRun(makeRun()));
    QCOMPARE(runsReadBack(), 3);
    writer.reset();
    QVERIFY(!besides());
}

void TestRunStore::aBusyStoreFailsTheWriteNamingIt() {
    // Another connection holds the write lock past the busy timeout and the retries: the write
    // fails with SQLite's word for it and the file's name, and works once the lock is gone.
    const QString path = newPath();
    auto store = openStore(path);
    QVERIFY(store);
    auto id = store->createRun(makeRun());
    QVERIFY(id);
    auto other = openStore(path);
    QVERIFY(other);
    auto held = std::make_unique<RunStore::Transaction>(*other);
    QVERIFY(held->begun());
    auto event = store->insertEvent(*id, 0, kforge::model::EventKind::Pause, {});
    QVERIFY(!event);
    QVERIFY2(says(event.error(), QStringLiteral("locked")) && says(event.error(), path), event.error().c_str());
    held.reset();
    QVERIFY(store->insertEvent(*id, 0, kforge::model::EventKind::Pause, {}));
}

void TestRunStore::runLockIsExclusive() {
    const QString path = newPath();
    auto first = RunLock::acquire(path, 1);
    QVERIFY2(first, why(first));
    QVERIFY(QFile::exists(RunLock::pathFor(path, 1)));
    auto second = RunLock::acquire(path, 1);
    QVERIFY(!second);
    QVERIFY2(says(second.error(), QStringLiteral("is in use by pid %1").arg(QCoreApplication::applicationPid())),
             second.error().c_str());
    auto other = RunLock::acquire(path, 2); // another run of the same store
    QVERIFY2(other, why(other));
    first->reset();
    QVERIFY(!QFile::exists(RunLock::pathFor(path, 1)));
    auto again = RunLock::acquire(path, 1);
    QVERIFY2(again, why(again));
}

void TestRunStore::runLockOfAKilledProcessIsFree() {
    const QString path = newPath();
    QProcess holder;
    holder.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    holder.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--lock"), path, QStringLiteral("7")});
    QVERIFY(holder.waitForReadyRead(30000));
    QCOMPARE(holder.readLine().trimmed(), QByteArray("locked"));
    auto refused = RunLock::acquire(path, 7);
    QVERIFY(!refused);
    QVERIFY2(says(refused.error(), QStringLiteral("pid %1").arg(holder.processId())), refused.error().c_str());
    holder.kill(); // SIGKILL: nothing of the holder runs again, the kernel releases its lock
    QVERIFY(holder.waitForFinished());
    auto taken = RunLock::acquire(path, 7);
    QVERIFY2(taken, why(taken));
}

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--writer") == 0)
        return runWriter(QString::fromLocal8Bit(argv[2]));
    if (argc == 4 && std::strcmp(argv[1], "--lock") == 0) {
        QCoreApplication app(argc, argv);
        auto lock = RunLock::acquire(QString::fromLocal8Bit(argv[2]), std::atoll(argv[3]));
        if (!lock) {
            std::fprintf(stderr, "%s\n", lock.error().c_str());
            return 1;
        }
        std::printf("locked\n");
        std::fflush(stdout);
        for (;;)
            ::pause();
    }
    QCoreApplication app(argc, argv);
    TestRunStore test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_runstore.moc"
