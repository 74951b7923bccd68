#include "findingmodel.h"

#include "util/text.h"

#include "diagnose/finding.h"
#include "panelstyle.h"

#include <QJsonObject>

#include <algorithm>

namespace kforge::ui {

namespace {
using util::q;
} // namespace

QList<FindingItem> FindingItem::fromEvaluation(const store::EvaluationRecord& evaluation) {
    QList<FindingItem> items;
    for (const auto& value : evaluation.findings) {
        const auto finding = diagnose::Finding::fromJson(value.toObject());
        FindingItem item;
        item.source = Source::Finding;
        item.severity = finding.severity;
        item.kind = finding.kind;
        item.line = finding.line;
        item.message = finding.message;
        item.evidence = finding.evidence;
        item.direction = finding.direction;
        items.push_back(item);
    }
    QList<FindingItem> diagnostics;
    for (const auto& d : evaluation.result.diagnostics) {
        FindingItem item;
        item.source = Source::Worker;
        item.severity = q(d.severity);
        item.kind = q(d.kind);
        item.line = d.line;
        item.column = d.column;
        item.message = q(d.message);
        item.role = q(d.role);
        diagnostics.push_back(item);
    }
    // The store keeps findings most severe first already; the worker's are in the order it met them.
    std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const FindingItem& a, const FindingItem& b) {
        return severityRank(a.severity) > severityRank(b.severity);
    });
    items.append(diagnostics);
    return items;
}

FindingModel::FindingModel(QObject* parent) : QAbstractTableModel(parent) {}

void FindingModel::setItems(const QList<FindingItem>& items) {
    beginResetModel();
    m_items = items;
    endResetModel();
}

void FindingModel::clear() {
    setItems({});
}

int FindingModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_items.size());
}

int FindingModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant FindingModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const FindingItem& item = m_items[index.row()];
    switch (role) {
    case LineRole:
        return item.line;
    case SeverityRole:
        return item.severity;
    case SourceRole:
        return static_cast<int>(item.source);
    case Qt::DecorationRole:
        if (index.column() == SeverityColumn)
            return severityIcon(item.severity);
        return {};
    case Qt::ForegroundRole:
        if (index.column() == SeverityColumn)
            return severityColor(item.severity);
        return {};
    case Qt::ToolTipRole:
        if (index.column() == MessageColumn || index.column() == EvidenceColumn || index.column() == DirectionColumn)
            return data(index, Qt::DisplayRole);
        if (index.column() == LineColumn && item.line > 0)
            return tr("Activate to show line %1 in the source").arg(item.line);
        return {};
    case SortRole:
        if (index.column() == SeverityColumn)
            return severityRank(item.severity);
        if (index.column() == LineColumn)
            return item.line;
        return data(index, Qt::DisplayRole);
    case Qt::DisplayRole:
        switch (index.column()) {
        case SeverityColumn:
            return item.severity;
        case KindColumn:
            return item.source == FindingItem::Source::Worker ? tr("%1 (worker)").arg(item.kind) : item.kind;
        case LineColumn:
            if (item.line <= 0)
                return {};
            return item.column > 0 ? QStringLiteral("%1:%2").arg(item.line).arg(item.column)
                                   : QString::number(item.line);
        case MessageColumn:
            return item.message;
        case EvidenceColumn:
            return item.evidence;
        case DirectionColumn:
            if (item.source == FindingItem::Source::Worker)
                return item.role.isEmpty() ? QString() : tr("in the %1").arg(item.role);
            return item.direction;
        }
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == LineColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    default:
        return {};
    }
}

QVariant FindingModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SeverityColumn:
        return tr("Severity");
    case KindColumn:
        return tr("Kind");
    case LineColumn:
        return tr("Line");
    case MessageColumn:
        return tr("Message");
    case EvidenceColumn:
        return tr("Evidence");
    case DirectionColumn:
        return tr("Direction");
    }
    return {};
}

} // namespace kforge::ui
