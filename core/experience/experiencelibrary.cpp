#include "experience/experiencelibrary.h"

#include "util/sqlitedb.h"

#include <sqlite3.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QSaveFile>
#include <QStandardPaths>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge::experience {

using spec::Error;
using spec::Expected;
using spec::fail;
using spec::Status;
using spec::success;

namespace sqlite = util::sqlite;
using sqlite::exec;
using sqlite::failure;
using sqlite::parseTimestamp;
using sqlite::readRows;
using sqlite::Statement;
using sqlite::timestamp;
using sqlite::whereOf;

namespace {

Q_LOGGING_CATEGORY(lcExperience, "kforge.experience", QtInfoMsg)

// "kfxl" in the header's application id; the run store uses "kfrg" (0x6b667267).
constexpr std::int32_t kApplicationId = 0x6b66786c;
constexpr std::int32_t kRunStoreApplicationId = 0x6b667267;
const sqlite::FileKind kKind{"experience library", "an"};
constexpr int kExportFormat = 1;

// Schema scripts, index = the version they produce; version 0 is the empty file. Append a script
// for each change and never edit one that has shipped: every library is upgraded through all of
// them in one transaction when it is opened.
//
// Full-text search needs FTS5, which Debian's SQLite (3.40) is built with; a build without it
// fails to create the library with "no such module: fts5" rather than silently searching worse.
const std::vector<const char*> kMigrations = {
    "",
    R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);

CREATE TABLE insights (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    family TEXT NOT NULL,
    task TEXT NOT NULL,
    backend TEXT NOT NULL,
    transformation TEXT NOT NULL,
    bottleneck TEXT NOT NULL,
    summary TEXT NOT NULL,
    speedup REAL NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    diff TEXT NOT NULL,
    reason TEXT NOT NULL,
    origin TEXT NOT NULL,
    at TEXT NOT NULL, -- ISO 8601 UTC with milliseconds, so text order is time order
    content_hash TEXT NOT NULL UNIQUE -- of kind, task, transformation, before, after: one insight once
);

-- An external-content index over the insights, kept in step by triggers. Porter stemming lets
-- "tiling" find "tiled" and "tile".
CREATE VIRTUAL TABLE insights_fts USING fts5(
    transformation, summary, reason, diff,
    content = 'insights', content_rowid = 'id', tokenize = 'porter unicode61');

CREATE TRIGGER insights_fts_insert AFTER INSERT ON insights BEGIN
    INSERT INTO insights_fts(rowid, transformation, summary, reason, diff)
    VALUES (new.id, new.transformation, new.summary, new.reason, new.diff);
END;
CREATE TRIGGER insights_fts_delete AFTER DELETE ON insights BEGIN
    INSERT INTO insights_fts(insights_fts, rowid, transformation, summary, reason, diff)
    VALUES ('delete', old.id, old.transformation, old.summary, old.reason, old.diff);
END;
CREATE TRIGGER insights_fts_update AFTER UPDATE ON insights BEGIN
    INSERT INTO insights_fts(insights_fts, rowid, transformation, summary, reason, diff)
    VALUES ('delete', old.id, old.transformation, old.summary, old.reason, old.diff);
    INSERT INTO insights_fts(rowid, transformation, summary, reason, diff)
    VALUES (new.id, new.transformation, new.summary, new.reason, new.diff);
END;
)sql",
    // 2: the tuning cache, the template tuner's measurements across runs.
    R"sql(
CREATE TABLE tuning (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task TEXT NOT NULL,
    backend TEXT NOT NULL,
    sizes TEXT NOT NULL,        -- the size variant and its values: "small: N=4096"
    device TEXT NOT NULL,       -- the device's model as the worker names it
    kernel TEXT NOT NULL,       -- the template: a key of the kernel file without its parameter lines
    params_json TEXT NOT NULL,  -- every declared parameter, {"BLOCK": 128, ...}, keys in order
    median_us REAL,             -- NULL: it failed
    status TEXT NOT NULL,       -- ok, or how it failed
    at TEXT NOT NULL,
    UNIQUE(task, backend, sizes, device, kernel, params_json)
);
)sql",
};

int schemaVersion() {
    return static_cast<int>(kMigrations.size()) - 1;
}

// A write transaction that rolls back unless committed. IMMEDIATE takes the write lock at once
// (waiting up to the busy timeout), so a transaction never fails halfway because another writer
// got there first. The library has no nested transactions.
class Transaction {
public:
    Transaction(sqlite3* db, std::string where) : m_db(db), m_where(std::move(where)) {
        m_begun = exec(m_db, "BEGIN IMMEDIATE", m_where, "cannot start a write transaction");
        m_done = !m_begun;
    }
    ~Transaction() {
        // Some errors (I/O, disk full, busy) already rolled the transaction back.
        if (m_done || sqlite3_get_autocommit(m_db))
            return;
        if (auto s = exec(m_db, "ROLLBACK", m_where, "cannot roll back"); !s)
            qCWarning(lcExperience).noquote() << QString::fromStdString(s.error());
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    const Status& begun() const { return m_begun; }
    Status commit() {
        if (m_done)
            return m_begun ? fail(m_where + ": the transaction was already committed") : m_begun;
        m_done = true;
        if (auto s = exec(m_db, "COMMIT", m_where, "cannot commit"); !s) {
            // The commit's error is the one to report; a rollback that fails too leaves SQLite
            // to roll back when the connection closes.
            if (!sqlite3_get_autocommit(m_db))
                (void)exec(m_db, "ROLLBACK", m_where, "cannot roll back");
            return s;
        }
        return success();
    }

private:
    sqlite3* m_db;
    std::string m_where;
    Status m_begun = success();
    bool m_done = false;
};

// Length-prefixed, so that moving text from one field to the next changes the hash.
QString contentHash(const Insight& insight) {
    QCryptographicHash hash(QCryptographicHash::Sha256);
    const QString kind = model::insightKindName(insight.kind);
    for (const QString* field : {&kind, &insight.task, &insight.transformation, &insight.before, &insight.after}) {
        const QByteArray utf8 = field->toUtf8();
        hash.addData(QByteArray::number(utf8.size()) + ':');
        hash.addData(utf8);
    }
    return QString::fromLatin1(hash.result().toHex());
}

// The schema version of an open file: 0 for an empty one (to be created), or an error when the
// file belongs to someone else.
Expected<int> storedVersion(sqlite3* db, const std::string& where) {
    auto contents = sqlite::inspect(db, where, kKind);
    if (!contents)
        return Error{contents.error()};
    if (contents->applicationId != kApplicationId) {
        if (contents->applicationId == kRunStoreApplicationId)
            return fail(where + ": is a kforge run store, not an experience library");
        if (contents->applicationId != 0)
            return sqlite::foreignApplication(where, kKind, contents->applicationId);
        if (!contents->anyTable)
            return 0;
        return fail(where + ": not a kforge experience library (a SQLite database of another application)");
    }
    return sqlite::readVersion(db, where, kKind, *contents);
}

Error newer(const std::string& where, int version) {
    return fail(where + ": written by a newer kforge (experience library schema " + std::to_string(version)
                + ", this build reads up to " + std::to_string(schemaVersion()) + ")");
}

Status migrate(sqlite3* db, const QString& path, const std::string& where) {
    Transaction transaction(db, where);
    if (!transaction.begun())
        return transaction.begun();
    // Again, inside the lock: another process may have created or upgraded the file meanwhile.
    auto version = storedVersion(db, where);
    if (!version)
        return Error{version.error()};
    if (*version > schemaVersion())
        return newer(where, *version);
    if (*version == schemaVersion())
        return transaction.commit();

    if (auto s = sqlite::upgrade(db, where, kKind, kMigrations, *version, kApplicationId); !s)
        return s;
    if (*version == 0)
        qCDebug(lcExperience).noquote() << path << "created with schema" << schemaVersion();
    else
        qCInfo(lcExperience).noquote() << path << "upgraded from schema" << *version << "to" << schemaVersion();
    return transaction.commit();
}

constexpr std::string_view kColumns = "i.id, i.kind, i.family, i.task, i.backend, i.transformation, i.bottleneck, "
                                      "i.summary, i.speedup, i.before, i.after, i.diff, i.reason, i.origin, i.at";

Expected<Insight> readInsight(const Statement& row, const std::string& where) {
    Insight r;
    r.id = row.int64(0);
    const auto kind = model::parseInsightKind(row.text(1));
    if (!kind)
        return fail(where + ": insight " + std::to_string(r.id) + " has an unknown kind '" + row.utf8(1) + "'");
    r.kind = *kind;
    r.family = row.text(2);
    r.task = row.text(3);
    r.backend = row.text(4);
    r.transformation = row.text(5);
    r.bottleneck = row.text(6);
    r.summary = row.text(7);
    r.speedup = row.real(8);
    r.before = row.text(9);
    r.after = row.text(10);
    r.diff = row.text(11);
    r.reason = row.text(12);
    r.origin = row.text(13);
    r.at = parseTimestamp(row.text(14));
    return r;
}

Expected<QList<Insight>> readAll(Statement& query, const std::string& where) {
    return readRows<Insight>(query, where, "cannot read insights",
                             [&](const Statement& row) { return readInsight(row, where); });
}

Status validate(const Insight& insight, const std::string& where) {
    if (!std::isfinite(insight.speedup) || insight.speedup < 0)
        return fail(where + ": the speedup must be a finite number, 0 or more");
    return success();
}

// Inserts one insight unless an identical one is there; the caller holds a write transaction.
// Returns the id and whether it is new.
Expected<std::pair<qint64, bool>> insert(sqlite3* db, const Insight& insight, const std::string& where) {
    if (auto valid = validate(insight, where); !valid)
        return Error{valid.error()};
    const QString hash = contentHash(insight);
    // An insight without a time happened now.
    const QDateTime at = insight.at.isValid() ? insight.at : QDateTime::currentDateTimeUtc();
    Statement add(db, "INSERT INTO insights(kind, family, task, backend, transformation, bottleneck, summary, "
                      "speedup, before, after, diff, reason, origin, at, content_hash) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                      "ON CONFLICT(content_hash) DO NOTHING RETURNING id");
    add.bindText(1, model::insightKindName(insight.kind))
        .bindText(2, insight.family)
        .bindText(3, insight.task)
        .bindText(4, insight.backend)
        .bindText(5, insight.transformation)
        .bindText(6, insight.bottleneck)
        .bindText(7, insight.summary)
        .bindDouble(8, insight.speedup)
        .bindText(9, insight.before)
        .bindText(10, insight.after)
        .bindText(11, insight.diff)
        .bindText(12, insight.reason)
        .bindText(13, insight.origin)
        .bindText(14, timestamp(at))
        .bindText(15, hash);
    const int rc = add.step();
    if (rc == SQLITE_ROW) {
        const qint64 id = add.int64(0);
        if (add.step() != SQLITE_DONE)
            return failure(where, "cannot add the insight", add);
        return std::pair{id, true};
    }
    if (rc != SQLITE_DONE)
        return failure(where, "cannot add the insight", add);

    Statement existing(db, "SELECT id FROM insights WHERE content_hash = ?");
    if (existing.bindText(1, hash).step() != SQLITE_ROW)
        return failure(where, "cannot look up the existing insight", existing);
    return std::pair{existing.int64(0), false};
}

// The user's words as an FTS5 query that cannot be a syntax error: every run of letters and digits
// becomes a quoted string (so AND, NEAR, '*', ':' and quotes mean nothing), ORed together. The
// tokenizer splits on the same characters, so no word is lost.
QString ftsQuery(const QString& text) {
    QStringList tokens;
    QString token;
    auto flush = [&] {
        if (!token.isEmpty() && tokens.size() < 64)
            tokens.append(u'"' + token.replace(u'"', QLatin1String("\"\"")) + u'"');
        token.clear();
    };
    for (const QChar c : text) {
        if (c.isLetterOrNumber() || c.isMark())
            token += c;
        else
            flush();
    }
    flush();
    return tokens.join(QLatin1String(" OR "));
}

// The ranking, as one score per insight (bigger is better), ties broken newest first, then by id.
// The boosts are weighted so that, as the header promises, they order lexicographically:
//
//   task     8    the query's task (or else:)
//   family   4    the query's family
//   backend  2    the query's backend
//   bottle-  1    the query's bottleneck
//   neck
//   kind     0.5  helped, human_pin or human_edit (hurt and human_veto get 0)
//   speedup  <0.25  0.25 * s / (1 + s), growing with the speedup s (0 when unknown)
//
// Each weight exceeds the sum of all those below it (4 > 2+1+0.5+0.25, ...), so for instance a
// same-task insight always ranks above a same-family one, whatever else they share. Empty query
// fields boost nothing.
//
// With text, only insights whose transformation, summary, reason or diff match at least one of
// its words are candidates, and each adds 8 * relevance, where relevance is its bm25 score
// (transformation weighted 4, summary and reason 2, diff 1) divided by the best bm25 among the
// matches: the best text match earns as much as the same task does, a match half as good as much
// as the same family. Text without any word (only punctuation) is no text.
constexpr std::string_view kBoosts =
    "(CASE WHEN ?1 <> '' AND i.task = ?1 THEN 8.0 WHEN ?2 <> '' AND i.family = ?2 THEN 4.0 ELSE 0.0 END)"
    " + (CASE WHEN ?3 <> '' AND i.backend = ?3 THEN 2.0 ELSE 0.0 END)"
    " + (CASE WHEN ?4 <> '' AND i.bottleneck = ?4 THEN 1.0 ELSE 0.0 END)"
    " + (CASE WHEN i.kind IN ('helped', 'human_pin', 'human_edit') THEN 0.5 ELSE 0.0 END)"
    " + (CASE WHEN i.speedup > 0 THEN 0.25 * i.speedup / (1.0 + i.speedup) ELSE 0.0 END)";

QString jsonType(const QJsonValue& value) {
    switch (value.type()) {
    case QJsonValue::Null:
        return QStringLiteral("null");
    case QJsonValue::Bool:
        return QStringLiteral("a boolean");
    case QJsonValue::Double:
        return QStringLiteral("a number");
    case QJsonValue::String:
        return QStringLiteral("a string");
    case QJsonValue::Array:
        return QStringLiteral("an array");
    case QJsonValue::Object:
        return QStringLiteral("an object");
    case QJsonValue::Undefined:
        break;
    }
    return QStringLiteral("missing");
}

std::string paramsJson(const model::ParamValues& params) {
    QJsonObject json;
    for (const auto& [name, value] : params)
        json.insert(QString::fromStdString(name), static_cast<qint64>(value));
    return QJsonDocument(json).toJson(QJsonDocument::Compact).toStdString();
}

// A stored tuning record, or what is wrong with it.
Expected<TuningRecord> readTuning(const Statement& row, const std::string& where) {
    const std::string what = where + ": tuning record " + std::to_string(row.int64(0));
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(row.utf8(1)), &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return fail(what + ": its parameters are not a JSON object");
    TuningRecord r;
    const QJsonObject params = document.object();
    for (auto it = params.begin(); it != params.end(); ++it) {
        const QJsonValue value = it.value();
        if (!value.isDouble() || value.toDouble() != static_cast<double>(value.toInteger()))
            return fail(what + ": parameter '" + it.key().toStdString() + "' is not an integer");
        r.params[it.key().toStdString()] = value.toInteger();
    }
    if (r.params.empty())
        return fail(what + ": it names no parameter");
    r.status = row.text(3);
    if (r.status == QLatin1String("ok")) {
        if (row.isNull(2) || !std::isfinite(row.real(2)) || row.real(2) <= 0)
            return fail(what + ": a successful measurement without a positive time");
        r.medianUs = row.real(2);
    } else if (r.status.isEmpty()) {
        return fail(what + ": it has no status");
    }
    return r;
}

} // namespace

// --- Insight ---

QJsonObject Insight::toJson() const {
    QJsonObject json;
    json[QLatin1String("id")] = id;
    json[QLatin1String("kind")] = model::insightKindName(kind);
    json[QLatin1String("family")] = family;
    json[QLatin1String("task")] = task;
    json[QLatin1String("backend")] = backend;
    json[QLatin1String("transformation")] = transformation;
    json[QLatin1String("bottleneck")] = bottleneck;
    json[QLatin1String("summary")] = summary;
    json[QLatin1String("speedup")] = speedup;
    json[QLatin1String("before")] = before;
    json[QLatin1String("after")] = after;
    json[QLatin1String("diff")] = diff;
    json[QLatin1String("reason")] = reason;
    json[QLatin1String("origin")] = origin;
    json[QLatin1String("at")] = at.isValid() ? timestamp(at) : QString();
    return json;
}

// "kind" is required; other fields may be left out (empty, 0, no time) but must have their type.
// Unknown keys are ignored, so that a newer kforge's exports stay readable.
Expected<Insight> Insight::fromJson(const QJsonObject& json, const QString& where) {
    const std::string w = where.toStdString();
    Insight r;
    QString kind;
    const std::pair<const char*, QString*> strings[] = {
        {"kind", &kind},
        {"family", &r.family},
        {"task", &r.task},
        {"backend", &r.backend},
        {"transformation", &r.transformation},
        {"bottleneck", &r.bottleneck},
        {"summary", &r.summary},
        {"before", &r.before},
        {"after", &r.after},
        {"diff", &r.diff},
        {"reason", &r.reason},
        {"origin", &r.origin},
    };
    for (const auto& [key, field] : strings) {
        const QJsonValue value = json.value(QLatin1String(key));
        if (value.isUndefined())
            continue;
        if (!value.isString())
            return fail(w + ": '" + key + "' must be a string, not " + jsonType(value).toStdString());
        *field = value.toString();
    }
    if (!json.contains(QLatin1String("kind")))
        return fail(w + ": 'kind' is missing");
    const auto parsed = model::parseInsightKind(kind);
    if (!parsed)
        return fail(w + ": 'kind' must be helped, hurt, human_pin, human_veto or human_edit, not '" + kind.toStdString()
                    + "'");
    r.kind = *parsed;

    if (const QJsonValue speedup = json.value(QLatin1String("speedup")); !speedup.isUndefined()) {
        if (!speedup.isDouble())
            return fail(w + ": 'speedup' must be a number");
        r.speedup = speedup.toDouble();
        if (r.speedup < 0)
            return fail(w + ": 'speedup' must be 0 or more");
    }
    if (const QJsonValue id = json.value(QLatin1String("id")); !id.isUndefined()) {
        if (!id.isDouble())
            return fail(w + ": 'id' must be a number");
        r.id = id.toInteger();
    }
    if (const QJsonValue at = json.value(QLatin1String("at")); !at.isUndefined()) {
        if (!at.isString())
            return fail(w + ": 'at' must be an ISO 8601 time string");
        if (!at.toString().isEmpty()) {
            r.at = QDateTime::fromString(at.toString(), Qt::ISODateWithMs);
            if (!r.at.isValid())
                return fail(w + ": 'at' is not an ISO 8601 time: '" + at.toString().toStdString() + "'");
            r.at = r.at.toUTC();
        }
    }
    return r;
}

// --- ExperienceLibrary ---

ExperienceLibrary::ExperienceLibrary(sqlite3* db, QString path) : m_db(db), m_path(std::move(path)) {}

ExperienceLibrary::~ExperienceLibrary() {
    if (sqlite3_close_v2(m_db) != SQLITE_OK)
        qCWarning(lcExperience).noquote() << m_path << "did not close cleanly:" << sqlite3_errmsg(m_db);
}

QString ExperienceLibrary::defaultPath() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)
           + QLatin1String("/experience.kforge-library");
}

Expected<std::unique_ptr<ExperienceLibrary>> ExperienceLibrary::open(const QString& path) {
    const std::string where = whereOf(path);
    if (auto header = sqlite::checkHeader(path, where, kKind); !header)
        return Error{header.error()};
    // The default path lies in a folder that may not exist yet on a first run.
    if (const QFileInfo info(path); !info.exists() && !QDir().mkpath(info.absolutePath()))
        return fail(where + ": cannot create its folder " + whereOf(info.absolutePath()));

    auto db = sqlite::open(path, where);
    if (!db)
        return Error{db.error()};
    std::unique_ptr<ExperienceLibrary> library(new ExperienceLibrary(*db, path)); // closes it on every path

    // Recognise the file before changing anything in it: a foreign database is left as it was.
    auto version = storedVersion(*db, where);
    if (!version)
        return Error{version.error()};
    if (*version > schemaVersion())
        return newer(where, *version);
    if (auto configured = sqlite::configure(*db, path, where, lcExperience(), false); !configured)
        return Error{configured.error()};
    if (*version < schemaVersion()) {
        if (auto migrated = migrate(*db, path, where); !migrated)
            return Error{migrated.error()};
    }
    return Expected<std::unique_ptr<ExperienceLibrary>>(std::move(library));
}

Expected<qint64> ExperienceLibrary::add(const Insight& insight) {
    const std::string where = whereOf(m_path);
    Transaction transaction(m_db, where);
    if (!transaction.begun())
        return Error{transaction.begun().error()};
    auto added = insert(m_db, insight, where);
    if (!added)
        return Error{added.error()};
    if (auto committed = transaction.commit(); !committed)
        return Error{committed.error()};
    return added->first;
}

Expected<QList<Insight>> ExperienceLibrary::all() {
    Statement query(m_db, "SELECT " + std::string(kColumns) + " FROM insights i ORDER BY i.id");
    return readAll(query, whereOf(m_path));
}

Expected<int> ExperienceLibrary::count() {
    Statement query(m_db, "SELECT count(*) FROM insights");
    if (query.step() != SQLITE_ROW)
        return failure(whereOf(m_path), "cannot count insights", query);
    return static_cast<int>(query.int64(0));
}

Expected<QList<Insight>> ExperienceLibrary::search(const Query& query, int limit) {
    if (limit < 1)
        return QList<Insight>();
    const QString match = ftsQuery(query.text);
    std::string sql;
    if (match.isEmpty()) {
        sql = "SELECT " + std::string(kColumns) + ", " + std::string(kBoosts)
              + " AS score FROM insights i ORDER BY score DESC, i.at DESC, i.id DESC LIMIT ?6";
    } else {
        // bm25() is negative, smaller for better matches; it only exists inside the FTS query.
        sql = "WITH m AS (SELECT rowid AS id, -bm25(insights_fts, 4.0, 2.0, 2.0, 1.0) AS relevance "
              "FROM insights_fts WHERE insights_fts MATCH ?5), "
              "best AS (SELECT max(max(relevance), 1e-12) AS relevance FROM m) "
              "SELECT "
              + std::string(kColumns) + ", " + std::string(kBoosts)
              + " + 8.0 * m.relevance / best.relevance AS score "
                "FROM m JOIN insights i ON i.id = m.id, best "
                "ORDER BY score DESC, i.at DESC, i.id DESC LIMIT ?6";
    }
    Statement statement(m_db, sql);
    statement.bindText(1, query.task)
        .bindText(2, query.family)
        .bindText(3, query.backend)
        .bindText(4, query.bottleneck)
        .bindInt(6, limit);
    if (!match.isEmpty())
        statement.bindText(5, match);
    return readAll(statement, whereOf(m_path));
}

Status ExperienceLibrary::exportJson(const QString& file) {
    const std::string where = whereOf(file);
    auto insights = all();
    if (!insights)
        return Error{insights.error()};
    QJsonArray array;
    for (const Insight& insight : *insights)
        array.append(insight.toJson());
    QJsonObject document;
    document[QLatin1String("kforge-experience")] = kExportFormat;
    document[QLatin1String("insights")] = array;

    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly))
        return fail(where + ": cannot be written: " + out.errorString().toStdString());
    out.write(QJsonDocument(document).toJson(QJsonDocument::Indented));
    if (!out.commit())
        return fail(where + ": cannot be written: " + out.errorString().toStdString());
    return success();
}

// All or nothing: every entry is checked before the first is added, and all are added in one
// transaction.
Expected<int> ExperienceLibrary::importJson(const QString& file) {
    const std::string where = whereOf(file);
    QFile in(file);
    if (!in.open(QIODevice::ReadOnly))
        return fail(where + ": cannot be read: " + in.errorString().toStdString());
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(in.readAll(), &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return fail(where + ": not valid JSON at offset " + std::to_string(parseError.offset) + ": "
                    + parseError.errorString().toStdString());
    if (!document.isObject())
        return fail(where + ": not a kforge experience export (expected a JSON object)");
    const QJsonObject root = document.object();
    const QJsonValue format = root.value(QLatin1String("kforge-experience"));
    if (!format.isDouble())
        return fail(where + ": not a kforge experience export (no \"kforge-experience\" version)");
    if (format.toInt() > kExportFormat)
        return fail(where + ": written by a newer kforge (experience export format " + std::to_string(format.toInt())
                    + ", this build reads up to " + std::to_string(kExportFormat) + ")");
    const QJsonValue entries = root.value(QLatin1String("insights"));
    if (!entries.isArray())
        return fail(where + ": 'insights' must be an array");

    QList<Insight> insights;
    const QJsonArray array = entries.toArray();
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString entry = QString::fromStdString(where) + QStringLiteral(": insights[%1]").arg(i);
        if (!array.at(i).isObject())
            return fail(entry.toStdString() + ": must be an object");
        auto insight = Insight::fromJson(array.at(i).toObject(), entry);
        if (!insight)
            return Error{insight.error()};
        insights.append(*insight);
    }

    const std::string library = whereOf(m_path);
    Transaction transaction(m_db, library);
    if (!transaction.begun())
        return Error{transaction.begun().error()};
    int added = 0;
    for (qsizetype i = 0; i < insights.size(); ++i) {
        auto inserted = insert(m_db, insights.at(i), library);
        if (!inserted)
            return fail(where + ": insights[" + std::to_string(i) + "]: " + inserted.error());
        added += inserted->second ? 1 : 0;
    }
    if (auto committed = transaction.commit(); !committed)
        return Error{committed.error()};
    qCInfo(lcExperience).noquote() << "imported" << added << "new insights of" << insights.size() << "from" << file;
    return added;
}

// --- The tuning cache ---

Status ExperienceLibrary::recordTuning(const TuningKey& key, const QList<TuningRecord>& records) {
    const std::string where = whereOf(m_path);
    Transaction transaction(m_db, where);
    if (!transaction.begun())
        return transaction.begun();
    const QString at = timestamp(QDateTime::currentDateTimeUtc());
    for (const TuningRecord& r : records) {
        if (r.medianUs && (!std::isfinite(*r.medianUs) || *r.medianUs <= 0))
            return fail(where + ": a tuning record's time must be positive");
        Statement upsert(m_db, "INSERT INTO tuning(task, backend, sizes, device, kernel, params_json, median_us, "
                               "status, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                               "ON CONFLICT(task, backend, sizes, device, kernel, params_json) DO UPDATE SET "
                               "median_us = excluded.median_us, status = excluded.status, at = excluded.at");
        upsert.bindText(1, key.task)
            .bindText(2, key.backend)
            .bindText(3, key.sizes)
            .bindText(4, key.device)
            .bindText(5, key.kernel)
            .bindText(6, paramsJson(r.params))
            .bindDouble(7, r.medianUs)
            .bindText(8, r.medianUs ? QStringLiteral("ok") : (r.status.isEmpty() ? QStringLiteral("failed") : r.status))
            .bindText(9, at);
        if (!upsert.run())
            return failure(where, "cannot record a tuning measurement", upsert);
    }
    return transaction.commit();
}

Expected<TuningRecall> ExperienceLibrary::recallTuning(const TuningKey& key) {
    const std::string where = whereOf(m_path);
    Statement query(m_db, "SELECT id, params_json, median_us, status FROM tuning WHERE task = ? AND backend = ? "
                          "AND sizes = ? AND device = ? AND kernel = ? ORDER BY id");
    query.bindText(1, key.task)
        .bindText(2, key.backend)
        .bindText(3, key.sizes)
        .bindText(4, key.device)
        .bindText(5, key.kernel);
    TuningRecall recall;
    int rc = SQLITE_OK;
    while ((rc = query.step()) == SQLITE_ROW) {
        auto record = readTuning(query, where);
        if (record)
            recall.records.push_back(std::move(*record));
        else
            recall.problems << QString::fromStdString(record.error());
    }
    if (rc != SQLITE_DONE)
        return failure(where, "cannot read the tuning cache", query);
    return recall;
}

Expected<int> ExperienceLibrary::tuningCount(const QString& task) {
    Statement query(m_db, "SELECT count(*) FROM tuning WHERE ? = '' OR task = ?");
    query.bindText(1, task).bindText(2, task);
    if (query.step() != SQLITE_ROW)
        return failure(whereOf(m_path), "cannot count the tuning cache's records", query);
    return static_cast<int>(query.int64(0));
}

Expected<int> ExperienceLibrary::forgetTuning(const QString& task) {
    const std::string where = whereOf(m_path);
    Transaction transaction(m_db, where);
    if (!transaction.begun())
        return Error{transaction.begun().error()};
    Statement remove(m_db, "DELETE FROM tuning WHERE ? = '' OR task = ?");
    remove.bindText(1, task).bindText(2, task);
    if (!remove.run())
        return failure(where, "cannot clear the tuning cache", remove);
    const int removed = static_cast<int>(sqlite3_changes64(m_db));
    if (auto committed = transaction.commit(); !committed)
        return Error{committed.error()};
    return removed;
}

} // namespace kforge::experience
