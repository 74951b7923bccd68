#pragma once
// Where the candidates sit against the device's limits: a log-log roofline with the measured DRAM
// and compute ceilings, and a point per candidate that has a roofline point (arithmetic intensity,
// achieved FLOP/s), coloured by origin, failures in grey. Clicking selects the nearest point,
// hovering names it, and the selected candidate is drawn larger and outlined.

#include <QPointer>
#include <QSet>
#include <QVector>
#include <QWidget>

#include "plotstyle.h"

class QCPGraph;
class QCPItemText;
class QCustomPlot;
class QMouseEvent;
class QResizeEvent;

namespace kforge::ui {

class CandidateSelection;
class RunData;

class RooflineView : public QWidget {
    Q_OBJECT
public:
    RooflineView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // Where a candidate's point is drawn, in plot() coordinates, after laying out what is pending;
    // (-1, -1) when it has none.
    QPoint pointPosition(qint64 candidate);
    // The candidate whose point is nearest `pos` (plot() coordinates) within `radius` pixels; 0: none.
    qint64 candidateAt(const QPoint& pos, double radius = 16.0) const;
    // What the plot says in its corner (why it is empty, which roofs it draws); empty when nothing.
    QString note() const;
    // Whether the user has zoomed or panned (wheel, drag): the view then keeps its ranges as the
    // run goes on, until resetZoom() (a double-click, or the context menu) fits it to the run again.
    bool userRange() const { return m_userRange; }
    void resetZoom();

protected:
    // A new size moves the roofs' labels: whether one fits above its roof depends on the pixels a
    // decade of the y axis takes.
    void resizeEvent(QResizeEvent* event) override;

private:
    void refresh();
    void refreshCeilings(double xLo, double xHi);
    void updateSelected();
    void onMouseMove(QMouseEvent* event);

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    QCustomPlot* m_plot = nullptr;
    QList<QCPGraph*> m_originGraphs; // by search::Origin
    QCPGraph* m_failed = nullptr;
    QCPGraph* m_selected = nullptr;
    QList<QCPGraph*> m_roofs;
    QList<QCPItemText*> m_roofLabels;
    QSet<QString> m_splitTf32Roofs; // the TF32 roofs whose third holds float32 kernels of the run
    QCPItemText* m_note = nullptr;
    QVector<plotstyle::PlotPoint> m_points; // every point drawn, for picking
    plotstyle::RefreshTimer* m_refresh = nullptr;
    bool m_userRange = false;
};

} // namespace kforge::ui
