#pragma once
// The run's event log: what the search did besides evaluating (migrations, new bests, rejected
// promotions, reviews) and what people did (pins, vetoes, injections, pauses), newest at the
// bottom, filterable by kind. Clicking an event that names a candidate, or moving onto it with the
// keyboard, selects that candidate.

#include <QPointer>
#include <QSet>
#include <QWidget>

class QComboBox;
class QModelIndex;
class QSortFilterProxyModel;
class QTableView;

namespace kforge::ui {

class CandidateSelection;
class EventModel;
class RunData;

class EventLogView : public QWidget {
    Q_OBJECT
public:
    EventLogView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    EventModel* model() const { return m_model; }
    QTableView* eventsView() const { return m_view; }
    QComboBox* kindFilter() const { return m_kind; }

private:
    void addKinds(int first, int last);
    void resetKinds();
    void updateFilter();
    void activate(const QModelIndex& index);

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    EventModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QComboBox* m_kind = nullptr;
    QTableView* m_view = nullptr;
    QSet<QString> m_kinds;
    bool m_filtering = false; // the proxy moves the current row while it filters: not the user
    bool m_followTail = true; // keep the newest event in view while the user has not scrolled up
};

} // namespace kforge::ui
