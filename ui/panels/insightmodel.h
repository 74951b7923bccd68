#pragma once
// Insights of the experience library as a table: one answer to a query at a time, so a new answer
// replaces the rows.

#include "experience/experiencelibrary.h"

#include <QAbstractTableModel>
#include <QList>

namespace kforge::ui {

class InsightModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        KindColumn,
        TaskColumn,
        BackendColumn,
        TransformationColumn,
        SpeedupColumn,
        ReasonColumn,
        OriginColumn,
        DateColumn,
        ColumnCount
    };
    enum Role {
        KindRole = Qt::UserRole + 1, // helped, hurt, human_pin, human_veto, human_edit
        InsightIdRole,               // qint64
        SortRole,
    };

    explicit InsightModel(QObject* parent = nullptr);

    void setInsights(const QList<experience::Insight>& insights);
    const experience::Insight& insightAt(int row) const { return m_insights[row]; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString kindTitle(model::InsightKind kind); // "pinned" for human_pin

private:
    QList<experience::Insight> m_insights;
};

} // namespace kforge::ui
