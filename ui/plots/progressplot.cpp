#include "progressplot.h"

#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"

#include <qcustomplot.h>

#include <algorithm>
#include <vector>

namespace kforge::ui {

namespace {

// Beyond this many islands the legend would take more room than the plot; the colours still tell
// them apart.
constexpr int kLegendIslands = 8;

double median(std::vector<double>& values) {
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2)
        return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2.0;
}

} // namespace

double ProgressPlot::islandBest(int island) const {
    if (island < 0 || island >= m_best.size() || m_best[island]->dataCount() == 0)
        return 0.0;
    return (m_best[island]->data()->constEnd() - 1)->value;
}

int ProgressPlot::unconfirmedSteps() const {
    return m_unconfirmed->dataCount();
}

ProgressPlot::ProgressPlot(RunData* data, QWidget* parent) : QWidget(parent), m_data(data) {
    m_plot = plotstyle::createSolePlot(this, QSize(280, 160), plotstyle::Hover::Off);

    plotstyle::generationAxis(m_plot->xAxis);
    m_plot->yAxis->setLabel(tr("speedup over baseline (×)"));
    m_plot->xAxis->setRange(0, 10);
    m_plot->yAxis->setRange(0, 2);

    m_baseline = m_plot->addGraph();
    m_baseline->removeFromLegend();
    m_medianKey = m_plot->addGraph();
    m_medianKey->setName(tr("generation median"));
    m_unconfirmed = m_plot->addGraph();
    m_unconfirmed->setName(tr("unconfirmed best (measured once)"));
    m_unconfirmed->setLineStyle(QCPGraph::lsNone);
    // Greys between the palette's base and text; hollow dots filled with the base.
    const auto applyPalette = [this] {
        const QPalette palette = m_plot->palette();
        m_baseline->setPen(QPen(theme::ink(palette, 0.45), 1, Qt::DotLine));
        m_medianKey->setPen(QPen(theme::ink(palette, 0.65), 1.5, Qt::DashLine));
        m_unconfirmed->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(theme::ink(palette, 0.8), 1.2),
                                                       palette.color(QPalette::Base), 7));
    };
    applyPalette();
    theme::onPaletteChange(m_plot, applyPalette);
    // Above the island lines, which are added later.
    m_plot->addLayer(QStringLiteral("marks"), m_plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);
    m_unconfirmed->setLayer(QStringLiteral("marks"));

    // Under the plot, where it covers no line.
    plotstyle::legendBelow(m_plot);
    addExportMenu(m_plot, QStringLiteral("progress"));

    m_refresh = new plotstyle::RefreshTimer(this, 150, [this] { refresh(); });
    connect(data, &RunData::cleared, m_refresh, &plotstyle::RefreshTimer::schedule);
    m_refresh->followCandidates(data);
    refresh();
}

void ProgressPlot::ensureGraphs(int islands) {
    while (m_best.size() > islands) {
        m_plot->removeGraph(m_best.takeLast());
        m_plot->removeGraph(m_median.takeLast());
    }
    while (m_best.size() < islands) {
        const int i = static_cast<int>(m_best.size());
        const QColor color = plotstyle::islandColor(i);
        QCPGraph* best = m_plot->addGraph();
        best->setName(tr("island %1 best").arg(i));
        best->setLineStyle(QCPGraph::lsStepLeft);
        best->setPen(QPen(color, 2));
        QCPGraph* med = m_plot->addGraph();
        med->setName(tr("island %1 median").arg(i));
        QColor light = color;
        light.setAlpha(170);
        med->setPen(QPen(light, 1.2, Qt::DashLine));
        med->removeFromLegend();
        if (i >= kLegendIslands)
            best->removeFromLegend();
        m_best.push_back(best);
        m_median.push_back(med);
    }
}

void ProgressPlot::refresh() {
    m_refresh->stop();
    const int islands = m_data ? std::max(m_data->islands(), 1) : 0;
    ensureGraphs(islands);

    // speedups[island][generation] of the correct candidates; best of archive members only.
    std::vector<std::vector<std::vector<double>>> speedups(static_cast<size_t>(islands));
    // An island's best as the run judges a best: the confirmed speedup where a candidate was
    // re-measured, else its first measurement, whose steps are marked unconfirmed.
    struct Best {
        double speedup = 0.0;
        bool confirmed = false;
    };
    std::vector<std::vector<Best>> bestOf(static_cast<size_t>(islands));
    int lastGeneration = 0;
    const int n = m_data ? m_data->candidateCount() : 0;
    for (int row = 0; row < n; ++row) {
        const CandidateRow& r = m_data->candidateAt(row);
        if (!r.evaluated())
            continue;
        lastGeneration = std::max(lastGeneration, r.generation);
        if (!r.correct || r.generation < 0)
            continue;
        const auto g = static_cast<size_t>(r.generation);
        for (int i = 0; i < islands; ++i) {
            if (!plotstyle::onIsland(r, i))
                continue;
            auto& gens = speedups[static_cast<size_t>(i)];
            auto& best = bestOf[static_cast<size_t>(i)];
            if (gens.size() <= g) {
                gens.resize(g + 1);
                best.resize(g + 1);
            }
            gens[g].push_back(r.speedup);
            if (plotstyle::isArchiveCandidate(r) && r.judgedSpeedup() > best[g].speedup)
                best[g] = {r.judgedSpeedup(), r.confirmed()};
        }
    }

    double yMax = 1.0;
    QVector<double> ux, uy;
    for (int i = 0; i < islands; ++i) {
        QVector<double> bx, by, mx, my;
        double best = 0.0;
        const auto& gens = speedups[static_cast<size_t>(i)];
        for (size_t g = 0; g < gens.size(); ++g) {
            const Best& step = bestOf[static_cast<size_t>(i)][g];
            if (step.speedup > best) {
                best = step.speedup;
                if (!step.confirmed) {
                    ux.push_back(static_cast<double>(g));
                    uy.push_back(best);
                }
            }
            if (best > 0.0) {
                bx.push_back(static_cast<double>(g));
                by.push_back(best);
            }
            if (!gens[g].empty()) {
                std::vector<double> values = gens[g];
                mx.push_back(static_cast<double>(g));
                my.push_back(median(values));
            }
        }
        // The best so far holds until the last generation seen, not just the last improvement.
        if (!by.isEmpty() && bx.back() < lastGeneration) {
            bx.push_back(lastGeneration);
            by.push_back(by.back());
        }
        yMax = std::max(yMax, best);
        m_best[i]->setData(bx, by, true);
        m_median[i]->setData(mx, my, true);
    }
    m_unconfirmed->setData(ux, uy);
    if (ux.isEmpty())
        m_unconfirmed->removeFromLegend();
    else
        m_unconfirmed->addToLegend();
    const double xMax = std::max(lastGeneration, 1);
    m_baseline->setData({0.0, xMax}, {1.0, 1.0}, true);
    m_plot->xAxis->setRange(0, xMax);
    m_plot->yAxis->setRange(0, yMax * 1.1);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace kforge::ui
