#pragma once
// The MAP-Elites archive as a heatmap: two behaviour dimensions (chosen by the user) as axes, each
// cell coloured by its elite's speedup and labelled with it and the number of candidates there.
// Hovering shows the elite, clicking selects it everywhere, and the selected candidate's cell is
// outlined. The cells come from a HeatmapModel; redraws are coalesced.

#include <QPoint>
#include <QPointer>
#include <QStringList>
#include <QWidget>

#include "plotstyle.h"
#include "search/descriptors.h"

#include <array>

class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QComboBox;
class QCustomPlot;
class QMouseEvent;

namespace kforge::ui {

class CandidateSelection;
class ElidedLabel;
class FlowLayout;
class HeatmapModel;
class RunData;

class HeatmapView : public QWidget {
    Q_OBJECT
public:
    HeatmapView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    HeatmapModel* model() const { return m_model; }
    QCustomPlot* plot() const { return m_plot; }
    // Also updates the combo boxes; ignored unless 0 <= x, y < kDimensions and x != y.
    void setAxes(int x, int y);
    // The centre of a cell in plot() coordinates, with the plot laid out as it is now.
    QPoint cellCenter(int xLevel, int yLevel) const;

private:
    void applyPalette(); // colours that are not the cells' texts, for the plot's palette
    void refresh();
    void updateCombos();
    void updateOutline();
    void onAxisChosen(bool xChanged);
    QModelIndex cellAt(const QPoint& pos) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    HeatmapModel* m_model = nullptr;

    QComboBox* m_xCombo = nullptr;
    QComboBox* m_yCombo = nullptr;
    QComboBox* m_islandCombo = nullptr;
    ElidedLabel* m_summary = nullptr;
    FlowLayout* m_bar = nullptr; // the choosers and the summary, in as many lines as they need
    QCustomPlot* m_plot = nullptr;
    QStringList m_xLevelNames; // as the model names them; wrapped to the columns' width
    int m_xWrap = 18;          // characters a line of them holds
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemRect* m_outline = nullptr;
    QCPItemText* m_emptyNote = nullptr;
    QList<QCPItemStraightLine*> m_separators;
    std::array<QCPItemText*, search::kLevels * search::kLevels> m_texts{}; // [yLevel * kLevels + xLevel]
    plotstyle::RefreshTimer* m_refresh = nullptr;
    bool m_updatingCombos = false;
};

} // namespace kforge::ui
