#pragma once
// The run store: one SQLite file holding runs, their configuration, candidates with lineage,
// every evaluation with its diagnostics, and the events of the search (migrations, promotions,
// human actions). WAL journal, every write in an IMMEDIATE transaction, a schema version table
// with migrations. A run file is portable: a run made on a GPU server opens on a laptop.
//
// The engine thread owns the connection; open a second RunStore on the same file to read it from
// another thread or process (WAL lets readers run beside the writer). Views open it for reading:
// that never changes the file (no migration, no journal-mode switch), works on a read-only file or
// folder, and reads a store written by an older kforge as it is.

#include "expected.h"
#include "model/candidate.h"
#include "protocol.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

#include <memory>
#include <optional>

struct sqlite3;

namespace kforge::util::sqlite {
class Statement;
}

namespace kforge::store {

template <typename T> using Expected = spec::Expected<T>;
using Status = spec::Status;

struct RunRecord {
    qint64 id = 0;
    QString name;    // for people; defaults to "<task> on <backend>"
    QString task;    // task name
    QString taskDir; // the folder it was loaded from, to resume
    model::Backend backend = model::Backend::OpenCL;
    QString variant;
    QJsonObject config; // the run's configuration (engine RunConfig as JSON)
    // As the engine last stored it: a run whose process ended without finishing stays "running"
    // (or "paused") until it is resumed.
    model::RunState state = model::RunState::Starting;
    QString message;          // why it stopped, for people
    QDateTime created;        // UTC
    QDateTime updated;        // UTC
    qint64 bestCandidate = 0; // confirmed best; 0 when none yet
    double bestSpeedup = 0.0;
    qint64 evaluations = 0;   // evaluations counted against the budget
    double wallSeconds = 0.0; // accumulated over all sessions of the run
    int generation = 0;       // last generation completed
};

struct EvaluationRecord {
    qint64 id = 0;
    qint64 candidateId = 0;
    std::optional<model::Cell> cell; // the behaviour cell the engine placed it in (stores of schema 4 on)
    model::EvaluationPurpose purpose = model::EvaluationPurpose::Search;
    protocol::EvaluateResult result;
    QDateTime at;
    QJsonArray findings;  // diagnose::Finding as JSON, most severe first
    QJsonObject roofline; // diagnose::Roofline as JSON; empty when not computed
};

// A result that is suspicious rather than certainly wrong (throughput close to a measured roof,
// markedly faster on repeated inputs than on fresh ones) waits here for a person instead of being
// accepted.
struct ReviewRecord {
    qint64 id = 0;
    qint64 candidateId = 0;
    QString reason;
    model::ReviewState state = model::ReviewState::Pending;
    QString note; // the reviewer's words
    QDateTime created;
    QDateTime decided; // invalid while pending
};

// One elite of one island's MAP-Elites archive, as the engine holds it.
struct ArchiveMemberRecord {
    int island = 0;
    model::Cell cell{};
    qint64 candidateId = 0;
    double speedup = 0.0;
    bool operator==(const ArchiveMemberRecord&) const = default;
};

struct EventRecord {
    qint64 id = 0;
    int generation = 0;
    model::EventKind kind = model::EventKind::Unknown;
    QString kindName; // as stored: the name of an Unknown kind
    QJsonObject data;
    QDateTime at;
};

// Steering made while a run was not live, waiting for the run to resume (search::EngineCommand as
// JSON).
struct QueuedCommandRecord {
    qint64 id = 0;
    QJsonObject command;
    QDateTime queued;
};

// One call to a language model, whatever came of it: the answer became a candidate, could not be
// parsed, duplicated a known kernel, or the call failed. Tokens and cost are unknown (not zero)
// when the server never reported usage. Keys are never part of a record. A call is stored when it
// is sent (status "in-flight", `at` the time it was sent) and completed when it ends; one cancelled
// keeps what it had received.
struct LlmCallRecord {
    qint64 id = 0;
    int generation = 0;
    int island = 0;
    QString op;    // init, mutate, crossover, repair, meta
    QString stage; // structure, tuning; empty for meta
    QString endpoint;
    QString model;
    std::optional<qint64> strategyId;
    QList<qint64> parents;
    std::optional<qint64> candidateId;
    QString status; // in-flight, ok, unparsable, duplicate, or the client's error kind (cancelled ...)
    QString message;
    std::optional<qint64> inputTokens; // the whole prompt, cached parts included
    std::optional<qint64> outputTokens;
    std::optional<qint64> cachedInputTokens; // of inputTokens: read from the API's prompt cache
    std::optional<qint64> cacheWriteTokens;  // of inputTokens: written to it (Anthropic)
    std::optional<double> costUsd;
    double latencySeconds = 0.0;
    int attempts = 0;
    QString systemPrompt;
    QString prompt; // the user turn(s)
    QString answer;
    QDateTime at;
};

// A variant of the prompts' strategy section; meta-prompt evolution rewrites weak ones.
struct StrategyRecord {
    qint64 id = 0;
    QString stage;
    std::optional<qint64> parent;
    QString seed; // the built-in strategy it descends from
    int generation = 0;
    QString text;
    bool retired = false;
    QDateTime at;
};

// Which rows of a run a reader wants: those after a row id (readers that follow a live run read
// only what is new), at most `limit` of them, optionally only one candidate's.
struct Slice {
    qint64 afterId = 0;     // rows with a larger id
    qint64 limit = -1;      // -1: all
    qint64 candidate = 0;   // 0: every candidate
    bool withSource = true; // candidates: read their kernel sources too (the bulk of a big run)
};

// What views of a run need of an evaluation, read without decoding its whole result: the columns
// kept for queries, findings, roofline and cell. Rows written before cells were stored (schema 4)
// carry the whole result instead, so a reader can place them itself.
struct EvaluationSummary {
    qint64 id = 0;
    qint64 candidateId = 0;
    model::EvaluationPurpose purpose = model::EvaluationPurpose::Search;
    QString status;
    std::optional<double> speedup;
    std::optional<double> candidateUs;
    std::optional<double> baselineUs;
    QString message;
    // Of its findings and roofline point, what a list of a million candidates shows, taken out of
    // their JSON by SQLite (evaluations() gives them whole): how many findings and the most severe
    // one's message; the point's intensity, achieved rates, bound and roof (zero and empty when none).
    int findingCount = 0;
    QString topFinding;
    double intensity = 0.0;
    double achievedFlops = 0.0;
    double achievedBytes = 0.0;
    QString bound;
    QString peakName;               // the compute roof it is held to (diagnose::Roofline::peakName)
    double splitTf32Fraction = 0.0; // diagnose::Roofline::splitTf32Fraction
    std::optional<model::Cell> cell;
    std::optional<protocol::EvaluateResult> result; // only for rows without a stored cell, compile errors aside
    QString device;                                 // the model it ran on; empty when none answered
};

// Who may use a run: one session of the engine at a time. Held for the session's lifetime as an
// exclusive flock() on a file beside the store ("<store>.run<ID>.lock"), so the kernel releases it
// when the process ends, however it ends: a crashed session never blocks a later one. The file
// names the holder (pid, host, start time) for the message a refused session prints.
class RunLock {
public:
    // Fails, naming the session that holds it, when another session (in this process or another)
    // has the run; or when the lock file cannot be made (the folder is not writable).
    static Expected<std::unique_ptr<RunLock>> acquire(const QString& storePath, qint64 runId);
    static QString pathFor(const QString& storePath, qint64 runId);
    ~RunLock(); // removes the file and releases the lock
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

private:
    RunLock(int fd, QString path) : m_fd(fd), m_path(std::move(path)) {}
    int m_fd = -1;
    QString m_path;
};

enum class OpenMode {
    ReadWrite, // creates the file if needed and migrates an older schema
    ReadOnly,  // changes nothing; every write fails
};

class RunStore {
public:
    // ReadWrite: opens or creates the file, sets WAL and a busy timeout, and migrates an older
    // schema. ReadOnly: opens an existing file without writing to it (falling back to SQLite's
    // immutable mode where even the WAL index cannot be made, as on a read-only file system); a
    // store of an older schema is copied into memory and upgraded there, so every reader works on
    // it as it was when opened. Fails with a message naming the file when it is not a kforge run
    // store, is newer than this build understands, or cannot be opened.
    static Expected<std::unique_ptr<RunStore>> open(const QString& path, OpenMode mode = OpenMode::ReadWrite);
    static int schemaVersion(); // the version this build writes
    bool readOnly() const { return m_readOnly; }

    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    QString path() const { return m_path; }

    // Runs. createRun ignores record.id and returns the new one.
    Expected<qint64> createRun(const RunRecord& record);
    Status updateRun(const RunRecord& record); // everything but id and created
    Expected<QList<RunRecord>> runs();         // newest first
    Expected<RunRecord> run(qint64 runId);     // fails naming the id when there is none

    // Candidates. Ids are assigned by the engine and unique within a run.
    Status insertCandidate(qint64 runId, const model::Candidate& candidate);
    Status setCandidateFlags(qint64 runId, qint64 candidateId, bool pinned, bool vetoed);
    // The run's candidates with an id above `afterId` (all of them by default): a reader that
    // follows a run counts only what it has not read, which is cheap however big the run is.
    Expected<qint64> candidateCount(qint64 runId, qint64 afterId = 0);
    // Ids of the pinned and of the vetoed candidates (small sets, read often by live views).
    Expected<std::pair<QList<qint64>, QList<qint64>>> flaggedCandidates(qint64 runId);
    Expected<QList<model::Candidate>> candidates(qint64 runId, const Slice& slice = {}); // in id order

    // Evaluations keep the whole result; diagnostics are also written as rows of their own
    // (candidate, kind, severity, line, message) so they can be queried.
    Expected<qint64> insertEvaluation(qint64 runId, qint64 candidateId, model::EvaluationPurpose purpose,
                                      const protocol::EvaluateResult& result, const QJsonArray& findings = {},
                                      const QJsonObject& roofline = {},
                                      const std::optional<model::Cell>& cell = std::nullopt);
    Expected<QList<EvaluationRecord>> evaluations(qint64 runId, const Slice& slice = {}); // in insertion order
    Expected<QList<EvaluationSummary>> evaluationSummaries(qint64 runId, const Slice& slice = {});
    // What the run measured of PyTorch, without reading every result: the search evaluation of its
    // first candidate (the first seed, timed beside PyTorch), and every yardstick evaluation.
    Expected<QList<EvaluationRecord>> pytorchEvaluations(qint64 runId);

    // The review queue. requestReview is true when the candidate was not queued before.
    Expected<bool> requestReview(qint64 runId, qint64 candidateId, const QString& reason);
    Status decideReview(qint64 runId, qint64 candidateId, bool accepted, const QString& note);
    Expected<QList<ReviewRecord>> reviews(qint64 runId); // in queue order

    // LLM calls; setLlmCallCandidate links a call to the candidate made from its answer once
    // that candidate is stored.
    Expected<qint64> insertLlmCall(qint64 runId, const LlmCallRecord& call);
    // A call stored when it was sent, completed when it ended: status, message, usage, cost,
    // latency, attempts and answer from `call`; the rest stays as sent.
    Status completeLlmCall(qint64 runId, qint64 callId, const LlmCallRecord& call);
    Status setLlmCallCandidate(qint64 runId, qint64 callId, qint64 candidateId);
    Expected<QList<LlmCallRecord>> llmCalls(qint64 runId, const Slice& slice = {}); // in insertion order
    // (call, candidate) of the calls after `afterId` that made a candidate, without their texts.
    Expected<QList<QPair<qint64, qint64>>> llmCallCandidates(qint64 runId, qint64 afterId);

    Status insertStrategy(qint64 runId, const StrategyRecord& strategy);
    Status retireStrategy(qint64 runId, qint64 strategyId);
    Expected<QList<StrategyRecord>> strategies(qint64 runId); // in id order

    // The islands' archives, replaced as a whole whenever they change. Nothing (no list) for a run
    // recorded before archives were stored: views then derive them from the candidates.
    Status setArchive(qint64 runId, const QList<ArchiveMemberRecord>& members);
    Expected<std::optional<QList<ArchiveMemberRecord>>> archive(qint64 runId);

    Expected<qint64> insertEvent(qint64 runId, int generation, model::EventKind kind, const QJsonObject& data);
    Expected<QList<EventRecord>> events(qint64 runId, const Slice& slice = {}); // in insertion order

    // Steering of a run that is not live: kept until the engine applies it when the run resumes.
    Expected<qint64> queueCommand(qint64 runId, const QJsonObject& command);
    Expected<QList<QueuedCommandRecord>> queuedCommands(qint64 runId); // not applied yet, oldest first
    Status markCommandApplied(qint64 runId, qint64 commandId);

    // What the compiler made of a candidate for compute capability `target` (PTX, SASS), as a
    // worker listed it; nothing until one was kept.
    Status storeListing(qint64 runId, qint64 candidateId, int target, const protocol::DisassembleResult& listing);
    Expected<std::optional<protocol::DisassembleResult>> listing(qint64 runId, qint64 candidateId, int target);

    // Groups writes into one IMMEDIATE transaction that rolls back unless committed. Writes made
    // outside a Transaction each run in their own.
    class Transaction {
    public:
        explicit Transaction(RunStore& store);
        ~Transaction(); // rolls back unless commit() succeeded
        Transaction(const Transaction&) = delete;
        Transaction& operator=(const Transaction&) = delete;
        Status begun() const { return m_begun; } // BEGIN IMMEDIATE may fail (busy, read-only, opened for reading)
        Status commit();

    private:
        RunStore& m_store;
        Status m_begun;
        bool m_done = false;
        bool m_outermost = false; // only the outermost one sends BEGIN and COMMIT
    };

private:
    RunStore(sqlite3* db, QString path);
    friend class Transaction;

    static Expected<std::unique_ptr<RunStore>> openForReading(const QString& path);
    std::string where() const; // the file, as messages name it
    Status configure();
    Status migrate();
    Status exec(const char* sql, const std::string& what);
    // The rows of a query that selects id, candidate_id, purpose, result_json, at, findings_json,
    // roofline_json and cell.
    Expected<QList<EvaluationRecord>> readEvaluations(util::sqlite::Statement& query, qint64 runId);
    // One write in its own transaction (or in the caller's when one is open). An outermost one
    // that fails because another connection holds the file (busy past the busy timeout, locked) is
    // tried again briefly before the failure is returned.
    template <typename T, typename Body> Expected<T> write(Body&& body);
    void rollback();
    Status requireRun(qint64 runId);
    Status requireCandidate(qint64 runId, qint64 candidateId);

    sqlite3* m_db = nullptr;
    QString m_path;
    bool m_readOnly = false;
    int m_lastFailure = 0; // the extended SQLite code of the last failed exec()
    int m_transactionDepth = 0;
    bool m_rollbackOnly = false; // a nested Transaction ended uncommitted: the outermost may not commit
};

} // namespace kforge::store
