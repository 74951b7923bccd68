#include "llmlogview.h"

#include "candidateselection.h"
#include "llmcallmodel.h"
#include "panelstyle.h"
#include "rundata.h"
#include "showwatcher.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QScopedValueRollback>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {
// The statuses the status filter offers; the last entry stands for every client error kind.
const QStringList kKnownStatuses{QStringLiteral("ok"), QStringLiteral("unparsable"), QStringLiteral("duplicate")};
} // namespace

LlmLogView::LlmLogView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_model = new LlmCallModel(data, this);
    m_statusFilter = new QSortFilterProxyModel(this);
    m_statusFilter->setSourceModel(m_model);
    m_statusFilter->setFilterRole(LlmCallModel::StatusRole);
    m_statusFilter->setFilterKeyColumn(LlmCallModel::StatusColumn);
    m_textFilter = new QSortFilterProxyModel(this);
    m_textFilter->setSourceModel(m_statusFilter);
    m_textFilter->setFilterKeyColumn(-1); // any column: model, operator, stage, candidate...
    m_textFilter->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_textFilter->setSortRole(LlmCallModel::SortRole);

    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter by model, operator, stage, candidate…"));
    m_filter->setClearButtonEnabled(true);
    m_status = new QComboBox;
    m_status->addItem(tr("All statuses"));
    for (const QString& status : kKnownStatuses)
        m_status->addItem(status);
    m_status->addItem(tr("failed"));
    m_status->setItemData(m_status->count() - 1,
                          tr("Calls the client reported as failed: network, rate limit, server errors"),
                          Qt::ToolTipRole);
    m_totals = new QLabel;
    m_totals->setTextFormat(Qt::PlainText);
    m_totals->setWordWrap(true); // wraps instead of widening the window

    m_view = makeRecordTable(m_textFilter, QStringLiteral("llmCalls"));
    m_view->sortByColumn(LlmCallModel::CallColumn, Qt::AscendingOrder);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    // call, gen, island, operator, stage, model, status, in, cached, out, cost, latency, candidate
    setColumnWidths(m_view, {4, 3, 3, 8, 8, 22, 13, 7, 7, 7, 6, 6, 6});

    m_callTitle = makeDetailTitle();
    m_systemPrompt = makeCodePane(tr("No system prompt"));
    m_prompt = makeCodePane(tr("No prompt"));
    m_answer = makeCodePane(tr("No answer"));
    m_texts = new QTabWidget;
    m_texts->setDocumentMode(true);
    m_texts->addTab(m_answer, tr("Answer"));
    m_texts->addTab(m_prompt, tr("Prompt"));
    m_texts->addTab(m_systemPrompt, tr("System prompt"));

    QSplitter* splitter = makeMasterDetail(m_view, m_callTitle, m_texts);

    auto* bar = new QHBoxLayout;
    bar->addWidget(m_filter, 1);
    bar->addWidget(m_status);
    auto* log = new QWidget;
    auto* logLayout = new QVBoxLayout(log);
    logLayout->setContentsMargins(0, 0, 0, 0);
    logLayout->addLayout(bar);
    logLayout->addWidget(splitter, 1);
    logLayout->addWidget(m_totals);

    m_placeholder = new QLabel;
    m_placeholder->setObjectName(QStringLiteral("placeholder"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_placeholder->setWordWrap(true);
    m_placeholder->setMargin(24);
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_placeholder);
    m_stack->addWidget(log);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack);

    connect(m_filter, &QLineEdit::textChanged, this, &LlmLogView::updateFilter);
    connect(m_status, &QComboBox::currentIndexChanged, this, &LlmLogView::updateFilter);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current, const QModelIndex& previous) {
                showCall(current);
                // A view taking the focus makes its first row current: moving onto it selects, focus alone not.
                if (!m_following && previous.isValid())
                    activateCall(current);
            });
    // Clicking the current row again selects its candidate again, after another view selected one.
    connect(m_view, &QTableView::clicked, this, &LlmLogView::activateCall);
    connect(m_view, &QTableView::activated, this, &LlmLogView::activateCall);
    connect(data, &RunData::llmCallsAdded, this, &LlmLogView::addToTotals);
    connect(data, &RunData::llmCallsAdded, this, &LlmLogView::updatePage);
    connect(data, &RunData::llmCallsChanged, this, [this](const QList<int>&) {
        // A shown call may just have got its candidate.
        showCall(m_view->currentIndex());
    });
    connect(data, &RunData::cleared, this, &LlmLogView::resetTotals);
    connect(data, &RunData::cleared, this, &LlmLogView::updatePage);
    connect(data, &RunData::runChanged, this, &LlmLogView::updatePage);
    // Behind another tab it catches up when shown.
    connect(selection, &CandidateSelection::currentChanged, this,
            [this] { whenShown(this, [this] { followSelection(m_selection ? m_selection->current() : 0); }); });

    resetTotals();
    updatePage();
    showCall({});
}

QString LlmLogView::shownPrompt() const {
    return m_prompt->toPlainText();
}

QString LlmLogView::shownAnswer() const {
    return m_answer->toPlainText();
}

QString LlmLogView::totalsText() const {
    return m_totals->text();
}

void LlmLogView::updatePage() {
    if (!m_data)
        return;
    const bool calls = !m_data->llmCalls().isEmpty();
    const bool configured = !m_data->llmModels().isEmpty();
    if (calls || configured) {
        m_stack->setCurrentIndex(1);
        return;
    }
    if (!m_data->hasRun())
        m_placeholder->setText(tr("No run is open."));
    else
        m_placeholder->setText(
            tr("This run used no language model: its candidates came from the seeds, the tuner and the "
               "expert library.\n\nTo let language models propose kernels, add one or more models under "
               "\"Language models\" when you set up a run, with an API key or a local server."));
    m_stack->setCurrentIndex(0);
}

void LlmLogView::updateFilter() {
    const QScopedValueRollback following(m_following, true);
    const int status = m_status->currentIndex();
    if (status <= 0) {
        m_statusFilter->setFilterRegularExpression(QRegularExpression());
    } else if (status <= kKnownStatuses.size()) {
        m_statusFilter->setFilterRegularExpression(
            QRegularExpression(QStringLiteral("^%1$").arg(QRegularExpression::escape(kKnownStatuses[status - 1]))));
    } else {
        // Everything the client reported that is not one of the answer outcomes.
        m_statusFilter->setFilterRegularExpression(
            QRegularExpression(QStringLiteral("^(?!(%1)$).+").arg(kKnownStatuses.join(QLatin1Char('|')))));
    }
    m_textFilter->setFilterFixedString(m_filter->text().trimmed());
}

void LlmLogView::addToTotals(int first, int last) {
    if (!m_data)
        return;
    const auto& calls = m_data->llmCalls();
    for (int row = first; row <= last && row < calls.size(); ++row) {
        const auto& call = calls[row];
        ++m_calls;
        m_inputTokens += call.inputTokens.value_or(0);
        m_cachedTokens += call.cachedInputTokens.value_or(0);
        m_outputTokens += call.outputTokens.value_or(0);
        if (call.costUsd)
            m_knownUsd += *call.costUsd;
        else
            ++m_unknownCost;
    }
    updateTotalsLabel();
}

void LlmLogView::resetTotals() {
    m_calls = 0;
    m_inputTokens = m_cachedTokens = m_outputTokens = 0;
    m_knownUsd = 0.0;
    m_unknownCost = 0;
    if (m_data && !m_data->llmCalls().isEmpty())
        addToTotals(0, static_cast<int>(m_data->llmCalls().size()) - 1);
    else
        updateTotalsLabel();
}

void LlmLogView::updateTotalsLabel() {
    const QLocale locale;
    const QString input =
        m_cachedTokens > 0
            ? tr("%1 input (%2 cached)").arg(locale.toString(m_inputTokens), locale.toString(m_cachedTokens))
            : tr("%1 input").arg(locale.toString(m_inputTokens));
    QString text = (m_calls == 1 ? tr("1 call") : tr("%1 calls").arg(m_calls))
                   + tr(" · %1 and %2 output tokens · $%3")
                         .arg(input, locale.toString(m_outputTokens), locale.toString(m_knownUsd, 'f', 2));
    if (m_unknownCost > 0)
        text += (m_unknownCost == 1 ? tr(" known; 1 call of unknown cost")
                                    : tr(" known; %1 calls of unknown cost").arg(m_unknownCost));
    m_totals->setText(text);
}

void LlmLogView::showCall(const QModelIndex& proxyIndex) {
    const QModelIndex source = m_statusFilter->mapToSource(m_textFilter->mapToSource(proxyIndex));
    const store::LlmCallRecord* call = source.isValid() ? m_model->callAt(source.row()) : nullptr;
    if (!call) {
        m_shownCall = 0;
        m_callTitle->setText(tr("Select a call to read its prompt and answer."));
        m_systemPrompt->clear();
        m_prompt->clear();
        m_answer->clear();
        return;
    }
    const QString op = call->stage.isEmpty() ? call->op : QStringLiteral("%1 (%2)").arg(call->op, call->stage);
    QString title = tr("Call %1 — %2 on island %3, generation %4, to %5:%6 — %7")
                        .arg(call->id)
                        .arg(op)
                        .arg(call->island)
                        .arg(call->generation)
                        .arg(call->endpoint, call->model, call->status);
    if (!call->message.isEmpty())
        title += QStringLiteral(": ") + call->message;
    if (call->attempts > 1)
        title += tr(" (%1 attempts)").arg(call->attempts);
    if (call->candidateId)
        title += tr(" → candidate #%1").arg(*call->candidateId);
    m_callTitle->setText(title);
    // Re-setting unchanged text would lose the reader's scroll position on every live update.
    if (m_shownCall != call->id) {
        m_systemPrompt->setPlainText(call->systemPrompt);
        m_prompt->setPlainText(call->prompt);
        m_answer->setPlainText(call->answer);
    }
    m_shownCall = call->id;
}

void LlmLogView::activateCall(const QModelIndex& proxyIndex) {
    const qint64 candidate = proxyIndex.data(LlmCallModel::CandidateRole).toLongLong();
    if (candidate > 0 && m_selection)
        m_selection->select(candidate);
}

void LlmLogView::followSelection(qint64 candidate) {
    if (candidate <= 0 || m_view->currentIndex().data(LlmCallModel::CandidateRole).toLongLong() == candidate)
        return;
    // Show the call that made the selected candidate, when it is among the rows shown.
    for (int row = 0; row < m_textFilter->rowCount(); ++row) {
        const QModelIndex index = m_textFilter->index(row, 0);
        if (index.data(LlmCallModel::CandidateRole).toLongLong() == candidate) {
            const QScopedValueRollback following(m_following, true);
            m_view->setCurrentIndex(index);
            m_view->scrollTo(index);
            return;
        }
    }
}

} // namespace kforge::ui
