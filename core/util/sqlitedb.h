#pragma once
// SQLite plumbing shared by kforge's database files (run store, experience library).

#include "expected.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QList>
#include <QString>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

class QLoggingCategory;
struct sqlite3;
struct sqlite3_stmt;

namespace kforge::util::sqlite {

// How messages name a kind of file: "not a kforge <name>", "is a folder, not <article> <name>".
struct FileKind {
    std::string name;    // "run store"
    std::string article; // "a"
};

class TextPool;

// A prepared statement that finalizes itself. Binding keeps the first error and step() reports
// it, so a caller checks once, after stepping.
class Statement {
public:
    Statement(sqlite3* db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Indexes start at 1, as in SQL.
    Statement& bindInt(int index, qint64 value);
    Statement& bindDouble(int index, double value);
    Statement& bindNull(int index);
    // NULL for an unknown value.
    Statement& bindInt(int index, std::optional<qint64> value) {
        return value ? bindInt(index, *value) : bindNull(index);
    }
    Statement& bindDouble(int index, std::optional<double> value) {
        return value ? bindDouble(index, *value) : bindNull(index);
    }
    Statement& bindText(int index, std::string_view text);
    Statement& bindText(int index, const QString& text);

    // SQLITE_ROW, SQLITE_DONE or an (extended) error code.
    int step();
    static constexpr int kRow = 100;  // SQLITE_ROW
    static constexpr int kDone = 101; // SQLITE_DONE
    // For statements that return no rows.
    bool run();

    bool isNull(int column) const;
    qint64 int64(int column) const;
    double real(int column) const;
    std::string utf8(int column) const;
    QString text(int column) const;
    // The same, shared with earlier rows' equal texts in `pool` (see TextPool).
    QString text(int column, TextPool& pool) const;

    int code() const { return m_rc; }
    const std::string& error() const { return m_error; }

private:
    Statement& check(int rc);

    sqlite3* m_db = nullptr;
    sqlite3_stmt* m_stmt = nullptr;
    int m_rc = 0; // SQLITE_OK
    std::string m_error;
};

// Texts read from many rows that repeat (a status, a device, a finding's message): one QString per
// distinct text, shared by every row that holds it, instead of a new allocation and UTF-8 decoding
// per row. Reading a million evaluations allocated and kept a million copies of "ok". Texts longer
// than kLongest, and any once the pool holds kMostTexts, are not pooled.
class TextPool {
public:
    QString get(const char* utf8, int bytes);

private:
    static constexpr int kLongest = 256;
    static constexpr qsizetype kMostTexts = 4096;
    QHash<QByteArray, QString> m_texts;
};

// The path as messages show it.
std::string whereOf(const QString& path);

spec::Error failure(const std::string& where, const std::string& what, const Statement& statement);

// Every row of a bound query, read by `read` (a row -> T, or -> Expected<T> to stop at the first row
// that cannot be read); a failed step becomes failure(where, what, query).
template <typename T, typename Read>
spec::Expected<QList<T>> readRows(Statement& query, const std::string& where, const std::string& what, Read&& read) {
    QList<T> rows;
    int rc = Statement::kRow;
    while ((rc = query.step()) == Statement::kRow) {
        auto row = read(static_cast<const Statement&>(query));
        if constexpr (std::is_same_v<decltype(row), T>) {
            rows.push_back(std::move(row));
        } else {
            if (!row)
                return spec::Error{row.error()};
            rows.push_back(std::move(*row));
        }
    }
    if (rc != Statement::kDone)
        return failure(where, what, query);
    return rows;
}
spec::Status exec(sqlite3* db, const char* sql, const std::string& where, const std::string& what);

// ISO 8601 UTC with milliseconds, so that text order is time order.
QString timestamp(const QDateTime& time);
QDateTime parseTimestamp(const QString& text);

// Refuses what is not SQLite before SQLite sees it: a damaged or foreign file would otherwise only
// fail at the first query, with "file is not a database".
spec::Status checkHeader(const QString& path, const std::string& where, const FileKind& kind);

// Opens or creates the file with extended result codes and a busy timeout; closes it on failure.
spec::Expected<sqlite3*> open(const QString& path, const std::string& where);

// Call after closing a read-only connection to `path`. A read-only connection cannot remove the
// write-ahead log and its index (-wal, -shm) when it is the last to close, as a writer's close does,
// so every look at a file would leave both beside it. Where the log is empty and the file and its
// folder are writable, a read-write connection reads once and closes: SQLite then removes both if no
// other connection has the file open, and leaves them otherwise. With an empty log there is nothing
// to checkpoint, so the database file itself is not changed.
void tidyAfterReading(const QString& path);

// WAL journal, synchronous NORMAL and, when asked, foreign keys. A file system without WAL only
// earns a warning in `category`.
spec::Status configure(sqlite3* db, const QString& path, const std::string& where, const QLoggingCategory& category,
                       bool foreignKeys);

// What an open file holds, to tell one's own files from foreign ones before changing anything.
struct Contents {
    qint64 applicationId = 0;
    bool anyTable = false;     // besides SQLite's own
    bool versionTable = false; // a schema_version table
};
spec::Expected<Contents> inspect(sqlite3* db, const std::string& where, const FileKind& kind);

// The error for a file marked with another application's id.
spec::Error foreignApplication(const std::string& where, const FileKind& kind, qint64 applicationId);

// The schema version of one of our own files (its application id is ours).
spec::Expected<int> readVersion(sqlite3* db, const std::string& where, const FileKind& kind, const Contents& contents);

// Runs the migration scripts after `from` and records the new version, marking a new file with
// `applicationId`. The caller holds the write transaction.
spec::Status upgrade(sqlite3* db, const std::string& where, const FileKind& kind,
                     const std::vector<const char*>& migrations, int from, std::int32_t applicationId);

} // namespace kforge::util::sqlite
