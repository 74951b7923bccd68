#pragma once
// Which run of a store to show, when the store holds more than one: its runs newest first with
// task, backend, state, evaluations, confirmed best and when each last changed, a filter over
// them, the one shown now (or the newest) chosen to begin with. Double-click or Enter opens one.

#include "store/runstore.h"

#include <QDialog>

class QLineEdit;
class QTreeWidget;

namespace kforge::ui {

class RunPickerDialog : public QDialog {
    Q_OBJECT
public:
    // `runs` newest first, as RunStore::runs() gives them; `current` is chosen first when listed.
    RunPickerDialog(const QString& storePath, const QList<store::RunRecord>& runs, qint64 current,
                    QWidget* parent = nullptr);

    qint64 chosenRun() const; // 0 when none is chosen
    void choose(qint64 run);  // selects that run's row (tests, the keyboard)
    QTreeWidget* list() const { return m_list; }
    QLineEdit* filterField() const { return m_filter; }

private:
    void applyFilter(const QString& text);
    QTreeWidget* m_list = nullptr;
    QLineEdit* m_filter = nullptr;
};

} // namespace kforge::ui
