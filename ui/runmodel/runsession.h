#pragma once
// One run as the workbench holds it: the data its views show, the reader thread that fills that
// data from the run store, the shared selection, and, for a live run, the engine in its own thread.
// Steering (pause, pin, veto, edit) becomes engine commands; the engine applies them at the next
// generation boundary and records them, and the reader brings the result back like any other
// change. Nothing here blocks the GUI thread.

#include "candidatedetails.h"
#include "candidateselection.h"
#include "eval/executor.h" // DisassembleResult as a signal argument
#include "rundata.h"
#include "search/engine.h"

#include <QObject>
#include <QPointer>
#include <QThread>

namespace kforge::ui {

class RunReader;

class RunSession : public QObject {
    Q_OBJECT
public:
    explicit RunSession(QObject* parent = nullptr);
    // A live run is asked to stop (it can be resumed later); nothing waits: the engine's thread
    // ends by itself once its workers have stopped, the reader's at once.
    ~RunSession() override;

    RunData* data() const { return m_data; }
    CandidateDetails* details() const { return m_details; }
    CandidateSelection* selection() const { return m_selection; }

    QString storePath() const { return m_storePath; }
    qint64 runId() const { return m_data->run().id; }
    bool isLive() const { return !m_engine.isNull(); }
    // A run has finished but its workers are still stopping (released() follows).
    bool isWindingDown() const { return m_windingDown; }
    search::RunState state() const { return m_state; }

    // Shows a stored run (run 0: the newest in the store). Refused while a run is live. The views
    // keep the run they show until the new one has been read; one that cannot be read (not a run
    // store, no such run) leaves them as they were and reports failed().
    bool openStored(const QString& storePath, qint64 run = 0);
    // Lists the runs of a store (newest first) in the reader's thread: runsListed(), or failed()
    // naming what is wrong with the file. Only the newest request is answered.
    void listRuns(const QString& storePath);
    // Reads what is new in the store now (the engine's progress does this for a live run).
    void refresh();
    // Starts a new run (setup.resumeRun -1) or resumes a stored one in a new engine thread.
    bool start(search::Engine::Setup setup);

    // Steering. A live run's engine takes them at its next generation boundary; on a stored run pin,
    // unpin, veto, edits and review decisions are queued in its store at once (queued() follows)
    // and applied when the run resumes; pause, resume and stop are refused (false, with failed())
    // when no run is live.
    bool pause();
    bool resume();
    bool stop();
    bool pin(qint64 candidate, bool pinned = true);
    bool veto(qint64 candidate, const QString& reason);
    // Evaluates an edited kernel as a new child of `parent` with origin human.
    bool submitEdit(qint64 parent, const QString& source, const QString& note);
    bool decideReview(qint64 candidate, bool accept, const QString& note);

    // Listings (PTX, SASS) of the shown run's candidates kept in its store (ListingService):
    // readListing() is answered by listingRead(); keepListing() writes through its own connection.
    void readListing(qint64 candidate, int target);
    void keepListing(qint64 candidate, int target, const protocol::DisassembleResult& listing);

signals:
    void opened(qint64 run, const QString& storePath);
    void failed(const QString& message);
    void runsListed(const QString& storePath, const QList<kforge::store::RunRecord>& runs);
    // Steering of the stored run shown was kept in its store: `waiting` commands now wait for the
    // run to resume.
    void queued(int waiting);
    void listingRead(qint64 candidate, int target, bool found, const kforge::protocol::DisassembleResult& listing);
    void notice(const QString& message);
    void stateChanged(kforge::search::RunState state);
    void finished(const kforge::search::RunSummary& summary);
    // After finished(): the run's workers have stopped and its engine thread is ending.
    void released();

private:
    void openReader(const QString& storePath, qint64 run);
    void adoptPending();
    bool post(const search::EngineCommand& command, const QString& what);
    void onDelta(const RunDelta& delta);
    void setState(search::RunState state);
    RunData* m_data = nullptr;
    CandidateDetails* m_details = nullptr;
    CandidateSelection* m_selection = nullptr;
    QPointer<QThread> m_readerThread;
    RunReader* m_reader = nullptr; // lives in m_readerThread
    qint64 m_token = 0;            // which open() the views show
    qint64 m_lastToken = 0;        // the newest open() asked for
    qint64 m_listToken = 0;        // the newest listRuns() asked for
    qint64 m_pending = 0;          // an open() not yet read: the views keep the run they show until it is
    QString m_pendingPath;
    bool m_announced = false;
    QString m_storePath;

    QPointer<search::Engine> m_engine; // in its own thread, which ends once the engine is released
    search::RunState m_state = search::RunState::Finished;
    bool m_windingDown = false;
};

} // namespace kforge::ui
