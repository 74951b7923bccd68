#include "islandsview.h"

#include "candidateselection.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"
#include "util/numbers.h"

#include <qcustomplot.h>

#include <array>
#include <cmath>

namespace kforge::ui {

namespace {

// Speedup bands: a graph each, so colouring by speedup costs no item per dot. The usual limits
// suit a run whose best is a few times the baseline; a run that went far beyond spreads them
// geometrically up to its best, so its progress does not vanish into the top band.
using BandLimits = std::array<double, 5>;
constexpr BandLimits kBandLimits = {1.0, 1.25, 1.5, 2.0, 3.0};
constexpr int kBands = static_cast<int>(kBandLimits.size()) + 1;
// The latest migration rounds' arrows, and the earlier ones' (a grey between the palette's base
// and text, half transparent).
const QColor kRecentArrow(230, 85, 13);
QColor olderArrowColor(const QPalette& palette) {
    QColor older = theme::ink(palette, 0.65);
    older.setAlpha(110);
    return older;
}

// Arrows are items, one per migration: a long run shows only its latest ones.
constexpr int kMaxArrows = 400;
// Migrations of this many latest migration generations are drawn emphasised.
constexpr int kRecentRounds = 2;

BandLimits bandLimits(double best) {
    if (best <= 2.0 * kBandLimits.back())
        return kBandLimits;
    BandLimits limits{};
    for (size_t k = 0; k < limits.size(); ++k) {
        limits[k] = plotstyle::twoSignificantDigits(
            std::pow(best, static_cast<double>(k) / static_cast<double>(limits.size())));
    }
    return limits;
}

int bandOf(const BandLimits& limits, double speedup) {
    int band = 0;
    while (band < static_cast<int>(limits.size()) && speedup >= limits[static_cast<size_t>(band)])
        ++band;
    return band;
}

QString bandName(const BandLimits& limits, int band) {
    if (band == 0)
        return QObject::tr("< %1×").arg(limits.front());
    if (band == kBands - 1)
        return QObject::tr("≥ %1×").arg(limits.back());
    return QObject::tr("%1–%2×").arg(limits[static_cast<size_t>(band - 1)]).arg(limits[static_cast<size_t>(band)]);
}

// Candidates of one generation on one island would sit on one spot; a fixed scatter derived from
// the id spreads them and keeps each dot where it was on the next refresh.
double jitter(qint64 id, unsigned salt) {
    quint32 h = static_cast<quint32>(id) * 2654435761u + salt;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (h % 10000) / 10000.0 - 0.5;
}

} // namespace

IslandsView::IslandsView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_plot = plotstyle::createSolePlot(this, QSize(280, 160), plotstyle::Hover::On);

    plotstyle::generationAxis(m_plot->xAxis);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->yAxis->setTickLength(0, 0);
    m_plot->yAxis->setSubTicks(false);

    const QCPColorGradient gradient = plotstyle::speedupGradient();
    m_pending = m_plot->addGraph();
    m_pending->setName(tr("pending"));
    m_pending->setLineStyle(QCPGraph::lsNone);
    m_failed = m_plot->addGraph();
    m_failed->setName(tr("failed"));
    m_failed->setLineStyle(QCPGraph::lsNone);
    m_failed->setScatterStyle(QCPScatterStyle(
        QCPScatterStyle::ssCircle, QPen(plotstyle::failedColor().darker(115), 0.8), plotstyle::failedColor(), 5));
    for (int band = 0; band < kBands; ++band) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(bandName(kBandLimits, band));
        g->setLineStyle(QCPGraph::lsNone);
        m_bands.push_back(g);
    }
    // Dots keep the speedup colours on either palette; their rims set the dark ones apart from a
    // dark background.
    const auto stylePoints = [this, gradient] {
        const QPalette palette = m_plot->palette();
        const bool dark = theme::isDark(palette);
        m_pending->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(theme::ink(palette, 0.5), 1), Qt::NoBrush, 6));
        for (int band = 0; band < kBands; ++band) {
            const QColor color = QColor::fromRgb(QCPColorGradient(gradient).color(band, QCPRange(0, kBands - 1)));
            const QColor rim = dark ? color.lighter(220) : color.darker(140);
            m_bands[band]->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(rim, 0.8), color, 6));
        }
    };
    stylePoints();
    m_selected = m_plot->addGraph();
    m_selected->setLineStyle(QCPGraph::lsNone);
    m_selected->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(220, 30, 60), 2.5), QColor(220, 30, 60, 60), 14));
    m_selected->removeFromLegend();

    // What the arrows mean: legend entries only (no data), styled as refresh() draws arrows.
    const auto arrowKey = [this](const QString& name) {
        QCPGraph* key = m_plot->addGraph();
        key->setName(name);
        key->setSelectable(QCP::stNone);
        return key;
    };
    m_recentKey = arrowKey(tr("latest migrations"));
    m_olderKey = arrowKey(tr("earlier migrations"));
    m_refusedKey = arrowKey(tr("migrant not taken (dashed)"));
    // The legend goes in rows of its own under the lanes, where it hides no dot.
    plotstyle::legendBelow(m_plot);
    styleArrowKeys();
    addExportMenu(m_plot, QStringLiteral("islands"));

    m_refresh = new plotstyle::RefreshTimer(this, 150, [this] { refresh(); });
    // Lane bands and migration arrows take their colours on the refresh.
    theme::onPaletteChange(m_plot, [this, stylePoints] {
        stylePoints();
        styleArrowKeys();
        m_refresh->schedule();
    });
    connect(data, &RunData::cleared, this, &IslandsView::onCleared);
    m_refresh->followCandidates(data);
    connect(data, &RunData::archivesChanged, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(data, &RunData::eventsAdded, this, &IslandsView::onEventsAdded);
    plotstyle::followSelection(m_plot, selection, [this] { updateSelected(); }, {m_selected});
    connect(m_plot, &QCustomPlot::mouseMove, this, &IslandsView::onMouseMove);
    plotstyle::selectOnClick(m_plot, selection, [this](const QPoint& pos) { return candidateAt(pos); });
    if (!data->events().isEmpty())
        onEventsAdded(0, static_cast<int>(data->events().size()) - 1);
    refresh();
}

double IslandsView::laneY(int island) const {
    return m_lanes - 1 - island; // island 0 on top
}

void IslandsView::onCleared() {
    m_migrations.clear();
    m_refresh->schedule();
}

void IslandsView::onEventsAdded(int first, int last) {
    if (!m_data)
        return;
    const auto& events = m_data->events();
    bool any = false;
    for (int i = first; i <= last && i < events.size(); ++i) {
        const store::EventRecord& e = events[i];
        if (e.kind != model::EventKind::Migration)
            continue;
        m_migrations.push_back(
            {e.generation, e.data.value(QLatin1String("from")).toInt(), e.data.value(QLatin1String("to")).toInt(),
             util::wholeNumber<qint64>(e.data.value(QLatin1String("candidate")).toDouble()).value_or(0),
             e.data.value(QLatin1String("speedup")).toDouble(), e.data.value(QLatin1String("accepted")).toBool()});
        any = true;
    }
    if (any)
        m_refresh->schedule();
}

void IslandsView::refresh() {
    m_refresh->stop();
    const int islands = m_data ? m_data->islands() : 0;
    m_lanes = std::max(islands, 1);
    struct Lane {
        int count = 0;
        int correct = 0;
        qint64 best = 0; // confirmed: re-measured before promotion, as the run's best is judged
        double bestSpeedup = 0.0;
        int bestIsland = -1; // where the best was made: another island's when it is a migrant
        qint64 top = 0;      // the highest first measurement never re-measured, when above the best
        double topSpeedup = 0.0;
        void consider(const CandidateRow& r) {
            if (r.confirmed() && r.confirmedSpeedup > bestSpeedup) {
                bestSpeedup = r.confirmedSpeedup;
                best = r.id;
                bestIsland = r.origin == model::Origin::Seed ? -1 : r.island; // seeds are every island's
            } else if (!r.confirmed() && r.correct && r.speedup > topSpeedup) {
                topSpeedup = r.speedup;
                top = r.id;
            }
        }
    };
    QList<Lane> lanes(m_lanes);
    QList<QVector<double>> bx(kBands), by(kBands);
    QVector<double> fx, fy, px, py;
    m_points.clear();
    const int n = m_data ? m_data->candidateCount() : 0;
    m_points.reserve(n);
    // A lane's best is the best elite of the island's archive as the engine stored it (a migrant
    // included), or a kernel the island made that was re-measured, where that is better: an
    // archive cell may hold a first measurement that beat a kernel's lower re-measured speedup,
    // and the run's best must not vanish from its island's lane. Runs recorded before archives
    // were stored derive it from the island's kernels. Either way it is judged as the run's best
    // is, by confirmed speedups; a higher first measurement that was never re-measured is shown
    // beside it, called unconfirmed.
    const bool archivesStored = m_data && m_data->archives().has_value();
    if (archivesStored)
        for (const auto& m : *m_data->archives())
            if (m.island >= 0 && m.island < m_lanes) {
                if (const CandidateRow* r = m_data->candidate(m.candidateId))
                    lanes[m.island].consider(*r);
            }
    double best = 0.0;
    for (int row = 0; row < n; ++row)
        if (m_data->candidateAt(row).correct)
            best = std::max(best, m_data->candidateAt(row).speedup);
    const BandLimits limits = bandLimits(best);
    for (int band = 0; band < kBands; ++band)
        m_bands[band]->setName(bandName(limits, band));
    int lastGeneration = 0;
    for (int row = 0; row < n; ++row) {
        const CandidateRow& r = m_data->candidateAt(row);
        const int island = std::clamp(r.island, 0, m_lanes - 1);
        Lane& lane = lanes[island];
        ++lane.count;
        lastGeneration = std::max(lastGeneration, r.generation);
        const double x = r.generation + 0.6 * jitter(r.id, 17u);
        const double y = laneY(island) + 0.7 * jitter(r.id, 91u);
        m_points.push_back({x, y, r.id});
        if (!r.evaluated()) {
            px.push_back(x);
            py.push_back(y);
        } else if (!r.correct) {
            fx.push_back(x);
            fy.push_back(y);
        } else {
            ++lane.correct;
            const int band = bandOf(limits, r.speedup);
            bx[band].push_back(x);
            by[band].push_back(y);
            if (plotstyle::isArchiveCandidate(r) && (!archivesStored || r.confirmed()))
                lane.consider(r);
        }
    }
    for (int band = 0; band < kBands; ++band)
        m_bands[band]->setData(bx[band], by[band]);
    m_failed->setData(fx, fy);
    m_pending->setData(px, py);

    auto ticker = qSharedPointerCast<QCPAxisTickerText>(m_plot->yAxis->ticker());
    ticker->clear();
    m_laneLabels.clear();
    for (int i = 0; i < m_lanes; ++i) {
        const Lane& lane = lanes[i];
        QString label = tr("island %1\n%2 cand., %3 correct").arg(i).arg(lane.count).arg(lane.correct);
        // As many digits as the status bar's best, so that close values read apart.
        const auto speedup = [](double s) { return QStringLiteral("%1×").arg(s, 0, 'f', s >= 100 ? 1 : 3); };
        if (!lane.best)
            label += tr("\nno confirmed best");
        else if (lane.bestIsland >= 0 && lane.bestIsland != i)
            label +=
                tr("\nbest %1 (#%2 from island %3)").arg(speedup(lane.bestSpeedup)).arg(lane.best).arg(lane.bestIsland);
        else
            label += tr("\nbest %1 (#%2)").arg(speedup(lane.bestSpeedup)).arg(lane.best);
        if (lane.top && lane.topSpeedup > lane.bestSpeedup)
            label += tr("\n%1 unconfirmed (#%2)").arg(speedup(lane.topSpeedup)).arg(lane.top);
        ticker->addTick(laneY(i), label);
        m_laneLabels << label;
    }
    m_plot->xAxis->setRange(-0.7, std::max(lastGeneration, 1) + 0.7);
    m_plot->yAxis->setRange(-0.5, m_lanes - 0.5);
    // Every other lane gets a light band, so dots near a border read as belonging to one lane.
    while (m_laneBands.size() > m_lanes / 2)
        m_plot->removeItem(m_laneBands.takeLast());
    while (m_laneBands.size() < m_lanes / 2) {
        auto* band = new QCPItemRect(m_plot);
        band->setLayer(QStringLiteral("background"));
        band->setPen(Qt::NoPen);
        band->setSelectable(false);
        band->topLeft->setTypeX(QCPItemPosition::ptAxisRectRatio);
        band->bottomRight->setTypeX(QCPItemPosition::ptAxisRectRatio);
        m_laneBands.push_back(band);
    }
    const QColor laneBand = theme::pick(m_plot->palette(), QColor(240, 243, 248), theme::ink(m_plot->palette(), 0.05));
    for (qsizetype k = 0; k < m_laneBands.size(); ++k) {
        m_laneBands[k]->setBrush(laneBand);
        const double y = laneY(static_cast<int>(2 * k + 1));
        m_laneBands[k]->topLeft->setCoords(0, y + 0.5);
        m_laneBands[k]->bottomRight->setCoords(1, y - 0.5);
    }
    refreshMigrations(m_lanes);
    updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void IslandsView::refreshMigrations(int islands) {
    const int shown = std::min(static_cast<int>(m_migrations.size()), kMaxArrows);
    while (m_arrows.size() > shown)
        m_plot->removeItem(m_arrows.takeLast());
    while (m_arrows.size() < shown) {
        auto* arrow = new QCPItemLine(m_plot);
        arrow->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 8, 10));
        arrow->setSelectable(false);
        m_arrows.push_back(arrow);
    }
    if (shown == 0)
        return;
    const int offset = static_cast<int>(m_migrations.size()) - shown;
    // The generations of the latest migration rounds, for emphasis.
    QList<int> recentGenerations;
    for (int i = static_cast<int>(m_migrations.size()) - 1; i >= 0 && recentGenerations.size() < kRecentRounds; --i)
        if (!recentGenerations.contains(m_migrations[i].generation))
            recentGenerations.push_back(m_migrations[i].generation);
    const QColor older = olderArrowColor(m_plot->palette());
    int previousGeneration = -1;
    int previousFrom = -1;
    int slot = 0;
    for (int k = 0; k < shown; ++k) {
        const Migration& m = m_migrations[offset + k];
        // Several migrants of one island and round fan out instead of overlapping.
        slot = (m.generation == previousGeneration && m.from == previousFrom) ? slot + 1 : 0;
        previousGeneration = m.generation;
        previousFrom = m.from;
        const int from = std::clamp(m.from, 0, islands - 1);
        const int to = std::clamp(m.to, 0, islands - 1);
        // The ring's closing arrow crosses the lanes between; it runs beside the short ones.
        const double x = m.generation + 0.12 * slot + (std::abs(to - from) > 1 ? 0.3 : 0.0);
        const double direction = laneY(to) > laneY(from) ? 1.0 : -1.0;
        QCPItemLine* arrow = m_arrows[k];
        arrow->start->setCoords(x, laneY(from) + 0.3 * direction);
        arrow->end->setCoords(x, laneY(to) - 0.3 * direction);
        const bool recent = recentGenerations.contains(m.generation);
        const QColor color = recent ? kRecentArrow : older;
        QPen pen(color, recent ? 2.2 : 1.0, m.accepted ? Qt::SolidLine : Qt::DashLine);
        arrow->setPen(pen);
    }
}

void IslandsView::styleArrowKeys() {
    m_recentKey->setPen(QPen(kRecentArrow, 2.2));
    m_olderKey->setPen(QPen(olderArrowColor(m_plot->palette()), 1.0));
    m_refusedKey->setPen(QPen(theme::ink(m_plot->palette(), 0.65), 1.0, Qt::DashLine));
}

void IslandsView::updateSelected() {
    const qint64 id = m_selection ? m_selection->current() : 0;
    for (const plotstyle::PlotPoint& p : std::as_const(m_points)) {
        if (id && p.id == id) {
            m_selected->setData({p.x}, {p.y}, true);
            return;
        }
    }
    m_selected->data()->clear();
}

QPoint IslandsView::pointPosition(qint64 candidate) {
    if (m_refresh->pending())
        refresh();
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
    return plotstyle::pixelOf(m_plot, m_points, candidate);
}

qint64 IslandsView::candidateAt(const QPoint& pos, double radius) const {
    return plotstyle::nearestPoint(m_plot, m_points, pos, radius);
}

void IslandsView::onMouseMove(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    plotstyle::showCandidateTip(m_plot, m_data, candidateAt(pos, 6.0), pos, [](const CandidateRow& r) {
        QStringList lines;
        lines << tr("island %1, generation %2, %3").arg(r.island).arg(r.generation).arg(originTitle(r.origin));
        if (!r.evaluated())
            lines << tr("pending");
        else if (r.correct)
            lines << plotstyle::speedup(r.speedup);
        else
            lines << QStringLiteral("%1: %2").arg(r.status, r.message);
        return lines;
    });
}

} // namespace kforge::ui
