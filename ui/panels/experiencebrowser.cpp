#include "experiencebrowser.h"

#include "workerthread.h"

#include "diffhighlighter.h"
#include "experienceworker.h"
#include "insightmodel.h"
#include "panelstyle.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace kforge::ui {

namespace {
constexpr int kSearchDelayMs = 250; // typing a word sends one search, not one per letter
using K = model::InsightKind;
constexpr K kKinds[] = {K::Helped, K::Hurt, K::HumanPin, K::HumanVeto, K::HumanEdit};
} // namespace

ExperienceBrowser::ExperienceBrowser(QWidget* parent)
    : QWidget(parent), m_path(experience::ExperienceLibrary::defaultPath()) {
    m_worker = new ExperienceWorker;
    connect(m_worker, &ExperienceWorker::loaded, this, &ExperienceBrowser::onLoaded);
    connect(m_worker, &ExperienceWorker::missing, this, &ExperienceBrowser::onMissing);
    connect(m_worker, &ExperienceWorker::failed, this, &ExperienceBrowser::onFailed);
    m_thread = startWorkerThread(m_worker, QStringLiteral("kforge experience"));

    m_model = new InsightModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setFilterRole(InsightModel::KindRole);
    m_proxy->setFilterKeyColumn(InsightModel::KindColumn);
    m_proxy->setSortRole(InsightModel::SortRole);

    m_search = new QLineEdit;
    m_search->setPlaceholderText(tr("Search transformations, summaries, reasons and diffs…"));
    m_search->setClearButtonEnabled(true);
    m_searchDelay = new QTimer(this);
    m_searchDelay->setSingleShot(true);
    m_searchDelay->setInterval(kSearchDelayMs);
    m_kind = new QComboBox;
    m_kind->addItem(tr("All kinds"));
    for (const K kind : kKinds)
        m_kind->addItem(InsightModel::kindTitle(kind), model::insightKindName(kind));
    auto* reload = new QPushButton(tr("Reload"));
    reload->setToolTip(tr("Read the library again; runs add to it while they go"));
    m_count = new QLabel;

    m_view = makeRecordTable(m_proxy, QStringLiteral("insights"));
    // Unsorted until the user asks: the library's own order is by relevance to the search.
    m_view->sortByColumn(-1, Qt::AscendingOrder);
    // kind, task, backend, transformation, speedup, reason, origin, date
    setColumnWidths(m_view, {8, 16, 6, 34, 6, 18, 48, 10}); // origin: "NAME (run 1, #2)"

    m_summary = makeDetailTitle();
    m_summary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_diff = makeCodePane(tr("No diff: a pin or veto records one kernel, not a change"));
    new DiffHighlighter(m_diff->document(), m_diff);
    QSplitter* splitter = makeMasterDetail(m_view, m_summary, m_diff);

    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("message"));
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_message->setMargin(24);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_message);
    m_stack->addWidget(splitter);

    auto* bar = new QHBoxLayout;
    bar->addWidget(m_search, 1);
    bar->addWidget(m_kind);
    bar->addWidget(reload);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(m_stack, 1);
    layout->addWidget(m_count);

    connect(m_search, &QLineEdit::textChanged, m_searchDelay, qOverload<>(&QTimer::start));
    connect(m_search, &QLineEdit::returnPressed, this, &ExperienceBrowser::refresh);
    connect(m_searchDelay, &QTimer::timeout, this, &ExperienceBrowser::refresh);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &ExperienceBrowser::updateKindFilter);
    connect(reload, &QPushButton::clicked, this, &ExperienceBrowser::refresh);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { showInsight(current); });
    showMessage(tr("Reading the experience library…"));
    showInsight({});
}

ExperienceBrowser::~ExperienceBrowser() {
    // The thread ends after the query in hand, deleting the worker; nothing here waits for it.
    if (m_thread)
        m_thread->quit();
}

void ExperienceBrowser::setLibraryPath(const QString& path) {
    m_path = path;
    refresh();
}

QString ExperienceBrowser::shownDiff() const {
    return m_diff->toPlainText();
}

void ExperienceBrowser::refresh() {
    m_searchDelay->stop();
    m_requested = true;
    const qint64 request = ++m_request;
    experience::Query query;
    query.text = m_search->text().trimmed();
    const QString path = m_path;
    ExperienceWorker* worker = m_worker;
    m_count->setText(tr("Searching…"));
    QMetaObject::invokeMethod(
        m_worker, [worker, request, path, query] { worker->load(request, path, query); }, Qt::QueuedConnection);
}

void ExperienceBrowser::refreshIfCreated() {
    if (!m_missing || !QFileInfo::exists(m_path))
        return;
    m_missing = false; // asked once; the answer says again if it is still unreadable
    refresh();
}

void ExperienceBrowser::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_requested)
        refresh();
}

void ExperienceBrowser::onLoaded(qint64 request, const QList<experience::Insight>& insights, int total) {
    if (request != m_request)
        return; // a newer search is under way
    m_missing = false;
    m_total = total;
    m_received = static_cast<int>(insights.size());
    m_model->setInsights(insights);
    // The reason is the user's words for a pin, veto or edit: a column of nothing where none is shown.
    m_view->setColumnHidden(InsightModel::ReasonColumn,
                            std::none_of(insights.begin(), insights.end(),
                                         [](const experience::Insight& i) { return !i.reason.isEmpty(); }));
    if (total == 0) {
        showMessage(
            tr("The experience library at %1 is empty.\n\nkforge adds an insight when a change clearly helps or "
               "hurts during a run, and when you pin, veto or edit a candidate.")
                .arg(QDir::toNativeSeparators(m_path)));
    } else {
        m_stack->setCurrentIndex(1);
        if (!m_view->currentIndex().isValid() && m_proxy->rowCount() > 0)
            m_view->setCurrentIndex(m_proxy->index(0, 0));
    }
    updateCount();
    emit loaded(m_received);
}

void ExperienceBrowser::onMissing(qint64 request, const QString& path) {
    if (request != m_request)
        return;
    m_missing = true;
    m_model->setInsights({});
    m_total = m_received = 0;
    showMessage(
        tr("There is no experience library yet (%1).\n\nIt is created when a run first learns something: a "
           "change that clearly helps or hurts, or a candidate you pin, veto or edit. Later runs on similar tasks "
           "draw on it.")
            .arg(QDir::toNativeSeparators(path)));
    m_count->clear();
    emit libraryMissing(path);
}

void ExperienceBrowser::onFailed(qint64 request, const QString& message) {
    if (request != m_request)
        return;
    m_missing = false;
    m_model->setInsights({});
    m_total = m_received = 0;
    showMessage(tr("The experience library could not be read.\n\n%1").arg(message));
    m_count->clear();
    emit loadFailed(message);
}

void ExperienceBrowser::updateKindFilter() {
    const QString kind = m_kind->currentData().toString();
    m_proxy->setFilterRegularExpression(
        kind.isEmpty() ? QRegularExpression()
                       : QRegularExpression(QStringLiteral("^%1$").arg(QRegularExpression::escape(kind))));
    updateCount();
}

void ExperienceBrowser::updateCount() {
    if (m_stack->currentIndex() != 1) {
        m_count->clear();
        return;
    }
    const int shown = m_proxy->rowCount();
    QString text = m_total == 1 ? tr("1 insight") : tr("%1 insights").arg(m_total);
    if (!m_search->text().trimmed().isEmpty())
        text = tr("%1 of %2 match").arg(m_received).arg(text);
    if (m_received >= ExperienceWorker::kLimit)
        text += tr(" (the first %1 shown)").arg(ExperienceWorker::kLimit);
    if (shown != m_received)
        text += tr("; %1 of that kind").arg(shown);
    m_count->setText(text);
}

void ExperienceBrowser::showInsight(const QModelIndex& proxyIndex) {
    const QModelIndex source = m_proxy->mapToSource(proxyIndex);
    if (!source.isValid()) {
        m_summary->setText(tr("Select an insight to read what was learned and the change behind it."));
        m_diff->clear();
        return;
    }
    const experience::Insight& insight = m_model->insightAt(source.row());
    QStringList head{InsightModel::kindTitle(insight.kind)};
    if (!insight.task.isEmpty())
        head << insight.task;
    if (!insight.backend.isEmpty())
        head << insight.backend;
    if (!insight.bottleneck.isEmpty())
        head << tr("%1-bound before").arg(insight.bottleneck);
    if (insight.speedup > 0.0)
        head << formatSpeedup(insight.speedup);
    QString text = head.join(QStringLiteral(" · "));
    if (!insight.transformation.isEmpty())
        text += QStringLiteral("\n") + insight.transformation;
    if (!insight.summary.isEmpty())
        text += QStringLiteral("\n\n") + insight.summary;
    if (!insight.reason.isEmpty())
        text += QStringLiteral("\n\n") + tr("Your reason: %1").arg(insight.reason);
    m_summary->setText(text);
    // Without a diff (a pin or a veto), the kernel itself is the evidence.
    m_diff->setPlainText(!insight.diff.isEmpty()    ? insight.diff
                         : !insight.after.isEmpty() ? insight.after
                                                    : insight.before);
}

void ExperienceBrowser::showMessage(const QString& text) {
    m_message->setText(text);
    m_stack->setCurrentIndex(0);
    showInsight({});
}

} // namespace kforge::ui
