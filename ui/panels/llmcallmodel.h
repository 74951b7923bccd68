#pragma once
// The run's calls to language models, one row each, in the order they were made. Rows follow
// RunData: new calls are inserted at the end, a call that later got its candidate changes in place.

#include <QAbstractTableModel>
#include <QPointer>

namespace kforge::store {
struct LlmCallRecord;
}

namespace kforge::ui {

class RunData;

class LlmCallModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        CallColumn,
        GenerationColumn,
        IslandColumn,
        OperatorColumn,
        StageColumn,
        ModelColumn,
        StatusColumn,
        InputTokensColumn,
        OutputTokensColumn,
        CostColumn,
        LatencyColumn,
        CandidateColumn,
        ColumnCount
    };
    enum Role {
        CallIdRole = Qt::UserRole + 1, // qint64
        CandidateRole,                 // qint64, 0 when the call made no candidate
        StatusRole,                    // "ok", "unparsable", "duplicate" or the client's error kind
        SortRole,                      // numbers as numbers; unknown tokens and costs sort first
    };

    explicit LlmCallModel(RunData* data, QObject* parent = nullptr);

    const store::LlmCallRecord* callAt(int row) const; // null outside the rows shown

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void onAdded(int first, int last);
    void onChanged(const QList<int>& rows);
    void onCleared();

    QPointer<RunData> m_data;
    // The rows announced to views; RunData has already grown when it tells us, so the model counts
    // its own rows to keep beginInsertRows truthful.
    int m_rows = 0;
};

} // namespace kforge::ui
