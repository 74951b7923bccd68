// The experience library on real files: creating and reopening it, refusing files that are not
// libraries (a foreign SQLite database, a run store, text), adding with deduplication, the ranking
// of search results (task, family, backend, bottleneck, kind, speedup, time, and FTS5 relevance),
// user text that would be FTS5 syntax, and JSON export and import; the tuning cache (round trip by
// key, a new measurement replacing the old, damaged records skipped and named, forgetting, and the
// upgrade of a library written before it existed).

#include "experience/experiencelibrary.h"
#include "rawdb.h"
#include "store/runstore.h"

#include <sqlite3.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <memory>
#include <optional>

using kforge::experience::ExperienceLibrary;
using kforge::experience::Insight;
using kforge::experience::Query;
using kforge::experience::TuningKey;
using kforge::experience::TuningRecord;

using kforgetest::RawDb;

namespace {

constexpr qint64 kApplicationId = 0x6b66786c; // as experiencelibrary.cpp writes it

// For QVERIFY2, which evaluates its message whether or not the check fails.
template <typename T> QByteArray why(const kforge::spec::Expected<T>& e) {
    return e ? QByteArray() : QByteArray::fromStdString(e.error());
}

const QDateTime kT0(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC);

Insight make(const char* kind, const char* family, const char* task, const char* backend, const char* transformation,
             const char* bottleneck, double speedup, const char* summary, int minutes) {
    Insight i;
    i.kind = *kforge::model::parseInsightKind(QString::fromUtf8(kind));
    i.family = QString::fromUtf8(family);
    i.task = QString::fromUtf8(task);
    i.backend = QString::fromUtf8(backend);
    i.transformation = QString::fromUtf8(transformation);
    i.bottleneck = QString::fromUtf8(bottleneck);
    i.speedup = speedup;
    i.summary = QString::fromUtf8(summary);
    i.at = kT0.addSecs(60 * minutes);
    return i;
}

// The ranking table's library, each insight known by a letter. Its transformation is its name.
QList<Insight> rankingInsights() {
    QList<Insight> list = {
        make("helped", "gemm", "gemm_fp32", "cuda", "register tiling 8x8", "compute", 1.8,
             "Each thread computes an 8x8 tile in registers.", 1), // A
        make("helped", "gemm", "gemm_fp16", "cuda", "shared memory tiling 32x32", "memory", 2.5,
             "Stage tiles of A and B in shared memory.", 2), // B
        make("helped", "softmax", "softmax_rows", "cuda", "warp shuffle reduction", "memory", 1.4,
             "Reduce with __shfl_xor_sync instead of shared memory.", 3), // C
        make("hurt", "gemm", "gemm_fp32", "cuda", "BLOCK 256 -> 1024", "latency", 0.6,
             "Too many threads per block: occupancy dropped.", 4), // D
        make("helped", "gemm", "gemm_fp32", "opencl", "vectorized loads float4", "memory", 1.3,
             "Load float4 from global memory.", 5), // E
        make("human_veto", "norm", "layernorm", "cuda", "unrolled loop", "", 0.0, "The user vetoed an unrolled loop.",
             6), // F
    };
    list[5].reason = QStringLiteral("Breaks for odd sizes");
    list[0].before = QStringLiteral("float acc = 0.f;\n");
    list[0].after = QStringLiteral("float acc[8][8] = {};\n");
    list[0].diff = QStringLiteral("-float acc = 0.f;\n+float acc[8][8] = {};\n");
    return list;
}

QString letter(const QString& transformation) {
    const QList<Insight> insights = rankingInsights();
    for (int i = 0; i < insights.size(); ++i) {
        if (insights.at(i).transformation == transformation)
            return QString(QChar(u'A' + i));
    }
    return QStringLiteral("?");
}

QString letters(const QList<Insight>& found) {
    QString result;
    for (const Insight& insight : found)
        result += letter(insight.transformation);
    return result;
}

} // namespace

class TestExperienceLibrary : public QObject {
    Q_OBJECT

private slots:
    void createAndReopen();
    void refusesNewerSchema();
    void defaultPath();
    void refusesForeignFiles();
    void addDedupes();
    void unknownStoredKindIsNamed();
    void ranking_data();
    void ranking();
    void tiesNewestFirst();
    void hostileText_data();
    void hostileText();
    void exportImportRoundTrip();
    void importMalformed_data();
    void importMalformed();
    void tuningCacheRoundTrips();
    void damagedTuningRecordsAreSkippedAndNamed();
    void tuningCacheArrivesWithTheUpgrade();

private:
    QTemporaryDir m_dir;
};

void TestExperienceLibrary::createAndReopen() {
    QVERIFY(m_dir.isValid());
    const QString path = m_dir.filePath(QStringLiteral("sub/folder/create.kforge-library"));
    qint64 id = 0;
    {
        auto library = ExperienceLibrary::open(path);
        QVERIFY2(library, why(library));
        QCOMPARE((*library)->path(), path);
        const auto empty = (*library)->count();
        QVERIFY2(empty, why(empty));
        QCOMPARE(*empty, 0);
        auto added = (*library)->add(rankingInsights().at(0));
        QVERIFY2(added, why(added));
        id = *added;
        QVERIFY(id > 0);
    }
    {
        RawDb raw(path);
        QCOMPARE(raw.value("PRAGMA application_id").toLongLong(), kApplicationId);
        QCOMPARE(raw.value("SELECT max(version) FROM schema_version").toInt(), 2);
        QCOMPARE(raw.value("PRAGMA journal_mode").toString(), QStringLiteral("wal"));
    }
    auto reopened = ExperienceLibrary::open(path);
    QVERIFY2(reopened, why(reopened));
    QCOMPARE(*(*reopened)->count(), 1);
    const auto all = (*reopened)->all();
    QVERIFY(all);
    QCOMPARE(all->size(), 1);
    QCOMPARE(all->at(0).id, id);
    QCOMPARE(all->at(0).transformation, QStringLiteral("register tiling 8x8"));
    QCOMPARE(all->at(0).at, kT0.addSecs(60));
}

void TestExperienceLibrary::refusesNewerSchema() {
    const QString path = m_dir.filePath(QStringLiteral("newer.kforge-library"));
    QVERIFY(ExperienceLibrary::open(path));
    {
        RawDb raw(path);
        QVERIFY(raw.exec("UPDATE schema_version SET version = 99"));
    }
    const auto opened = ExperienceLibrary::open(path);
    QVERIFY(!opened);
    QCOMPARE(
        QString::fromStdString(opened.error()),
        QDir::toNativeSeparators(path)
            + QStringLiteral(": written by a newer kforge (experience library schema 99, this build reads up to 2)"));
}

void TestExperienceLibrary::defaultPath() {
    QStandardPaths::setTestModeEnabled(true);
    const QString path = ExperienceLibrary::defaultPath();
    QVERIFY(path.startsWith(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)));
    QVERIFY(path.endsWith(QLatin1String("/experience.kforge-library")));
    QStandardPaths::setTestModeEnabled(false);
}

void TestExperienceLibrary::refusesForeignFiles() {
    QVERIFY(m_dir.isValid());

    const QString foreign = m_dir.filePath(QStringLiteral("foreign.sqlite"));
    {
        RawDb raw(foreign);
        QVERIFY(raw.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')"));
    }
    auto opened = ExperienceLibrary::open(foreign);
    QVERIFY(!opened);
    QCOMPARE(QString::fromStdString(opened.error()),
             QDir::toNativeSeparators(foreign)
                 + QStringLiteral(": not a kforge experience library (a SQLite database of another application)"));
    {
        RawDb raw(foreign); // left as it was
        QCOMPARE(raw.value("SELECT text FROM notes").toString(), QStringLiteral("mine"));
        QCOMPARE(raw.value("SELECT count(*) FROM sqlite_master WHERE name = 'insights'").toInt(), 0);
        QCOMPARE(raw.value("PRAGMA application_id").toLongLong(), 0);
    }

    const QString otherApp = m_dir.filePath(QStringLiteral("other-app.sqlite"));
    {
        RawDb raw(otherApp);
        QVERIFY(raw.exec("PRAGMA application_id = 1234; CREATE TABLE t (x)"));
    }
    opened = ExperienceLibrary::open(otherApp);
    QVERIFY(!opened);
    QVERIFY2(
        QString::fromStdString(opened.error()).contains(QLatin1String("belongs to another application, id 0x000004d2")),
        why(opened));

    const QString runStore = m_dir.filePath(QStringLiteral("runs.kforge"));
    {
        auto store = kforge::store::RunStore::open(runStore);
        QVERIFY2(store, why(store));
    }
    opened = ExperienceLibrary::open(runStore);
    QVERIFY(!opened);
    QCOMPARE(QString::fromStdString(opened.error()),
             QDir::toNativeSeparators(runStore) + QStringLiteral(": is a kforge run store, not an experience library"));

    const QString text = m_dir.filePath(QStringLiteral("notes.txt"));
    {
        QFile file(text);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("just some notes, long enough to look like a header\n");
    }
    opened = ExperienceLibrary::open(text);
    QVERIFY(!opened);
    QCOMPARE(QString::fromStdString(opened.error()),
             QDir::toNativeSeparators(text)
                 + QStringLiteral(": not a kforge experience library (not a SQLite database)"));

    opened = ExperienceLibrary::open(m_dir.path());
    QVERIFY(!opened);
    QVERIFY(QString::fromStdString(opened.error()).endsWith(QLatin1String(": is a folder, not an experience library")));
}

void TestExperienceLibrary::addDedupes() {
    auto library = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("dedupe.kforge-library")));
    QVERIFY2(library, why(library));
    ExperienceLibrary& lib = **library;

    Insight insight = rankingInsights().at(0);
    const auto first = lib.add(insight);
    QVERIFY2(first, why(first));
    const auto again = lib.add(insight);
    QVERIFY2(again, why(again));
    QCOMPARE(*again, *first);

    // Only kind, task, transformation, before and after make an insight what it is.
    Insight reworded = insight;
    reworded.summary = QStringLiteral("Said differently.");
    reworded.speedup = 1.9;
    reworded.at = kT0.addDays(3);
    QCOMPARE(*lib.add(reworded), *first);
    QCOMPARE(*lib.count(), 1);
    QCOMPARE(lib.all()->at(0).summary, insight.summary); // the first one stays

    Insight hurt = insight;
    hurt.kind = kforge::model::InsightKind::Hurt;
    Insight otherTask = insight;
    otherTask.task = QStringLiteral("gemm_bf16");
    Insight otherAfter = insight;
    otherAfter.after += QStringLiteral("// more\n");
    QList<qint64> ids = {*first};
    for (const Insight& different : {hurt, otherTask, otherAfter}) {
        const auto id = lib.add(different);
        QVERIFY2(id, why(id));
        QVERIFY(!ids.contains(*id));
        ids.append(*id);
    }
    QCOMPARE(*lib.count(), 4);

    // Without a time, an insight happened now.
    Insight undated = insight;
    undated.transformation = QStringLiteral("undated");
    undated.at = QDateTime();
    const QDateTime before = QDateTime::currentDateTimeUtc().addSecs(-1);
    const auto undatedId = lib.add(undated);
    QVERIFY(undatedId);
    const auto all = lib.all();
    QVERIFY(all);
    QCOMPARE(all->last().id, *undatedId);
    QVERIFY(all->last().at >= before);
}

// A kind this version does not know (a library written by a newer one, or edited by hand) is named
// when read, never taken for another kind.
void TestExperienceLibrary::unknownStoredKindIsNamed() {
    const QString path = m_dir.filePath(QStringLiteral("kinds.kforge-library"));
    auto library = ExperienceLibrary::open(path);
    QVERIFY2(library, why(library));
    QVERIFY((*library)->add(rankingInsights().at(0)));
    {
        RawDb raw(path);
        QVERIFY(raw.exec("UPDATE insights SET kind = 'great'"));
    }
    const auto all = (*library)->all();
    QVERIFY(!all);
    QVERIFY2(QString::fromStdString(all.error()).contains(QLatin1String("unknown kind 'great'")), why(all));
}

// Expected orders, worked out from the weights documented in experiencelibrary.cpp:
// task 8 / family 4, backend 2, bottleneck 1, helpful 0.5, speedup 0.25*s/(1+s), text 8*relevance.
void TestExperienceLibrary::ranking_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("bottleneck");
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("limit");
    QTest::addColumn<QString>("expected");

    const QString none;
    // Same task (A, D, E) before same family (B) before others (C, F); within the task, the same
    // backend (A, D) before another (E) even when that one helped; helped (A) before hurt (D).
    QTest::newRow("task > family > others") << "gemm"
                                            << "gemm_fp32"
                                            << "cuda" << none << none << 10 << "ADEBCF";
    // Same family: the memory-bound ones (B, E) first, the larger speedup (B) before the smaller
    // (E); helped (A) before hurt (D).
    QTest::newRow("bottleneck boost") << "gemm" << none << none << "memory" << none << 10 << "BEADCF";
    // Nothing asked: helpful by speedup, then hurt, then the veto.
    QTest::newRow("no preference") << none << none << none << none << none << 10 << "BACEDF";
    QTest::newRow("limit") << none << none << none << none << none << 2 << "BA";
    QTest::newRow("unknown task") << "scan"
                                  << "prefix_sum"
                                  << "cuda" << none << none << 3 << "BAC";

    // With text, only matches, the better match first: B has both words in its transformation and
    // its summary, C both in its summary, E one in its summary.
    QTest::newRow("text relevance") << none << none << none << none << "shared memory" << 10 << "BCE";
    // Porter stemming: "tiling" finds "tile" and "tiles". B matches better (bm25 normalises by the
    // length of the whole row, and A's diff makes it longer) ...
    QTest::newRow("text alone") << none << none << none << none << "tiling" << 10 << "BA";
    // ... but the task lifts A over it.
    QTest::newRow("text and task") << none << "gemm_fp32" << none << none << "tiling" << 10 << "AB";
    QTest::newRow("text in reason") << none << none << none << none << "odd sizes" << 10 << "F";
    QTest::newRow("text in diff") << none << none << none << none << "acc" << 10 << "A";
    QTest::newRow("text with arrow") << none << none << none << none << "BLOCK 256 -> 1024" << 10 << "D";
    QTest::newRow("text matches nothing") << "gemm" << none << none << none << "tensor cores" << 10 << "";
    QTest::newRow("punctuation only is no text") << none << none << none << none << "->" << 10 << "BACEDF";
}

void TestExperienceLibrary::ranking() {
    QFETCH(QString, family);
    QFETCH(QString, task);
    QFETCH(QString, backend);
    QFETCH(QString, bottleneck);
    QFETCH(QString, text);
    QFETCH(int, limit);
    QFETCH(QString, expected);

    auto library = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("ranking.kforge-library")));
    QVERIFY2(library, why(library));
    for (const Insight& insight : rankingInsights())
        QVERIFY((*library)->add(insight)); // the same six every time: dedupe keeps them six
    QCOMPARE(*(*library)->count(), 6);

    const auto found = (*library)->search(Query{family, task, backend, bottleneck, text}, limit);
    QVERIFY2(found, why(found));
    QCOMPARE(letters(*found), expected);
}

void TestExperienceLibrary::tiesNewestFirst() {
    auto library = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("ties.kforge-library")));
    QVERIFY2(library, why(library));
    Insight old = make("helped", "gemm", "gemm_fp32", "cuda", "old", "", 1.5, "", 1);
    Insight newer = make("helped", "gemm", "gemm_fp32", "cuda", "new", "", 1.5, "", 9);
    Insight middle = make("helped", "gemm", "gemm_fp32", "cuda", "middle", "", 1.5, "", 5);
    for (const Insight& insight : {old, newer, middle})
        QVERIFY((*library)->add(insight));
    const auto found = (*library)->search(Query{QStringLiteral("gemm"), {}, {}, {}, {}});
    QVERIFY(found);
    QCOMPARE(found->size(), 3);
    QCOMPARE(found->at(0).transformation, QStringLiteral("new"));
    QCOMPARE(found->at(1).transformation, QStringLiteral("middle"));
    QCOMPARE(found->at(2).transformation, QStringLiteral("old"));
}

void TestExperienceLibrary::hostileText_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unbalanced quote") << "\"shared memory"
                                      << "BCE";
    QTest::newRow("doubled quotes") << "\"\"\""
                                    << "BACEDF";
    // Quoted, they are words: B's summary has "and".
    QTest::newRow("operators") << "AND OR NOT"
                               << "B";
    QTest::newRow("NEAR") << "NEAR(shared memory, 2)"
                          << "BCE";
    QTest::newRow("column filter") << "transformation:warp"
                                   << "C";
    QTest::newRow("prefix star and caret") << "^warp* +shuffle"
                                           << "C";
    QTest::newRow("parentheses") << "((tiling"
                                 << "BA";
    // Stemmed, "drop" finds D's "occupancy dropped"; the table is still there.
    QTest::newRow("SQL") << "'; DROP TABLE insights; --"
                         << "D";
    QTest::newRow("code") << "__shfl_xor_sync(0xffffffff, v, 16);"
                          << "C";
    QTest::newRow("unicode") << "Kachel-Größe × 2 — ok?"
                             << "";
}

void TestExperienceLibrary::hostileText() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    auto library = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("hostile.kforge-library")));
    QVERIFY2(library, why(library));
    for (const Insight& insight : rankingInsights())
        QVERIFY((*library)->add(insight));
    const auto found = (*library)->search(Query{{}, {}, {}, {}, text});
    QVERIFY2(found, why(found));
    QCOMPARE(letters(*found), expected);
    QCOMPARE(*(*library)->count(), 6);
}

void TestExperienceLibrary::exportImportRoundTrip() {
    auto source = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("export-source.kforge-library")));
    QVERIFY2(source, why(source));
    QList<Insight> insights = rankingInsights();
    insights[1].before = QStringLiteral("__global__ void k() {\r\n\t// “quoted” ünïcödé\n}\n");
    insights[1].after = QStringLiteral("__global__ void k() { /* \"\\ */ }");
    insights[1].origin = QStringLiteral("/runs/a.kforge#run/3/candidate/17");
    insights[2].speedup = 1.0 / 3.0;
    for (const Insight& insight : insights)
        QVERIFY((*source)->add(insight));

    const QString file = m_dir.filePath(QStringLiteral("export.json"));
    const auto exported = (*source)->exportJson(file);
    QVERIFY2(exported, why(exported));
    {
        QFile in(file);
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
        QCOMPARE(root.value(QLatin1String("kforge-experience")).toInt(), 1);
        const QJsonObject first = root.value(QLatin1String("insights")).toArray().at(0).toObject();
        QCOMPARE(first.value(QLatin1String("at")).toString(), QStringLiteral("2024-05-01T12:01:00.000Z"));
        QCOMPARE(first.value(QLatin1String("transformation")).toString(), QStringLiteral("register tiling 8x8"));
    }

    auto target = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("export-target.kforge-library")));
    QVERIFY2(target, why(target));
    const auto imported = (*target)->importJson(file);
    QVERIFY2(imported, why(imported));
    QCOMPARE(*imported, 6);

    const auto original = (*source)->all();
    const auto copy = (*target)->all();
    QVERIFY(original && copy);
    QCOMPARE(copy->size(), original->size());
    for (int i = 0; i < original->size(); ++i) {
        const Insight& a = original->at(i);
        const Insight& b = copy->at(i);
        QCOMPARE(b.kind, a.kind);
        QCOMPARE(b.family, a.family);
        QCOMPARE(b.task, a.task);
        QCOMPARE(b.backend, a.backend);
        QCOMPARE(b.transformation, a.transformation);
        QCOMPARE(b.bottleneck, a.bottleneck);
        QCOMPARE(b.summary, a.summary);
        QCOMPARE(b.speedup, a.speedup);
        QCOMPARE(b.before, a.before);
        QCOMPARE(b.after, a.after);
        QCOMPARE(b.diff, a.diff);
        QCOMPARE(b.reason, a.reason);
        QCOMPARE(b.origin, a.origin);
        QCOMPARE(b.at, a.at);
        QCOMPARE(b.toJson(), a.toJson()); // ids too: a fresh library numbers them alike
    }
    QCOMPARE(copy->at(1).before, insights[1].before);
    QCOMPARE(copy->at(2).speedup, 1.0 / 3.0);

    // Searching works on imported insights (the FTS index follows the table).
    const auto found = (*target)->search(Query{{}, {}, {}, {}, QStringLiteral("shuffle")});
    QVERIFY(found);
    QCOMPARE(letters(*found), QStringLiteral("C"));

    // Twice: nothing new; into the source: nothing new.
    const auto again = (*target)->importJson(file);
    QVERIFY2(again, why(again));
    QCOMPARE(*again, 0);
    QCOMPARE(*(*target)->count(), 6);
    QCOMPARE(*(*source)->importJson(file), 0);
}

void TestExperienceLibrary::importMalformed_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("error"); // after "FILE: "

    const QByteArray good = R"({"kind": "helped", "task": "t", "transformation": "x"})";
    QTest::newRow("speedup not a number") << QByteArray(R"({"kforge-experience": 1, "insights": [)" + good + ", " + good
                                                        + ", " + good + R"(, {"kind": "helped", "speedup": "fast"}]})")
                                          << "insights[3]: 'speedup' must be a number";
    QTest::newRow("no kind") << QByteArray(R"({"kforge-experience": 1, "insights": [{"task": "t"}]})")
                             << "insights[0]: 'kind' is missing";
    QTest::newRow("unknown kind")
        << QByteArray(R"({"kforge-experience": 1, "insights": [)" + good + R"(, {"kind": "meh"}]})")
        << "insights[1]: 'kind' must be helped, hurt, human_pin, human_veto or human_edit, not 'meh'";
    QTest::newRow("string field of another type")
        << QByteArray(R"({"kforge-experience": 1, "insights": [{"kind": "hurt", "summary": 3}]})")
        << "insights[0]: 'summary' must be a string, not a number";
    QTest::newRow("bad time") << QByteArray(R"({"kforge-experience": 1, "insights": [{"kind": "hurt", "at": "May"}]})")
                              << "insights[0]: 'at' is not an ISO 8601 time: 'May'";
    QTest::newRow("entry not an object") << QByteArray(R"({"kforge-experience": 1, "insights": [)" + good + ", 7]}")
                                         << "insights[1]: must be an object";
    QTest::newRow("no insights array") << QByteArray(R"({"kforge-experience": 1, "insights": {}})")
                                       << "'insights' must be an array";
    QTest::newRow("not an export") << QByteArray(R"({"runs": []})")
                                   << "not a kforge experience export (no \"kforge-experience\" version)";
    QTest::newRow("newer format") << QByteArray(R"({"kforge-experience": 2, "insights": []})")
                                  << "written by a newer kforge (experience export format 2, this build reads up to 1)";
    QTest::newRow("not JSON") << QByteArray("insights: none") << "not valid JSON at offset 1: illegal value";
}

void TestExperienceLibrary::importMalformed() {
    QFETCH(QByteArray, content);
    QFETCH(QString, error);
    const QString file = m_dir.filePath(QStringLiteral("malformed.json"));
    {
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(content);
    }
    auto library = ExperienceLibrary::open(m_dir.filePath(QStringLiteral("malformed.kforge-library")));
    QVERIFY2(library, why(library));
    const auto imported = (*library)->importJson(file);
    QVERIFY(!imported);
    QCOMPARE(QString::fromStdString(imported.error()), QDir::toNativeSeparators(file) + QStringLiteral(": ") + error);
    QCOMPARE(*(*library)->count(), 0); // all or nothing
}

namespace {

TuningKey tuningKey(const char* device = "NVIDIA H200") {
    return {QStringLiteral("gemm_fp32"), QStringLiteral("cuda"), QStringLiteral("default: K=1024 M=1024 N=1024"),
            QString::fromUtf8(device), QStringLiteral("0123abcd")};
}

TuningRecord tuningRecord(std::int64_t tile, std::optional<double> us, const char* status = "ok") {
    return {{{"TILE", tile}, {"STAGES", 2}}, us, QString::fromUtf8(status)};
}

} // namespace

void TestExperienceLibrary::tuningCacheRoundTrips() {
    const QString path = m_dir.filePath(QStringLiteral("tuning.kforge-library"));
    {
        auto library = ExperienceLibrary::open(path);
        QVERIFY2(library, why(library));
        QVERIFY((*library)->recordTuning(tuningKey(), {tuningRecord(64, 30.5), tuningRecord(128, 21.25),
                                                       tuningRecord(256, std::nullopt, "compile_error")}));
        QVERIFY((*library)->recordTuning(tuningKey("NVIDIA A100"), {tuningRecord(64, 50.0)}));
        // Measured again: the new time replaces the old one.
        QVERIFY((*library)->recordTuning(tuningKey(), {tuningRecord(64, 29.0)}));
        QVERIFY(!(*library)->recordTuning(tuningKey(), {tuningRecord(32, -1.0)}));
    }
    auto library = ExperienceLibrary::open(path);
    QVERIFY2(library, why(library));
    const auto recalled = (*library)->recallTuning(tuningKey());
    QVERIFY2(recalled, why(recalled));
    QVERIFY(recalled->problems.isEmpty());
    QCOMPARE(recalled->records.size(), 3);
    std::map<std::int64_t, TuningRecord> byTile;
    for (const auto& r : recalled->records)
        byTile[r.params.at("TILE")] = r;
    QCOMPARE(byTile.at(64).medianUs, std::optional(29.0));
    QCOMPARE(byTile.at(64).params, (kforge::model::ParamValues{{"STAGES", 2}, {"TILE", 64}}));
    QCOMPARE(byTile.at(128).medianUs, std::optional(21.25));
    QVERIFY(!byTile.at(256).medianUs);
    QCOMPARE(byTile.at(256).status, QStringLiteral("compile_error"));

    // Another device, size or kernel template is another key.
    QCOMPARE((*library)->recallTuning(tuningKey("NVIDIA A100"))->records.size(), 1);
    TuningKey otherSizes = tuningKey();
    otherSizes.sizes = QStringLiteral("small: K=64 M=64 N=64");
    QVERIFY((*library)->recallTuning(otherSizes)->records.isEmpty());

    QCOMPARE(*(*library)->tuningCount(), 4);
    QCOMPARE(*(*library)->tuningCount(QStringLiteral("softmax")), 0);
    QCOMPARE(*(*library)->forgetTuning(QStringLiteral("softmax")), 0);
    QCOMPARE(*(*library)->forgetTuning(QStringLiteral("gemm_fp32")), 4);
    QVERIFY((*library)->recallTuning(tuningKey())->records.isEmpty());
    QCOMPARE(*(*library)->count(), 0); // insights are another matter
}

void TestExperienceLibrary::damagedTuningRecordsAreSkippedAndNamed() {
    const QString path = m_dir.filePath(QStringLiteral("damaged-tuning.kforge-library"));
    {
        auto library = ExperienceLibrary::open(path);
        QVERIFY2(library, why(library));
        QVERIFY((*library)->recordTuning(tuningKey(), {tuningRecord(32, 40.0), tuningRecord(64, 30.0),
                                                       tuningRecord(128, 20.0), tuningRecord(256, 25.0)}));
    }
    {
        RawDb raw(path);
        QVERIFY(raw.exec("UPDATE tuning SET params_json = 'not json' WHERE id = 1"));
        QVERIFY(raw.exec("UPDATE tuning SET params_json = '{\"TILE\": 1.5}' WHERE id = 2"));
        QVERIFY(raw.exec("UPDATE tuning SET median_us = NULL WHERE id = 3"));
    }
    auto library = ExperienceLibrary::open(path);
    QVERIFY2(library, why(library));
    const auto recalled = (*library)->recallTuning(tuningKey());
    QVERIFY2(recalled, why(recalled));
    QCOMPARE(recalled->records.size(), 1);
    QCOMPARE(recalled->records.at(0).params.at("TILE"), std::int64_t(256));
    QCOMPARE(recalled->problems.size(), 3);
    QVERIFY2(recalled->problems.at(0).endsWith(QStringLiteral("tuning record 1: its parameters are not a JSON object")),
             qPrintable(recalled->problems.at(0)));
    QVERIFY2(recalled->problems.at(1).endsWith(QStringLiteral("tuning record 2: parameter 'TILE' is not an integer")),
             qPrintable(recalled->problems.at(1)));
    QVERIFY2(recalled->problems.at(2).contains(QStringLiteral("tuning record 3: a successful measurement without")),
             qPrintable(recalled->problems.at(2)));
    QVERIFY(recalled->problems.at(0).startsWith(QDir::toNativeSeparators(path)));
}

void TestExperienceLibrary::tuningCacheArrivesWithTheUpgrade() {
    const QString path = m_dir.filePath(QStringLiteral("version1.kforge-library"));
    {
        auto library = ExperienceLibrary::open(path);
        QVERIFY2(library, why(library));
        QVERIFY((*library)->add(rankingInsights().at(0)));
    }
    {
        // As schema 1 wrote it.
        RawDb raw(path);
        QVERIFY(raw.exec("DROP TABLE tuning"));
        QVERIFY(raw.exec("UPDATE schema_version SET version = 1"));
    }
    auto library = ExperienceLibrary::open(path);
    QVERIFY2(library, why(library));
    QCOMPARE(*(*library)->count(), 1);
    QCOMPARE(*(*library)->tuningCount(), 0);
    QVERIFY((*library)->recordTuning(tuningKey(), {tuningRecord(64, 30.0)}));
    QCOMPARE(RawDb(path).value("SELECT max(version) FROM schema_version").toInt(), 2);
}

QTEST_GUILESS_MAIN(TestExperienceLibrary)
#include "tst_experiencelibrary.moc"
