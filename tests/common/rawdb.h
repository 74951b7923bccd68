#pragma once
// Plain SQLite beside a kforge store (a run store, an experience library): to look at what it wrote
// and to make foreign or damaged files, in tests.

#include <sqlite3.h>

#include <QFile>
#include <QList>
#include <QString>
#include <QVariant>

namespace kforgetest {

class RawDb {
public:
    explicit RawDb(const QString& path) {
        if (sqlite3_open_v2(QFile::encodeName(path).constData(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr)
            != SQLITE_OK)
            qFatal("cannot open %s", qPrintable(path));
        sqlite3_busy_timeout(m_db, 5000);
    }
    ~RawDb() { sqlite3_close_v2(m_db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    bool exec(const char* sql) { return sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

    QList<QVariantList> rows(const char* sql, const QVariantList& args = {}) {
        QList<QVariantList> result;
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(m_db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
            qWarning("%s: %s", sql, sqlite3_errmsg(m_db));
            return result;
        }
        for (int i = 0; i < args.size(); ++i)
            sqlite3_bind_int64(stmt, i + 1, args.at(i).toLongLong());
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            QVariantList row;
            for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
                switch (sqlite3_column_type(stmt, c)) {
                case SQLITE_NULL:
                    row << QVariant();
                    break;
                case SQLITE_INTEGER:
                    row << QVariant(static_cast<qint64>(sqlite3_column_int64(stmt, c)));
                    break;
                case SQLITE_FLOAT:
                    row << QVariant(sqlite3_column_double(stmt, c));
                    break;
                default:
                    row << QVariant(QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c))));
                }
            }
            result << row;
        }
        sqlite3_finalize(stmt);
        return result;
    }

    QVariant value(const char* sql, const QVariantList& args = {}) {
        const auto r = rows(sql, args);
        return r.isEmpty() || r.first().isEmpty() ? QVariant() : r.first().first();
    }

private:
    sqlite3* m_db = nullptr;
};

} // namespace kforgetest
