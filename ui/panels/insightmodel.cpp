#include "insightmodel.h"

#include "panelstyle.h"

#include "experience/harvester.h"

#include <QFileInfo>
#include <QLocale>

namespace kforge::ui {

InsightModel::InsightModel(QObject* parent) : QAbstractTableModel(parent) {}

QString InsightModel::kindTitle(model::InsightKind kind) {
    switch (kind) {
    case model::InsightKind::Helped:
        return tr("helped");
    case model::InsightKind::Hurt:
        return tr("hurt");
    case model::InsightKind::HumanPin:
        return tr("pinned");
    case model::InsightKind::HumanVeto:
        return tr("vetoed");
    case model::InsightKind::HumanEdit:
        return tr("edited");
    }
    return statusTitle(model::insightKindName(kind));
}

void InsightModel::setInsights(const QList<experience::Insight>& insights) {
    beginResetModel();
    m_insights = insights;
    endResetModel();
}

int InsightModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_insights.size());
}

int InsightModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant InsightModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const experience::Insight& insight = m_insights[index.row()];
    switch (role) {
    case KindRole:
        return model::insightKindName(insight.kind);
    case InsightIdRole:
        return insight.id;
    case SortRole:
        switch (index.column()) {
        case SpeedupColumn:
            return insight.speedup;
        case DateColumn:
            return insight.at;
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::ForegroundRole:
        if (index.column() == KindColumn) {
            if (insight.kind == model::InsightKind::Helped)
                return statusColor(QStringLiteral("ok"));
            if (insight.kind == model::InsightKind::Hurt || insight.kind == model::InsightKind::HumanVeto)
                return severityColor(QStringLiteral("error"));
            return severityColor(QStringLiteral("info"));
        }
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case TransformationColumn:
            return insight.summary.isEmpty() ? insight.transformation : insight.summary;
        case ReasonColumn:
            return insight.reason;
        case OriginColumn:
            return insight.origin;
        case DateColumn:
            return QLocale().toString(insight.at.toLocalTime(), QLocale::LongFormat);
        default:
            return {};
        }
    case Qt::TextAlignmentRole:
        if (index.column() == SpeedupColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case KindColumn:
            return kindTitle(insight.kind);
        case TaskColumn:
            return insight.family.isEmpty() || insight.family == insight.task
                       ? insight.task
                       : QStringLiteral("%1 (%2)").arg(insight.task, insight.family);
        case BackendColumn:
            return insight.backend;
        case TransformationColumn:
            return insight.transformation;
        case SpeedupColumn:
            return formatSpeedup(insight.speedup);
        case ReasonColumn:
            return insight.reason;
        case OriginColumn: {
            // The store's name, the run and the candidate are what people recognise:
            // "demo-softmax-20261207-055534 (run 1, #2)"; the tooltip has the whole origin.
            if (const auto from = experience::parseOrigin(insight.origin))
                return tr("%1 (run %2, #%3)")
                    .arg(QFileInfo(from->storePath).completeBaseName())
                    .arg(from->runId)
                    .arg(from->candidate);
            const qsizetype hash = insight.origin.lastIndexOf(u'#');
            if (hash < 0)
                return QFileInfo(insight.origin).fileName().isEmpty() ? insight.origin
                                                                      : QFileInfo(insight.origin).fileName();
            return QFileInfo(insight.origin.left(hash)).fileName() + insight.origin.mid(hash);
        }
        case DateColumn:
            return QLocale().toString(insight.at.toLocalTime().date(), QLocale::ShortFormat);
        }
        return {};
    default:
        return {};
    }
}

QVariant InsightModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case KindColumn:
        return tr("Kind");
    case TaskColumn:
        return tr("Task");
    case BackendColumn:
        return tr("Backend");
    case TransformationColumn:
        return tr("Transformation");
    case SpeedupColumn:
        return tr("Speedup");
    case ReasonColumn:
        return tr("Reason");
    case OriginColumn:
        return tr("Origin");
    case DateColumn:
        return tr("Date");
    }
    return {};
}

} // namespace kforge::ui
