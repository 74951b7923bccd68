#pragma once
// How the search advances: per island, the best speedup so far (a step line) and the median of
// each generation's correct candidates (dashed), over the generations. Redrawn from whole arrays
// behind a short timer, however fast candidates arrive.

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

private:
    void refresh();
    void ensureGraphs(int islands);

    QPointer<RunData> m_data;
    QCustomPlot* m_plot = nullptr;
    QList<QCPGraph*> m_best;         // per island
    QList<QCPGraph*> m_median;       // per island
    QCPGraph* m_medianKey = nullptr; // a legend entry that explains the dashed lines
    QCPGraph* m_baseline = nullptr;
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
