#pragma once
// How the panels show the recurring bits of a run — severities, evaluation statuses, speedups,
// code and logs — so that a finding looks the same in the diagnostics, the lineage and the logs.

#include <QColor>
#include <QFont>
#include <QIcon>
#include <QList>
#include <QPalette>
#include <QString>

class QAbstractItemModel;
class QLabel;
class QPlainTextEdit;
class QSplitter;
class QTableView;

namespace kforge::ui {

// Higher is more severe: error 2, warning 1, info 0, anything else -1. Sorting uses it.
int severityRank(const QString& severity);
QIcon severityIcon(const QString& severity);
// A foreground readable on `palette`'s base (a light/dark pair); the application's palette by default.
QColor severityColor(const QString& severity);
QColor severityColor(const QString& severity, const QPalette& palette);

// ok green, incorrect/compile_error/... red, timeout/rejected amber; invalid for unknown ones.
QColor statusColor(const QString& status);
QColor statusColor(const QString& status, const QPalette& palette);
QString statusTitle(const QString& status); // "compile error" for compile_error

QString formatSpeedup(double speedup); // "1.82×", "" when 0 (not timed)

QIcon passIcon(); // a passed check

// Sets each column to `chars[i]` average characters (0: leave it), never narrower than its header.
void setColumnWidths(QTableView* view, const QList<int>& chars);

QFont codeFont();
// A read-only, non-wrapping monospace text pane for logs, prompts and diffs.
QPlainTextEdit* makeCodePane(const QString& placeholder);

// A read-only table of records over `model`: whole rows, one at a time, sortable by the user,
// compact unwrapped rows without a row header, the last column taking what is left.
QTableView* makeRecordTable(QAbstractItemModel* model, const QString& objectName);
// A plain-text label that wraps and can be selected, naming what a detail pane shows.
QLabel* makeDetailTitle();
// The panels' master and detail: `master` above a pane of `title` over `body`, the two halves of a
// vertical splitter that never collapse.
QSplitter* makeMasterDetail(QWidget* master, QWidget* title, QWidget* body);

} // namespace kforge::ui
