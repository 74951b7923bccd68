#pragma once
// Every write a run depends on goes through here. A store that cannot be written (disk full, held
// locked by another program past the busy timeout, read-only, an I/O error) stops the run at once,
// resumable, instead of letting it go on with results the store does not have: the first failed
// write calls the failure handler with a message that says so; later ones are only refused.
// Events of the generation in flight are buffered and stored with its end, in one transaction
// with the run record.

#include "store/runstore.h"

#include <QJsonObject>
#include <QString>

#include <functional>
#include <utility>
#include <vector>

namespace kforge::search {

class RunRecorder {
public:
    using FailureHandler = std::function<void(const QString& message)>;

    void attach(store::RunStore* store, qint64 runId, FailureHandler onFailure);
    bool attached() const { return m_store && m_runId != 0; }
    bool broken() const { return m_broken; }

    // True when `outcome` succeeded; otherwise the run stops (once) with a message naming `what`.
    template <typename T> bool written(const spec::Expected<T>& outcome, const QString& what) {
        if (outcome)
            return true;
        if (!m_broken) {
            m_broken = true;
            m_onFailure(failureMessage(what, QString::fromStdString(outcome.error())));
        }
        return false;
    }
    static QString failureMessage(const QString& what, const QString& error);

    // Stored at once.
    bool event(int generation, model::EventKind kind, const QJsonObject& data);
    bool updateRun(const store::RunRecord& run);
    // Buffered until the generation ends.
    void buffer(model::EventKind kind, const QJsonObject& data) { m_buffered.emplace_back(kind, data); }
    void dropBuffered() { m_buffered.clear(); }
    // The generation's buffered events (unless `replayed`: they are stored already), the
    // archives when they changed, and the run record, in one transaction. False when the run
    // stopped on a failed write.
    bool endGeneration(int generation, bool replayed, const store::RunRecord& run,
                       const QList<store::ArchiveMemberRecord>& archives);
    // The islands' archives, written only when they differ from those last written.
    bool archives(const QList<store::ArchiveMemberRecord>& members);
    // The end of the run: `run_ended` and the run record, in one transaction. On failure the
    // store still shows the run running, so it can be resumed; the message says why, unless a
    // failure was reported before.
    std::optional<QString> endRun(int generation, const QJsonObject& ended, const store::RunRecord& run);

private:
    store::RunStore* m_store = nullptr;
    qint64 m_runId = 0;
    FailureHandler m_onFailure;
    bool m_broken = false;
    std::vector<std::pair<model::EventKind, QJsonObject>> m_buffered;
    std::optional<QList<store::ArchiveMemberRecord>> m_archives; // as last written
};

} // namespace kforge::search
