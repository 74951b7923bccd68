#include "candidatelistmodel.h"

#include "panelstyle.h"
#include "rundata.h"

namespace kforge::ui {

CandidateListModel::CandidateListModel(RunData* data, QObject* parent) : QAbstractListModel(parent), m_data(data) {
    connect(data, &RunData::candidatesChanged, this, &CandidateListModel::onCandidatesChanged);
}

void CandidateListModel::setCandidates(const QList<qint64>& ids) {
    if (ids == m_ids)
        return;
    beginResetModel();
    m_ids = ids;
    endResetModel();
}

void CandidateListModel::append(const QList<qint64>& ids) {
    if (ids.isEmpty())
        return;
    const int first = static_cast<int>(m_ids.size());
    beginInsertRows({}, first, first + static_cast<int>(ids.size()) - 1);
    m_ids.append(ids);
    endInsertRows();
}

int CandidateListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_ids.size());
}

QVariant CandidateListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const qint64 id = m_ids[index.row()];
    const CandidateRow* row = m_data ? m_data->candidate(id) : nullptr;
    switch (role) {
    case CandidateRole:
        return id;
    case Qt::DisplayRole: {
        if (!row)
            return tr("#%1 (not loaded yet)").arg(id);
        // "#8 tuner VW=8", "#1 seed · baseline": a label that begins with the origin does not repeat it.
        const QString origin = originTitle(row->origin);
        const bool named = row->label.startsWith(origin + QLatin1Char(' '));
        QStringList parts{QStringLiteral("#%1 %2").arg(id).arg(named ? row->label : origin)};
        if (!named && !row->label.isEmpty())
            parts << row->label;
        if (!row->evaluated())
            parts << tr("not evaluated");
        else if (row->status != QLatin1String("ok"))
            parts << statusTitle(row->status);
        else if (row->speedup > 0.0)
            parts << formatSpeedup(row->speedup);
        return parts.join(QStringLiteral(" · "));
    }
    case Qt::ForegroundRole:
        if (row && row->evaluated() && row->status != QLatin1String("ok"))
            return statusColor(row->status);
        return {};
    case Qt::ToolTipRole:
        if (row && !row->message.isEmpty())
            return row->message;
        return tr("Activate to select candidate #%1").arg(id);
    default:
        return {};
    }
}

void CandidateListModel::onCandidatesChanged(const QList<int>& rows) {
    if (!m_data || m_ids.isEmpty())
        return;
    for (int row : rows) {
        const qint64 id = m_data->candidateAt(row).id;
        for (int i = 0; i < m_ids.size(); ++i)
            if (m_ids[i] == id)
                emit dataChanged(index(i), index(i));
    }
}

} // namespace kforge::ui
