#include "candidatespanel.h"

#include "candidateselection.h"
#include "candidatetablemodel.h"
#include "recordtableview.h"
#include "rundata.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QSettings>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {
const QString kColumnsKey = QStringLiteral("candidates/columns");
} // namespace

CandidatesPanel::CandidatesPanel(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_model = new CandidateTableModel(data, this);
    m_filter = new CandidateFilterModel(this);
    m_filter->setSourceModel(m_model);

    m_text = new QLineEdit;
    m_text->setPlaceholderText(tr("Filter: id, label, parameters, status, finding…"));
    m_text->setClearButtonEnabled(true);
    m_state = new QComboBox;
    m_state->addItem(tr("All"), static_cast<int>(CandidateFilterModel::State::Any));
    m_state->addItem(tr("Correct"), static_cast<int>(CandidateFilterModel::State::Correct));
    m_state->addItem(tr("Failed"), static_cast<int>(CandidateFilterModel::State::Failed));
    m_state->addItem(tr("Pending"), static_cast<int>(CandidateFilterModel::State::Pending));
    m_state->addItem(tr("Pinned"), static_cast<int>(CandidateFilterModel::State::Pinned));
    m_state->addItem(tr("Vetoed"), static_cast<int>(CandidateFilterModel::State::Vetoed));
    m_origin = new QComboBox;
    m_origin->addItem(tr("Any origin"), -1);
    for (auto o : {model::Origin::Seed, model::Origin::Tuner, model::Origin::Expert, model::Origin::Llm,
                   model::Origin::Human, model::Origin::Experience})
        m_origin->addItem(originTitle(o), static_cast<int>(o));
    m_island = new QComboBox;
    fillIslands();

    m_view = new RecordTableView;
    m_view->setModel(m_filter);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(CandidateTableModel::Id, Qt::AscendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionsMovable(true);
    const int digit = m_view->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    // Widths in digits, enough for the usual contents (Origin: "tuner (neighbour)").
    for (auto [column, chars] : std::initializer_list<std::pair<int, int>>{{CandidateTableModel::Id, 7},
                                                                           {CandidateTableModel::Island, 6},
                                                                           {CandidateTableModel::Generation, 5},
                                                                           {CandidateTableModel::Origin, 17},
                                                                           {CandidateTableModel::Label, 26},
                                                                           {CandidateTableModel::Params, 16},
                                                                           {CandidateTableModel::Status, 13},
                                                                           {CandidateTableModel::Speedup, 9},
                                                                           {CandidateTableModel::Confirmed, 9},
                                                                           {CandidateTableModel::VsEager, 9},
                                                                           {CandidateTableModel::Time, 11},
                                                                           {CandidateTableModel::Device, 16},
                                                                           {CandidateTableModel::Cell, 30},
                                                                           {CandidateTableModel::Findings, 30}})
        m_view->setColumnWidth(column, chars * digit + 12);
    // What a candidate is worth comes first, so a dock of the default width shows it beside the id;
    // where it came from follows. The model's columns keep their order; only the header's changes.
    int visual = 1;
    for (int column : {CandidateTableModel::Status, CandidateTableModel::Speedup, CandidateTableModel::Confirmed,
                       CandidateTableModel::VsEager, CandidateTableModel::Time})
        m_view->horizontalHeader()->moveSection(m_view->horizontalHeader()->visualIndex(column), visual++);

    auto* filters = new QHBoxLayout;
    filters->addWidget(m_text, 1);
    filters->addWidget(m_state);
    filters->addWidget(m_origin);
    filters->addWidget(m_island);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(filters);
    layout->addWidget(m_view, 1);

    connect(m_text, &QLineEdit::textChanged, m_filter, &CandidateFilterModel::setText);
    connect(m_state, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setState(static_cast<CandidateFilterModel::State>(m_state->currentData().toInt())); });
    connect(m_origin, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setOrigin(m_origin->currentData().toInt()); });
    connect(m_island, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setIsland(m_island->currentData().toInt()); });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (m_following || !current.isValid())
                    return;
                m_selection->select(current.data(CandidateTableModel::CandidateRole).toLongLong());
            });
    connect(m_selection, &CandidateSelection::currentChanged, this, &CandidatesPanel::follow);
    hideEmptyColumns();
    connect(m_data, &RunData::candidatesAdded, this, &CandidatesPanel::hideEmptyColumns);
    connect(m_data, &RunData::candidatesChanged, this, &CandidatesPanel::hideEmptyColumns);
    connect(m_data, &RunData::runChanged, this, &CandidatesPanel::hideEmptyColumns);
    connect(m_data, &RunData::cleared, this, &CandidatesPanel::hideEmptyColumns);
    connect(m_data, &RunData::runChanged, this, &CandidatesPanel::fillIslands);
    connect(m_data, &RunData::cleared, this, &CandidatesPanel::fillIslands);
    // A filter typed for one run would hide the next run's candidates and make its table look empty.
    connect(m_data, &RunData::cleared, this, &CandidatesPanel::clearFilters);
}

void CandidatesPanel::clearFilters() {
    m_text->clear();
    m_state->setCurrentIndex(0);
    m_origin->setCurrentIndex(0);
    m_island->setCurrentIndex(0);
}

void CandidatesPanel::fillIslands() {
    const int islands = m_data->islands();
    if (m_island->count() == islands + 1)
        return;
    const int current = m_island->currentData().isValid() ? m_island->currentData().toInt() : -1;
    const QSignalBlocker block(m_island);
    m_island->clear();
    m_island->addItem(tr("All islands"), -1);
    for (int i = 0; i < islands; ++i)
        m_island->addItem(tr("Island %1").arg(i), i);
    m_island->setCurrentIndex(std::max(0, m_island->findData(current)));
}

void CandidatesPanel::hideEmptyColumns() {
    // Which device a time is from matters only when a run has more than one model; speedups over
    // PyTorch eager exist only where the run timed eager (a machine with PyTorch).
    m_view->setColumnHidden(CandidateTableModel::Device, m_data->deviceModels().size() <= 1);
    m_view->setColumnHidden(CandidateTableModel::VsEager, !m_data->pytorch().overEager(1.0).has_value());
}

void CandidatesPanel::saveColumns() const {
    QSettings().setValue(kColumnsKey, QVariantMap{{QStringLiteral("columns"), int(CandidateTableModel::ColumnCount)},
                                                  {QStringLiteral("header"), m_view->horizontalHeader()->saveState()}});
}

void CandidatesPanel::restoreColumns() {
    const QVariantMap saved = QSettings().value(kColumnsKey).toMap();
    if (saved.value(QStringLiteral("columns")).toInt() != CandidateTableModel::ColumnCount)
        return; // none saved, or saved by a version with other columns: the default layout stays
    QHeaderView* header = m_view->horizontalHeader();
    if (!header->restoreState(saved.value(QStringLiteral("header")).toByteArray()))
        return;
    hideEmptyColumns(); // they follow the run shown, not the last session
    m_view->sortByColumn(header->sortIndicatorSection(), header->sortIndicatorOrder());
}

int CandidatesPanel::leadingColumnsWidth() const {
    const QHeaderView* header = m_view->horizontalHeader();
    const int last = header->visualIndex(CandidateTableModel::Time);
    int width = 0;
    for (int visual = 0; visual <= last; ++visual) {
        const int column = header->logicalIndex(visual);
        if (!header->isSectionHidden(column))
            width += header->sectionSize(column);
    }
    const QMargins margins = layout()->contentsMargins();
    return width + 2 * m_view->frameWidth() + m_view->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, m_view)
           + margins.left() + margins.right();
}

void CandidatesPanel::follow(qint64 candidate) {
    const QModelIndex source = m_model->indexOf(candidate);
    const QModelIndex shown = m_filter->mapFromSource(source);
    if (!shown.isValid() || shown.row() == m_view->currentIndex().row())
        return;
    m_following = true;
    m_view->selectionModel()->setCurrentIndex(shown, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(shown);
    m_following = false;
}

QList<qint64> CandidatesPanel::selectedCandidates() const {
    QList<qint64> ids;
    for (const QModelIndex& index : m_view->selectionModel()->selectedRows())
        ids << index.data(CandidateTableModel::CandidateRole).toLongLong();
    return ids;
}

} // namespace kforge::ui
