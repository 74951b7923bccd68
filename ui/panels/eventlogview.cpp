#include "eventlogview.h"

#include "candidateselection.h"
#include "eventmodel.h"
#include "panelstyle.h"
#include "recordtableview.h"
#include "rundata.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QRegularExpression>
#include <QScopedValueRollback>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace kforge::ui {

EventLogView::EventLogView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_model = new EventModel(data, this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setFilterRole(EventModel::KindRole);
    m_proxy->setFilterKeyColumn(EventModel::KindColumn);
    m_proxy->setSortRole(EventModel::SortRole);

    m_kind = new QComboBox;
    m_kind->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_kind->addItem(tr("All events"));
    auto* label = new QLabel(tr("&Show:"));
    label->setBuddy(m_kind);

    m_view = new RecordTableView;
    m_view->setObjectName(QStringLiteral("events"));
    m_view->setModel(m_proxy);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(EventModel::TimeColumn, Qt::AscendingOrder);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    m_view->horizontalHeader()->setStretchLastSection(true);
    setColumnWidths(m_view, {3, 10, 21}); // hh:mm:ss, and "promotion rejected"

    auto* bar = new QHBoxLayout;
    bar->addWidget(label);
    bar->addWidget(m_kind);
    bar->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(m_view, 1);

    connect(m_kind, &QComboBox::currentIndexChanged, this, &EventLogView::updateFilter);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current, const QModelIndex& previous) {
                // A view taking the focus makes its first row current: moving onto it selects, focus alone not.
                if (!m_filtering && previous.isValid())
                    activate(current);
            });
    // Clicking the current row again selects its candidate again, after another view selected one.
    connect(m_view, &QTableView::clicked, this, &EventLogView::activate);
    connect(m_view, &QTableView::activated, this, &EventLogView::activate);
    connect(m_view->verticalScrollBar(), &QScrollBar::valueChanged, this,
            [this](int value) { m_followTail = value >= m_view->verticalScrollBar()->maximum(); });
    connect(data, &RunData::eventsAdded, this, &EventLogView::addKinds);
    connect(data, &RunData::cleared, this, &EventLogView::resetKinds);
    // After the proxy has placed the new rows.
    connect(m_proxy, &QSortFilterProxyModel::rowsInserted, this, [this] {
        if (m_followTail)
            QTimer::singleShot(0, m_view, &QTableView::scrollToBottom);
    });
    resetKinds();
}

void EventLogView::addKinds(int first, int last) {
    if (!m_data)
        return;
    const auto& events = m_data->events();
    for (int row = first; row <= last && row < events.size(); ++row) {
        const QString& kind = events[row].kindName;
        if (m_kinds.contains(kind))
            continue;
        m_kinds.insert(kind);
        // Kinds in alphabetical order after "All events", so the list reads the same in every run.
        int at = 1;
        while (at < m_kind->count() && m_kind->itemData(at).toString() < kind)
            ++at;
        m_kind->insertItem(at, statusTitle(kind), kind);
    }
}

void EventLogView::resetKinds() {
    const QString chosen = m_kind->currentData().toString();
    m_kinds.clear();
    while (m_kind->count() > 1)
        m_kind->removeItem(1);
    if (m_data && !m_data->events().isEmpty())
        addKinds(0, static_cast<int>(m_data->events().size()) - 1);
    const int again = m_kind->findData(chosen);
    m_kind->setCurrentIndex(again > 0 ? again : 0);
    m_followTail = true;
}

void EventLogView::updateFilter() {
    const QString kind = m_kind->currentData().toString();
    const QScopedValueRollback filtering(m_filtering, true);
    m_proxy->setFilterRegularExpression(
        kind.isEmpty() ? QRegularExpression()
                       : QRegularExpression(QStringLiteral("^%1$").arg(QRegularExpression::escape(kind))));
}

void EventLogView::activate(const QModelIndex& index) {
    const qint64 candidate = index.data(EventModel::CandidateRole).toLongLong();
    if (candidate > 0 && m_selection)
        m_selection->select(candidate);
}

} // namespace kforge::ui
