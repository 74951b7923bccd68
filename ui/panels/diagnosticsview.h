#pragma once
// What went wrong or limits the current candidate: the findings of its evaluation and the worker's
// diagnostics, the verification results, the compile logs, and the status line. Follows the shared
// selection; the whole result is loaded on demand, so it shows "Loading…" until it arrives.

#include "store/runstore.h"

#include <QPointer>
#include <QWidget>

class QAbstractItemView;
class QComboBox;
class QLabel;
class QModelIndex;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QStackedWidget;
class QStandardItemModel;
class QTabWidget;
class QTimer;
class QTableView;
class QTreeView;

namespace kforge::ui {

class CandidateDetails;
class CandidateSelection;
class ElidedLabel;
class FindingModel;
class RunData;
struct CandidateDetail;

class DiagnosticsView : public QWidget {
    Q_OBJECT
public:
    DiagnosticsView(RunData* data, CandidateDetails* details, CandidateSelection* selection, QWidget* parent = nullptr);

    qint64 candidate() const { return m_candidate; }
    // How long the tabs stay (emptied) while the next candidate's detail loads, before "Loading…".
    static constexpr int kLoadingDelayMs = 250;
    QAbstractItemView* findingsView() const;

signals:
    // The user activated a finding or diagnostic that names a line of the candidate's source.
    void lineActivated(int line);

private:
    void setCandidate(qint64 candidate);
    void refresh();
    void updateTitle();
    void showPlaceholder(const QString& text);
    // Empties what the tabs and status lines show, leaving which of them are shown as it is.
    void clearShown();
    void showDetail(const CandidateDetail& detail);
    void showEvaluation(int index);
    void onCandidatesChanged(const QList<int>& rows);
    void activateFinding(const QModelIndex& index);

    QPointer<RunData> m_data;
    QPointer<CandidateDetails> m_details;
    qint64 m_candidate = 0;
    int m_shownEvaluations = -1; // of the detail on screen; -1 when none is
    bool m_shownConfirmed = false;

    ElidedLabel* m_title = nullptr;
    ElidedLabel* m_status = nullptr;
    ElidedLabel* m_where = nullptr;
    QComboBox* m_evaluation = nullptr;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_placeholder = nullptr;
    QTabWidget* m_tabs = nullptr;
    FindingModel* m_findings = nullptr;
    QSortFilterProxyModel* m_findingsProxy = nullptr;
    QTableView* m_findingsView = nullptr;
    QStandardItemModel* m_checks = nullptr;
    QTreeView* m_checksView = nullptr;
    QPlainTextEdit* m_compileLog = nullptr;
    QList<store::EvaluationRecord> m_evaluations;
    // While the next candidate's detail loads, the tabs stay (emptied, under the new title) for a
    // moment before "Loading…" replaces them: flipping to the placeholder and back on every click
    // would lay the window out twice per selection, for a load that usually takes milliseconds.
    QTimer* m_loading = nullptr;
};

} // namespace kforge::ui
