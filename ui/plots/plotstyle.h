#pragma once
// What the plots of a run agree on: which candidates count as archive members, the colours of
// islands and speedups, and how numbers read. Kept in one place so the heatmap, the islands lanes
// and the progress plot tell the same story about the same candidate.

#include <QColor>
#include <QPalette>
#include <QPoint>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>

#include "showwatcher.h"

#include <functional>

class QCPAxis;
class QCPColorGradient;
class QCPItemText;
class QCPLayerable;
class QCustomPlot;
class QWidget;

namespace kforge::ui {

class CandidateSelection;
class RunData;
struct CandidateRow;

namespace plotstyle {

// A candidate the engine's archive would hold: correct, not vetoed, and not held back by a review
// that is pending or was rejected (Engine::integrate admits nothing else).
bool isArchiveCandidate(const CandidateRow& row);

// Seeds (the baseline) belong to every island, as in Engine::admit; the rest to their own.
bool onIsland(const CandidateRow& row, int island);

// Dark low speedups to bright high ones, alike on light and dark palettes; NaN (no candidate) is
// a grey just off the palette's base.
QCPColorGradient speedupGradient();
QCPColorGradient speedupGradient(const QPalette& palette);
QColor islandColor(int island);
QColor failedColor();

// `value` (> 0) to two significant digits, which read better on a legend than 3.98107: the
// nearest such number, or the next one up (a scale's top, which must not fall below `value`).
enum class Rounding { Nearest, Up };
double twoSignificantDigits(double value, Rounding rounding = Rounding::Nearest);

QString speedup(double value);                       // "1.84×"
QString rate(double perSecond, const QString& unit); // "4.00 TB/s", "60.0 TFLOP/s"

// Antialiasing and the legend's look, shared by every plot; the plot follows its palette (see
// applyPalette) from then on, restyled and replotted whenever the palette changes.
void setUp(QCustomPlot* plot);
// Colours the plot's background, every axis (colour scales' included), grid and legend from the
// plot's palette: Base behind, Text for labels, greys between the two for axes and grids. setUp
// does it; a view that adds axes or colour scales afterwards calls it again.
void applyPalette(QCustomPlot* plot);

enum class Hover { Off, On };
// A plot with setUp's look, at least `minimum` large; Hover::On reports mouse moves without a
// button held, for tooltips.
QCustomPlot* createPlot(QWidget* parent, QSize minimum, Hover hover);
// The same, filling `view` alone from edge to edge.
QCustomPlot* createSolePlot(QWidget* view, QSize minimum, Hover hover);

// Coalesces a view's refreshes: schedule() as often as data arrives, `refresh` runs once,
// `intervalMs` after the first request (the plots rebuild from whole arrays then); a refresh asked
// for while the view (the timer's parent) is hidden in a shown window waits until it is shown.
class RefreshTimer : public QTimer {
    Q_OBJECT
public:
    RefreshTimer(QWidget* view, int intervalMs, std::function<void()> refresh);

    void schedule();
    bool pending() const { return isActive() || m_watcher->armed(); }
    // Runs a pending refresh now, shown or not (a view about to be exported or grabbed).
    void flush();
    QWidget* view() const { return m_view; }
    // Schedules on every new or changed candidate of `data` and when its run changes.
    void followCandidates(RunData* data);

private:
    QWidget* m_view;
    ShowWatcher* m_watcher;
    std::function<void()> m_refresh;
};

// Runs every pending refresh of the views under `root` (root included), and every update
// whenShown() keeps waiting there, so that what is exported or grabbed is what the run holds now
// even for a view in a background tab.
void flushRefreshes(QWidget* root);

// Labels `axis` "generation" and ticks it at whole generations only (0, 1, 2 or 0, 5, 10, never
// 2.5), as few as read well at the axis's length.
void generationAxis(QCPAxis* axis);

// A note in the top left corner of the axis rect, on a translucent plate of the palette's base
// colour, left-aligned and clipped to the axis rect; its colours follow the palette.
QCPItemText* cornerNote(QCustomPlot* plot);
// The same plate in the middle of the axis rect, its lines centred: what a plot says in place of
// data it has none of ("No candidate has a behaviour cell yet").
QCPItemText* centredNote(QCustomPlot* plot);

// A candidate drawn as a point, in plot coordinates, for picking.
struct PlotPoint {
    double x = 0.0;
    double y = 0.0;
    qint64 id = 0;
};

// Where candidate `id` is drawn on `plot`, in its pixels as laid out now; (-1, -1) when it has no point.
QPoint pixelOf(const QCustomPlot* plot, const QVector<PlotPoint>& points, qint64 id);
// The candidate whose point is nearest `pos` (plot pixels) within `radius` pixels; 0: none.
qint64 nearestPoint(const QCustomPlot* plot, const QVector<PlotPoint>& points, const QPoint& pos, double radius);

// Shows a tooltip on candidate `id` at `pos` (plot pixels): "#id  label" over the lines `details`
// gives; hides the tooltip when `id` names no candidate of `data`.
void showCandidateTip(QCustomPlot* plot, const RunData* data, qint64 id, const QPoint& pos,
                      const std::function<QStringList(const CandidateRow&)>& details);

// Clicking `plot` with the left button selects the candidate `pick` finds at the click, if any.
void selectOnClick(QCustomPlot* plot, CandidateSelection* selection, std::function<qint64(const QPoint&)> pick);
// Calls `update` and redraws `plot` whenever the selection's current candidate changes. The
// `markers` that show the selection are moved to a layer of their own with its own paint buffer, so
// that a new selection redraws them alone rather than every point of the plot.
void followSelection(QCustomPlot* plot, CandidateSelection* selection, std::function<void()> update,
                     const QList<QCPLayerable*>& markers);
// Replots now, or when the plot is next shown if it is hidden in a shown window.
void replotWhenShown(QCustomPlot* plot);

// Moves the legend out of the axis rect into a row of its own under it, where it covers no data,
// with as many entries a row as the plot's width holds (more rows as it narrows), so that no entry
// is clipped; kept so as entries come and go and the plot is resized.
void legendBelow(QCustomPlot* plot);

} // namespace plotstyle
} // namespace kforge::ui
