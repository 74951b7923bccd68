#pragma once
// What the plots of a run agree on: which candidates count as archive members, the colours of
// islands and speedups, and how numbers read. Kept in one place so the heatmap, the islands lanes
// and the progress plot tell the same story about the same candidate.

#include <QColor>
#include <QString>

class QCPColorGradient;
class QCustomPlot;

namespace kforge::ui {

struct CandidateRow;

namespace plotstyle {

// A candidate the engine's archive would hold: correct, not vetoed, and not held back by a review
// that is pending or was rejected (Engine::integrate admits nothing else).
bool isArchiveCandidate(const CandidateRow& row);

// Seeds (the baseline) belong to every island, as in Engine::admit; the rest to their own.
bool onIsland(const CandidateRow& row, int island);

// Dark low speedups to bright high ones; NaN (no candidate) is a light grey.
QCPColorGradient speedupGradient();
QColor islandColor(int island);
QColor failedColor();

QString speedup(double value);                    // "1.84×"
QString rate(double perSecond, const QString& unit); // "4.00 TB/s", "60.0 TFLOP/s"

// Antialiasing and the legend's look, shared by every plot.
void setUp(QCustomPlot* plot);

} // namespace plotstyle
} // namespace kforge::ui
