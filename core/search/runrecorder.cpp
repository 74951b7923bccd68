#include "search/runrecorder.h"

namespace kforge::search {

void RunRecorder::attach(store::RunStore* store, qint64 runId, FailureHandler onFailure) {
    m_store = store;
    m_runId = runId;
    m_onFailure = std::move(onFailure);
}

QString RunRecorder::failureMessage(const QString& what, const QString& error) {
    return QStringLiteral(
               "the run store could not record %1: %2. The run stopped there; everything stored before is intact, "
               "and `kforge run --resume` continues it once the store can be written again (free disk space, "
               "write permission, or another program holding it locked)")
        .arg(what, error);
}

bool RunRecorder::event(int generation, model::EventKind kind, const QJsonObject& data) {
    return written(m_store->insertEvent(m_runId, generation, kind, data),
                   QStringLiteral("a %1 event").arg(model::eventKindName(kind)));
}

bool RunRecorder::updateRun(const store::RunRecord& run) {
    if (!attached())
        return true;
    return written(m_store->updateRun(run), QStringLiteral("the run's state"));
}

bool RunRecorder::archives(const QList<store::ArchiveMemberRecord>& members) {
    if (m_archives && *m_archives == members)
        return true;
    if (!written(m_store->setArchive(m_runId, members), QStringLiteral("the islands' archives")))
        return false;
    m_archives = members;
    return true;
}

bool RunRecorder::endGeneration(int generation, bool replayed, const store::RunRecord& run,
                                const QList<store::ArchiveMemberRecord>& archives) {
    {
        store::RunStore::Transaction tx(*m_store);
        bool ok = written(tx.begun(), QStringLiteral("the end of generation %1").arg(generation));
        if (ok && !replayed)
            for (const auto& [kind, data] : m_buffered)
                if (!(ok = event(generation, kind, data)))
                    break;
        ok = ok && this->archives(archives) && updateRun(run);
        if (!ok || !written(tx.commit(), QStringLiteral("the end of generation %1").arg(generation)))
            return false;
    }
    m_buffered.clear();
    return true;
}

std::optional<QString> RunRecorder::endRun(int generation, const QJsonObject& ended, const store::RunRecord& run) {
    m_buffered.clear();
    store::RunStore::Transaction tx(*m_store);
    spec::Status ok = tx.begun();
    if (ok)
        if (auto stored = m_store->insertEvent(m_runId, generation, model::EventKind::RunEnded, ended); !stored)
            ok = spec::Error{stored.error()};
    if (ok)
        ok = m_store->updateRun(run);
    if (ok)
        ok = tx.commit();
    if (ok || m_broken)
        return std::nullopt;
    m_broken = true;
    return failureMessage(QStringLiteral("the end of the run"), QString::fromStdString(ok.error()));
}

} // namespace kforge::search
