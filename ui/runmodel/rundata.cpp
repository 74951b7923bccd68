#include "rundata.h"

#include <QJsonArray>
#include <QJsonObject>

namespace kforge::ui {

QString originTitle(model::Origin origin, std::optional<model::TunerStrategy> strategy) {
    if (strategy) {
        switch (*strategy) {
        case model::TunerStrategy::Neighbour:
            return QObject::tr("tuner (neighbour)");
        case model::TunerStrategy::Random:
            return QObject::tr("tuner (random)");
        case model::TunerStrategy::Model:
            return QObject::tr("tuner (model)");
        case model::TunerStrategy::Cache:
            return QObject::tr("tuner (cache)");
        }
    }
    switch (origin) {
    case model::Origin::Seed:
        return QObject::tr("seed");
    case model::Origin::Tuner:
        return QObject::tr("tuner");
    case model::Origin::Expert:
        return QObject::tr("expert");
    case model::Origin::Llm:
        return QObject::tr("LLM");
    case model::Origin::Human:
        return QObject::tr("human");
    case model::Origin::Experience:
        return QObject::tr("experience");
    }
    return {};
}

RunData::RunData(QObject* parent) : QObject(parent) {
    static const int registered = [] {
        qRegisterMetaType<RunDelta>();
        return 0;
    }();
    Q_UNUSED(registered);
}

QStringList RunData::llmModels() const {
    QStringList models;
    const QJsonObject llm = m_run.config.value(QStringLiteral("llm")).toObject();
    for (const auto& m : llm.value(QStringLiteral("models")).toArray())
        if (const QString spec = m.toString(); !spec.isEmpty())
            models << spec;
    return models;
}

int RunData::rowOf(qint64 candidate) const {
    return m_rowOf.value(candidate, -1);
}

const CandidateRow* RunData::candidate(qint64 id) const {
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_rows[row];
}

QList<qint64> RunData::childrenOf(qint64 candidate) const {
    return m_children.value(candidate);
}

void RunData::setProgress(const search::RunProgress& progress) {
    m_progress = progress;
    emit progressChanged();
}

void RunData::clear() {
    m_run = {};
    m_islands = 0;
    m_dimensions = {};
    m_ceilings = {};
    m_deviceModels.clear();
    m_complete = true;
    m_loaded = m_total = 0;
    m_rows.clear();
    m_rowOf.clear();
    m_children.clear();
    m_events.clear();
    m_llmCalls.clear();
    m_llmRowOf.clear();
    m_strategies.clear();
    m_archives.reset();
    m_pytorch = {};
    m_progress = {};
    emit cleared();
}

void RunData::apply(const RunDelta& delta) {
    if (delta.fresh) {
        clear();
        m_dimensions = delta.dimensions;
    }
    m_run = delta.run;
    m_islands = std::max(m_islands, delta.islands);
    if (delta.ceilings)
        m_ceilings = *delta.ceilings;
    if (delta.pytorch)
        m_pytorch = *delta.pytorch;
    m_complete = delta.complete;
    m_loaded = delta.loaded;
    m_total = delta.total;
    emit runChanged();

    if (!delta.added.isEmpty()) {
        const int first = static_cast<int>(m_rows.size());
        // Room for every candidate the store holds, once: growing a list of a million rows (and
        // rehashing their index) chunk by chunk would copy them all, on the GUI thread, each time.
        if (delta.total > m_rows.capacity()) {
            m_rows.reserve(delta.total);
            m_rowOf.reserve(delta.total);
            m_children.reserve(delta.total);
        }
        for (const auto& row : delta.added) {
            m_rowOf.insert(row.id, static_cast<int>(m_rows.size()));
            for (qint64 parent : row.parents)
                m_children[parent].push_back(row.id);
            m_islands = std::max(m_islands, row.island + 1);
            if (!row.device.isEmpty() && !m_deviceModels.contains(row.device))
                m_deviceModels << row.device;
            m_rows.push_back(row);
        }
        emit candidatesAdded(first, static_cast<int>(m_rows.size()) - 1);
    }
    if (!delta.changed.isEmpty()) {
        QList<int> rows;
        for (const auto& row : delta.changed) {
            const int at = rowOf(row.id);
            if (at < 0)
                continue;
            m_rows[at] = row;
            if (!row.device.isEmpty() && !m_deviceModels.contains(row.device))
                m_deviceModels << row.device;
            rows.push_back(at);
        }
        if (!rows.isEmpty())
            emit candidatesChanged(rows);
    }
    if (!delta.events.isEmpty()) {
        const int first = static_cast<int>(m_events.size());
        m_events.append(delta.events);
        emit eventsAdded(first, static_cast<int>(m_events.size()) - 1);
    }
    if (!delta.llmCalls.isEmpty()) {
        const int first = static_cast<int>(m_llmCalls.size());
        for (const auto& call : delta.llmCalls) {
            m_llmRowOf.insert(call.id, static_cast<int>(m_llmCalls.size()));
            m_llmCalls.push_back(call);
        }
        emit llmCallsAdded(first, static_cast<int>(m_llmCalls.size()) - 1);
    }
    if (!delta.llmLinks.isEmpty()) {
        QList<int> rows;
        for (const auto& [call, candidate] : delta.llmLinks) {
            const int at = m_llmRowOf.value(call, -1);
            if (at < 0 || m_llmCalls[at].candidateId == candidate)
                continue;
            m_llmCalls[at].candidateId = candidate;
            rows.push_back(at);
        }
        if (!rows.isEmpty())
            emit llmCallsChanged(rows);
    }
    if (delta.strategiesChanged) {
        m_strategies = delta.strategies;
        emit strategiesChanged();
    }
    if (delta.archivesChanged) {
        m_archives = delta.archives;
        emit archivesChanged();
    }
}

} // namespace kforge::ui
