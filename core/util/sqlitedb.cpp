#include "util/sqlitedb.h"

#include <sqlite3.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>

#include <cstdio>

namespace kforge::util::sqlite {

static_assert(Statement::kRow == SQLITE_ROW && Statement::kDone == SQLITE_DONE);

using spec::Error;
using spec::Expected;
using spec::fail;
using spec::Status;
using spec::success;

namespace {
constexpr int kBusyTimeoutMs = 5000;
} // namespace

// --- Statement ---

Statement::Statement(sqlite3* db, std::string_view sql) : m_db(db) {
    m_rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr);
    if (m_rc != SQLITE_OK)
        m_error = sqlite3_errmsg(db);
}

Statement::~Statement() {
    sqlite3_finalize(m_stmt);
}

Statement& Statement::bindInt(int index, qint64 value) {
    return check(sqlite3_bind_int64(m_stmt, index, value));
}
Statement& Statement::bindDouble(int index, double value) {
    return check(sqlite3_bind_double(m_stmt, index, value));
}
Statement& Statement::bindNull(int index) {
    return check(sqlite3_bind_null(m_stmt, index));
}
Statement& Statement::bindText(int index, std::string_view text) {
    return check(sqlite3_bind_text64(m_stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}
Statement& Statement::bindText(int index, const QString& text) {
    const QByteArray utf8 = text.toUtf8();
    return bindText(index, std::string_view(utf8.constData(), static_cast<std::size_t>(utf8.size())));
}

int Statement::step() {
    if (m_rc != SQLITE_OK && m_rc != SQLITE_ROW)
        return m_rc;
    m_rc = sqlite3_step(m_stmt);
    if (m_rc != SQLITE_ROW && m_rc != SQLITE_DONE)
        m_error = sqlite3_errmsg(m_db);
    return m_rc;
}
bool Statement::run() {
    return step() == SQLITE_DONE;
}

bool Statement::isNull(int column) const {
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}
qint64 Statement::int64(int column) const {
    return sqlite3_column_int64(m_stmt, column);
}
double Statement::real(int column) const {
    return sqlite3_column_double(m_stmt, column);
}
std::string Statement::utf8(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    return text ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, column))) : std::string();
}
QString Statement::text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    return text ? QString::fromUtf8(text, sqlite3_column_bytes(m_stmt, column)) : QString();
}

QString Statement::text(int column, TextPool& pool) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    return text ? pool.get(text, sqlite3_column_bytes(m_stmt, column)) : QString();
}

QString TextPool::get(const char* utf8, int bytes) {
    if (bytes > kLongest)
        return QString::fromUtf8(utf8, bytes);
    // A view of the bytes for the lookup; the key is copied only for a text not seen yet.
    const QByteArray key = QByteArray::fromRawData(utf8, bytes);
    if (const auto found = m_texts.constFind(key); found != m_texts.constEnd())
        return *found;
    QString text = QString::fromUtf8(utf8, bytes);
    if (m_texts.size() < kMostTexts)
        m_texts.insert(QByteArray(utf8, bytes), text);
    return text;
}

Statement& Statement::check(int rc) {
    if (rc != SQLITE_OK && m_rc == SQLITE_OK) {
        m_rc = rc;
        m_error = sqlite3_errmsg(m_db);
    }
    return *this;
}

// --- Helpers ---

std::string whereOf(const QString& path) {
    return QDir::toNativeSeparators(path).toStdString();
}

Error failure(const std::string& where, const std::string& what, const Statement& statement) {
    return fail(where + ": " + what + ": " + statement.error());
}

Status exec(sqlite3* db, const char* sql, const std::string& where, const std::string& what) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
        const std::string text = message ? message : sqlite3_errmsg(db);
        sqlite3_free(message);
        return fail(where + ": " + what + ": " + text);
    }
    return success();
}

QString timestamp(const QDateTime& time) {
    return time.toUTC().toString(Qt::ISODateWithMs);
}
QDateTime parseTimestamp(const QString& text) {
    return QDateTime::fromString(text, Qt::ISODateWithMs).toUTC();
}

Status checkHeader(const QString& path, const std::string& where, const FileKind& kind) {
    const QFileInfo info(path);
    if (info.isDir())
        return fail(where + ": is a folder, not " + kind.article + " " + kind.name);
    if (!info.exists() || info.size() == 0)
        return success();
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return fail(where + ": cannot be read: " + file.errorString().toStdString());
    static constexpr char kMagic[] = "SQLite format 3"; // followed by a NUL in the file
    if (file.read(sizeof kMagic) != QByteArray(kMagic, sizeof kMagic))
        return fail(where + ": not a kforge " + kind.name + " (not a SQLite database)");
    return success();
}

Expected<sqlite3*> open(const QString& path, const std::string& where) {
    sqlite3* db = nullptr;
    const int rc =
        sqlite3_open_v2(QFile::encodeName(path).constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
        Error error = fail(where + ": cannot be opened: " + (db ? sqlite3_errmsg(db) : "out of memory"));
        sqlite3_close_v2(db); // a failed open still allocates a handle
        return error;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    return db;
}

void tidyAfterReading(const QString& path) {
    const QFileInfo wal(path + QStringLiteral("-wal"));
    if (!wal.exists() || wal.size() != 0 || !QFileInfo(path).isWritable()
        || !QFileInfo(wal.absolutePath()).isWritable())
        return;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(QFile::encodeName(path).constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr)
        == SQLITE_OK) {
        // A writer that holds its lock longer only means the files stay, as they would anyway.
        sqlite3_busy_timeout(db, 100);
        sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
    }
    sqlite3_close_v2(db);
}

Status configure(sqlite3* db, const QString& path, const std::string& where, const QLoggingCategory& category,
                 bool foreignKeys) {
    // WAL: readers beside the writer, and a commit is one append, so a killed process loses at most
    // the transaction it was in. NORMAL sync keeps that guarantee for process crashes; only a power
    // cut may lose the last commits.
    Statement journal(db, "PRAGMA journal_mode = WAL");
    if (journal.step() != SQLITE_ROW)
        return failure(where, "cannot switch to WAL journal mode", journal);
    if (journal.text(0).compare(QLatin1String("wal"), Qt::CaseInsensitive) != 0)
        qCWarning(category).noquote() << path << "stays in" << journal.text(0)
                                      << "journal mode (the file system may not support WAL)";
    if (foreignKeys) {
        if (auto s = exec(db, "PRAGMA foreign_keys = ON", where, "cannot enable foreign keys"); !s)
            return s;
    }
    return exec(db, "PRAGMA synchronous = NORMAL", where, "cannot set synchronous mode");
}

Expected<Contents> inspect(sqlite3* db, const std::string& where, const FileKind& kind) {
    Contents contents;
    Statement appId(db, "PRAGMA application_id");
    if (appId.step() != SQLITE_ROW) {
        if (appId.code() == SQLITE_NOTADB)
            return fail(where + ": not a kforge " + kind.name + " (not a SQLite database)");
        return failure(where, "cannot be read", appId);
    }
    contents.applicationId = appId.int64(0);

    Statement tables(db,
                     "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
    int rc = SQLITE_OK;
    while ((rc = tables.step()) == SQLITE_ROW) {
        contents.anyTable = true;
        contents.versionTable = contents.versionTable || tables.utf8(0) == "schema_version";
    }
    if (rc != SQLITE_DONE)
        return failure(where, "cannot be read", tables);
    return contents;
}

Error foreignApplication(const std::string& where, const FileKind& kind, qint64 applicationId) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08llx", static_cast<unsigned long long>(applicationId) & 0xffffffffULL);
    return fail(where + ": not a kforge " + kind.name + " (it belongs to another application, id " + hex + ")");
}

Expected<int> readVersion(sqlite3* db, const std::string& where, const FileKind& kind, const Contents& contents) {
    if (!contents.versionTable)
        return fail(where + ": damaged kforge " + kind.name + " (no schema_version table)");
    Statement version(db, "SELECT max(version) FROM schema_version");
    if (version.step() != SQLITE_ROW)
        return failure(where, "cannot read the schema version", version);
    if (version.isNull(0))
        return fail(where + ": damaged kforge " + kind.name + " (the schema_version table is empty)");
    return static_cast<int>(version.int64(0));
}

Status upgrade(sqlite3* db, const std::string& where, const FileKind& kind, const std::vector<const char*>& migrations,
               int from, std::int32_t applicationId) {
    const int to = static_cast<int>(migrations.size()) - 1;
    for (int next = from + 1; next <= to; ++next) {
        if (auto s = exec(db, migrations[static_cast<std::size_t>(next)], where,
                          "upgrading to schema " + std::to_string(next));
            !s)
            return s;
    }
    if (from == 0) {
        // A constant of this build, not a value: pragmas take no parameters.
        const std::string setId = "PRAGMA application_id = " + std::to_string(applicationId);
        if (auto s = exec(db, setId.c_str(), where, "cannot mark the file as a kforge " + kind.name); !s)
            return s;
    }
    if (auto s = exec(db, "DELETE FROM schema_version", where, "cannot record the schema version"); !s)
        return s;
    Statement record(db, "INSERT INTO schema_version(version) VALUES (?)");
    if (!record.bindInt(1, to).run())
        return failure(where, "cannot record the schema version", record);
    return success();
}

} // namespace kforge::util::sqlite
