#include "appendonlytablemodel.h"

namespace kforge::ui {

AppendOnlyTableModel::AppendOnlyTableModel(int columns, int rows, QObject* parent)
    : QAbstractTableModel(parent), m_columns(columns), m_rows(rows) {}

int AppendOnlyTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : m_rows;
}

int AppendOnlyTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : m_columns;
}

bool AppendOnlyTableModel::isShown(int row) const {
    return row >= 0 && row < m_rows && row < sourceRows();
}

void AppendOnlyTableModel::appendRows(int first, int last) {
    if (first != m_rows || last < first) {
        resetRows();
        return;
    }
    beginInsertRows({}, first, last);
    m_rows = last + 1;
    endInsertRows();
}

void AppendOnlyTableModel::resetRows() {
    beginResetModel();
    m_rows = sourceRows();
    endResetModel();
}

} // namespace kforge::ui
