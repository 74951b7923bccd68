#pragma once
// How the search advances: per island, the best speedup so far (a step line, judged as the run's
// best is: confirmed where re-measured, steps on a first measurement marked unconfirmed) and the
// median of each generation's correct candidates (dashed), over the generations. Redrawn from
// whole arrays behind a short timer, however fast candidates arrive.

#include <QPointer>
#include <QWidget>

#include "plotstyle.h"

class QCPGraph;
class QCustomPlot;

namespace kforge::ui {

class RunData;

class ProgressPlot : public QWidget {
    Q_OBJECT
public:
    explicit ProgressPlot(RunData* data, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // The last value of an island's best line (0 when it has none): confirmed speedups where
    // candidates were re-measured, else first measurements.
    double islandBest(int island) const;
    // The steps of the best lines that stand on an unconfirmed measurement (drawn as hollow dots).
    int unconfirmedSteps() const;

private:
    void refresh();
    void ensureGraphs(int islands);

    QPointer<RunData> m_data;
    QCustomPlot* m_plot = nullptr;
    QList<QCPGraph*> m_best;         // per island
    QList<QCPGraph*> m_median;       // per island
    QCPGraph* m_medianKey = nullptr; // a legend entry that explains the dashed lines
    QCPGraph* m_baseline = nullptr;
    QCPGraph* m_unconfirmed = nullptr; // hollow dots on the steps that stand on a first measurement
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
