#include "recordtableview.h"

#include "celltextdelegate.h"

#include <QHeaderView>

namespace kforge::ui {

RecordTableView::RecordTableView(QWidget* parent) : QTableView(parent) {
    setTabKeyNavigation(false);
    setItemDelegate(new CellTextDelegate(this));
}

QModelIndex RecordTableView::moveCursor(CursorAction action, Qt::KeyboardModifiers modifiers) {
    if (action != MoveHome && action != MoveEnd)
        return QTableView::moveCursor(action, modifiers);
    // QTableView's Home and End go to the first and last column of the row; in a list of records
    // the column is only where the reader looks, so they go to the first and last row instead.
    const QAbstractItemModel* m = model();
    if (!m)
        return {};
    const int rows = m->rowCount(rootIndex());
    const QModelIndex current = currentIndex();
    int column = current.isValid() ? current.column() : horizontalHeader()->logicalIndex(0);
    if (column < 0)
        return {};
    const int step = action == MoveHome ? 1 : -1;
    for (int visual = action == MoveHome ? 0 : rows - 1; visual >= 0 && visual < rows; visual += step) {
        const int row = verticalHeader()->logicalIndex(visual);
        if (row >= 0 && !isRowHidden(row))
            return m->index(row, column, rootIndex());
    }
    return {};
}

} // namespace kforge::ui
