#include "diagnosticsview.h"

#include "util/text.h"

#include "candidatedetails.h"
#include "candidateselection.h"
#include "elidedlabel.h"
#include "findingmodel.h"
#include "panelstyle.h"
#include "recordtableview.h"
#include "rundata.h"
#include "showwatcher.h"
#include "theme.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace kforge::ui {

namespace {

using util::q;

QString number(double value) {
    return QLocale().toString(value, 'g', 4);
}

QString count(std::uint64_t value) {
    return QLocale().toString(static_cast<qulonglong>(value));
}

QStandardItem* resultItem(bool passed) {
    auto* item = new QStandardItem(passed ? DiagnosticsView::tr("passed") : DiagnosticsView::tr("failed"));
    item->setIcon(passed ? passIcon() : severityIcon(QStringLiteral("error")));
    item->setForeground(passed ? statusColor(QStringLiteral("ok")) : severityColor(QStringLiteral("error")));
    item->setData(passed, Qt::UserRole + 1);
    return item;
}

// What an element may differ by: atol + rtol * |expected|; empty for results that did not say.
QString tolerance(const protocol::OutputCheck& o) {
    if (!o.atol || !o.rtol)
        return {};
    return DiagnosticsView::tr("atol %1, rtol %2").arg(number(*o.atol), number(*o.rtol));
}

// One output's comparison with the reference, in the words a person checks first.
QString outputDetail(const protocol::OutputCheck& o) {
    QStringList parts;
    parts << DiagnosticsView::tr("%1 elements checked").arg(count(o.checked));
    if (o.mismatches > 0) {
        QString mismatch = DiagnosticsView::tr("%1 mismatches").arg(count(o.mismatches));
        if (o.firstMismatch)
            mismatch += DiagnosticsView::tr(" (first at %1: got %2, expected %3, seed %4)")
                            .arg(count(*o.firstMismatch), number(o.firstGot), number(o.firstExpected))
                            .arg(o.firstSeed);
        parts << mismatch;
    }
    if (o.unwritten > 0)
        parts << DiagnosticsView::tr("%1 never written").arg(count(o.unwritten));
    if (o.nonFinite > 0)
        parts << DiagnosticsView::tr("%1 NaN or Inf").arg(count(o.nonFinite));
    return parts.join(QLatin1String(", "));
}

QString compileText(const std::vector<protocol::CompileInfo>& compile) {
    QStringList sections;
    for (const auto& c : compile) {
        QString head = DiagnosticsView::tr("── %1: %2 in %3 s")
                           .arg(c.role.empty() ? DiagnosticsView::tr("kernel") : q(c.role),
                                c.ok ? DiagnosticsView::tr("compiled") : DiagnosticsView::tr("failed"))
                           .arg(c.seconds, 0, 'f', 2);
        QStringList resources;
        for (const auto& [name, value] : c.resources)
            resources << QStringLiteral("%1 = %2").arg(q(name), number(value));
        if (!resources.isEmpty())
            head += QLatin1Char('\n') + resources.join(QLatin1String(", "));
        const QString log = q(c.log).trimmed();
        sections << head + QLatin1Char('\n') + (log.isEmpty() ? DiagnosticsView::tr("(no compiler output)") : log);
    }
    return sections.join(QLatin1String("\n\n"));
}

} // namespace

DiagnosticsView::DiagnosticsView(RunData* data, CandidateDetails* details, CandidateSelection* selection,
                                 QWidget* parent)
    : QWidget(parent), m_data(data), m_details(details) {
    // One line that elides (the whole in its tooltip): a long label neither widens the window nor,
    // by changing height with each selection, lays the window out again.
    m_title = new ElidedLabel;
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    // The verdict and where it was measured, a line each that elides (the whole in the tooltip): a
    // status that wrapped would change height, and lay the window out again, with each selection.
    m_status = new ElidedLabel;
    m_where = new ElidedLabel;
    m_evaluation = new QComboBox;
    m_evaluation->setToolTip(tr("The first evaluation, or a re-measurement made before promotion"));
    m_evaluation->setVisible(false);

    m_findings = new FindingModel(this);
    m_findingsProxy = new QSortFilterProxyModel(this);
    m_findingsProxy->setSourceModel(m_findings);
    m_findingsProxy->setSortRole(FindingModel::SortRole);
    m_findingsView = new RecordTableView;
    m_findingsView->setObjectName(QStringLiteral("findings"));
    m_findingsView->setModel(m_findingsProxy);
    m_findingsView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_findingsView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_findingsView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_findingsView->setSortingEnabled(true);
    m_findingsView->sortByColumn(FindingModel::SeverityColumn, Qt::DescendingOrder);
    // A finding is read whole: the message and the direction share the width and wrap, and each
    // row is as tall as its text (a candidate has a handful of findings, so sizing rows to their
    // contents costs nothing).
    m_findingsView->setWordWrap(true);
    m_findingsView->setTextElideMode(Qt::ElideNone);
    m_findingsView->verticalHeader()->hide();
    m_findingsView->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    QHeaderView* columns = m_findingsView->horizontalHeader();
    for (int column : {FindingModel::SeverityColumn, FindingModel::KindColumn, FindingModel::LineColumn})
        columns->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    columns->setSectionResizeMode(FindingModel::MessageColumn, QHeaderView::Stretch);
    columns->setSectionResizeMode(FindingModel::DirectionColumn, QHeaderView::Stretch);
    m_findingsView->setColumnWidth(FindingModel::EvidenceColumn, 220);
    // A click and the keyboard's Enter both jump to the line; a double click may report it twice,
    // which is harmless since going to a line is idempotent.
    connect(m_findingsView, &QTableView::clicked, this, &DiagnosticsView::activateFinding);
    connect(m_findingsView, &QTableView::activated, this, &DiagnosticsView::activateFinding);

    m_checks = new QStandardItemModel(this);
    m_checksView = new QTreeView;
    m_checksView->setModel(m_checks);
    m_checksView->setRootIsDecorated(false);
    m_checksView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_checksView->setAlternatingRowColors(true);

    m_compileLog = makeCodePane(tr("No compile output"));

    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_findingsView, tr("Findings"));
    m_tabs->addTab(m_checksView, tr("Verification"));
    m_tabs->addTab(m_compileLog, tr("Compile log"));

    m_placeholder = new QLabel;
    m_placeholder->setObjectName(QStringLiteral("placeholder"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_placeholder->setWordWrap(true);
    m_placeholder->setEnabled(false); // drawn in the palette's disabled, quieter colour
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_placeholder);
    m_stack->addWidget(m_tabs);

    m_loading = new QTimer(this);
    m_loading->setSingleShot(true);
    m_loading->setInterval(kLoadingDelayMs);
    connect(m_loading, &QTimer::timeout, this, [this] {
        if (m_candidate != 0 && m_details && !m_details->details(m_candidate))
            showPlaceholder(tr("Loading…"));
    });

    auto* head = new QHBoxLayout;
    head->addWidget(m_title, 1);
    head->addWidget(m_evaluation);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(head);
    layout->addWidget(m_status);
    layout->addWidget(m_where);
    layout->addWidget(m_stack, 1);

    connect(m_evaluation, &QComboBox::currentIndexChanged, this, &DiagnosticsView::showEvaluation);
    // Behind another tab it catches up when shown.
    connect(selection, &CandidateSelection::currentChanged, this, [this, selection = QPointer(selection)] {
        whenShown(this, [this, selection] { setCandidate(selection ? selection->current() : 0); });
    });
    connect(details, &CandidateDetails::loaded, this, [this](qint64 candidate) {
        if (candidate == m_candidate)
            refresh();
    });
    connect(data, &RunData::candidatesChanged, this, &DiagnosticsView::onCandidatesChanged);
    connect(data, &RunData::cleared, this, [this] { setCandidate(0); });
    // The status line and the check results hold their colours: they are made again for a new
    // palette, on the tab that was open.
    theme::onPaletteChange(this, [this] {
        QWidget* open = m_tabs->currentWidget();
        showEvaluation(m_evaluation->currentIndex());
        m_tabs->setCurrentWidget(open);
    });
    setCandidate(selection->current());
}

QAbstractItemView* DiagnosticsView::findingsView() const {
    return m_findingsView;
}

void DiagnosticsView::setCandidate(qint64 candidate) {
    m_candidate = candidate;
    refresh();
}

void DiagnosticsView::refresh() {
    m_shownEvaluations = -1;
    m_shownConfirmed = false;
    if (m_candidate == 0 || !m_details) {
        m_loading->stop();
        m_title->setFullText(tr("Diagnostics"), Qt::PlainText);
        showPlaceholder(tr("Select a candidate to see its findings, verification and compile log."));
        return;
    }
    updateTitle();
    const CandidateDetail* detail = m_details->details(m_candidate);
    if (!detail) {
        if (m_stack->currentWidget() == m_tabs) {
            // The tabs stay, emptied: nothing of the previous candidate can be read or activated
            // (its findings' lines are in another kernel) while the next one loads.
            clearShown();
            m_loading->start();
        } else
            showPlaceholder(tr("Loading…"));
        return;
    }
    m_loading->stop();
    if (!detail->error.isEmpty()) {
        showPlaceholder(tr("The candidate could not be read: %1").arg(detail->error));
        return;
    }
    showDetail(*detail);
}

void DiagnosticsView::showPlaceholder(const QString& text) {
    m_placeholder->setText(text);
    m_stack->setCurrentWidget(m_placeholder);
    clearShown();
    m_status->hide();
    m_where->hide();
    m_evaluation->hide();
}

void DiagnosticsView::clearShown() {
    m_status->setFullText(QString());
    m_where->setFullText(QString());
    {
        const QSignalBlocker blocker(m_evaluation);
        m_evaluation->clear();
    }
    m_findings->clear();
    m_checks->clear();
    m_compileLog->clear();
    m_evaluations.clear();
}

void DiagnosticsView::showDetail(const CandidateDetail& detail) {
    m_evaluations = detail.evaluations;
    m_shownEvaluations = static_cast<int>(detail.evaluations.size());
    m_shownConfirmed =
        std::any_of(detail.evaluations.begin(), detail.evaluations.end(),
                    [](const store::EvaluationRecord& e) { return e.purpose == model::EvaluationPurpose::Confirm; });
    if (m_evaluations.isEmpty()) {
        showPlaceholder(tr("Candidate #%1 has not been evaluated yet.").arg(m_candidate));
        m_shownEvaluations = 0;
        return;
    }
    // The search evaluation first: it is the one the search judged the candidate by.
    std::stable_sort(m_evaluations.begin(), m_evaluations.end(), [](const auto& a, const auto& b) {
        return a.purpose == model::EvaluationPurpose::Search && b.purpose != model::EvaluationPurpose::Search;
    });
    {
        const QSignalBlocker blocker(m_evaluation);
        m_evaluation->clear();
        int remeasurement = 0;
        for (const auto& e : m_evaluations)
            m_evaluation->addItem(e.purpose == model::EvaluationPurpose::Search
                                      ? tr("Search evaluation")
                                      : tr("Re-measurement %1").arg(++remeasurement));
        m_evaluation->setCurrentIndex(0);
    }
    m_evaluation->setVisible(m_evaluations.size() > 1);
    m_stack->setCurrentWidget(m_tabs);
    showEvaluation(0);
}

void DiagnosticsView::showEvaluation(int index) {
    if (index < 0 || index >= m_evaluations.size())
        return;
    const store::EvaluationRecord& evaluation = m_evaluations[index];
    const protocol::EvaluateResult& result = evaluation.result;

    const QString status = q(std::string(protocol::statusName(result.status)));
    QString line = QStringLiteral("<b style=\"color:%1\">%2</b>")
                       .arg(statusColor(status, palette()).name(), statusTitle(status).toHtmlEscaped());
    if (result.speedup)
        line += QStringLiteral(" · %1").arg(formatSpeedup(*result.speedup));
    if (!result.message.empty())
        line += QStringLiteral(" — ") + q(result.message).toHtmlEscaped();
    if (!result.device.empty()) {
        // The model, and where: the machine and device index the executor recorded (stores made
        // before evaluations recorded it have the model alone).
        QString device = q(result.device);
        if (!result.host.empty())
            device = tr("%1 (device %2 of %3)").arg(device).arg(result.deviceIndex).arg(q(result.host));
        const QString where = result.wallSeconds > 0.0
                                  ? tr("on %1, %2 s").arg(device).arg(result.wallSeconds, 0, 'f', 2)
                                  : tr("on %1").arg(device);
        m_where->setFullText(where, Qt::PlainText);
    }
    m_where->setVisible(!result.device.empty());
    m_status->setFullText(line, Qt::RichText);
    m_status->show();

    const auto items = FindingItem::fromEvaluation(evaluation);
    m_findings->setItems(items);
    m_tabs->setTabText(m_tabs->indexOf(m_findingsView),
                       items.isEmpty() ? tr("Findings") : tr("Findings (%1)").arg(items.size()));

    m_checks->clear();
    m_checks->setHorizontalHeaderLabels(
        {tr("Check"), tr("Result"), tr("Max abs error"), tr("Max rel error"), tr("Tolerance"), tr("Details")});
    bool allPassed = true;
    for (const auto& o : result.outputs) {
        const bool passed = o.mismatches == 0 && o.unwritten == 0 && o.nonFinite == 0;
        allPassed = allPassed && passed;
        m_checks->appendRow({new QStandardItem(tr("output %1").arg(q(o.name))), resultItem(passed),
                             new QStandardItem(number(o.maxAbsError)), new QStandardItem(number(o.maxRelError)),
                             new QStandardItem(tolerance(o)), new QStandardItem(outputDetail(o))});
    }
    for (const auto& c : result.checks) {
        allPassed = allPassed && c.passed;
        m_checks->appendRow({new QStandardItem(statusTitle(q(c.name))), resultItem(c.passed), new QStandardItem,
                             new QStandardItem, new QStandardItem, new QStandardItem(q(c.detail))});
    }
    for (int column = 0; column < 5; ++column)
        m_checksView->resizeColumnToContents(column);
    const bool anyChecks = m_checks->rowCount() > 0;
    m_tabs->setTabIcon(m_tabs->indexOf(m_checksView), !anyChecks  ? QIcon()
                                                      : allPassed ? passIcon()
                                                                  : severityIcon(QStringLiteral("error")));

    m_compileLog->setPlainText(compileText(result.compile));
    const bool compileFailed =
        std::any_of(result.compile.begin(), result.compile.end(), [](const auto& c) { return !c.ok; });
    m_tabs->setTabIcon(m_tabs->indexOf(m_compileLog), compileFailed ? severityIcon(QStringLiteral("error")) : QIcon());

    // Open the tab that explains the failure.
    if (result.status == protocol::Status::CompileError)
        m_tabs->setCurrentWidget(items.isEmpty() ? static_cast<QWidget*>(m_compileLog) : m_findingsView);
    else if (result.status == protocol::Status::Incorrect && items.isEmpty())
        m_tabs->setCurrentWidget(m_checksView);
}

void DiagnosticsView::onCandidatesChanged(const QList<int>& rows) {
    if (m_candidate == 0 || !m_data || !m_details)
        return;
    const int row = m_data->rowOf(m_candidate);
    if (row < 0 || !rows.contains(row))
        return;
    // A new evaluation of the candidate on screen (its first, or a re-measurement): the cached
    // detail predates it.
    const CandidateRow& c = m_data->candidateAt(row);
    const bool stale =
        m_shownEvaluations >= 0
        && ((c.evaluated() && m_shownEvaluations == 0) || (c.confirmedSpeedup > 0.0 && !m_shownConfirmed));
    if (stale) {
        m_details->invalidate(m_candidate);
        refresh();
    } else {
        updateTitle(); // a flag or a review changed: the evaluation on screen still holds
    }
}

void DiagnosticsView::updateTitle() {
    const CandidateRow* row = m_data ? m_data->candidate(m_candidate) : nullptr;
    m_title->setFullText(row && !row->label.isEmpty() ? tr("Candidate #%1 — %2").arg(m_candidate).arg(row->label)
                                                      : tr("Candidate #%1").arg(m_candidate),
                         Qt::PlainText);
}

void DiagnosticsView::activateFinding(const QModelIndex& index) {
    const int line = index.data(FindingModel::LineRole).toInt();
    if (line > 0)
        emit lineActivated(line);
}

} // namespace kforge::ui
