#include "candidatetablemodel.h"

#include "theme.h"
#include "timeformat.h"

#include <QColor>
#include <QFont>
#include <QGuiApplication>

namespace kforge::ui {

CandidateTableModel::CandidateTableModel(RunData* data, QObject* parent)
    : AppendOnlyTableModel(ColumnCount, data->candidateCount(), parent), m_data(data) {
    connect(m_data, &RunData::cleared, this, [this] {
        m_best = 0;
        resetRows();
    });
    connect(m_data, &RunData::candidatesAdded, this, &CandidateTableModel::appendRows);
    connect(m_data, &RunData::runChanged, this, [this] {
        // The PyTorch figures arrive with the run: the column over eager and the headers follow them.
        const auto& pytorch = m_data->pytorch();
        const std::pair<QString, std::optional<double>> yardstick{pytorch.speedupBase, pytorch.overEager(1.0)};
        if (yardstick != m_yardstick) {
            m_yardstick = yardstick;
            emit headerDataChanged(Qt::Horizontal, Speedup, VsEager);
            if (rowCount() > 0)
                emit dataChanged(index(0, VsEager), index(rowCount() - 1, VsEager));
        }
        const qint64 best = m_data->run().bestCandidate;
        if (best == m_best)
            return;
        for (qint64 id : {m_best, best})
            if (const auto at = indexOf(id); at.isValid())
                emit dataChanged(at, index(at.row(), ColumnCount - 1));
        m_best = best;
    });
    connect(m_data, &RunData::candidatesChanged, this, [this](const QList<int>& rows) {
        if (rows.isEmpty())
            return;
        // One signal for the span of changed rows keeps the view's work bounded on a busy tick.
        const auto [low, high] = std::minmax_element(rows.begin(), rows.end());
        emit dataChanged(index(*low, 0), index(*high, ColumnCount - 1));
    });
}

int CandidateTableModel::sourceRows() const {
    return m_data->candidateCount();
}

QModelIndex CandidateTableModel::indexOf(qint64 candidate, int column) const {
    const int row = m_data->rowOf(candidate);
    return row < 0 || row >= rowCount() ? QModelIndex() : index(row, column);
}

QString CandidateTableModel::cellText(const CandidateRow& row) const {
    if (!row.cell)
        return {};
    QStringList levels;
    const auto& dims = m_data->dimensions();
    for (int d = 0; d < model::kDimensions; ++d) {
        const int level = (*row.cell)[d];
        levels << (level < dims[d].levels.size() ? dims[d].levels[level] : QString::number(level));
    }
    return levels.join(QStringLiteral(" · "));
}

QVariant CandidateTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const CandidateRow& r = m_data->candidateAt(index.row());
    switch (role) {
    case CandidateRole:
        return r.id;
    case StatusRole:
        return r.status;
    case OriginRole:
        return static_cast<int>(r.origin);
    case CorrectRole:
        return r.correct;
    case Qt::DisplayRole:
    case SortRole: {
        const bool sort = role == SortRole;
        switch (index.column()) {
        case Id:
            return r.id;
        case Island:
            return r.island;
        case Generation:
            return r.generation;
        case Origin:
            return originTitle(r);
        case Label:
            return r.label;
        case Params:
            return r.params;
        case Status:
            if (r.status.isEmpty())
                return sort ? QStringLiteral("~") : tr("pending");
            return r.review == model::ReviewState::Pending ? tr("%1, awaits review").arg(r.status) : r.status;
        case Speedup:
            if (sort)
                return r.correct ? r.speedup : -1.0;
            return r.correct && r.speedup > 0 ? QStringLiteral("%1×").arg(r.speedup, 0, 'f', 3) : QString();
        case Confirmed:
            if (sort)
                return r.confirmed() ? r.confirmedSpeedup : -1.0;
            return r.confirmed() ? QStringLiteral("%1×").arg(r.confirmedSpeedup, 0, 'f', 3) : QString();
        case VsEager: {
            const auto x = overEager(r);
            if (sort)
                return x.value_or(-1.0);
            return x ? QStringLiteral("%1×").arg(*x, 0, 'f', 3) : QString();
        }
        case Time:
            if (sort)
                return r.candidateUs > 0 ? r.candidateUs : 1e300;
            return formatKernelTime(r.candidateUs);
        case Device:
            return r.device;
        case Cell:
            return cellText(r);
        case Findings:
            if (sort)
                return r.findings;
            return r.findings ? QStringLiteral("%1: %2").arg(r.findings).arg(r.topFinding) : QString();
        case Flags: {
            QStringList flags;
            if (r.pinned)
                flags << tr("pinned");
            if (r.vetoed)
                flags << tr("vetoed");
            if (m_data->run().bestCandidate == r.id)
                flags << tr("best");
            return flags.join(QStringLiteral(", "));
        }
        }
        return {};
    }
    case Qt::ToolTipRole:
        if (index.column() == Status && !r.message.isEmpty())
            return r.message;
        if (index.column() == Findings && r.findings)
            return r.topFinding;
        if (index.column() == Device && !r.device.isEmpty())
            return r.device; // the whole name, which the column may elide
        if (index.column() == Speedup && r.correct && r.speedup > 0)
            return r.confirmed() ? tr("Measured %1× in the search; re-measured %2× before promotion")
                                       .arg(r.speedup, 0, 'f', 3)
                                       .arg(r.confirmedSpeedup, 0, 'f', 3)
                                 : tr("Unconfirmed: measured once in the search, never re-measured");
        if (index.column() == Confirmed && r.confirmed())
            return m_data->run().bestCandidate == r.id ? tr("The run's best: re-measured before promotion")
                                                       : tr("Re-measured before promotion; not the run's best");
        if (index.column() == Time && r.candidateUs > 0)
            return r.device.isEmpty() ? tr("Median %1 µs, with the baseline timed in the same evaluation")
                                            .arg(r.candidateUs, 0, 'f', 2)
                                      : tr("Median %1 µs on %2, with the baseline timed in the same evaluation")
                                            .arg(r.candidateUs, 0, 'f', 2)
                                            .arg(r.device);
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == Id || index.column() == Island || index.column() == Generation
            || index.column() == Speedup || index.column() == Confirmed || index.column() == VsEager
            || index.column() == Time)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ForegroundRole:
        if (r.vetoed)
            return QColor(Qt::gray);
        if (index.column() == Status && r.evaluated())
            return r.correct
                       ? theme::pick(QGuiApplication::palette(), QColor(0x2e, 0x7d, 0x32), QColor(0x56, 0xd3, 0x64))
                       : theme::pick(QGuiApplication::palette(), QColor(0xc6, 0x28, 0x28), QColor(0xff, 0x7b, 0x72));
        return {};
    case Qt::FontRole: {
        // An unconfirmed speedup is set in italics: a single measurement, not what the best is judged by.
        const bool unconfirmed = index.column() == Speedup && r.correct && r.speedup > 0 && !r.confirmed();
        const bool bold = r.pinned || m_data->run().bestCandidate == r.id;
        if (!unconfirmed && !bold)
            return {};
        QFont font;
        font.setBold(bold);
        font.setItalic(unconfirmed);
        return font;
    }
    default:
        return {};
    }
}

std::optional<double> CandidateTableModel::overEager(const CandidateRow& r) const {
    if (!r.correct)
        return std::nullopt;
    return m_data->pytorch().overEager(r.speedup);
}

QVariant CandidateTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        if (section == Speedup)
            return tr("Speedup over %1, timed in the candidate's own evaluation; in italics while unconfirmed (never "
                      "re-measured)")
                .arg(m_data->pytorch().speedupBase);
        if (section == Confirmed)
            return tr("Speedup re-measured before promotion: the run's best is the highest of these, not of the "
                      "first measurements");
        if (section == VsEager)
            return m_data->pytorch().speedupBase == QLatin1String("PyTorch eager")
                       ? tr("Speedup over PyTorch eager, timed in the candidate's own evaluation")
                       : tr("Speedup over PyTorch eager through the first seed: the candidate over the seed, times "
                            "the seed over eager as timed beside it at the start of the run (empty: PyTorch not "
                            "timed)");
    }
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Id:
        return tr("Id");
    case Island:
        return tr("Island");
    case Generation:
        return tr("Gen");
    case Origin:
        return tr("Origin");
    case Label:
        return tr("Label");
    case Params:
        return tr("Parameters");
    case Status:
        return tr("Status");
    case Speedup:
        return m_data->pytorch().speedupBase == QLatin1String("PyTorch eager") ? tr("Speedup (eager)") : tr("Speedup");
    case Confirmed:
        return tr("Confirmed");
    case VsEager:
        return tr("vs eager");
    case Time:
        return tr("Time");
    case Device:
        return tr("Device");
    case Cell:
        return tr("Behaviour cell");
    case Findings:
        return tr("Findings");
    case Flags:
        return tr("Flags");
    }
    return {};
}

CandidateFilterModel::CandidateFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(CandidateTableModel::SortRole);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void CandidateFilterModel::setText(const QString& text) {
    m_text = text.trimmed();
    invalidateRowsFilter();
}

void CandidateFilterModel::setOrigin(int origin) {
    m_origin = origin;
    invalidateRowsFilter();
}

void CandidateFilterModel::setState(State state) {
    m_state = state;
    invalidateRowsFilter();
}

void CandidateFilterModel::setIsland(int island) {
    m_island = island;
    invalidateRowsFilter();
}

bool CandidateFilterModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
    // The table's rows are in id order: sorted by id (the default), rows compare by position, with
    // no QVariant per comparison. A chunk of a big run's rows sorted into a table of a million made
    // tens of thousands of comparisons on the GUI thread.
    if (left.column() == CandidateTableModel::Id && right.column() == CandidateTableModel::Id
        && qobject_cast<const CandidateTableModel*>(sourceModel()))
        return left.row() < right.row();
    return QSortFilterProxyModel::lessThan(left, right);
}

bool CandidateFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    // Unfiltered, every row is in: a run's rows arrive thousands at a time and are each asked here.
    if (m_origin < 0 && m_island < 0 && m_state == State::Any && m_text.isEmpty())
        return true;
    const auto* model = sourceModel();
    const auto at = [&](int column, int role = Qt::DisplayRole) {
        return model->index(sourceRow, column, sourceParent).data(role);
    };
    if (m_origin >= 0 && at(0, CandidateTableModel::OriginRole).toInt() != m_origin)
        return false;
    if (m_island >= 0 && at(CandidateTableModel::Island).toInt() != m_island)
        return false;
    switch (m_state) {
    case State::Any:
        break;
    case State::Correct:
        if (!at(0, CandidateTableModel::CorrectRole).toBool())
            return false;
        break;
    case State::Failed:
        if (at(0, CandidateTableModel::StatusRole).toString().isEmpty()
            || at(0, CandidateTableModel::CorrectRole).toBool())
            return false;
        break;
    case State::Pending:
        if (!at(0, CandidateTableModel::StatusRole).toString().isEmpty())
            return false;
        break;
    case State::Pinned:
        if (!at(CandidateTableModel::Flags).toString().contains(tr("pinned")))
            return false;
        break;
    case State::Vetoed:
        if (!at(CandidateTableModel::Flags).toString().contains(tr("vetoed")))
            return false;
        break;
    }
    if (m_text.isEmpty())
        return true;
    if (at(CandidateTableModel::Id).toString() == m_text)
        return true;
    for (int column : {CandidateTableModel::Label, CandidateTableModel::Params, CandidateTableModel::Status,
                       CandidateTableModel::Findings, CandidateTableModel::Cell, CandidateTableModel::Origin})
        if (at(column).toString().contains(m_text, Qt::CaseInsensitive))
            return true;
    return false;
}

} // namespace kforge::ui
