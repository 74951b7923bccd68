#pragma once
// A table whose rows mirror a list of a run that only grows (candidates, events, LLM calls) and is
// replaced as a whole when another run comes. RunData has already grown when it announces new
// rows, so the model counts the rows it has announced itself to keep beginInsertRows truthful.

#include <QAbstractTableModel>

namespace kforge::ui {

class AppendOnlyTableModel : public QAbstractTableModel {
public:
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;

protected:
    // `columns` wide, starting with the `rows` the list holds now.
    AppendOnlyTableModel(int columns, int rows, QObject* parent);

    // How many rows the list holds now; what a reset starts over with.
    virtual int sourceRows() const = 0;
    // Whether `row` is announced to views and still held by the list.
    bool isShown(int row) const;

    // Announces rows first..last (inclusive) of the list; anything but the rows that follow the
    // shown ones means the model is out of step, and it starts over rather than show wrong rows.
    void appendRows(int first, int last);
    void resetRows();

private:
    int m_columns = 0;
    int m_rows = 0;
};

} // namespace kforge::ui
