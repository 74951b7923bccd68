#pragma once
// A table of records (candidates, events, LLM calls) that moves the way people expect a list of
// rows to: Home and End (with or without Ctrl) jump to the first and last row and keep the column,
// and Tab leaves the table for the next widget instead of walking its cells. Its cells draw their
// text from a cache (CellTextDelegate): large tables repaint often.

#include <QTableView>

namespace kforge::ui {

class RecordTableView : public QTableView {
    Q_OBJECT
public:
    explicit RecordTableView(QWidget* parent = nullptr);

protected:
    QModelIndex moveCursor(CursorAction action, Qt::KeyboardModifiers modifiers) override;
};

} // namespace kforge::ui
