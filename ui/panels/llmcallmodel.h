#pragma once
// The run's calls to language models, one row each, in the order they were made. Rows follow
// RunData: new calls are inserted at the end, a call that later got its candidate changes in place.

#include "appendonlytablemodel.h"

#include <QPointer>

namespace kforge::store {
struct LlmCallRecord;
}

namespace kforge::ui {

class RunData;

class LlmCallModel : public AppendOnlyTableModel {
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
        CachedTokensColumn, // of the input: read from the API's prompt cache; blank where not reported
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

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    int sourceRows() const override;
    void onChanged(const QList<int>& rows);

    QPointer<RunData> m_data;
};

} // namespace kforge::ui
