#pragma once
// The LLM log of a run: every call to a language model with its cost and outcome, filterable by
// text and status, and the system prompt, prompt and answer of the chosen call. Choosing a call
// (a click, or moving onto it with the keyboard) that made a candidate selects that candidate
// everywhere. Totals count known costs and say how
// many calls had none, so an unknown price never reads as free.

#include <QPointer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QStackedWidget;
class QTabWidget;
class QTableView;

namespace kforge::ui {

class CandidateSelection;
class LlmCallModel;
class RunData;

class LlmLogView : public QWidget {
    Q_OBJECT
public:
    LlmLogView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    LlmCallModel* model() const { return m_model; }
    QTableView* callsView() const { return m_view; }
    // The call whose texts are shown; 0 when none.
    qint64 shownCall() const { return m_shownCall; }
    QString shownPrompt() const;
    QString shownAnswer() const;
    QString totalsText() const;

private:
    void updatePage();
    void updateFilter();
    void addToTotals(int first, int last);
    void resetTotals();
    void updateTotalsLabel();
    void showCall(const QModelIndex& proxyIndex);
    void activateCall(const QModelIndex& proxyIndex);
    void followSelection(qint64 candidate);

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    LlmCallModel* m_model = nullptr;
    QSortFilterProxyModel* m_statusFilter = nullptr;
    QSortFilterProxyModel* m_textFilter = nullptr;

    QStackedWidget* m_stack = nullptr;
    QLabel* m_placeholder = nullptr;
    QLineEdit* m_filter = nullptr;
    QComboBox* m_status = nullptr;
    QTableView* m_view = nullptr;
    QLabel* m_totals = nullptr;
    QLabel* m_callTitle = nullptr;
    QTabWidget* m_texts = nullptr;
    QPlainTextEdit* m_systemPrompt = nullptr;
    QPlainTextEdit* m_prompt = nullptr;
    QPlainTextEdit* m_answer = nullptr;
    qint64 m_shownCall = 0;
    bool m_following = false; // the current row moves for the shared selection or a filter, not the user

    // Running totals, grown with each added call.
    int m_calls = 0;
    qint64 m_inputTokens = 0;
    qint64 m_cachedTokens = 0; // of m_inputTokens, read from the APIs' prompt caches
    qint64 m_outputTokens = 0;
    double m_knownUsd = 0.0;
    int m_unknownCost = 0;
};

} // namespace kforge::ui
