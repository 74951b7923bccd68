#include "runsession.h"

#include "runreader.h"
#include "search/steering.h"

#include "workerthread.h"

#include <QDir>
#include <QFileInfo>
#include <QThread>

namespace kforge::ui {

namespace {

search::EngineCommand command(search::EngineCommand::Kind kind, qint64 candidate = 0, const QString& reason = {}) {
    search::EngineCommand c;
    c.kind = kind;
    c.candidate = candidate;
    c.reason = reason;
    return c;
}
} // namespace

RunSession::RunSession(QObject* parent)
    : QObject(parent), m_data(new RunData(this)), m_details(new CandidateDetails(this)),
      m_selection(new CandidateSelection(this)) {
    qRegisterMetaType<search::RunProgress>();
    qRegisterMetaType<search::RunSummary>();
    qRegisterMetaType<search::EngineCommand>();
    qRegisterMetaType<protocol::DisassembleResult>();
    qRegisterMetaType<QList<store::RunRecord>>();
    m_reader = new RunReader;
    connect(m_reader, &RunReader::delta, this, &RunSession::onDelta);
    connect(m_reader, &RunReader::detailLoaded, m_details, &CandidateDetails::deliver);
    connect(m_reader, &RunReader::failed, this, [this](qint64 token, const QString& message) {
        if (token == m_pending)
            m_pending = 0; // the views go on showing the run they showed
        else if (token != m_token)
            return;
        emit failed(message);
    });
    connect(m_reader, &RunReader::commandQueued, this, [this](qint64 token, int waiting) {
        if (token != m_token)
            return;
        emit queued(waiting);
        refresh(); // the store's events and flags as they are now
    });
    connect(m_reader, &RunReader::runsListed, this,
            [this](qint64 token, const QString& path, const QList<store::RunRecord>& runs) {
                if (token == m_listToken)
                    emit runsListed(path, runs);
            });
    connect(m_reader, &RunReader::listFailed, this, [this](qint64 token, const QString& message) {
        if (token == m_listToken)
            emit failed(message);
    });
    connect(m_reader, &RunReader::listingRead, this,
            [this](qint64 token, qint64 candidate, int target, bool found, const protocol::DisassembleResult& listing) {
                if (token == m_token)
                    emit listingRead(candidate, target, found, listing);
            });
    connect(m_details, &CandidateDetails::requested, m_reader, &RunReader::loadDetail);
    m_readerThread = startWorkerThread(m_reader, QStringLiteral("kforge-run-reader"));
}

RunSession::~RunSession() {
    if (m_engine)
        m_engine->post(command(search::EngineCommand::Kind::Stop));
    if (m_readerThread)
        m_readerThread->quit();
}

void RunSession::openReader(const QString& storePath, qint64 run) {
    m_pending = ++m_lastToken;
    m_pendingPath = QFileInfo(storePath).absoluteFilePath();
    QMetaObject::invokeMethod(
        m_reader, [reader = m_reader, token = m_pending, path = m_pendingPath, run] { reader->open(token, path, run); },
        Qt::QueuedConnection);
}

void RunSession::adoptPending() {
    m_token = m_pending;
    m_pending = 0;
    m_announced = false;
    m_storePath = m_pendingPath;
    m_details->clear();
    m_details->setToken(m_token);
    m_selection->clear();
    m_data->clear();
}

bool RunSession::openStored(const QString& storePath, qint64 run) {
    if (isLive()) {
        emit failed(tr("A run is in progress; stop it before opening another."));
        return false;
    }
    if (!QFileInfo::exists(storePath)) {
        emit failed(tr("%1 does not exist").arg(storePath));
        return false;
    }
    setState(search::RunState::Finished);
    openReader(storePath, run);
    return true;
}

void RunSession::listRuns(const QString& storePath) {
    const QString path = QFileInfo(storePath).absoluteFilePath();
    if (!QFileInfo::exists(path)) {
        emit failed(tr("%1 does not exist").arg(storePath));
        return;
    }
    QMetaObject::invokeMethod(
        m_reader, [reader = m_reader, token = ++m_listToken, path] { reader->listRuns(token, path); },
        Qt::QueuedConnection);
}

void RunSession::refresh() {
    QMetaObject::invokeMethod(m_reader, &RunReader::refresh, Qt::QueuedConnection);
}

bool RunSession::start(search::Engine::Setup setup) {
    if (isLive()) {
        emit failed(tr("A run is already in progress."));
        return false;
    }
    QDir().mkpath(QFileInfo(setup.storePath).absolutePath());
    auto* engine = new search::Engine(std::move(setup));
    m_engine = engine;
    connect(engine, &search::Engine::started, this, [this](qint64 run, const QString& path) {
        openReader(path, run);
        setState(search::RunState::Running);
    });
    connect(engine, &search::Engine::progressed, this, [this](const search::RunProgress& progress) {
        m_data->setProgress(progress);
        setState(progress.state);
        refresh();
    });
    connect(engine, &search::Engine::notice, this, &RunSession::notice);
    connect(engine, &search::Engine::finished, this, [this](const search::RunSummary& summary) {
        setState(summary.state);
        refresh();
        m_engine.clear(); // nothing more to steer; the engine goes once its workers have stopped
        m_windingDown = true;
        if (summary.state == search::RunState::Failed)
            emit failed(summary.message);
        emit finished(summary);
    });
    QThread* thread = startWorkerThread(engine, QStringLiteral("kforge-engine"));
    // Ends the engine's thread from inside it, once the workers have stopped: it needs no event
    // loop elsewhere (the window may be gone by then).
    connect(engine, &search::Engine::released, thread, &QThread::quit, Qt::DirectConnection);
    connect(engine, &search::Engine::released, this, [this] {
        m_windingDown = false;
        emit released();
    });
    setState(search::RunState::Starting);
    QMetaObject::invokeMethod(engine, &search::Engine::start, Qt::QueuedConnection);
    return true;
}

void RunSession::onDelta(const RunDelta& delta) {
    if (delta.token != 0 && delta.token == m_pending)
        adoptPending(); // the run asked for could be read: the views show it from now on
    if (delta.token != m_token)
        return; // a run that is no longer shown
    m_data->apply(delta);
    for (const auto& row : delta.changed)
        m_details->invalidate(row.id);
    if (!m_announced) {
        m_announced = true;
        emit opened(delta.run.id, m_storePath);
    }
}

void RunSession::setState(search::RunState state) {
    if (state == m_state)
        return;
    m_state = state;
    emit stateChanged(state);
}

bool RunSession::post(const search::EngineCommand& command, const QString& what) {
    if (m_engine) {
        m_engine->post(command);
        return true;
    }
    // A stored run keeps steering in its store, for the engine to apply when the run resumes.
    if (search::Steering::immediate(command.kind) || !m_data->hasRun()) {
        emit failed(tr("Cannot %1: no run is in progress. Resume the run to steer it.").arg(what));
        return false;
    }
    QMetaObject::invokeMethod(
        m_reader,
        [reader = m_reader, token = m_token, path = m_storePath, run = m_data->run().id,
         json = search::Steering::toJson(command)] { reader->queueCommand(token, path, run, json); },
        Qt::QueuedConnection);
    return true;
}

void RunSession::readListing(qint64 candidate, int target) {
    QMetaObject::invokeMethod(
        m_reader,
        [reader = m_reader, token = m_token, candidate, target] { reader->readListing(token, candidate, target); },
        Qt::QueuedConnection);
}

void RunSession::keepListing(qint64 candidate, int target, const protocol::DisassembleResult& listing) {
    if (!m_data->hasRun())
        return;
    QMetaObject::invokeMethod(
        m_reader,
        [reader = m_reader, path = m_storePath, run = m_data->run().id, candidate, target, listing] {
            reader->keepListing(path, run, candidate, target, listing);
        },
        Qt::QueuedConnection);
}

bool RunSession::pause() {
    return post(command(search::EngineCommand::Kind::Pause), tr("pause"));
}

bool RunSession::resume() {
    return post(command(search::EngineCommand::Kind::Resume), tr("resume"));
}

bool RunSession::stop() {
    return post(command(search::EngineCommand::Kind::Stop), tr("stop"));
}

bool RunSession::pin(qint64 candidate, bool pinned) {
    return post(command(pinned ? search::EngineCommand::Kind::Pin : search::EngineCommand::Kind::Unpin, candidate),
                pinned ? tr("pin") : tr("unpin"));
}

bool RunSession::veto(qint64 candidate, const QString& reason) {
    return post(command(search::EngineCommand::Kind::Veto, candidate, reason), tr("veto"));
}

bool RunSession::decideReview(qint64 candidate, bool accept, const QString& note) {
    return post(command(accept ? search::EngineCommand::Kind::AcceptReview : search::EngineCommand::Kind::RejectReview,
                        candidate, note),
                tr("decide a review"));
}

bool RunSession::submitEdit(qint64 parent, const QString& source, const QString& note) {
    const auto* row = m_data->candidate(parent);
    auto c = command(search::EngineCommand::Kind::Inject, parent, note);
    c.injected.source = source;
    c.injected.parents = {parent};
    c.injected.island = row ? row->island : 0;
    c.injected.origin = model::Origin::Human;
    if (!note.isEmpty())
        c.injected.label = tr("human edit of #%1: %2").arg(parent).arg(note);
    return post(c, tr("submit an edit"));
}

} // namespace kforge::ui
