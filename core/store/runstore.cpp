#include "store/runstore.h"

#include "util/logging.h"
#include "util/numbers.h"
#include "util/sqlitedb.h"

#include <sqlite3.h>

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QSysInfo>
#include <QThread>
#include <QUrl>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge::store {

using spec::Error;
using spec::fail;
using spec::success;

namespace sqlite = util::sqlite;
using sqlite::failure;
using sqlite::parseTimestamp;
using sqlite::readRows;
using sqlite::Statement;
using sqlite::TextPool;
using sqlite::timestamp;

namespace {

// "kfrg" in the header's application id: how a kforge run store recognises its own files.
constexpr std::int32_t kApplicationId = 0x6b667267;
const sqlite::FileKind kKind{"run store", "a"};

// Schema scripts, index = the version they produce; version 0 is the empty file. Append a script
// for each change and never edit one that has shipped: every store is upgraded through all of them
// in one transaction when it is opened.
const std::vector<const char*> kMigrations = {
    "",
    R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, since people refer to runs by id
    name TEXT NOT NULL,
    task TEXT NOT NULL,
    task_dir TEXT NOT NULL,
    backend TEXT NOT NULL,
    variant TEXT NOT NULL,
    config_json TEXT NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    best_candidate INTEGER, -- NULL until a best is confirmed
    best_speedup REAL NOT NULL DEFAULT 0,
    evaluations INTEGER NOT NULL DEFAULT 0,
    wall_seconds REAL NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE candidates (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id INTEGER NOT NULL,
    source TEXT NOT NULL,
    params_json TEXT NOT NULL,
    island INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    origin TEXT NOT NULL,
    label TEXT NOT NULL,
    key TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    vetoed INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE INDEX candidates_key ON candidates(run_id, key);

CREATE TABLE candidate_parents (
    run_id INTEGER NOT NULL,
    child INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (run_id, child, position),
    FOREIGN KEY (run_id, child) REFERENCES candidates(run_id, id) ON DELETE CASCADE,
    FOREIGN KEY (run_id, parent) REFERENCES candidates(run_id, id) ON DELETE CASCADE
);
CREATE INDEX candidate_parents_parent ON candidate_parents(run_id, parent);

CREATE TABLE evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL,
    candidate_id INTEGER NOT NULL,
    purpose TEXT NOT NULL,
    status TEXT NOT NULL,
    speedup REAL,
    candidate_us REAL,
    baseline_us REAL,
    message TEXT NOT NULL,
    device TEXT NOT NULL,
    wall_seconds REAL NOT NULL,
    result_json TEXT NOT NULL, -- the whole result; the columns above are for queries
    at TEXT NOT NULL,
    FOREIGN KEY (run_id, candidate_id) REFERENCES candidates(run_id, id) ON DELETE CASCADE
);
CREATE INDEX evaluations_candidate ON evaluations(run_id, candidate_id);

CREATE TABLE diagnostics (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    candidate_id INTEGER NOT NULL,
    evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,
    role TEXT NOT NULL,
    line INTEGER NOT NULL,
    "column" INTEGER NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX diagnostics_candidate ON diagnostics(run_id, candidate_id);
CREATE INDEX diagnostics_evaluation ON diagnostics(evaluation_id);

CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data_json TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX events_run ON events(run_id, id);
)sql",
    // 2: diagnosis and roofline per evaluation; the review queue for suspicious results.
    R"sql(
ALTER TABLE evaluations ADD COLUMN findings_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE evaluations ADD COLUMN roofline_json TEXT NOT NULL DEFAULT '{}';

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    candidate_id INTEGER NOT NULL,
    reason TEXT NOT NULL,
    state TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    decided TEXT,
    UNIQUE(run_id, candidate_id),
    FOREIGN KEY (run_id, candidate_id) REFERENCES candidates(run_id, id) ON DELETE CASCADE
);
CREATE INDEX reviews_state ON reviews(run_id, state);
)sql",
    // 3: every LLM call with its tokens, cost, prompt and answer; the evolving prompt strategies.
    R"sql(
CREATE TABLE llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    island INTEGER NOT NULL,
    operator TEXT NOT NULL,      -- init, mutate, crossover, repair, meta
    stage TEXT NOT NULL,         -- structure, tuning ('' for meta)
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    strategy_id INTEGER,         -- the prompt strategy used; NULL for meta calls
    parents_json TEXT NOT NULL,  -- candidate ids shown in the prompt
    candidate_id INTEGER,        -- the candidate made from the answer; NULL when none
    status TEXT NOT NULL,        -- ok, or the error kind (rate_limited, unparsable, duplicate ...)
    message TEXT NOT NULL,
    input_tokens INTEGER,        -- NULL: the server never said
    output_tokens INTEGER,
    cost_usd REAL,               -- NULL: unknown (no usage or no price for the model)
    latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL,
    system_prompt TEXT NOT NULL,
    prompt TEXT NOT NULL,
    answer TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX llm_calls_run ON llm_calls(run_id, id);

CREATE TABLE strategies (
    id INTEGER NOT NULL,         -- assigned by the engine, unique within the run
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    stage TEXT NOT NULL,
    parent INTEGER,              -- the strategy it was rewritten from
    seed TEXT NOT NULL,          -- the built-in seed it descends from
    generation INTEGER NOT NULL, -- when it was added
    text TEXT NOT NULL,
    retired INTEGER NOT NULL DEFAULT 0,
    at TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
)sql",
    // 4: the behaviour cell of each evaluation ("1,3,0"), so views place candidates without
    // reading sources; NULL for evaluations stored before.
    R"sql(
ALTER TABLE evaluations ADD COLUMN cell TEXT;
)sql",
    // 5: the islands' archives as the engine holds them, so views show its elites (migrants
    // included) instead of re-deriving them. Replaced whenever they change.
    R"sql(
CREATE TABLE archive_members (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    island INTEGER NOT NULL,
    cell TEXT NOT NULL,          -- "1,3,0"
    candidate_id INTEGER NOT NULL,
    speedup REAL NOT NULL,
    PRIMARY KEY (run_id, island, cell)
);
ALTER TABLE runs ADD COLUMN archives_stored INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6: the operator a language model applied, for a kernel it wrote (NULL for every other
    // kernel); earlier runs said it only in the label ("llm mutate of #12 (...)").
    R"sql(
ALTER TABLE candidates ADD COLUMN llm_operator TEXT;
UPDATE candidates SET llm_operator = CASE
    WHEN label LIKE 'llm init%' THEN 'init'
    WHEN label LIKE 'llm mutate%' THEN 'mutate'
    WHEN label LIKE 'llm crossover%' THEN 'crossover'
    WHEN label LIKE 'llm repair%' THEN 'repair'
END WHERE origin = 'llm';
)sql",
    // 7: how the template tuner found each of its kernels (neighbour, random, model, cache); NULL
    // for every other kernel, and for the tuner's kernels of earlier runs, which were all neighbours
    // or random restarts and said nothing of which.
    R"sql(
ALTER TABLE candidates ADD COLUMN tuner_strategy TEXT;
)sql",
    // 8: steering made on a stored run (pin, veto, an edited kernel, a review decision), kept until
    // the run is resumed and the engine applies it; `applied` is when it did.
    R"sql(
CREATE TABLE queued_commands (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    command_json TEXT NOT NULL,
    queued TEXT NOT NULL,
    applied TEXT
);
CREATE INDEX queued_commands_by_run ON queued_commands(run_id, applied);
)sql",
    // 9: what the compiler made of a candidate (PTX, SASS) for a target, as a worker listed it,
    // kept so that it is listed once.
    R"sql(
CREATE TABLE listings (
    run_id INTEGER NOT NULL,
    candidate_id INTEGER NOT NULL,
    target INTEGER NOT NULL, -- the compute capability asked for, e.g. 90
    listing_json TEXT NOT NULL,
    made TEXT NOT NULL,
    PRIMARY KEY (run_id, candidate_id, target),
    FOREIGN KEY (run_id, candidate_id) REFERENCES candidates(run_id, id) ON DELETE CASCADE
);
)sql",
    // 10: the prompt tokens an LLM call read from the API's prompt cache and wrote to it (part of
    // input_tokens, priced apart); NULL where the server did not say.
    R"sql(
ALTER TABLE llm_calls ADD COLUMN cached_input_tokens INTEGER;
ALTER TABLE llm_calls ADD COLUMN cache_write_tokens INTEGER;
)sql",
};

std::optional<qint64> optionalInt(const Statement& row, int column) {
    if (row.isNull(column))
        return std::nullopt;
    return row.int64(column);
}

std::optional<double> optionalReal(const Statement& row, int column) {
    if (row.isNull(column))
        return std::nullopt;
    return row.real(column);
}

// A stored evaluation result (result_json, in the wire format); `what` names the evaluation in
// messages.
Expected<protocol::EvaluateResult> decodeResult(const std::string& text, const std::string& what) {
    auto decoded = protocol::decodeEvaluateResult(text);
    if (!decoded)
        return fail(what + ": " + decoded.error());
    return std::move(*decoded);
}

std::optional<model::Cell> parseCell(const QString& text) {
    const QStringList parts = text.split(QLatin1Char(','));
    if (parts.size() != model::kDimensions)
        return std::nullopt;
    model::Cell cell{};
    for (int d = 0; d < model::kDimensions; ++d) {
        bool ok = false;
        cell[static_cast<size_t>(d)] = parts[d].toInt(&ok);
        if (!ok)
            return std::nullopt;
    }
    return cell;
}

QString cellText(const model::Cell& cell) {
    QStringList parts;
    for (int level : cell)
        parts << QString::number(level);
    return parts.join(QLatin1Char(','));
}

std::string number(qint64 n) {
    return std::to_string(n);
}

// The end of a query that reads a Slice of a run's rows, from "WHERE": `run` (the run id column) and
// `candidate` (what names the candidate) are the table's. Reading one candidate's rows and reading
// every row after an id are different query texts, so that SQLite picks an index for each: one text
// for both ("(? = 0 OR candidate_id = ?)") can use no index for the candidate, and left SQLite
// walking every row of the run, then sorting, for each chunk a reader took of a big run.
std::string sliceWhere(const Slice& slice, const char* run, const char* candidate) {
    std::string where = std::string(" WHERE ") + run + " = ?";
    if (slice.candidate != 0)
        where += std::string(" AND ") + candidate + " = ?";
    return where + " AND id > ? ORDER BY id LIMIT ?";
}

// Evaluations have no index on (run_id, id): a run's rows after an id are read by walking the table
// by its integer key, which stops after `limit` rows (the unary + keeps SQLite from taking all of
// the run's rows out of the candidate index and sorting them instead); one candidate's rows come
// out of that index, in id order.
const char* evaluationsRun(const Slice& slice) {
    return slice.candidate == 0 ? "+run_id" : "run_id";
}

// Binds the run and a Slice to the placeholders of sliceWhere(), the run's at `first`.
void bindSlice(Statement& query, qint64 runId, const Slice& slice, int first) {
    query.bindInt(first++, runId);
    if (slice.candidate != 0)
        query.bindInt(first++, slice.candidate);
    query.bindInt(first, slice.afterId).bindInt(first + 1, slice.limit);
}

QString now() {
    return timestamp(QDateTime::currentDateTimeUtc());
}

std::string compactJson(const QJsonObject& object) {
    return QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString();
}

std::optional<QJsonObject> parseObject(const std::string& text) {
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(text), &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return std::nullopt;
    return document.object();
}

// The schema version of an open file: 0 for an empty one (to be created), or an error when the
// file belongs to someone else.
Expected<int> storedVersion(sqlite3* db, const std::string& where) {
    auto contents = sqlite::inspect(db, where, kKind);
    if (!contents)
        return Error{contents.error()};
    if (contents->applicationId != kApplicationId) {
        if (contents->applicationId != 0)
            return sqlite::foreignApplication(where, kKind, contents->applicationId);
        if (!contents->anyTable)
            return 0;
        if (!contents->versionTable)
            return fail(where + ": not a kforge run store (no schema_version table)");
        return fail(where + ": not a kforge run store (it has a schema_version table but no kforge application id)");
    }
    return sqlite::readVersion(db, where, kKind, *contents);
}

Error newer(const std::string& where, int version) {
    return fail(where + ": written by a newer kforge (schema " + std::to_string(version) + ", this build reads up to "
                + std::to_string(RunStore::schemaVersion()) + ")");
}

// A stored name this build does not know (a damaged file, or one a newer kforge wrote): named with
// its row, never guessed.
Error unknownName(const std::string& row, const char* field, const QString& value, const char* known) {
    return fail(row + " has an unknown " + field + " '" + value.toStdString() + "' (known: " + known + ")");
}

std::string evaluationWhat(const std::string& where, qint64 id, qint64 runId) {
    return where + ": evaluation " + std::to_string(id) + " of run " + std::to_string(runId);
}

// The columns every evaluation row starts with: id, candidate, purpose.
template <typename Record>
Expected<Record> readEvaluationHead(const Statement& row, const std::string& where, qint64 runId) {
    Record e;
    e.id = row.int64(0);
    e.candidateId = row.int64(1);
    const auto purpose = model::parsePurpose(row.text(2));
    if (!purpose)
        return unknownName(evaluationWhat(where, e.id, runId), "purpose", row.text(2), "search, confirm, yardstick");
    e.purpose = *purpose;
    return e;
}

constexpr std::string_view kRunColumns = "id, name, task, task_dir, backend, variant, config_json, state, message, "
                                         "created, updated, best_candidate, best_speedup, evaluations, wall_seconds, "
                                         "generation";

Expected<RunRecord> readRun(const Statement& row, const std::string& where) {
    RunRecord r;
    r.id = row.int64(0);
    r.name = row.text(1);
    r.task = row.text(2);
    r.taskDir = row.text(3);
    const auto backend = model::parseBackend(row.text(4));
    if (!backend)
        return unknownName(where + ": run " + number(r.id), "backend", row.text(4), "cuda, opencl");
    r.backend = *backend;
    r.variant = row.text(5);
    auto config = parseObject(row.utf8(6));
    if (!config)
        return fail(where + ": run " + number(r.id) + ": its configuration is not a JSON object");
    r.config = *config;
    const auto state = model::parseRunState(row.text(7));
    if (!state)
        return unknownName(where + ": run " + number(r.id), "state", row.text(7),
                           "starting, running, pausing, paused, stopping, finished, stopped, failed");
    r.state = *state;
    r.message = row.text(8);
    r.created = parseTimestamp(row.text(9));
    r.updated = parseTimestamp(row.text(10));
    r.bestCandidate = row.isNull(11) ? 0 : row.int64(11);
    r.bestSpeedup = row.real(12);
    r.evaluations = row.int64(13);
    r.wallSeconds = row.real(14);
    r.generation = static_cast<int>(row.int64(15));
    return r;
}

} // namespace

RunStore::RunStore(sqlite3* db, QString path) : m_db(db), m_path(std::move(path)) {}

namespace {

constexpr int kWriteAttempts = 3;

bool isBusy(int code) {
    const int primary = code & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

} // namespace

template <typename T, typename Body> Expected<T> RunStore::write(Body&& body) {
    for (int attempt = 1;; ++attempt) {
        int code = SQLITE_OK;
        Expected<T> result = [&]() -> Expected<T> {
            Transaction transaction(*this);
            if (auto begun = transaction.begun(); !begun) {
                code = m_lastFailure;
                return Error{begun.error()};
            }
            Expected<T> r = body();
            if (!r) {
                code = sqlite3_extended_errcode(m_db); // before the rollback clears it
                return r;                              // rolled back by the transaction (or marks the enclosing one)
            }
            if (auto committed = transaction.commit(); !committed) {
                code = m_lastFailure;
                return Error{committed.error()};
            }
            return r;
        }();
        // Only a whole transaction can be tried again: inside the caller's, the failure is the
        // caller's to handle.
        if (result || m_transactionDepth > 0 || attempt >= kWriteAttempts || !isBusy(code))
            return result;
        qCInfo(lcStore).noquote() << m_path << "is held by another connection; trying again:"
                                  << QString::fromStdString(result.error());
        QThread::msleep(200UL * static_cast<unsigned long>(attempt));
    }
}

RunStore::~RunStore() {
    // A reader of the file itself (not of an upgraded copy in memory) leaves no -wal/-shm behind.
    const bool fileReader = sqlite3_db_readonly(m_db, "main") == 1;
    if (sqlite3_close_v2(m_db) != SQLITE_OK)
        qCWarning(lcStore).noquote() << m_path << "did not close cleanly:" << sqlite3_errmsg(m_db);
    else if (fileReader)
        sqlite::tidyAfterReading(m_path);
}

int RunStore::schemaVersion() {
    return static_cast<int>(kMigrations.size()) - 1;
}

std::string RunStore::where() const {
    return sqlite::whereOf(m_path);
}

Expected<std::unique_ptr<RunStore>> RunStore::open(const QString& path, OpenMode mode) {
    const std::string where = sqlite::whereOf(path);
    if (auto header = sqlite::checkHeader(path, where, kKind); !header)
        return Error{header.error()};
    if (mode == OpenMode::ReadOnly)
        return openForReading(path);

    auto db = sqlite::open(path, where);
    if (!db)
        return Error{db.error()};
    std::unique_ptr<RunStore> store(new RunStore(*db, path)); // closes it on every path

    // Recognise the file before changing anything in it: a foreign database is left as it was.
    auto version = storedVersion(*db, where);
    if (!version)
        return Error{version.error()};
    if (*version > schemaVersion())
        return newer(where, *version);
    if (auto configured = store->configure(); !configured)
        return Error{configured.error()};
    if (*version < schemaVersion()) {
        if (auto migrated = store->migrate(); !migrated)
            return Error{migrated.error()};
    }
    return Expected<std::unique_ptr<RunStore>>(std::move(store));
}

namespace {

// Opens the file for reading only, as a URI so that SQLite's read-only flags apply.
Expected<sqlite3*> openReadOnly(const QString& path, const std::string& where, bool immutable) {
    QByteArray uri = QUrl::fromLocalFile(QFileInfo(path).absoluteFilePath()).toEncoded();
    uri += immutable ? "?immutable=1" : "?mode=ro";
    sqlite3* db = nullptr;
    // A connection belongs to one thread (see RunStore): without SQLite's own mutex around every call,
    // reading a million rows no longer takes and releases a lock per column read.
    const int rc =
        sqlite3_open_v2(uri.constData(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        Error error = fail(where + ": cannot be opened for reading: " + (db ? sqlite3_errmsg(db) : "out of memory"));
        sqlite3_close_v2(db);
        return error;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

} // namespace

Expected<std::unique_ptr<RunStore>> RunStore::openForReading(const QString& path) {
    const std::string where = sqlite::whereOf(path);
    if (!QFileInfo::exists(path))
        return fail(where + ": no such run store");
    auto db = openReadOnly(path, where, false);
    if (!db)
        return Error{db.error()};
    std::unique_ptr<RunStore> store(new RunStore(*db, path));
    store->m_readOnly = true;
    auto version = storedVersion(*db, where);
    if (!version) {
        // A WAL file needs its index (the -shm file) even to be read; where that cannot be made
        // (a read-only folder or file system) the file is read as immutable, which is exact as
        // long as no unfinished write-ahead log lies beside it.
        const QFileInfo wal(path + QStringLiteral("-wal"));
        if (wal.exists() && wal.size() > 0)
            return Error{version.error() + " (its write-ahead log " + sqlite::whereOf(wal.filePath())
                         + " holds writes not yet in the file: open it once where it can be written)"};
        auto immutable = openReadOnly(path, where, true);
        if (!immutable)
            return Error{version.error()};
        store.reset(new RunStore(*immutable, path));
        store->m_readOnly = true;
        version = storedVersion(*immutable, where);
        if (!version)
            return Error{version.error()};
    }
    if (*version > schemaVersion())
        return newer(where, *version);
    // Only writing makes a run store of an empty file or database; a reader names what it found.
    if (*version == 0)
        return fail(where
                    + (QFileInfo(path).size() == 0 ? ": is empty, not a kforge run store"
                                                   : ": not a kforge run store (an empty SQLite database)"));
    if (*version == schemaVersion())
        return Expected<std::unique_ptr<RunStore>>(std::move(store));

    // An older schema is read through a copy in memory, upgraded there: the file stays as it was
    // (another kforge may still write it), and every reader sees the current schema.
    sqlite3* memory = nullptr;
    if (sqlite3_open_v2(":memory:", &memory, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        sqlite3_close_v2(memory);
        return fail(where + ": cannot be read (no memory for a copy of its older schema)");
    }
    sqlite3_extended_result_codes(memory, 1);
    sqlite3_backup* backup = sqlite3_backup_init(memory, "main", store->m_db, "main");
    const int copied = backup ? sqlite3_backup_step(backup, -1) : sqlite3_errcode(memory);
    sqlite3_backup_finish(backup);
    if (copied != SQLITE_DONE) {
        Error error = fail(where + ": cannot be read: " + sqlite3_errstr(copied));
        sqlite3_close_v2(memory);
        return error;
    }
    std::unique_ptr<RunStore> copy(new RunStore(memory, path));
    if (auto keys = copy->exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys"); !keys)
        return Error{keys.error()};
    if (auto migrated = copy->migrate(); !migrated)
        return Error{migrated.error()};
    copy->m_readOnly = true;
    qCDebug(lcStore).noquote() << path << "has schema" << *version << "; read through an upgraded copy in memory";
    return Expected<std::unique_ptr<RunStore>>(std::move(copy));
}

Status RunStore::configure() {
    return sqlite::configure(m_db, m_path, where(), lcStore(), true);
}

Status RunStore::migrate() {
    Transaction transaction(*this);
    if (auto begun = transaction.begun(); !begun)
        return begun;
    // Again, inside the lock: another process may have created or upgraded the file meanwhile.
    auto version = storedVersion(m_db, where());
    if (!version)
        return Error{version.error()};
    if (*version > schemaVersion())
        return newer(where(), *version);
    if (*version == schemaVersion())
        return transaction.commit();

    if (auto s = sqlite::upgrade(m_db, where(), kKind, kMigrations, *version, kApplicationId); !s)
        return s;
    if (*version == 0)
        qCDebug(lcStore).noquote() << m_path << "created with schema" << schemaVersion();
    else
        qCInfo(lcStore).noquote() << m_path << "upgraded from schema" << *version << "to" << schemaVersion();
    return transaction.commit();
}

Status RunStore::exec(const char* sql, const std::string& what) {
    Status done = sqlite::exec(m_db, sql, where(), what);
    if (!done)
        m_lastFailure = sqlite3_extended_errcode(m_db);
    return done;
}

void RunStore::rollback() {
    // Some errors (I/O, disk full, busy) already rolled the transaction back.
    if (sqlite3_get_autocommit(m_db))
        return;
    if (auto s = exec("ROLLBACK", "cannot roll back"); !s)
        qCWarning(lcStore).noquote() << QString::fromStdString(s.error());
}

Status RunStore::requireRun(qint64 runId) {
    Statement query(m_db, "SELECT 1 FROM runs WHERE id = ?");
    const int rc = query.bindInt(1, runId).step();
    if (rc == SQLITE_ROW)
        return success();
    if (rc == SQLITE_DONE)
        return fail(where() + ": run " + number(runId) + " does not exist");
    return failure(where(), "cannot look up run " + number(runId), query);
}

Status RunStore::requireCandidate(qint64 runId, qint64 candidateId) {
    if (auto s = requireRun(runId); !s)
        return s;
    Statement query(m_db, "SELECT 1 FROM candidates WHERE run_id = ? AND id = ?");
    const int rc = query.bindInt(1, runId).bindInt(2, candidateId).step();
    if (rc == SQLITE_ROW)
        return success();
    if (rc == SQLITE_DONE)
        return fail(where() + ": run " + number(runId) + " has no candidate " + number(candidateId));
    return failure(where(), "cannot look up candidate " + number(candidateId) + " of run " + number(runId), query);
}

// --- Transaction ---

RunStore::Transaction::Transaction(RunStore& store) : m_store(store), m_begun(success()) {
    if (m_store.m_readOnly) {
        m_begun = fail(m_store.where() + ": opened for reading only; nothing can be written");
        m_done = true;
        return;
    }
    if (m_store.m_transactionDepth == 0) {
        // IMMEDIATE takes the write lock now (waiting up to the busy timeout), so a transaction
        // never fails halfway because another writer got there first.
        m_begun = m_store.exec("BEGIN IMMEDIATE", "cannot start a write transaction");
        if (!m_begun) {
            m_done = true;
            return;
        }
        m_outermost = true;
        m_store.m_rollbackOnly = false;
    }
    ++m_store.m_transactionDepth;
}

RunStore::Transaction::~Transaction() {
    if (m_done)
        return;
    --m_store.m_transactionDepth;
    if (m_outermost)
        m_store.rollback();
    else
        m_store.m_rollbackOnly = true; // its writes cannot be undone alone; the outermost must not commit them
}

Status RunStore::Transaction::commit() {
    if (!m_begun)
        return m_begun;
    if (m_done)
        return fail(m_store.where() + ": the transaction was already committed");
    m_done = true;
    --m_store.m_transactionDepth;
    if (!m_outermost)
        return success();
    if (m_store.m_rollbackOnly) {
        m_store.rollback();
        return fail(m_store.where()
                    + ": nothing was written: a write inside the transaction failed and all of it was rolled back");
    }
    if (auto committed = m_store.exec("COMMIT", "cannot commit"); !committed) {
        m_store.rollback();
        return committed;
    }
    return success();
}

// --- Runs ---

Expected<qint64> RunStore::createRun(const RunRecord& record) {
    return write<qint64>([&]() -> Expected<qint64> {
        const QString created = record.created.isValid() ? timestamp(record.created) : now();
        const QString updated = record.updated.isValid() ? timestamp(record.updated) : created;
        const QString name = record.name.isEmpty()
                                 ? QStringLiteral("%1 on %2").arg(record.task, model::backendName(record.backend))
                                 : record.name;
        Statement insert(m_db, "INSERT INTO runs(name, task, task_dir, backend, variant, config_json, state, message, "
                               "created, updated, best_candidate, best_speedup, evaluations, wall_seconds, generation) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bindText(1, name)
            .bindText(2, record.task)
            .bindText(3, record.taskDir)
            .bindText(4, model::backendName(record.backend))
            .bindText(5, record.variant)
            .bindText(6, compactJson(record.config))
            .bindText(7, model::runStateName(record.state))
            .bindText(8, record.message)
            .bindText(9, created)
            .bindText(10, updated);
        if (record.bestCandidate != 0)
            insert.bindInt(11, record.bestCandidate);
        else
            insert.bindNull(11);
        insert.bindDouble(12, record.bestSpeedup)
            .bindInt(13, record.evaluations)
            .bindDouble(14, record.wallSeconds)
            .bindInt(15, record.generation);
        if (!insert.run())
            return failure(where(), "cannot create a run", insert);
        return sqlite3_last_insert_rowid(m_db);
    });
}

Status RunStore::updateRun(const RunRecord& record) {
    return write<spec::Done>([&]() -> Status {
        // `updated` is the store's: the time of this write, whatever the record says.
        Statement update(m_db, "UPDATE runs SET name = ?, task = ?, task_dir = ?, backend = ?, variant = ?, "
                               "config_json = ?, state = ?, message = ?, updated = ?, best_candidate = ?, "
                               "best_speedup = ?, evaluations = ?, wall_seconds = ?, generation = ? WHERE id = ?");
        update.bindText(1, record.name)
            .bindText(2, record.task)
            .bindText(3, record.taskDir)
            .bindText(4, model::backendName(record.backend))
            .bindText(5, record.variant)
            .bindText(6, compactJson(record.config))
            .bindText(7, model::runStateName(record.state))
            .bindText(8, record.message)
            .bindText(9, now());
        if (record.bestCandidate != 0)
            update.bindInt(10, record.bestCandidate);
        else
            update.bindNull(10);
        update.bindDouble(11, record.bestSpeedup)
            .bindInt(12, record.evaluations)
            .bindDouble(13, record.wallSeconds)
            .bindInt(14, record.generation)
            .bindInt(15, record.id);
        if (!update.run())
            return failure(where(), "cannot update run " + number(record.id), update);
        if (sqlite3_changes64(m_db) == 0)
            return fail(where() + ": run " + number(record.id) + " does not exist");
        return success();
    });
}

Expected<QList<RunRecord>> RunStore::runs() {
    Statement query(m_db,
                    std::string("SELECT ") + std::string(kRunColumns) + " FROM runs ORDER BY created DESC, id DESC");
    const auto read = [&](const Statement& row) -> Expected<RunRecord> {
        auto run = readRun(row, where());
        if (!run)
            return Error{run.error()};
        return std::move(*run);
    };
    return readRows<RunRecord>(query, where(), "cannot list the runs", read);
}

Expected<RunRecord> RunStore::run(qint64 runId) {
    Statement query(m_db, std::string("SELECT ") + std::string(kRunColumns) + " FROM runs WHERE id = ?");
    const int rc = query.bindInt(1, runId).step();
    if (rc == SQLITE_DONE)
        return fail(where() + ": run " + number(runId) + " does not exist");
    if (rc != SQLITE_ROW)
        return failure(where(), "cannot read run " + number(runId), query);
    return readRun(query, where());
}

// --- Candidates ---

Status RunStore::insertCandidate(qint64 runId, const model::Candidate& candidate) {
    return write<spec::Done>([&]() -> Status {
        const std::string what = "candidate " + number(candidate.id) + " of run " + number(runId);
        if (auto s = requireRun(runId); !s)
            return s;
        QJsonObject params;
        for (const auto& [name, value] : candidate.params)
            params.insert(QString::fromStdString(name), static_cast<qint64>(value));

        Statement insert(m_db, "INSERT INTO candidates(run_id, id, source, params_json, island, generation, origin, "
                               "label, key, pinned, vetoed, created, llm_operator, tuner_strategy) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bindInt(1, runId)
            .bindInt(2, candidate.id)
            .bindText(3, candidate.source)
            .bindText(4, compactJson(params))
            .bindInt(5, candidate.island)
            .bindInt(6, candidate.generation)
            .bindText(7, model::originName(candidate.origin))
            .bindText(8, candidate.label)
            .bindText(9, candidate.key)
            .bindInt(10, candidate.pinned ? 1 : 0)
            .bindInt(11, candidate.vetoed ? 1 : 0)
            .bindText(12, now());
        if (candidate.llmOperator)
            insert.bindText(13, model::llmOperatorName(*candidate.llmOperator));
        else
            insert.bindNull(13);
        if (candidate.tunerStrategy)
            insert.bindText(14, model::tunerStrategyName(*candidate.tunerStrategy));
        else
            insert.bindNull(14);
        if (!insert.run()) {
            if (insert.code() == SQLITE_CONSTRAINT_PRIMARYKEY)
                return fail(where() + ": " + what + " already exists");
            return failure(where(), "cannot write " + what, insert);
        }

        for (qsizetype i = 0; i < candidate.parents.size(); ++i) {
            const qint64 parent = candidate.parents.at(i);
            // Named here rather than left to the foreign key, whose message says only "failed".
            if (!requireCandidate(runId, parent))
                return fail(where() + ": " + what + " names parent " + number(parent) + ", which does not exist");
            Statement link(m_db, "INSERT INTO candidate_parents(run_id, child, parent, position) VALUES (?, ?, ?, ?)");
            if (!link.bindInt(1, runId).bindInt(2, candidate.id).bindInt(3, parent).bindInt(4, i).run())
                return failure(where(), "cannot write the parents of " + what, link);
        }
        return success();
    });
}

Status RunStore::setCandidateFlags(qint64 runId, qint64 candidateId, bool pinned, bool vetoed) {
    return write<spec::Done>([&]() -> Status {
        Statement update(m_db, "UPDATE candidates SET pinned = ?, vetoed = ? WHERE run_id = ? AND id = ?");
        update.bindInt(1, pinned ? 1 : 0).bindInt(2, vetoed ? 1 : 0).bindInt(3, runId).bindInt(4, candidateId);
        if (!update.run())
            return failure(where(), "cannot flag candidate " + number(candidateId) + " of run " + number(runId),
                           update);
        if (sqlite3_changes64(m_db) == 0)
            return requireCandidate(runId, candidateId); // names the run or the candidate that is missing
        return success();
    });
}

Expected<qint64> RunStore::candidateCount(qint64 runId, qint64 afterId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db, "SELECT COUNT(*) FROM candidates WHERE run_id = ? AND id > ?");
    query.bindInt(1, runId).bindInt(2, afterId);
    if (query.step() != SQLITE_ROW)
        return failure(where(), "cannot count the candidates of run " + number(runId), query);
    return query.int64(0);
}

Expected<std::pair<QList<qint64>, QList<qint64>>> RunStore::flaggedCandidates(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db, "SELECT id, pinned, vetoed FROM candidates WHERE run_id = ? AND (pinned != 0 OR vetoed != 0) "
                          "ORDER BY id");
    query.bindInt(1, runId);
    std::pair<QList<qint64>, QList<qint64>> flagged;
    int rc = SQLITE_OK;
    while ((rc = query.step()) == SQLITE_ROW) {
        if (query.int64(1) != 0)
            flagged.first.push_back(query.int64(0));
        if (query.int64(2) != 0)
            flagged.second.push_back(query.int64(0));
    }
    if (rc != SQLITE_DONE)
        return failure(where(), "cannot read the pinned and vetoed candidates of run " + number(runId), query);
    return flagged;
}

Expected<QList<model::Candidate>> RunStore::candidates(qint64 runId, const Slice& slice) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    QList<model::Candidate> result;
    Statement query(
        m_db, "SELECT id, CASE WHEN ? THEN source ELSE '' END, params_json, island, generation, origin, label, key, "
              "pinned, vetoed, llm_operator, tuner_strategy FROM candidates"
                  + sliceWhere(slice, "run_id", "id"));
    query.bindInt(1, slice.withSource ? 1 : 0);
    bindSlice(query, runId, slice, 2);
    int rc = SQLITE_OK;
    while ((rc = query.step()) == SQLITE_ROW) {
        model::Candidate c;
        c.id = query.int64(0);
        const std::string what = "candidate " + number(c.id) + " of run " + number(runId);
        c.source = query.text(1);
        const auto params = parseObject(query.utf8(2));
        if (!params)
            return fail(where() + ": " + what + ": its parameters are not a JSON object");
        for (auto it = params->begin(); it != params->end(); ++it) {
            const QJsonValue value = it.value();
            if (!value.isDouble() || value.toDouble() != static_cast<double>(value.toInteger()))
                return fail(where() + ": " + what + ": parameter '" + it.key().toStdString() + "' is not an integer");
            c.params[it.key().toStdString()] = value.toInteger();
        }
        c.island = static_cast<int>(query.int64(3));
        c.generation = static_cast<int>(query.int64(4));
        const auto origin = model::parseOrigin(query.text(5));
        if (!origin)
            return fail(where() + ": " + what + ": unknown origin '" + query.utf8(5) + "'");
        c.origin = *origin;
        c.label = query.text(6);
        c.key = query.text(7);
        c.pinned = query.int64(8) != 0;
        c.vetoed = query.int64(9) != 0;
        if (!query.isNull(10)) {
            const auto op = model::parseLlmOperator(query.text(10));
            if (!op)
                return fail(where() + ": " + what + ": unknown language-model operator '" + query.utf8(10) + "'");
            c.llmOperator = *op;
        }
        if (!query.isNull(11)) {
            const auto strategy = model::parseTunerStrategy(query.text(11));
            if (!strategy)
                return fail(where() + ": " + what + ": unknown tuner strategy '" + query.utf8(11) + "'");
            c.tunerStrategy = *strategy;
        }
        result.push_back(std::move(c));
    }
    if (rc != SQLITE_DONE)
        return failure(where(), "cannot read the candidates of run " + number(runId), query);

    // Parents come in one query and are matched by id: both lists are in id order. A candidate
    // committed between the two queries has no entry in `result`, and is skipped.
    if (result.isEmpty())
        return result;
    Statement links(m_db, "SELECT child, parent FROM candidate_parents WHERE run_id = ? AND child >= ? AND child <= ? "
                          "ORDER BY child, position");
    links.bindInt(1, runId).bindInt(2, result.front().id).bindInt(3, result.back().id);
    qsizetype at = 0;
    while ((rc = links.step()) == SQLITE_ROW) {
        const qint64 child = links.int64(0);
        while (at < result.size() && result[at].id < child)
            ++at;
        if (at < result.size() && result[at].id == child)
            result[at].parents.push_back(links.int64(1));
    }
    if (rc != SQLITE_DONE)
        return failure(where(), "cannot read the lineage of run " + number(runId), links);
    return result;
}

// --- Evaluations ---

Expected<qint64> RunStore::insertEvaluation(qint64 runId, qint64 candidateId, model::EvaluationPurpose purpose,
                                            const protocol::EvaluateResult& result, const QJsonArray& findings,
                                            const QJsonObject& roofline, const std::optional<model::Cell>& cell) {
    return write<qint64>([&]() -> Expected<qint64> {
        if (auto s = requireCandidate(runId, candidateId); !s)
            return Error{s.error()};
        const std::string what = "an evaluation of candidate " + number(candidateId) + " of run " + number(runId);
        Statement insert(m_db, "INSERT INTO evaluations(run_id, candidate_id, purpose, status, speedup, candidate_us, "
                               "baseline_us, message, device, wall_seconds, result_json, at, findings_json, "
                               "roofline_json, cell) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bindInt(1, runId)
            .bindInt(2, candidateId)
            .bindText(3, model::purposeName(purpose))
            .bindText(4, protocol::statusName(result.status))
            .bindDouble(5, result.speedup)
            .bindDouble(6,
                        result.candidateTiming ? std::optional<double>(result.candidateTiming->medianUs) : std::nullopt)
            .bindDouble(7,
                        result.baselineTiming ? std::optional<double>(result.baselineTiming->medianUs) : std::nullopt)
            .bindText(8, result.message)
            .bindText(9, result.device)
            .bindDouble(10, result.wallSeconds)
            .bindText(11, protocol::encode(result))
            .bindText(12, now())
            .bindText(13, QString::fromUtf8(QJsonDocument(findings).toJson(QJsonDocument::Compact)))
            .bindText(14, QString::fromUtf8(QJsonDocument(roofline).toJson(QJsonDocument::Compact)));
        if (cell)
            insert.bindText(15, cellText(*cell));
        else
            insert.bindNull(15);
        if (!insert.run())
            return failure(where(), "cannot write " + what, insert);
        const qint64 evaluationId = sqlite3_last_insert_rowid(m_db);

        for (const auto& d : result.diagnostics) {
            Statement row(m_db, "INSERT INTO diagnostics(run_id, candidate_id, evaluation_id, kind, severity, role, "
                                "line, \"column\", message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
            row.bindInt(1, runId)
                .bindInt(2, candidateId)
                .bindInt(3, evaluationId)
                .bindText(4, d.kind)
                .bindText(5, d.severity)
                .bindText(6, d.role)
                .bindInt(7, d.line)
                .bindInt(8, d.column)
                .bindText(9, d.message);
            if (!row.run())
                return failure(where(), "cannot write the diagnostics of " + what, row);
        }
        return evaluationId;
    });
}

Expected<QList<EvaluationRecord>> RunStore::evaluations(qint64 runId, const Slice& slice) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db, "SELECT id, candidate_id, purpose, result_json, at, findings_json, roofline_json, cell "
                          "FROM evaluations"
                              + sliceWhere(slice, evaluationsRun(slice), "candidate_id"));
    bindSlice(query, runId, slice, 1);
    return readEvaluations(query, runId);
}

Expected<QList<EvaluationRecord>> RunStore::pytorchEvaluations(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    // PyTorch is timed at the start beside the run's first candidate (its first seed).
    Statement query(m_db, "SELECT id, candidate_id, purpose, result_json, at, findings_json, roofline_json, cell "
                          "FROM evaluations WHERE run_id = ? AND (purpose = 'yardstick' OR (purpose = 'search' AND "
                          "candidate_id = (SELECT MIN(id) FROM candidates WHERE run_id = ?))) ORDER BY id");
    query.bindInt(1, runId).bindInt(2, runId);
    return readEvaluations(query, runId);
}

Expected<QList<EvaluationRecord>> RunStore::readEvaluations(Statement& query, qint64 runId) {
    const auto read = [&](const Statement& row) -> Expected<EvaluationRecord> {
        auto head = readEvaluationHead<EvaluationRecord>(row, where(), runId);
        if (!head)
            return head;
        EvaluationRecord& e = *head;
        auto decoded = decodeResult(row.utf8(3), evaluationWhat(where(), e.id, runId));
        if (!decoded)
            return Error{decoded.error()};
        e.result = std::move(*decoded);
        e.at = parseTimestamp(row.text(4));
        e.findings = QJsonDocument::fromJson(row.text(5).toUtf8()).array();
        e.roofline = QJsonDocument::fromJson(row.text(6).toUtf8()).object();
        if (!row.isNull(7))
            e.cell = parseCell(row.text(7));
        return std::move(e);
    };
    return readRows<EvaluationRecord>(query, where(), "cannot read the evaluations of run " + number(runId), read);
}

Expected<QList<EvaluationSummary>> RunStore::evaluationSummaries(qint64 runId, const Slice& slice) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(
        m_db, "SELECT id, candidate_id, purpose, status, speedup, candidate_us, baseline_us, message, "
              "CASE WHEN json_valid(findings_json) THEN json_array_length(findings_json) END, "
              "CASE WHEN json_valid(findings_json) THEN json_extract(findings_json, '$[0].message') END, "
              "cell, CASE WHEN cell IS NULL AND status <> 'compile_error' THEN result_json END, device, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.intensity') END, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.achieved_flops_per_s') END, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.achieved_bytes_per_s') END, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.bound') END, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.peak_name') END, "
              "CASE WHEN json_valid(roofline_json) THEN json_extract(roofline_json, '$.split_tf32_fraction') END "
              "FROM evaluations"
                  + sliceWhere(slice, evaluationsRun(slice), "candidate_id"));
    bindSlice(query, runId, slice, 1);
    TextPool texts; // statuses, messages, devices and findings repeat across a run's evaluations
    const auto read = [&](const Statement& row) -> Expected<EvaluationSummary> {
        auto head = readEvaluationHead<EvaluationSummary>(row, where(), runId);
        if (!head)
            return head;
        EvaluationSummary& e = *head;
        e.status = row.text(3, texts);
        e.speedup = optionalReal(row, 4);
        e.candidateUs = optionalReal(row, 5);
        e.baselineUs = optionalReal(row, 6);
        e.message = row.text(7, texts);
        e.findingCount = static_cast<int>(optionalInt(row, 8).value_or(0));
        e.topFinding = row.text(9, texts);
        if (!row.isNull(10)) {
            e.cell = parseCell(row.text(10));
        } else if (!row.isNull(11)) { // a compile error has no cell, and nothing to place
            auto decoded = decodeResult(row.utf8(11), evaluationWhat(where(), e.id, runId));
            if (!decoded)
                return Error{decoded.error()};
            e.result = std::move(*decoded);
        }
        e.device = row.text(12, texts);
        e.intensity = optionalReal(row, 13).value_or(0.0);
        e.achievedFlops = optionalReal(row, 14).value_or(0.0);
        e.achievedBytes = optionalReal(row, 15).value_or(0.0);
        e.bound = row.text(16, texts);
        e.peakName = row.text(17, texts);
        e.splitTf32Fraction = optionalReal(row, 18).value_or(0.0);
        return std::move(e);
    };
    return readRows<EvaluationSummary>(query, where(), "cannot read the evaluations of run " + number(runId), read);
}

// --- Reviews ---

Expected<bool> RunStore::requestReview(qint64 runId, qint64 candidateId, const QString& reason) {
    return write<bool>([&]() -> Expected<bool> {
        if (auto s = requireCandidate(runId, candidateId); !s)
            return Error{s.error()};
        Statement insert(m_db, "INSERT OR IGNORE INTO reviews(run_id, candidate_id, reason, state, created) "
                               "VALUES (?, ?, ?, 'pending', ?)");
        insert.bindInt(1, runId).bindInt(2, candidateId).bindText(3, reason).bindText(4, now());
        if (!insert.run())
            return failure(where(), "cannot queue candidate " + number(candidateId) + " for review", insert);
        return sqlite3_changes(m_db) > 0;
    });
}

Status RunStore::decideReview(qint64 runId, qint64 candidateId, bool accepted, const QString& note) {
    return write<spec::Done>([&]() -> Expected<spec::Done> {
        Statement update(m_db,
                         "UPDATE reviews SET state = ?, note = ?, decided = ? WHERE run_id = ? AND candidate_id = ?");
        update
            .bindText(1, model::reviewStateName(accepted ? model::ReviewState::Accepted : model::ReviewState::Rejected))
            .bindText(2, note)
            .bindText(3, now())
            .bindInt(4, runId)
            .bindInt(5, candidateId);
        if (!update.run())
            return failure(where(), "cannot record the review of candidate " + number(candidateId), update);
        if (sqlite3_changes(m_db) == 0)
            return fail(where() + ": candidate " + number(candidateId) + " of run " + number(runId)
                        + " is not in the review queue");
        return spec::Done{};
    });
}

Expected<QList<ReviewRecord>> RunStore::reviews(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(
        m_db,
        "SELECT id, candidate_id, reason, state, note, created, decided FROM reviews WHERE run_id = ? ORDER BY id");
    query.bindInt(1, runId);
    const auto read = [&](const Statement& row) -> Expected<ReviewRecord> {
        ReviewRecord r;
        r.id = row.int64(0);
        r.candidateId = row.int64(1);
        r.reason = row.text(2);
        auto state = model::parseReviewState(row.text(3));
        if (!state)
            return unknownName(where() + ": the review of candidate " + number(r.candidateId) + " of run "
                                   + number(runId),
                               "state", row.text(3), "pending, accepted, rejected");
        r.state = *state;
        r.note = row.text(4);
        r.created = parseTimestamp(row.text(5));
        r.decided = parseTimestamp(row.text(6));
        return r;
    };
    return readRows<ReviewRecord>(query, where(), "cannot read the review queue of run " + number(runId), read);
}

// --- Archives ---

Status RunStore::setArchive(qint64 runId, const QList<ArchiveMemberRecord>& members) {
    return write<spec::Done>([&]() -> Status {
        if (auto s = requireRun(runId); !s)
            return s;
        Statement clear(m_db, "DELETE FROM archive_members WHERE run_id = ?");
        if (!clear.bindInt(1, runId).run())
            return failure(where(), "cannot replace the archives of run " + number(runId), clear);
        for (const auto& m : members) {
            Statement insert(
                m_db,
                "INSERT INTO archive_members (run_id, island, cell, candidate_id, speedup) VALUES (?, ?, ?, ?, ?)");
            insert.bindInt(1, runId)
                .bindInt(2, m.island)
                .bindText(3, cellText(m.cell))
                .bindInt(4, m.candidateId)
                .bindDouble(5, m.speedup);
            if (!insert.run())
                return failure(where(),
                               "cannot store the archive of island " + number(m.island) + " of run " + number(runId),
                               insert);
        }
        Statement mark(m_db, "UPDATE runs SET archives_stored = 1 WHERE id = ?");
        if (!mark.bindInt(1, runId).run())
            return failure(where(), "cannot mark the archives of run " + number(runId) + " as stored", mark);
        return success();
    });
}

Expected<std::optional<QList<ArchiveMemberRecord>>> RunStore::archive(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(
        m_db, "SELECT island, cell, candidate_id, speedup FROM archive_members WHERE run_id = ? ORDER BY island, cell");
    query.bindInt(1, runId);
    QList<ArchiveMemberRecord> members;
    int rc = SQLITE_OK;
    while ((rc = query.step()) == SQLITE_ROW) {
        ArchiveMemberRecord m;
        m.island = static_cast<int>(query.int64(0));
        const auto cell = parseCell(query.text(1));
        if (!cell)
            return fail(where() + ": run " + number(runId) + ": island " + number(m.island)
                        + " has an archive cell that is not " + std::to_string(model::kDimensions) + " levels: '"
                        + query.text(1).toStdString() + "'");
        m.cell = *cell;
        m.candidateId = query.int64(2);
        m.speedup = query.real(3);
        members.push_back(m);
    }
    if (rc != SQLITE_DONE)
        return failure(where(), "cannot read the archives of run " + number(runId), query);
    if (!members.isEmpty())
        return std::optional<QList<ArchiveMemberRecord>>(members);
    // Empty archives, or archives never stored (runs recorded before schema 5)?
    Statement stored(m_db, "SELECT archives_stored FROM runs WHERE id = ?");
    if (stored.bindInt(1, runId).step() != SQLITE_ROW)
        return failure(where(), "cannot read run " + number(runId), stored);
    if (stored.int64(0) != 0)
        return std::optional<QList<ArchiveMemberRecord>>(members);
    return std::optional<QList<ArchiveMemberRecord>>();
}

// --- LLM calls and prompt strategies ---

namespace {

std::string idList(const QList<qint64>& ids) {
    QJsonArray array;
    for (qint64 id : ids)
        array.append(id);
    return QJsonDocument(array).toJson(QJsonDocument::Compact).toStdString();
}

QList<qint64> parseIdList(const std::string& text) {
    QList<qint64> ids;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(text));
    for (const auto& v : document.array())
        if (const std::optional<qint64> id = util::wholeNumber<qint64>(v.toDouble()))
            ids.push_back(*id);
    return ids;
}

} // namespace

Expected<qint64> RunStore::insertLlmCall(qint64 runId, const LlmCallRecord& c) {
    return write<qint64>([&]() -> Expected<qint64> {
        if (auto s = requireRun(runId); !s)
            return Error{s.error()};
        Statement insert(
            m_db, "INSERT INTO llm_calls(run_id, generation, island, operator, stage, endpoint, model, strategy_id, "
                  "parents_json, candidate_id, status, message, input_tokens, output_tokens, cost_usd, latency_s, "
                  "attempts, system_prompt, prompt, answer, at, cached_input_tokens, cache_write_tokens) VALUES (?, ?, "
                  "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bindInt(1, runId).bindInt(2, c.generation).bindInt(3, c.island).bindText(4, c.op).bindText(5, c.stage);
        insert.bindText(6, c.endpoint).bindText(7, c.model);
        insert.bindInt(8, c.strategyId);
        insert.bindText(9, idList(c.parents));
        insert.bindInt(10, c.candidateId);
        insert.bindText(11, c.status).bindText(12, c.message);
        insert.bindInt(13, c.inputTokens);
        insert.bindInt(14, c.outputTokens);
        insert.bindDouble(15, c.costUsd).bindDouble(16, c.latencySeconds).bindInt(17, c.attempts);
        insert.bindText(18, c.systemPrompt).bindText(19, c.prompt).bindText(20, c.answer).bindText(21, now());
        insert.bindInt(22, c.cachedInputTokens);
        insert.bindInt(23, c.cacheWriteTokens);
        if (!insert.run())
            return failure(where(), "cannot record an LLM call of run " + number(runId), insert);
        return sqlite3_last_insert_rowid(m_db);
    });
}

Status RunStore::completeLlmCall(qint64 runId, qint64 callId, const LlmCallRecord& c) {
    return write<spec::Done>([&]() -> Status {
        Statement update(m_db, "UPDATE llm_calls SET status = ?, message = ?, input_tokens = ?, output_tokens = ?, "
                               "cost_usd = ?, latency_s = ?, attempts = ?, answer = ?, cached_input_tokens = ?, "
                               "cache_write_tokens = ? WHERE run_id = ? AND id = ?");
        update.bindText(1, c.status).bindText(2, c.message);
        update.bindInt(3, c.inputTokens);
        update.bindInt(4, c.outputTokens);
        update.bindDouble(5, c.costUsd).bindDouble(6, c.latencySeconds).bindInt(7, c.attempts);
        update.bindText(8, c.answer);
        update.bindInt(9, c.cachedInputTokens);
        update.bindInt(10, c.cacheWriteTokens);
        update.bindInt(11, runId).bindInt(12, callId);
        if (!update.run())
            return failure(where(), "cannot complete LLM call " + number(callId) + " of run " + number(runId), update);
        return success();
    });
}

Status RunStore::setLlmCallCandidate(qint64 runId, qint64 callId, qint64 candidateId) {
    return write<spec::Done>([&]() -> Status {
        Statement update(m_db, "UPDATE llm_calls SET candidate_id = ? WHERE run_id = ? AND id = ?");
        update.bindInt(1, candidateId).bindInt(2, runId).bindInt(3, callId);
        if (!update.run())
            return failure(where(), "cannot link LLM call " + number(callId) + " to its candidate", update);
        return success();
    });
}

Expected<QList<LlmCallRecord>> RunStore::llmCalls(qint64 runId, const Slice& slice) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(
        m_db,
        "SELECT id, generation, island, operator, stage, endpoint, model, strategy_id, parents_json, candidate_id, "
        "status, message, input_tokens, output_tokens, cost_usd, latency_s, attempts, system_prompt, prompt, answer, "
        "at, cached_input_tokens, cache_write_tokens "
        "FROM llm_calls"
            + sliceWhere(slice, "run_id", "candidate_id"));
    bindSlice(query, runId, slice, 1);
    const auto read = [&](const Statement& row) -> Expected<LlmCallRecord> {
        LlmCallRecord c;
        c.id = row.int64(0);
        c.generation = static_cast<int>(row.int64(1));
        c.island = static_cast<int>(row.int64(2));
        c.op = row.text(3);
        c.stage = row.text(4);
        c.endpoint = row.text(5);
        c.model = row.text(6);
        c.strategyId = optionalInt(row, 7);
        c.parents = parseIdList(row.utf8(8));
        c.candidateId = optionalInt(row, 9);
        c.status = row.text(10);
        c.message = row.text(11);
        c.inputTokens = optionalInt(row, 12);
        c.outputTokens = optionalInt(row, 13);
        c.costUsd = optionalReal(row, 14);
        c.latencySeconds = row.real(15);
        c.attempts = static_cast<int>(row.int64(16));
        c.systemPrompt = row.text(17);
        c.prompt = row.text(18);
        c.answer = row.text(19);
        c.at = parseTimestamp(row.text(20));
        c.cachedInputTokens = optionalInt(row, 21);
        c.cacheWriteTokens = optionalInt(row, 22);
        return c;
    };
    return readRows<LlmCallRecord>(query, where(), "cannot read the LLM calls of run " + number(runId), read);
}

Expected<QList<QPair<qint64, qint64>>> RunStore::llmCallCandidates(qint64 runId, qint64 afterId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db,
                    "SELECT id, candidate_id FROM llm_calls WHERE run_id = ? AND id > ? AND candidate_id IS NOT NULL "
                    "ORDER BY id");
    query.bindInt(1, runId).bindInt(2, afterId);
    QList<QPair<qint64, qint64>> links;
    int rc = SQLITE_OK;
    while ((rc = query.step()) == SQLITE_ROW)
        links.push_back({query.int64(0), query.int64(1)});
    if (rc != SQLITE_DONE)
        return failure(where(), "cannot read the LLM calls of run " + number(runId), query);
    return links;
}

Status RunStore::insertStrategy(qint64 runId, const StrategyRecord& st) {
    return write<spec::Done>([&]() -> Status {
        if (auto s = requireRun(runId); !s)
            return s;
        Statement insert(m_db, "INSERT INTO strategies(id, run_id, stage, parent, seed, generation, text, retired, at) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bindInt(1, st.id).bindInt(2, runId).bindText(3, st.stage);
        insert.bindInt(4, st.parent);
        insert.bindText(5, st.seed)
            .bindInt(6, st.generation)
            .bindText(7, st.text)
            .bindInt(8, st.retired ? 1 : 0)
            .bindText(9, now());
        if (!insert.run())
            return failure(where(), "cannot record strategy " + number(st.id) + " of run " + number(runId), insert);
        return success();
    });
}

Status RunStore::retireStrategy(qint64 runId, qint64 strategyId) {
    return write<spec::Done>([&]() -> Status {
        Statement update(m_db, "UPDATE strategies SET retired = 1 WHERE run_id = ? AND id = ?");
        update.bindInt(1, runId).bindInt(2, strategyId);
        if (!update.run())
            return failure(where(), "cannot retire strategy " + number(strategyId), update);
        return success();
    });
}

Expected<QList<StrategyRecord>> RunStore::strategies(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(
        m_db,
        "SELECT id, stage, parent, seed, generation, text, retired, at FROM strategies WHERE run_id = ? ORDER BY id");
    query.bindInt(1, runId);
    const auto read = [&](const Statement& row) -> Expected<StrategyRecord> {
        StrategyRecord st;
        st.id = row.int64(0);
        st.stage = row.text(1);
        st.parent = optionalInt(row, 2);
        st.seed = row.text(3);
        st.generation = static_cast<int>(row.int64(4));
        st.text = row.text(5);
        st.retired = row.int64(6) != 0;
        st.at = parseTimestamp(row.text(7));
        return st;
    };
    return readRows<StrategyRecord>(query, where(), "cannot read the prompt strategies of run " + number(runId), read);
}

// --- Events ---

Expected<qint64> RunStore::insertEvent(qint64 runId, int generation, model::EventKind kind, const QJsonObject& data) {
    return write<qint64>([&]() -> Expected<qint64> {
        if (auto s = requireRun(runId); !s)
            return Error{s.error()};
        Statement insert(m_db, "INSERT INTO events(run_id, generation, kind, data_json, at) VALUES (?, ?, ?, ?, ?)");
        insert.bindInt(1, runId)
            .bindInt(2, generation)
            .bindText(3, model::eventKindName(kind))
            .bindText(4, compactJson(data))
            .bindText(5, now());
        if (!insert.run())
            return failure(where(),
                           "cannot write a " + model::eventKindName(kind).toStdString() + " event of run "
                               + number(runId),
                           insert);
        return sqlite3_last_insert_rowid(m_db);
    });
}

Expected<QList<EventRecord>> RunStore::events(qint64 runId, const Slice& slice) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db, "SELECT id, generation, kind, data_json, at FROM events"
                              + sliceWhere(slice, "run_id", "json_extract(data_json, '$.candidate')"));
    bindSlice(query, runId, slice, 1);
    const auto read = [&](const Statement& row) -> Expected<EventRecord> {
        EventRecord e;
        e.id = row.int64(0);
        e.generation = static_cast<int>(row.int64(1));
        e.kindName = row.text(2);
        e.kind = model::parseEventKind(e.kindName).value_or(model::EventKind::Unknown);
        auto data = parseObject(row.utf8(3));
        if (!data)
            return fail(where() + ": event " + number(e.id) + " of run " + number(runId)
                        + ": its data is not a JSON object");
        e.data = *data;
        e.at = parseTimestamp(row.text(4));
        return e;
    };
    return readRows<EventRecord>(query, where(), "cannot read the events of run " + number(runId), read);
}

Expected<qint64> RunStore::queueCommand(qint64 runId, const QJsonObject& command) {
    return write<qint64>([&]() -> Expected<qint64> {
        if (auto s = requireRun(runId); !s)
            return Error{s.error()};
        Statement insert(m_db, "INSERT INTO queued_commands(run_id, command_json, queued) VALUES (?, ?, ?)");
        insert.bindInt(1, runId).bindText(2, compactJson(command)).bindText(3, now());
        if (!insert.run())
            return failure(where(), "cannot queue a command for run " + number(runId), insert);
        return sqlite3_last_insert_rowid(m_db);
    });
}

Expected<QList<QueuedCommandRecord>> RunStore::queuedCommands(qint64 runId) {
    if (auto s = requireRun(runId); !s)
        return Error{s.error()};
    Statement query(m_db, "SELECT id, command_json, queued FROM queued_commands WHERE run_id = ? AND applied IS NULL "
                          "ORDER BY id");
    query.bindInt(1, runId);
    const auto read = [&](const Statement& row) -> Expected<QueuedCommandRecord> {
        QueuedCommandRecord c;
        c.id = row.int64(0);
        auto command = parseObject(row.utf8(1));
        if (!command)
            return fail(where() + ": queued command " + number(c.id) + " of run " + number(runId)
                        + ": it is not a JSON object");
        c.command = *command;
        c.queued = parseTimestamp(row.text(2));
        return c;
    };
    return readRows<QueuedCommandRecord>(query, where(), "cannot read the queued commands of run " + number(runId),
                                         read);
}

Status RunStore::markCommandApplied(qint64 runId, qint64 commandId) {
    return write<spec::Done>([&]() -> Status {
        Statement update(m_db, "UPDATE queued_commands SET applied = ? WHERE run_id = ? AND id = ?");
        update.bindText(1, now()).bindInt(2, runId).bindInt(3, commandId);
        if (!update.run())
            return failure(where(), "cannot mark queued command " + number(commandId) + " applied", update);
        return success();
    });
}

Status RunStore::storeListing(qint64 runId, qint64 candidateId, int target,
                              const protocol::DisassembleResult& listing) {
    return write<spec::Done>([&]() -> Status {
        if (auto s = requireCandidate(runId, candidateId); !s)
            return s;
        Statement insert(m_db, "INSERT OR REPLACE INTO listings(run_id, candidate_id, target, listing_json, made) "
                               "VALUES (?, ?, ?, ?, ?)");
        insert.bindInt(1, runId).bindInt(2, candidateId).bindInt(3, target).bindText(4, protocol::encode(listing));
        insert.bindText(5, now());
        if (!insert.run())
            return failure(where(), "cannot keep the listing of candidate " + number(candidateId), insert);
        return success();
    });
}

Expected<std::optional<protocol::DisassembleResult>> RunStore::listing(qint64 runId, qint64 candidateId, int target) {
    Statement query(m_db, "SELECT listing_json FROM listings WHERE run_id = ? AND candidate_id = ? AND target = ?");
    query.bindInt(1, runId).bindInt(2, candidateId).bindInt(3, target);
    const int rc = query.step();
    if (rc == SQLITE_DONE)
        return std::optional<protocol::DisassembleResult>();
    if (rc != SQLITE_ROW)
        return failure(where(), "cannot read the listing of candidate " + number(candidateId), query);
    auto decoded = protocol::decodeResponse(query.utf8(0));
    const auto* listing = decoded ? std::get_if<protocol::DisassembleResult>(&*decoded) : nullptr;
    if (!listing)
        return fail(where() + ": the stored listing of candidate " + number(candidateId) + " of run " + number(runId)
                    + " cannot be read" + (decoded ? std::string() : " (" + decoded.error() + ")"));
    return std::optional<protocol::DisassembleResult>(*listing);
}

// --- RunLock ---

QString RunLock::pathFor(const QString& storePath, qint64 runId) {
    return QStringLiteral("%1.run%2.lock").arg(storePath).arg(runId);
}

Expected<std::unique_ptr<RunLock>> RunLock::acquire(const QString& storePath, qint64 runId) {
    const QString path = pathFor(storePath, runId);
    const QByteArray name = QFile::encodeName(path);
    const std::string what = "run " + number(runId) + " of " + sqlite::whereOf(storePath);
    for (int attempt = 0; attempt < 10; ++attempt) {
        const int fd = ::open(name.constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return fail("cannot lock " + what + ": cannot create " + sqlite::whereOf(path) + ": "
                        + std::strerror(errno));
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int error = errno;
            QByteArray holder(512, '\0');
            const ssize_t n = ::pread(fd, holder.data(), static_cast<size_t>(holder.size()), 0);
            ::close(fd);
            if (error != EWOULDBLOCK)
                return fail("cannot lock " + what + ": " + std::strerror(error));
            holder.truncate(n > 0 ? static_cast<qsizetype>(n) : 0);
            const std::string who =
                holder.trimmed().isEmpty() ? std::string("another kforge session") : holder.trimmed().toStdString();
            std::string message = what;
            message += " is in use by " + who;
            message += "; two sessions of one run would record it twice. Stop that session first (it releases the "
                       "run when it ends, crashed or not)";
            return fail(message);
        }
        // The holder before us may have removed the file between our open and our lock: then we
        // locked a file nobody else can see, and must start again with the one at the path.
        struct stat held {};
        struct stat named {};
        if (::fstat(fd, &held) == 0 && ::stat(name.constData(), &named) == 0 && held.st_ino == named.st_ino
            && held.st_dev == named.st_dev) {
            const QByteArray holder =
                QStringLiteral("pid %1 on %2 since %3")
                    .arg(QCoreApplication::applicationPid())
                    .arg(QSysInfo::machineHostName(), QDateTime::currentDateTimeUtc().toString(Qt::ISODate))
                    .toUtf8();
            if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, holder.constData(), static_cast<size_t>(holder.size()), 0) < 0)
                qCDebug(lcStore).noquote() << path << "holds no holder's name:" << std::strerror(errno);
            return std::unique_ptr<RunLock>(new RunLock(fd, path));
        }
        ::close(fd);
    }
    return fail("cannot lock " + what + ": its lock file " + sqlite::whereOf(path) + " keeps being replaced");
}

RunLock::~RunLock() {
    // Removed while still held, so that a session waiting on the old file notices and starts again.
    ::unlink(QFile::encodeName(m_path).constData());
    ::close(m_fd);
}

} // namespace kforge::store
