#pragma once
// The MAP-Elites archive projected onto two behaviour dimensions, as a table: a column per level of
// the X dimension, a row per level of the Y dimension (row 0 is the highest level, so the table
// reads like the plot). A cell's elite is the best member of the engine's stored archives (of the
// island shown, migrants included) whose cell projects to that (x, y), whatever its level in the
// third dimension; for a run recorded before archives were stored, the best correct candidate the
// archive would hold there. Follows RunData incrementally: new and changed candidates touch only
// their cells.

#include <QAbstractTableModel>
#include <QList>
#include <QPointer>

#include <vector>

namespace kforge::ui {

class RunData;
struct CandidateRow;

class HeatmapModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Role {
        EliteRole = Qt::UserRole + 1, // qint64; 0 when the cell has no elite
        SpeedupRole,                  // double; of the elite, 0 when none
        CountRole,                    // int; candidates whose cell projects here
        CorrectCountRole,             // int; of those, the correct ones
    };

    HeatmapModel(RunData* data, QObject* parent);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    int xDimension() const { return m_x; }
    int yDimension() const { return m_y; }
    int island() const { return m_island; }
    // Dimensions 0..kDimensions-1, different from each other; anything else is ignored.
    void setAxes(int xDimension, int yDimension);
    // -1: all islands; seeds belong to every island.
    void setIsland(int island);

    // Between (xLevel, yLevel) of the projection and the table's indexes.
    QModelIndex indexOf(int xLevel, int yLevel) const;
    int xLevelOf(const QModelIndex& index) const { return index.column(); }
    int yLevelOf(const QModelIndex& index) const;
    // The index of the cell `candidate` falls in, invalid when it has none or is on another island.
    QModelIndex indexOfCandidate(qint64 candidate) const;

private:
    struct Bin {
        int count = 0;
        int correct = 0;
        qint64 elite = 0;
        double speedup = 0.0;
        int eliteRow = -1;
        QList<int> rows; // RunData rows counted here, so an elite that drops out can be replaced
    };
    // What a RunData row contributed, so a change can be taken back.
    struct Contribution {
        int bin = -1;
        bool correct = false;
    };

    int binOf(const CandidateRow& row) const; // -1: not in the projection
    bool archivesStored() const;
    void electFromArchives(std::vector<bool>& touched);
    void rebuild();
    void add(int row, std::vector<bool>& touched);
    void remove(int row, std::vector<bool>& touched);
    void offer(Bin& bin, int row);
    void reelect(Bin& bin);
    void onCandidatesAdded(int first, int last);
    void onCandidatesChanged(const QList<int>& rows);
    void emitTouched(const std::vector<bool>& touched);
    QString levelName(int dimension, int level) const;
    QString toolTip(int bin) const;

    QPointer<RunData> m_data;
    int m_x = 0;
    int m_y = 1;
    int m_island = -1;
    std::vector<Bin> m_bins;                   // [yLevel * kLevels + xLevel]
    std::vector<Contribution> m_contributions; // per RunData row
};

} // namespace kforge::ui
