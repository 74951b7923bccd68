#pragma once
// Every candidate of a run as a table (one row per candidate, in id order), for the candidate list
// and anything that needs candidates as an item model. Rows are only appended and changed in
// place, following RunData's signals; CandidateFilterModel sorts and filters it.

#include "appendonlytablemodel.h"
#include "rundata.h"

#include <QSortFilterProxyModel>

namespace kforge::ui {

class CandidateTableModel : public AppendOnlyTableModel {
    Q_OBJECT
public:
    enum Column {
        Id,
        Island,
        Generation,
        Origin,
        Label,
        Params,
        Status,
        Speedup,   // the search's measurement; unconfirmed unless re-measured
        Confirmed, // re-measured before promotion: what the run's best is judged by
        VsEager,   // over PyTorch eager: measured (a task without a baseline), or through the baseline
        Time,
        Device, // the model it was timed on (the candidate list shows it when a run mixes models)
        Cell,
        Findings,
        Flags,
        ColumnCount
    };
    enum Role {
        CandidateRole = Qt::UserRole + 1, // qint64 id
        SortRole,                         // numbers as numbers
        StatusRole,                       // "ok", "incorrect", ... empty while pending
        OriginRole,                       // search::Origin as int
        CorrectRole,
    };

    explicit CandidateTableModel(RunData* data, QObject* parent = nullptr);

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    QModelIndex indexOf(qint64 candidate, int column = Id) const;

private:
    int sourceRows() const override;
    QString cellText(const CandidateRow& row) const;
    std::optional<double> overEager(const CandidateRow& row) const;

    RunData* m_data;
    qint64 m_best = 0; // the best candidate as last shown (its row is bold and flagged)
    std::pair<QString, std::optional<double>> m_yardstick; // as last shown: speedup base, seed over eager
};

// Sorting on SortRole; filtering by free text (id, label, params, status, finding), origin, state
// and island.
class CandidateFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
public:
    enum class State { Any, Correct, Failed, Pending, Pinned, Vetoed };

    explicit CandidateFilterModel(QObject* parent = nullptr);

    void setText(const QString& text);
    void setOrigin(int origin); // -1: any
    void setState(State state);
    void setIsland(int island); // -1: any

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    QString m_text;
    int m_origin = -1;
    State m_state = State::Any;
    int m_island = -1;
};

} // namespace kforge::ui
