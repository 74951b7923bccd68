#include "heatmapmodel.h"

#include "plotstyle.h"
#include "rundata.h"

namespace kforge::ui {

namespace {
constexpr int kBins = search::kLevels * search::kLevels;
}

HeatmapModel::HeatmapModel(RunData* data, QObject* parent) : QAbstractTableModel(parent), m_data(data) {
    m_bins.resize(kBins);
    connect(data, &RunData::cleared, this, &HeatmapModel::rebuild);
    connect(data, &RunData::candidatesAdded, this, &HeatmapModel::onCandidatesAdded);
    connect(data, &RunData::candidatesChanged, this, &HeatmapModel::onCandidatesChanged);
    connect(data, &RunData::archivesChanged, this, [this] {
        std::vector<bool> touched(kBins);
        electFromArchives(touched);
        emitTouched(touched);
    });
    // Level names arrive with the run's first delta, after cleared().
    connect(data, &RunData::runChanged, this, [this] {
        emit headerDataChanged(Qt::Horizontal, 0, search::kLevels - 1);
        emit headerDataChanged(Qt::Vertical, 0, search::kLevels - 1);
    });
    rebuild();
}

int HeatmapModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : search::kLevels;
}

int HeatmapModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : search::kLevels;
}

int HeatmapModel::yLevelOf(const QModelIndex& index) const {
    return search::kLevels - 1 - index.row();
}

QModelIndex HeatmapModel::indexOf(int xLevel, int yLevel) const {
    if (xLevel < 0 || xLevel >= search::kLevels || yLevel < 0 || yLevel >= search::kLevels)
        return {};
    return index(search::kLevels - 1 - yLevel, xLevel);
}

QModelIndex HeatmapModel::indexOfCandidate(qint64 candidate) const {
    if (!m_data)
        return {};
    const CandidateRow* row = m_data->candidate(candidate);
    if (!row)
        return {};
    const int bin = binOf(*row);
    return bin < 0 ? QModelIndex() : indexOf(bin % search::kLevels, bin / search::kLevels);
}

QVariant HeatmapModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int at = yLevelOf(index) * search::kLevels + xLevelOf(index);
    const Bin& bin = m_bins[static_cast<size_t>(at)];
    switch (role) {
    case Qt::DisplayRole:
        return bin.elite ? plotstyle::speedup(bin.speedup) : QString();
    case Qt::ToolTipRole:
        return toolTip(at);
    case Qt::TextAlignmentRole:
        return static_cast<int>(Qt::AlignCenter);
    case EliteRole:
        return bin.elite;
    case SpeedupRole:
        return bin.speedup;
    case CountRole:
        return bin.count;
    case CorrectCountRole:
        return bin.correct;
    default:
        return {};
    }
}

QVariant HeatmapModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    if (section < 0 || section >= search::kLevels)
        return {};
    if (orientation == Qt::Horizontal)
        return levelName(m_x, section);
    return levelName(m_y, search::kLevels - 1 - section);
}

void HeatmapModel::setAxes(int xDimension, int yDimension) {
    const auto valid = [](int d) { return d >= 0 && d < model::kDimensions; };
    if (!valid(xDimension) || !valid(yDimension) || xDimension == yDimension)
        return;
    if (xDimension == m_x && yDimension == m_y)
        return;
    m_x = xDimension;
    m_y = yDimension;
    rebuild();
}

void HeatmapModel::setIsland(int island) {
    island = std::max(island, -1);
    if (island == m_island)
        return;
    m_island = island;
    rebuild();
}

int HeatmapModel::binOf(const CandidateRow& row) const {
    if (!row.cell || !plotstyle::onIsland(row, m_island))
        return -1;
    const int x = (*row.cell)[static_cast<size_t>(m_x)];
    const int y = (*row.cell)[static_cast<size_t>(m_y)];
    if (x < 0 || x >= search::kLevels || y < 0 || y >= search::kLevels)
        return -1;
    return y * search::kLevels + x;
}

void HeatmapModel::rebuild() {
    beginResetModel();
    m_bins.assign(kBins, Bin{});
    m_contributions.clear();
    if (m_data) {
        const int n = m_data->candidateCount();
        m_contributions.resize(static_cast<size_t>(n));
        std::vector<bool> touched(kBins);
        for (int row = 0; row < n; ++row)
            add(row, touched);
        electFromArchives(touched);
    }
    endResetModel();
}

bool HeatmapModel::archivesStored() const {
    return m_data && m_data->archives().has_value();
}

void HeatmapModel::electFromArchives(std::vector<bool>& touched) {
    if (!archivesStored())
        return;
    // Each bin's elite is the best of the archive members whose cell projects there, on the
    // island shown (every island: all of them); ties go to the older candidate.
    std::vector<store::ArchiveMemberRecord> best(kBins);
    for (const auto& m : *m_data->archives()) {
        if (m_island >= 0 && m.island != m_island)
            continue;
        const int x = m.cell[static_cast<size_t>(m_x)];
        const int y = m.cell[static_cast<size_t>(m_y)];
        if (x < 0 || x >= search::kLevels || y < 0 || y >= search::kLevels)
            continue;
        auto& b = best[static_cast<size_t>(y * search::kLevels + x)];
        if (!b.candidateId || m.speedup > b.speedup || (m.speedup == b.speedup && m.candidateId < b.candidateId))
            b = m;
    }
    for (int at = 0; at < kBins; ++at) {
        Bin& bin = m_bins[static_cast<size_t>(at)];
        const auto& b = best[static_cast<size_t>(at)];
        const int row = b.candidateId ? m_data->rowOf(b.candidateId) : -1;
        if (bin.elite == b.candidateId && bin.speedup == b.speedup && bin.eliteRow == row)
            continue;
        bin.elite = b.candidateId;
        bin.speedup = b.speedup;
        bin.eliteRow = row; // -1 while the candidate has not arrived in RunData yet
        touched[static_cast<size_t>(at)] = true;
    }
}

void HeatmapModel::offer(Bin& bin, int row) {
    if (archivesStored())
        return; // the engine's archives name the elites
    const CandidateRow& r = m_data->candidateAt(row);
    if (!plotstyle::isArchiveCandidate(r))
        return;
    // Strictly better replaces the incumbent, as in the archive; ties go to the older candidate.
    if (bin.eliteRow < 0 || r.speedup > bin.speedup || (r.speedup == bin.speedup && r.id < bin.elite)) {
        bin.eliteRow = row;
        bin.elite = r.id;
        bin.speedup = r.speedup;
    }
}

void HeatmapModel::reelect(Bin& bin) {
    if (archivesStored())
        return;
    bin.eliteRow = -1;
    bin.elite = 0;
    bin.speedup = 0.0;
    for (int row : std::as_const(bin.rows))
        offer(bin, row);
}

void HeatmapModel::add(int row, std::vector<bool>& touched) {
    const CandidateRow& r = m_data->candidateAt(row);
    const int at = binOf(r);
    m_contributions[static_cast<size_t>(row)] = {at, r.correct};
    if (at < 0)
        return;
    Bin& bin = m_bins[static_cast<size_t>(at)];
    ++bin.count;
    bin.correct += r.correct ? 1 : 0;
    bin.rows.push_back(row);
    offer(bin, row);
    touched[static_cast<size_t>(at)] = true;
}

void HeatmapModel::remove(int row, std::vector<bool>& touched) {
    Contribution& c = m_contributions[static_cast<size_t>(row)];
    if (c.bin < 0)
        return;
    Bin& bin = m_bins[static_cast<size_t>(c.bin)];
    --bin.count;
    bin.correct -= c.correct ? 1 : 0;
    bin.rows.removeOne(row);
    if (bin.eliteRow == row)
        reelect(bin);
    touched[static_cast<size_t>(c.bin)] = true;
    c = {};
}

void HeatmapModel::onCandidatesAdded(int first, int last) {
    if (!m_data || first != static_cast<int>(m_contributions.size())) {
        // Out of step with RunData (a missed delta): start over rather than guess.
        rebuild();
        return;
    }
    m_contributions.resize(static_cast<size_t>(last) + 1);
    std::vector<bool> touched(kBins);
    for (int row = first; row <= last; ++row)
        add(row, touched);
    electFromArchives(touched); // elites named before their candidates arrived find their rows
    emitTouched(touched);
}

void HeatmapModel::onCandidatesChanged(const QList<int>& rows) {
    if (!m_data)
        return;
    std::vector<bool> touched(kBins);
    for (int row : rows) {
        if (row < 0 || row >= static_cast<int>(m_contributions.size()))
            continue;
        const CandidateRow& r = m_data->candidateAt(row);
        Contribution& c = m_contributions[static_cast<size_t>(row)];
        const int at = binOf(r);
        if (at < 0 || at != c.bin) {
            remove(row, touched);
            add(row, touched);
            continue;
        }
        // Same cell (the usual case: a result or a review arrived): adjust in place.
        Bin& bin = m_bins[static_cast<size_t>(at)];
        bin.correct += (r.correct ? 1 : 0) - (c.correct ? 1 : 0);
        c.correct = r.correct;
        if (bin.eliteRow == row)
            reelect(bin); // its speedup or its standing may have dropped
        else
            offer(bin, row);
        touched[static_cast<size_t>(at)] = true;
    }
    emitTouched(touched);
}

void HeatmapModel::emitTouched(const std::vector<bool>& touched) {
    for (int at = 0; at < kBins; ++at) {
        if (!touched[static_cast<size_t>(at)])
            continue;
        const QModelIndex i = indexOf(at % search::kLevels, at / search::kLevels);
        emit dataChanged(i, i);
    }
}

QString HeatmapModel::levelName(int dimension, int level) const {
    if (m_data) {
        const auto& d = m_data->dimensions()[static_cast<size_t>(dimension)];
        if (level < d.levels.size())
            return d.levels[level];
    }
    return tr("level %1").arg(level);
}

QString HeatmapModel::toolTip(int at) const {
    const Bin& bin = m_bins[static_cast<size_t>(at)];
    const auto title = [this](int dimension) {
        const QString t = m_data ? m_data->dimensions()[static_cast<size_t>(dimension)].title : QString();
        return t.isEmpty() ? tr("dimension %1").arg(dimension) : t;
    };
    QStringList lines;
    if (bin.elite && m_data && bin.eliteRow < 0) {
        lines << tr("Elite #%1  %2").arg(bin.elite).arg(plotstyle::speedup(bin.speedup));
    } else if (bin.elite && m_data) {
        const CandidateRow& r = m_data->candidateAt(bin.eliteRow);
        lines << tr("Elite #%1  %2").arg(r.id).arg(r.label);
        lines << tr("%1 from %2, generation %3, island %4")
                     .arg(plotstyle::speedup(r.speedup), originTitle(r.origin))
                     .arg(r.generation)
                     .arg(r.island);
    } else {
        lines << tr("No correct candidate here yet");
    }
    lines << QStringLiteral("%1: %2").arg(title(m_x), levelName(m_x, at % search::kLevels));
    lines << QStringLiteral("%1: %2").arg(title(m_y), levelName(m_y, at / search::kLevels));
    lines << tr("%n candidate(s), %1 correct", nullptr, bin.count).arg(bin.correct);
    return lines.join(QLatin1Char('\n'));
}

} // namespace kforge::ui
