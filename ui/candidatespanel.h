#pragma once
// The candidate list: every candidate of the run, sortable by any column, filtered by text,
// state, origin and island; the current row follows the shared selection and keyboard navigation
// moves it. Two selected rows can be compared side by side. The filter belongs to the run shown:
// another run, or a new one, starts unfiltered.

#include <QWidget>

class QTableView;
class QLineEdit;
class QComboBox;

namespace kforge::ui {

class CandidateFilterModel;
class CandidateSelection;
class CandidateTableModel;
class RunData;

class CandidatesPanel : public QWidget {
    Q_OBJECT
public:
    CandidatesPanel(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    QTableView* view() const { return m_view; }
    CandidateTableModel* model() const { return m_model; }
    CandidateFilterModel* filter() const { return m_filter; }
    QLineEdit* filterField() const { return m_text; }
    // The ids of the selected rows, in the order shown.
    QList<qint64> selectedCandidates() const;
    // Shows every candidate again: no text, any state, origin and island.
    void clearFilters();
    // The columns' order, widths and sort order, kept across sessions (QSettings
    // "candidates/columns"); a layout saved for another set of columns is left unused.
    void saveColumns() const;
    void restoreColumns();
    // The width that shows every column up to Time (what a candidate is worth and its kernel time,
    // with its unit), frame, scroll bar and margins included: the docked panel's default width.
    int leadingColumnsWidth() const;

private:
    void follow(qint64 candidate);
    void fillIslands();
    // Device: only when the run mixes device models; vs eager: only when the run timed eager.
    void hideEmptyColumns();

    RunData* m_data;
    CandidateSelection* m_selection;
    CandidateTableModel* m_model = nullptr;
    CandidateFilterModel* m_filter = nullptr;
    QTableView* m_view = nullptr;
    QLineEdit* m_text = nullptr;
    QComboBox* m_state = nullptr;
    QComboBox* m_origin = nullptr;
    QComboBox* m_island = nullptr;
    bool m_following = false;
};

} // namespace kforge::ui
