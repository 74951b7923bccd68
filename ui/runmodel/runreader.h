#pragma once
// Reads a run from its store for the views, in its own thread (the GUI thread never touches
// SQLite). open() reads a stored run in chunks, so a run of 100k candidates fills the views
// progressively; refresh() reads only what is new since the last read, which is how a live run
// reaches the views: the session calls it when the engine reports progress. The engine writes the
// same file through its own connection; WAL lets this reader run beside it.

#include "candidatedetails.h"
#include "eval/executor.h" // DisassembleResult as a signal argument
#include "rundata.h"
#include "search/descriptors.h"

#include <QJsonObject>
#include <QObject>
#include <QSet>

#include <memory>
#include <unordered_map>

namespace kforge::ui {

class RunReader : public QObject {
    Q_OBJECT
public:
    explicit RunReader(QObject* parent = nullptr);
    ~RunReader() override;

    static constexpr int kChunk = 4000; // candidates per delta while a large run loads

public slots:
    // `run` 0: the newest run in the store. Deltas carry `token`.
    void open(qint64 token, const QString& storePath, qint64 run);
    void refresh();
    void loadDetail(qint64 candidate);
    void close();
    // Keeps steering of a stored run in its store (search::Steering's JSON) until the run resumes:
    // commandQueued() with how many wait now, or failed() naming what went wrong.
    void queueCommand(qint64 token, const QString& storePath, qint64 run, const QJsonObject& command);
    // The runs of a store, newest first, for a picker: what is being read is left as it is.
    void listRuns(qint64 token, const QString& storePath);
    // A listing (PTX, SASS) of a candidate of the open run kept in its store: listingRead(), with
    // `found` false when none is (or it cannot be read, which is logged).
    void readListing(qint64 token, qint64 candidate, int target);
    // Keeps a listing in the store, through a connection of its own; a store that cannot be
    // written (read-only file) is logged and left as it is: the listing was shown all the same.
    void keepListing(const QString& storePath, qint64 run, qint64 candidate, int target,
                     const kforge::protocol::DisassembleResult& listing);

signals:
    void delta(const kforge::ui::RunDelta& delta);
    void detailLoaded(qint64 token, const kforge::ui::CandidateDetail& detail);
    void failed(qint64 token, const QString& message);
    void runsListed(qint64 token, const QString& storePath, const QList<kforge::store::RunRecord>& runs);
    void listFailed(qint64 token, const QString& message);
    void commandQueued(qint64 token, int waiting);
    void listingRead(qint64 token, qint64 candidate, int target, bool found,
                     const kforge::protocol::DisassembleResult& listing);

private:
    void readMore(); // one chunk; queues itself again while rows remain
    bool readChunk(RunDelta& delta);
    void applyEvaluation(const store::EvaluationSummary& evaluation, CandidateRow& row);
    void reportFailure(const QString& message);

    std::unique_ptr<store::RunStore> m_store;
    qint64 m_token = 0;
    qint64 m_run = 0;
    bool m_fresh = false;
    bool m_reading = false; // a chunked read is under way
    bool m_refreshAgain = false;
    qint64 m_total = -1; // candidates in the store when this read began; -1: not counted yet
    search::DescriptorSpace m_space;
    spec::Dialect m_dialect = spec::Dialect::OpenCL;
    int m_islands = 0;

    qint64 m_lastCandidate = 0;
    qint64 m_lastEvaluation = 0;
    qint64 m_lastEvent = 0;
    qint64 m_lastLlmCall = 0;
    qint64 m_firstCandidate = 0; // the run's first, which PyTorch was timed beside
    std::unordered_map<qint64, CandidateRow> m_rows;
    QList<store::EvaluationSummary> m_readAhead;                 // read past the last candidate: the next chunk's
    QSet<qint64> m_unlinkedCalls;                                // ok calls sent before their candidate was linked
    std::optional<QList<store::ArchiveMemberRecord>> m_archives; // as last sent
    QSet<qint64> m_pinned;
    QSet<qint64> m_vetoed;
    QHash<qint64, QString> m_reviews;
    QList<store::StrategyRecord> m_strategies;
};

} // namespace kforge::ui
