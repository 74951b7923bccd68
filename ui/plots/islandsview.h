#pragma once
// The islands of a run side by side: a lane per island with its candidates as dots along the
// generations (coloured by speedup, grey when they failed, hollow while pending), its counts and
// confirmed best (and a higher unconfirmed measurement) on the lane's label, and migrations as
// arrows between lanes at their generation, the latest ones emphasised. Clicking a dot selects the
// candidate.

#include <QPointer>
#include <QVector>
#include <QWidget>

#include "plotstyle.h"

class QCPGraph;
class QCPItemLine;
class QCPItemRect;
class QCustomPlot;
class QMouseEvent;

namespace kforge::ui {

class CandidateSelection;
class RunData;

class IslandsView : public QWidget {
    Q_OBJECT
public:
    IslandsView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // Where a candidate's dot is drawn, in plot() coordinates, after laying out what is pending;
    // (-1, -1) when it has none.
    QPoint pointPosition(qint64 candidate);
    // The candidate whose dot is nearest `pos` (plot() coordinates) within `radius` pixels; 0: none.
    qint64 candidateAt(const QPoint& pos, double radius = 10.0) const;
    int migrationCount() const { return static_cast<int>(m_migrations.size()); }
    // Each lane's label as drawn, island 0 first: counts, the island's confirmed best, and a higher
    // first measurement marked unconfirmed.
    const QStringList& laneLabels() const { return m_laneLabels; }

private:
    struct Migration {
        int generation = 0;
        int from = 0;
        int to = 0;
        qint64 candidate = 0;
        double speedup = 0.0;
        bool accepted = false;
    };

    void refresh();
    void refreshMigrations(int islands);
    void styleArrowKeys();
    void updateSelected();
    void onEventsAdded(int first, int last);
    void onCleared();
    double laneY(int island) const;
    void onMouseMove(QMouseEvent* event);

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    QCustomPlot* m_plot = nullptr;
    QList<QCPGraph*> m_bands; // by speedup band, lowest first
    QCPGraph* m_failed = nullptr;
    QCPGraph* m_pending = nullptr;
    QCPGraph* m_selected = nullptr;
    QList<Migration> m_migrations;   // every migration event of the run, in order
    QList<QCPItemLine*> m_arrows;    // for the most recent ones
    QCPGraph* m_recentKey = nullptr; // legend entries that say what the arrows mean
    QCPGraph* m_olderKey = nullptr;
    QCPGraph* m_refusedKey = nullptr;
    QList<QCPItemRect*> m_laneBands;        // behind every other lane
    QVector<plotstyle::PlotPoint> m_points; // every dot drawn, for picking
    int m_lanes = 0;
    QStringList m_laneLabels;
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
