#pragma once
// Two runs side by side: the run shown in the window and another (of any store), each read by its
// own reader. A table of what each run is and reached (task, backend, device, candidates,
// evaluations, confirmed best and its kernel time, what the best is over), both runs' best-so-far
// speedup by generation in one plot, and the two best kernels' code with their figures and the
// changes between them (as Compare shows two candidates). Follows both runs while they change.

#include "comparemetrics.h"

#include <QDialog>
#include <QPointer>

class QCPGraph;
class QCustomPlot;
class QLabel;
class QTableWidget;

namespace kforge::ui {

namespace plotstyle {
class RefreshTimer;
}

class RunSession;
class SideBySideDiff;

class RunCompareDialog : public QDialog {
    Q_OBJECT
public:
    RunCompareDialog(RunSession* shown, const QString& otherStore, qint64 otherRun, QWidget* parent = nullptr);

    RunSession* other() const { return m_other; }
    QTableWidget* summary() const { return m_summary; }
    QCustomPlot* progress() const { return m_plot; }
    // Both runs' timed candidates by arithmetic intensity and achieved FLOP/s, under the shown
    // run's memory and compute roofs.
    QCustomPlot* roofline() const { return m_roofline; }
    SideBySideDiff* kernels() const { return m_diff; }
    QLabel* metrics() const { return m_metrics; }
    // The candidate each side's kernel is: the run's confirmed best, else its best measured one.
    qint64 bestOf(int side) const;

private:
    void refresh();
    void refreshKernels();
    void refreshRoofline();
    RunSession* session(int side) const;

    QPointer<RunSession> m_shown;
    RunSession* m_other = nullptr;
    QTableWidget* m_summary = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPGraph* m_curves[2] = {nullptr, nullptr};
    QCustomPlot* m_roofline = nullptr;
    QCPGraph* m_points[2] = {nullptr, nullptr};
    QCPGraph* m_roofs = nullptr;
    SideBySideDiff* m_diff = nullptr;
    QLabel* m_metrics = nullptr;
    QLabel* m_problem = nullptr;
    qint64 m_kernelsShown[2] = {0, 0};
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
