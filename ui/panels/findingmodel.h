#pragma once
// The findings of one evaluation — the diagnose rules' structured findings and the worker's own
// diagnostics (compile errors, verification, integrity) — as one table, most severe first.

#include "store/runstore.h"

#include <QAbstractTableModel>
#include <QList>
#include <QString>

namespace kforge::ui {

struct FindingItem {
    enum class Source { Finding, Worker };
    Source source = Source::Finding;
    QString severity; // error, warning, info
    QString kind;
    int line = 0; // of the candidate's source; 0 when unknown
    int column = 0;
    QString message;
    QString evidence;
    QString direction; // which way to go; for worker diagnostics the kernel role instead
    QString role;      // candidate, reference, baseline for worker diagnostics

    // Both lists of an evaluation, findings first, then diagnostics; each most severe first.
    static QList<FindingItem> fromEvaluation(const store::EvaluationRecord& evaluation);
};

class FindingModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SeverityColumn, KindColumn, LineColumn, MessageColumn, EvidenceColumn, DirectionColumn, ColumnCount };
    enum Role {
        LineRole = Qt::UserRole + 1, // int, 0 when the item names no line
        SeverityRole,                // "error", "warning", "info"
        SourceRole,                  // FindingItem::Source as int
        SortRole,                    // what the column sorts by (severity by rank, line as a number)
    };

    explicit FindingModel(QObject* parent = nullptr);

    // Another evaluation: its findings replace the shown ones.
    void setItems(const QList<FindingItem>& items);
    void clear();
    const FindingItem& itemAt(int row) const { return m_items[row]; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QList<FindingItem> m_items;
};

} // namespace kforge::ui
