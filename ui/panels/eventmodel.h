#pragma once
// The events of a run (migrations, promotions, human actions, budget and run state changes), one
// row each in the order they happened, with a readable one-line summary of each event's data.
// Rows follow RunData: new events are inserted at the end.

#include "appendonlytablemodel.h"

#include <QPointer>

namespace kforge::store {
struct EventRecord;
}

namespace kforge::ui {

class RunData;

// "island 0 → 1, candidate 17 (1.80×), accepted" for a migration; every kind has its own words,
// unknown kinds list their data as key = value.
QString eventSummary(const store::EventRecord& event);
// The candidate an event is about; 0 when none.
qint64 eventCandidate(const store::EventRecord& event);

class EventModel : public AppendOnlyTableModel {
    Q_OBJECT
public:
    enum Column { GenerationColumn, TimeColumn, KindColumn, SummaryColumn, ColumnCount };
    enum Role {
        KindRole = Qt::UserRole + 1, // "migration", "new_best", ...
        CandidateRole,               // qint64, 0 when the event names none
        SortRole,
    };

    explicit EventModel(RunData* data, QObject* parent = nullptr);

    const store::EventRecord* eventAt(int row) const; // null outside the rows shown

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    int sourceRows() const override;

    QPointer<RunData> m_data;
};

} // namespace kforge::ui
