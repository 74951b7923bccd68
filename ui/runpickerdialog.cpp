#include "runpickerdialog.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

enum Column { Id, Name, Task, Backend, State, Evaluations, Best, Updated, ColumnCount };

// Sorts numbers as numbers, whatever their text says.
class RunItem : public QTreeWidgetItem {
public:
    using QTreeWidgetItem::QTreeWidgetItem;
    bool operator<(const QTreeWidgetItem& other) const override {
        const int column = treeWidget() ? treeWidget()->sortColumn() : 0;
        const QVariant a = data(column, Qt::UserRole), b = other.data(column, Qt::UserRole);
        if (a.isValid() && b.isValid())
            return QVariant::compare(a, b) == QPartialOrdering::Less;
        return QTreeWidgetItem::operator<(other);
    }
};

// The state, with why it stopped where the run says.
QString stateTip(const store::RunRecord& run) {
    QString state = model::runStateName(run.state);
    if (!run.message.isEmpty())
        state += QStringLiteral(": ") + run.message;
    return state;
}

} // namespace

RunPickerDialog::RunPickerDialog(const QString& storePath, const QList<store::RunRecord>& runs, qint64 current,
                                 QWidget* parent)
    : QDialog(parent) {
    setObjectName(QStringLiteral("runPicker"));
    setWindowTitle(tr("Open Run — %1").arg(QFileInfo(storePath).fileName()));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        tr("%1 holds %2 runs. Choose the one to show:").arg(QFileInfo(storePath).fileName()).arg(runs.size()), this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("runFilter"));
    m_filter->setPlaceholderText(tr("Filter by name, task, backend or state"));
    m_filter->setClearButtonEnabled(true);
    layout->addWidget(m_filter);

    m_list = new QTreeWidget(this);
    m_list->setObjectName(QStringLiteral("runList"));
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->setAllColumnsShowFocus(true);
    m_list->setColumnCount(ColumnCount);
    m_list->setHeaderLabels(
        {tr("Run"), tr("Name"), tr("Task"), tr("Backend"), tr("State"), tr("Evaluations"), tr("Best"), tr("Updated")});
    const QLocale locale;
    for (const auto& run : runs) {
        auto* item = new RunItem(m_list);
        item->setText(Id, QString::number(run.id));
        item->setData(Id, Qt::UserRole, run.id);
        item->setText(Name, run.name);
        item->setText(Task, run.variant.isEmpty() ? run.task : QStringLiteral("%1 (%2)").arg(run.task, run.variant));
        item->setText(Backend, model::backendName(run.backend));
        item->setText(State, model::runStateName(run.state));
        item->setToolTip(State, stateTip(run));
        item->setText(Evaluations, QString::number(run.evaluations));
        item->setData(Evaluations, Qt::UserRole, run.evaluations);
        item->setTextAlignment(Evaluations, Qt::AlignRight | Qt::AlignVCenter);
        // The confirmed best, over the task's own baseline: the run's yardstick.
        item->setText(Best, run.bestCandidate ? tr("%1x (#%2)").arg(run.bestSpeedup, 0, 'f', 3).arg(run.bestCandidate)
                                              : tr("none yet"));
        item->setData(Best, Qt::UserRole, run.bestCandidate ? run.bestSpeedup : 0.0);
        item->setToolTip(Best, tr("Confirmed best, as a speedup over the task's baseline"));
        item->setTextAlignment(Best, Qt::AlignRight | Qt::AlignVCenter);
        item->setText(Updated, locale.toString(run.updated.toLocalTime(), QLocale::ShortFormat));
        item->setData(Updated, Qt::UserRole, run.updated);
    }
    m_list->setSortingEnabled(true);
    m_list->sortByColumn(Id, Qt::DescendingOrder);
    for (int c = 0; c < ColumnCount; ++c)
        m_list->resizeColumnToContents(c);
    m_list->header()->setStretchLastSection(false);
    m_list->header()->setSectionResizeMode(Name, QHeaderView::Stretch);
    layout->addWidget(m_list, 1);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons);
    QPushButton* open = buttons->button(QDialogButtonBox::Open);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QTreeWidget::itemActivated, this, [this] {
        if (chosenRun())
            accept();
    });
    connect(m_list, &QTreeWidget::itemSelectionChanged, this, [this, open] { open->setEnabled(chosenRun() != 0); });
    connect(m_filter, &QLineEdit::textChanged, this, &RunPickerDialog::applyFilter);

    choose(current);
    if (!chosenRun() && m_list->topLevelItemCount() > 0)
        m_list->setCurrentItem(m_list->topLevelItem(0));
    open->setEnabled(chosenRun() != 0);
    m_list->setFocus();
    resize(880, 380);
}

qint64 RunPickerDialog::chosenRun() const {
    const QList<QTreeWidgetItem*> selected = m_list->selectedItems();
    if (selected.isEmpty() || selected.front()->isHidden())
        return 0;
    return selected.front()->data(Id, Qt::UserRole).toLongLong();
}

void RunPickerDialog::choose(qint64 run) {
    for (int i = 0; i < m_list->topLevelItemCount(); ++i) {
        QTreeWidgetItem* item = m_list->topLevelItem(i);
        if (item->data(Id, Qt::UserRole).toLongLong() == run) {
            m_list->setCurrentItem(item);
            m_list->scrollToItem(item);
            return;
        }
    }
}

void RunPickerDialog::applyFilter(const QString& text) {
    const QString needle = text.trimmed();
    QTreeWidgetItem* firstShown = nullptr;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i) {
        QTreeWidgetItem* item = m_list->topLevelItem(i);
        bool shown = needle.isEmpty();
        for (int c = 0; c < ColumnCount && !shown; ++c)
            shown = item->text(c).contains(needle, Qt::CaseInsensitive);
        item->setHidden(!shown);
        if (shown && !firstShown)
            firstShown = item;
    }
    // The choice stays on a row that can be seen.
    if (!chosenRun() && firstShown)
        m_list->setCurrentItem(firstShown);
}

} // namespace kforge::ui
