#pragma once
// What the run's language models cost, generation by generation: the money spent (bars, known
// prices only) and the tokens used (a line on the right axis, reported or estimated), with the
// run's totals and how many calls had no price written above. Redrawn behind a short timer as
// calls arrive; a run without language models says so.

#include <QPointer>
#include <QWidget>

#include "plotstyle.h"

class QCPBars;
class QCPGraph;
class QCPItemText;
class QCustomPlot;

namespace kforge::ui {

class RunData;

class CostPlot : public QWidget {
    Q_OBJECT
public:
    explicit CostPlot(RunData* data, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // As drawn: money (USD) and tokens of each generation's calls, keyed by generation.
    QMap<int, double> spendByGeneration() const;
    QMap<int, double> tokensByGeneration() const;
    QString note() const; // the totals above the plot, or, in its middle, why it is empty

private:
    void refresh();

    QPointer<RunData> m_data;
    QCustomPlot* m_plot = nullptr;
    QCPBars* m_spend = nullptr;
    QCPGraph* m_tokens = nullptr;
    QCPItemText* m_note = nullptr;  // the totals, top left
    QCPItemText* m_empty = nullptr; // a run without calls, centred
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
