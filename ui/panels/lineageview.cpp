#include "lineageview.h"

#include "candidatelistmodel.h"
#include "candidateselection.h"
#include "panelstyle.h"
#include "rundata.h"
#include "showwatcher.h"
#include "theme.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QSet>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

QLabel* factLabel() {
    auto* label = new QLabel;
    label->setTextFormat(Qt::PlainText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true); // a long result or parameter list wraps instead of widening the window
    return label;
}

CandidateListView* candidateList(CandidateListModel* model, const QString& placeholder) {
    auto* view = new CandidateListView;
    view->setModel(model);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setUniformItemSizes(true);
    view->setToolTip(placeholder);
    // Two rows at least; a short screen scrolls the lists rather than the window growing taller.
    view->setMinimumHeight(2 * (view->fontMetrics().height() + 4) + 2 * view->frameWidth());
    return view;
}

QWidget* titled(const QString& title, QWidget* content, QLabel** titleLabel = nullptr) {
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* label = new QLabel(title);
    QFont bold = label->font();
    bold.setBold(true);
    label->setFont(bold);
    layout->addWidget(label);
    layout->addWidget(content, 1);
    if (titleLabel)
        *titleLabel = label;
    return box;
}

} // namespace

void CandidateListView::setEmptyText(const QString& text) {
    if (text == m_emptyText)
        return;
    m_emptyText = text;
    viewport()->update();
}

void CandidateListView::paintEvent(QPaintEvent* event) {
    QListView::paintEvent(event);
    if (m_emptyText.isEmpty() || !model() || model()->rowCount(rootIndex()) > 0)
        return;
    QPainter painter(viewport());
    painter.setPen(palette().color(QPalette::PlaceholderText));
    const int margin = fontMetrics().height() / 3;
    painter.drawText(viewport()->rect().adjusted(margin, margin, -margin, -margin),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, m_emptyText);
}

LineageView::LineageView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_title = new QLabel;
    m_title->setTextFormat(Qt::PlainText);
    m_title->setWordWrap(true);
    QFont big = m_title->font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.15);
    m_title->setFont(big);
    m_origin = factLabel();
    m_place = factLabel();
    m_params = factLabel();
    m_params->setFont(codeFont());
    m_result = factLabel();
    m_flags = factLabel();

    auto* facts = new QFormLayout;
    facts->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow); // wrapped facts take the width there is
    facts->addRow(tr("Origin:"), m_origin);
    facts->addRow(tr("Place:"), m_place);
    facts->addRow(tr("Parameters:"), m_params);
    facts->addRow(tr("Result:"), m_result);
    facts->addRow(tr("Flags:"), m_flags);

    m_compare = new QPushButton(tr("Compare with Parent"));
    m_compare->setToolTip(
        tr("Show the parent (the one selected in Parents, else the first) and this candidate side by side"));

    m_parents = new CandidateListModel(data, this);
    m_children = new CandidateListModel(data, this);
    m_ancestry = new CandidateListModel(data, this);
    m_parentsView = candidateList(m_parents, tr("The candidates this one was made from"));
    m_parentsView->setObjectName(QStringLiteral("parents"));
    m_childrenView = candidateList(m_children, tr("The candidates made from this one"));
    m_childrenView->setObjectName(QStringLiteral("children"));
    m_ancestryView = candidateList(m_ancestry, tr("First parents, back to the seed"));
    m_ancestryView->setObjectName(QStringLiteral("ancestry"));

    auto* lists = new QHBoxLayout;
    lists->addWidget(titled(tr("Parents"), m_parentsView));
    lists->addWidget(titled(tr("Children"), m_childrenView));
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_compare);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addLayout(facts);
    layout->addLayout(buttons);
    layout->addLayout(lists, 1);
    layout->addWidget(titled(tr("Ancestry"), m_ancestryView, &m_ancestryTitle), 1);

    for (QListView* view : {m_parentsView, m_childrenView, m_ancestryView}) {
        connect(view->selectionModel(), &QItemSelectionModel::currentChanged, this,
                [this](const QModelIndex& current, const QModelIndex& previous) {
                    // A view taking the focus makes its first row current: moving onto it selects, focus alone not.
                    if (!m_rebuilding && previous.isValid())
                        activate(current);
                });
        connect(view, &QListView::clicked, this, &LineageView::activate);
        connect(view, &QListView::activated, this, &LineageView::activate);
    }
    connect(m_parentsView->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &LineageView::updateCompareButton);
    connect(m_compare, &QPushButton::clicked, this, &LineageView::compareWithParent);
    // Behind another tab (the Candidates table, by default) it catches up when shown.
    connect(selection, &CandidateSelection::currentChanged, this,
            [this] { whenShown(this, [this] { setCandidate(m_selection ? m_selection->current() : 0); }); });
    connect(data, &RunData::candidatesAdded, this, &LineageView::onCandidatesAdded);
    connect(data, &RunData::candidatesChanged, this, &LineageView::onCandidatesChanged);
    connect(data, &RunData::cleared, this, [this] { setCandidate(0); });
    theme::onPaletteChange(this, [this] { updateFacts(); }); // the result's colour is the palette's
    setCandidate(selection->current());
}

void LineageView::setCandidate(qint64 candidate) {
    const QScopedValueRollback rebuilding(m_rebuilding, true);
    m_candidate = candidate;
    const CandidateRow* row = m_data && candidate > 0 ? m_data->candidate(candidate) : nullptr;
    m_known = row != nullptr;
    m_parents->setCandidates(row ? row->parents : QList<qint64>());
    m_children->setCandidates(row ? m_data->childrenOf(candidate) : QList<qint64>());
    const QList<qint64> ancestry = row ? ancestryOf(candidate) : QList<qint64>();
    m_ancestry->setCandidates(ancestry);
    if (ancestry.isEmpty())
        m_ancestryTitle->setText(tr("Ancestry"));
    else
        m_ancestryTitle->setText(ancestry.size() == 1 ? tr("Ancestry (1 generation back)")
                                                      : tr("Ancestry (%1 generations back)").arg(ancestry.size()));
    updateFacts();
    updateCompareButton();
    updateEmptyTexts();
}

void LineageView::updateEmptyTexts() {
    const CandidateRow* row = m_data && m_candidate > 0 ? m_data->candidate(m_candidate) : nullptr;
    if (!row) {
        for (CandidateListView* view : {m_parentsView, m_childrenView, m_ancestryView})
            view->setEmptyText(QString());
        return;
    }
    QString root;
    switch (row->origin) {
    case model::Origin::Seed:
        root = tr("None: the search starts from this kernel (the task's baseline or a seed)");
        break;
    case model::Origin::Expert:
        root = tr("None: a kernel from the expert library");
        break;
    case model::Origin::Experience:
        root = tr("None: a kernel from the experience library of earlier runs");
        break;
    case model::Origin::Tuner:
    case model::Origin::Llm:
    case model::Origin::Human:
        root = tr("None: made from no other candidate of this run");
        break;
    }
    m_parentsView->setEmptyText(root);
    m_ancestryView->setEmptyText(row->parents.isEmpty() ? tr("None: this candidate has no parents")
                                                        : tr("None: its parents are not loaded yet"));
    m_childrenView->setEmptyText(tr("None so far: no candidate has been made from this one"));
}

void LineageView::updateFacts() {
    const CandidateRow* row = m_data && m_candidate > 0 ? m_data->candidate(m_candidate) : nullptr;
    for (QLabel* label : {m_origin, m_place, m_params, m_result, m_flags})
        label->clear();
    if (m_candidate == 0) {
        m_title->setText(tr("No candidate selected"));
        return;
    }
    if (!row) {
        m_title->setText(tr("Candidate #%1 (not loaded yet)").arg(m_candidate));
        return;
    }
    m_title->setText(row->label.isEmpty() ? tr("Candidate #%1").arg(row->id)
                                          : tr("Candidate #%1 — %2").arg(row->id).arg(row->label));
    m_origin->setText(originTitle(*row));
    m_place->setText(tr("island %1, generation %2").arg(row->island).arg(row->generation));
    m_params->setText(row->params.isEmpty() ? tr("defaults") : row->params);

    QString result;
    if (!row->evaluated()) {
        result = tr("not evaluated yet");
    } else {
        result = statusTitle(row->status);
        const auto& pytorch = m_data->pytorch();
        if (row->speedup > 0.0)
            result += tr(", %1 over %2").arg(formatSpeedup(row->speedup), pytorch.speedupBase);
        // Over eager through the first seed, timed beside eager at the start of the run.
        if (const auto eager = pytorch.overEager(row->speedup);
            eager && pytorch.speedupBase == QLatin1String("the baseline"))
            result += tr(", ≈%1 over PyTorch eager").arg(formatSpeedup(*eager));
        if (row->confirmed())
            result += tr(" (confirmed %1)").arg(formatSpeedup(row->confirmedSpeedup));
        else if (row->correct && row->speedup > 0.0)
            result += tr(" (unconfirmed: measured once)");
        if (!row->message.isEmpty() && row->status != QLatin1String("ok"))
            result += QStringLiteral(" — ") + row->message;
    }
    m_result->setText(result);
    QPalette palette = m_result->palette();
    const QColor color = statusColor(row->status, this->palette());
    palette.setColor(QPalette::WindowText, color.isValid() ? color : this->palette().color(QPalette::WindowText));
    m_result->setPalette(palette);

    QStringList flags;
    if (row->pinned)
        flags << tr("pinned");
    if (row->vetoed)
        flags << tr("vetoed");
    if (row->review)
        flags << tr("review %1").arg(model::reviewStateName(*row->review));
    if (row->findings > 0)
        flags << (row->findings == 1 ? tr("1 finding") : tr("%1 findings").arg(row->findings));
    m_flags->setText(flags.isEmpty() ? tr("none") : flags.join(QStringLiteral(", ")));
}

void LineageView::updateCompareButton() {
    const QList<qint64> parents = m_candidate > 0 ? m_parents->candidates() : QList<qint64>();
    m_compare->setEnabled(!parents.isEmpty());
    // A crossover has several parents, and a click on a listed one selects it: the button offers
    // each of them instead.
    if (parents.size() > 1) {
        QMenu* menu = m_compare->menu() ? m_compare->menu() : new QMenu(m_compare);
        menu->clear();
        for (qsizetype i = 0; i < parents.size(); ++i) {
            const qint64 parent = parents.at(i);
            menu->addAction(i == 0 ? tr("Parent #%1 (the one it was built on)").arg(parent)
                                   : tr("Parent #%1").arg(parent),
                            this, [this, parent] {
                                if (m_selection && m_candidate > 0)
                                    m_selection->compare(parent, m_candidate);
                            });
        }
        m_compare->setMenu(menu);
    } else if (QMenu* menu = m_compare->menu()) {
        m_compare->setMenu(nullptr);
        menu->deleteLater();
    }
}

void LineageView::onCandidatesAdded(int first, int last) {
    if (m_candidate == 0 || !m_data)
        return;
    if (!m_known) {
        // The selected candidate itself may just have arrived (a selection made from a live event).
        if (m_data->candidate(m_candidate))
            setCandidate(m_candidate);
        return;
    }
    QList<qint64> born;
    for (int row = first; row <= last; ++row) {
        const CandidateRow& c = m_data->candidateAt(row);
        if (c.parents.contains(m_candidate))
            born.push_back(c.id);
    }
    const QScopedValueRollback rebuilding(m_rebuilding, true);
    m_children->append(born);
}

void LineageView::onCandidatesChanged(const QList<int>& rows) {
    if (m_candidate == 0 || !m_data)
        return;
    if (rows.contains(m_data->rowOf(m_candidate)))
        updateFacts(); // the list models update their own rows
}

void LineageView::activate(const QModelIndex& index) {
    const qint64 candidate = index.data(CandidateListModel::CandidateRole).toLongLong();
    if (candidate > 0 && m_selection)
        m_selection->select(candidate);
}

void LineageView::compareWithParent() {
    if (m_candidate == 0 || m_parents->rowCount() == 0 || !m_selection)
        return;
    const QModelIndex chosen = m_parentsView->currentIndex();
    const qint64 parent = chosen.isValid() ? chosen.data(CandidateListModel::CandidateRole).toLongLong()
                                           : m_parents->candidates().constFirst();
    m_selection->compare(parent, m_candidate);
}

QList<qint64> LineageView::ancestryOf(qint64 candidate) const {
    QList<qint64> chain;
    QSet<qint64> seen;
    const CandidateRow* row = m_data->candidate(candidate);
    // First parents only: a crossover's chain follows the parent it was built on. A parent is
    // stored before its children, so ids fall along a chain and it cannot loop; only a step that
    // does not fall (a damaged store) is checked against the ids seen, so that a loop ends. A
    // million-candidate run's chains are thousands long, walked on every selection.
    bool guarded = false;
    while (row && !row->parents.isEmpty()) {
        const qint64 parent = row->parents.constFirst();
        if (!guarded && parent >= row->id) {
            guarded = true;
            seen.insert(candidate);
            for (qint64 id : std::as_const(chain))
                seen.insert(id);
        }
        if (guarded) {
            if (seen.contains(parent))
                break;
            seen.insert(parent);
        }
        chain.push_back(parent);
        row = m_data->candidate(parent);
    }
    return chain;
}

} // namespace kforge::ui
