#pragma once
// The experience library: what kforge has learned, kept per user and shared by every run. Insights
// carry their evidence — task family, the transformation, the code before and after, the speedup,
// the diff — and are harvested by the engine when a change helps or hurts clearly; every human
// action (pin, edit, veto, with the user's reason) is one too. Retrieval by task family,
// bottleneck and free text (SQLite FTS5) feeds prompts and the seeding of islands. Export and
// import as JSON let a team share one library. It also holds the tuning cache: the template
// tuner's measurements per task, sizes, device and kernel template, so that a later run on the same
// problem starts its tuners from them (not exported: they hold only on the device measured).

#include "expected.h"
#include "model/candidate.h"
#include "model/kinds.h"

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QString>

#include <memory>
#include <optional>

struct sqlite3;

namespace kforge::experience {

struct Insight {
    qint64 id = 0;
    model::InsightKind kind = model::InsightKind::Helped;
    QString family;         // task family: gemm, softmax, norm, reduction, elementwise, ...
    QString task;           // task name
    QString backend;        // cuda, opencl
    QString transformation; // what changed, in words: "register tiling 8x8", "BLOCK 256 -> 128"
    QString bottleneck;     // what bounded the kernel before: memory, compute, latency, or empty
    QString summary;        // one paragraph for people and prompts
    double speedup = 0.0;   // after / before (time before / time after); 0 when unknown
    QString before;         // kernel source before (may be empty for a pin or veto)
    QString after;          // kernel source after
    QString diff;           // unified diff before -> after
    QString reason;         // the user's words for human actions
    QString origin;         // where it came from: "<run store path>#run/candidate", a file, an import
    QDateTime at;           // UTC

    QJsonObject toJson() const;
    static spec::Expected<Insight> fromJson(const QJsonObject& json, const QString& where);
};

struct Query {
    QString family;
    QString task;
    QString backend;
    QString bottleneck;
    QString text; // free words, matched with FTS5 against transformation, summary, reason, diff
};

// Where tuning measurements hold: one kernel template on one task, at one set of sizes, on one
// device.
struct TuningKey {
    QString task;
    QString backend;
    QString sizes;  // the size variant and its values: "small: N=4096"
    QString device; // the device's model as the worker names it: "NVIDIA H200"
    QString kernel; // the template: a key of the kernel file without its parameter lines
};

// One configuration's measurement.
struct TuningRecord {
    model::ParamValues params;      // every declared parameter
    std::optional<double> medianUs; // none: it failed
    QString status;                 // ok, or how it failed: compile_error, incorrect, rejected...
};

// What the tuning cache holds for a key; records that cannot be read are skipped, each named in
// `problems`.
struct TuningRecall {
    QList<TuningRecord> records;
    QStringList problems;
};

class ExperienceLibrary {
public:
    // Opens or creates the library (WAL, schema version with migrations, like the run store).
    static spec::Expected<std::unique_ptr<ExperienceLibrary>> open(const QString& path);
    // <app data>/experience.kforge-library
    static QString defaultPath();

    ~ExperienceLibrary();
    ExperienceLibrary(const ExperienceLibrary&) = delete;
    ExperienceLibrary& operator=(const ExperienceLibrary&) = delete;

    QString path() const { return m_path; }

    // Adds an insight; an identical one (same kind, task, transformation, before and after) is not
    // added twice: its id is returned.
    spec::Expected<qint64> add(const Insight& insight);
    spec::Expected<QList<Insight>> all();
    spec::Expected<int> count();

    // The most relevant insights, best first: text relevance (FTS5 bm25) when text is given, then
    // the same task before the same family before others, the same backend and bottleneck, helpful
    // before harmful, larger speedups first, newer first.
    spec::Expected<QList<Insight>> search(const Query& query, int limit = 10);

    // Writes every insight as one JSON document {"kforge-experience": 1, "insights": [...]}.
    spec::Status exportJson(const QString& file);
    // Reads such a document; returns how many insights were new. Errors name the file and entry.
    spec::Expected<int> importJson(const QString& file);

    // The tuning cache. One record per configuration and key: a new measurement replaces the old.
    spec::Status recordTuning(const TuningKey& key, const QList<TuningRecord>& records);
    spec::Expected<TuningRecall> recallTuning(const TuningKey& key);
    // How many records the cache holds (of one task, when given), and forgetting them.
    spec::Expected<int> tuningCount(const QString& task = {});
    spec::Expected<int> forgetTuning(const QString& task = {});

private:
    ExperienceLibrary(sqlite3* db, QString path);
    sqlite3* m_db = nullptr;
    QString m_path;
};

} // namespace kforge::experience
