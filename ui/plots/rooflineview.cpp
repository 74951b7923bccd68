#include "rooflineview.h"

#include "candidateselection.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"

#include <QFontMetrics>
#include <QMenu>

#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace kforge::ui {

namespace {

constexpr std::array kOrigins = {model::Origin::Seed, model::Origin::Tuner, model::Origin::Expert,
                                 model::Origin::Llm,  model::Origin::Human, model::Origin::Experience};

// Seeds take the palette's text colour; the other origins' hues read on light and dark bases.
QColor originColor(model::Origin origin, const QPalette& palette) {
    switch (origin) {
    case model::Origin::Seed:
        return theme::ink(palette, 0.85);
    case model::Origin::Tuner:
        return QColor(31, 119, 180);
    case model::Origin::Expert:
        return QColor(44, 160, 44);
    case model::Origin::Llm:
        return QColor(255, 127, 14);
    case model::Origin::Human:
        return QColor(148, 103, 189);
    case model::Origin::Experience:
        return QColor(23, 190, 207);
    }
    return palette.color(QPalette::Text);
}

QString intensityText(double flopsPerByte) {
    return QObject::tr("%1 FLOP/byte").arg(flopsPerByte, 0, 'g', 3);
}

} // namespace

RooflineView::RooflineView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection) {
    m_plot = plotstyle::createSolePlot(this, QSize(280, 180), plotstyle::Hover::On);

    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        axis->grid()->setSubGridVisible(true);
    }
    m_plot->xAxis->setNumberFormat(QStringLiteral("g"));
    m_plot->yAxis->setNumberFormat(QStringLiteral("eb"));
    m_plot->yAxis->setNumberPrecision(0);
    m_plot->xAxis->setLabel(tr("arithmetic intensity (FLOP/byte)"));
    m_plot->yAxis->setLabel(tr("achieved FLOP/s"));

    // Roofs are drawn before the points so the points stay on top.
    m_failed = m_plot->addGraph();
    m_failed->setName(tr("incorrect or failed"));
    m_failed->setLineStyle(QCPGraph::lsNone);
    m_failed->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCross, QPen(plotstyle::failedColor(), 1.2), Qt::NoBrush, 6));
    for (model::Origin origin : kOrigins) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(originTitle(origin));
        g->setLineStyle(QCPGraph::lsNone);
        m_originGraphs.push_back(g);
    }
    m_selected = m_plot->addGraph();
    m_selected->setName(tr("selected"));
    m_selected->setLineStyle(QCPGraph::lsNone);
    m_selected->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(220, 30, 60), 2.5), QColor(220, 30, 60, 60), 15));
    m_selected->removeFromLegend();

    m_note = plotstyle::cornerNote(m_plot);
    m_note->setText(tr("no measured ceilings: points only"));
    const auto applyPalette = [this] {
        const QPalette palette = m_plot->palette();
        for (size_t k = 0; k < kOrigins.size(); ++k) {
            const QColor color = originColor(kOrigins[k], palette);
            QColor fill = color;
            fill.setAlpha(150);
            const QColor edge = theme::isDark(palette) ? color.lighter(130) : color.darker(130);
            m_originGraphs[static_cast<qsizetype>(k)]->setScatterStyle(
                QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(edge, 0.8), fill, 6));
        }
    };
    applyPalette();

    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
    // Wheel zooms and dragging pans, both axes; the view stays where the user put it while points
    // arrive, until a double-click (or the menu's Reset Zoom) fits it to the run again.
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeZoomFactor(0.8);
    connect(m_plot, &QCustomPlot::mouseWheel, this, [this] { m_userRange = true; });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        if (event->buttons() & Qt::LeftButton)
            m_userRange = true;
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetZoom(); });
    // Zoomed or panned, the roofs span the view and their labels are placed for its scale (at its
    // right edge, above or below their roofs as the room allows) at once, not at the next refresh.
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
            if (m_userRange)
                refreshCeilings(m_plot->xAxis->range().lower, m_plot->xAxis->range().upper);
        });
    addExportMenu(m_plot, QStringLiteral("roofline"), [this](QMenu* menu) {
        QAction* reset = menu->addAction(tr("Reset Zoom (double-click)"), this, &RooflineView::resetZoom);
        reset->setEnabled(m_userRange);
    });

    m_refresh = new plotstyle::RefreshTimer(this, 100, [this] { refresh(); });
    // The roofs and their labels take their colours on the refresh.
    theme::onPaletteChange(m_plot, [this, applyPalette] {
        applyPalette();
        m_refresh->schedule();
    });
    connect(data, &RunData::cleared, m_refresh, &plotstyle::RefreshTimer::schedule);
    m_refresh->followCandidates(data);
    plotstyle::followSelection(m_plot, selection, [this] { updateSelected(); }, {m_selected});
    connect(m_plot, &QCustomPlot::mouseMove, this, &RooflineView::onMouseMove);
    plotstyle::selectOnClick(m_plot, selection, [this](const QPoint& pos) { return candidateAt(pos); });
    refresh();
}

void RooflineView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // After the plot has laid itself out for the new size (the refresh comes later, on its timer).
    if (m_refresh)
        m_refresh->schedule();
}

void RooflineView::resetZoom() {
    m_userRange = false;
    refresh();
    plotstyle::replotWhenShown(m_plot);
}

QString RooflineView::note() const {
    return m_note->visible() ? m_note->text() : QString();
}

void RooflineView::refresh() {
    m_refresh->stop();
    m_points.clear();
    QList<QVector<double>> xs(m_originGraphs.size()), ys(m_originGraphs.size());
    QVector<double> failedX, failedY;
    double xLo = std::numeric_limits<double>::max(), xHi = 0.0;
    double yLo = std::numeric_limits<double>::max(), yHi = 0.0;
    const int n = m_data ? m_data->candidateCount() : 0;
    m_points.reserve(n);
    // A run on several GPU models: the points of the model whose roofs are drawn, the others named.
    const diagnose::Ceilings ceilings = m_data ? m_data->ceilings() : diagnose::Ceilings{};
    const bool mixed = m_data && m_data->deviceModels().size() > 1 && ceilings.valid();
    int elsewhere = 0;
    int timed = 0;
    m_splitTf32Roofs.clear();
    for (int row = 0; row < n; ++row) {
        const CandidateRow& r = m_data->candidateAt(row);
        if (r.candidateUs > 0.0)
            ++timed;
        // Log axes cannot show zeros; a point without both figures is not a point.
        if (!r.hasRoofline || !(r.intensity > 0.0) || !(r.achievedFlops > 0.0))
            continue;
        if (mixed && !r.device.isEmpty() && r.device != ceilings.device) {
            ++elsewhere;
            continue;
        }
        if (diagnose::heldToSplitTf32Third(r.splitTf32Fraction))
            m_splitTf32Roofs.insert(r.peakName);
        m_points.push_back({r.intensity, r.achievedFlops, r.id});
        xLo = std::min(xLo, r.intensity);
        xHi = std::max(xHi, r.intensity);
        yLo = std::min(yLo, r.achievedFlops);
        yHi = std::max(yHi, r.achievedFlops);
        if (r.correct) {
            const auto g = static_cast<qsizetype>(r.origin);
            xs[g].push_back(r.intensity);
            ys[g].push_back(r.achievedFlops);
        } else {
            failedX.push_back(r.intensity);
            failedY.push_back(r.achievedFlops);
        }
    }
    for (qsizetype g = 0; g < m_originGraphs.size(); ++g) {
        m_originGraphs[g]->setData(xs[g], ys[g]);
        if (xs[g].isEmpty())
            m_originGraphs[g]->removeFromLegend();
        else
            m_originGraphs[g]->addToLegend();
    }
    m_failed->setData(failedX, failedY);
    if (failedX.isEmpty())
        m_failed->removeFromLegend();
    else
        m_failed->addToLegend();

    if (ceilings.valid()) {
        const double peak = ceilings.fastestFlops();
        const double ridgeLo = ceilings.fp32Flops / ceilings.dramBytes;
        const double ridgeHi = peak / ceilings.dramBytes;
        xLo = std::min(xLo, ridgeLo);
        xHi = std::max(xHi, ridgeHi);
        yHi = std::max(yHi, peak);
    }
    if (xHi <= 0.0) {
        xLo = 0.1;
        xHi = 100.0;
    }
    if (yHi <= 0.0) {
        yLo = 1e9;
        yHi = 1e13;
    }
    xLo /= 4.0;
    xHi *= 4.0;
    if (ceilings.valid())
        yLo = std::min(yLo, ceilings.dramBytes * xLo);
    if (!m_userRange) {
        m_plot->xAxis->setRange(xLo, xHi);
        m_plot->yAxis->setRange(yLo / 2.0, yHi * 3.0);
    }
    // The roofs span whatever is in view, zoomed or panned.
    refreshCeilings(std::min(xLo, m_plot->xAxis->range().lower), std::max(xHi, m_plot->xAxis->range().upper));
    QStringList note;
    if (m_points.isEmpty() && elsewhere == 0 && n > 0) {
        // An empty plot says why: nothing timed yet, or results without FLOP and byte figures.
        note << (timed == 0 ? tr("no candidate has been timed yet")
                            : tr("no roofline data: none of the %n timed candidates has FLOP and byte figures", nullptr,
                                 timed));
        if (timed > 0)
            note << tr("(the task declares no FLOP or byte formulas, or the run was stored without them)");
        if (!ceilings.valid())
            note << tr("no measured ceilings either");
    } else if (!ceilings.valid()) {
        note << tr("no measured ceilings: points only");
    } else if (elsewhere > 0) {
        QStringList others = m_data->deviceModels();
        others.removeAll(ceilings.device);
        note << tr("%1's roofs and candidates; %n more timed on %2", nullptr, elsewhere)
                    .arg(ceilings.device, others.join(QStringLiteral(", ")));
    }
    m_note->setText(note.join(QLatin1Char('\n')));
    m_note->setVisible(!note.isEmpty());
    updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void RooflineView::refreshCeilings(double xLo, double xHi) {
    for (QCPGraph* g : std::as_const(m_roofs))
        m_plot->removeGraph(g);
    for (QCPItemText* t : std::as_const(m_roofLabels))
        m_plot->removeItem(t);
    m_roofs.clear();
    m_roofLabels.clear();
    const diagnose::Ceilings c = m_data ? m_data->ceilings() : diagnose::Ceilings{};
    if (!c.valid())
        return;
    const double peak = c.fastestFlops();
    const QColor roof = theme::ink(m_plot->palette(), 0.78);

    auto addRoof = [this](const QVector<double>& x, const QVector<double>& y, const QPen& pen) {
        QCPGraph* g = m_plot->addGraph();
        g->setData(x, y, true);
        g->setPen(pen);
        g->removeFromLegend();
        // Behind the points, which were added first.
        g->setLayer(QStringLiteral("grid"));
        m_roofs.push_back(g);
    };
    auto addLabel = [this](double x, double y, Qt::Alignment alignment, const QString& text, const QColor& color) {
        auto* label = new QCPItemText(m_plot);
        label->position->setCoords(x, y);
        label->setPositionAlignment(alignment);
        label->setText(text);
        label->setColor(color);
        label->setClipToAxisRect(true);
        m_roofLabels.push_back(label);
    };

    // Memory roofs rise until the highest compute roof; each compute roof starts at its ridge.
    addRoof({xLo, peak / c.dramBytes}, {c.dramBytes * xLo, peak}, QPen(roof, 2));
    addLabel(xLo * 1.3, c.dramBytes * xLo * 1.3, Qt::AlignLeft | Qt::AlignBottom,
             tr("DRAM %1").arg(plotstyle::rate(c.dramBytes, QStringLiteral("B"))), roof);
    if (c.l2Bytes > c.dramBytes) {
        addRoof({xLo, peak / c.l2Bytes}, {c.l2Bytes * xLo, peak}, QPen(roof, 1.2, Qt::DotLine));
        addLabel(xLo * 1.3, c.l2Bytes * xLo * 1.3, Qt::AlignLeft | Qt::AlignBottom,
                 tr("L2 %1").arg(plotstyle::rate(c.l2Bytes, QStringLiteral("B"))), roof);
    }
    struct Compute {
        double flops;
        QString name;
        Qt::PenStyle style;
    };
    // FP16 and BF16 tensor peaks are the same hardware rate: one roof and one label when their
    // measurements agree within 5% (the H200's wgmma ones come out 972 and 932 TFLOP/s, whose
    // labels would print over each other). On Hopper the wgmma roofs sit above the mma.sync ones;
    // each is named by its instruction.
    const auto same = [](double a, double b) { return b > 0.0 && std::abs(a - b) <= 0.05 * a; };
    const bool sameTensorPeak = same(c.fp16TensorFlops, c.bf16TensorFlops);
    const bool sameWgmmaPeak = same(c.fp16WgmmaFlops, c.bf16WgmmaFlops);
    const QString mma = c.hasWgmmaRoofs() ? tr(" (mma.sync)") : QString();
    std::vector<Compute> computes = {
        Compute{c.fp32Flops, tr("FP32"), Qt::SolidLine},
        Compute{c.tf32TensorFlops, tr("TF32 tensor") + mma, Qt::DotLine},
        Compute{c.tf32WgmmaFlops, tr("TF32 tensor (wgmma)"), Qt::DotLine},
        Compute{c.fp16TensorFlops, (sameTensorPeak ? tr("FP16/BF16 tensor") : tr("FP16 tensor")) + mma, Qt::DashLine},
        Compute{sameTensorPeak ? 0.0 : c.bf16TensorFlops, tr("BF16 tensor") + mma, Qt::DashDotLine},
        Compute{c.fp16WgmmaFlops, sameWgmmaPeak ? tr("FP16/BF16 tensor (wgmma)") : tr("FP16 tensor (wgmma)"),
                Qt::DashLine},
        Compute{sameWgmmaPeak ? 0.0 : c.bf16WgmmaFlops, tr("BF16 tensor (wgmma)"), Qt::DashDotLine}};
    // Float32 kernels on TF32 tensor cores, counted in the task's FLOPs: a float32-accurate one
    // (3xTF32) issues three TF32 products per product and can reach a third of its TF32 roof.
    if (m_splitTf32Roofs.contains(QStringLiteral("tf32_tensor")))
        computes.push_back({c.tf32TensorFlops / diagnose::kSplitTf32Products, tr("3xTF32") + mma, Qt::DotLine});
    if (m_splitTf32Roofs.contains(QStringLiteral("tf32_wgmma")))
        computes.push_back({c.tf32WgmmaFlops / diagnose::kSplitTf32Products, tr("3xTF32 (wgmma)"), Qt::DotLine});
    // Highest first: each label sits just above its roof unless the roof above leaves too little
    // room there (the H200's TF32 wgmma roof lies a factor 1.3 under its FP16 mma.sync one), then
    // just below it. The room is measured in decades of the y axis as laid out now.
    std::stable_sort(computes.begin(), computes.end(),
                     [](const Compute& a, const Compute& b) { return a.flops > b.flops; });
    const QCPRange yRange = m_plot->yAxis->range();
    const int heightPx = m_plot->axisRect()->height();
    const double labelDecades =
        heightPx > 0 && yRange.lower > 0.0
            ? QFontMetrics(m_plot->font()).height() * std::log10(yRange.upper / yRange.lower) / heightPx
            : 0.1;
    double free = std::numeric_limits<double>::infinity(); // the lowest decade a label above uses
    for (const Compute& compute : computes) {
        if (compute.flops <= 0.0)
            continue;
        addRoof({compute.flops / c.dramBytes, xHi}, {compute.flops, compute.flops}, QPen(roof, 2, compute.style));
        const QString text =
            QStringLiteral("%1 %2").arg(compute.name, plotstyle::rate(compute.flops, QStringLiteral("FLOP")));
        const double at = std::log10(compute.flops);
        const bool above = free - at >= labelDecades;
        addLabel(xHi / 1.1, compute.flops, Qt::AlignRight | (above ? Qt::AlignBottom : Qt::AlignTop), text, roof);
        free = above ? at : at - labelDecades;
    }
}

void RooflineView::updateSelected() {
    const qint64 id = m_selection ? m_selection->current() : 0;
    const CandidateRow* r = m_data && id ? m_data->candidate(id) : nullptr;
    if (r && r->hasRoofline && r->intensity > 0.0 && r->achievedFlops > 0.0)
        m_selected->setData({r->intensity}, {r->achievedFlops}, true);
    else
        m_selected->data()->clear();
}

QPoint RooflineView::pointPosition(qint64 candidate) {
    if (m_refresh->pending())
        refresh();
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
    return plotstyle::pixelOf(m_plot, m_points, candidate);
}

qint64 RooflineView::candidateAt(const QPoint& pos, double radius) const {
    return plotstyle::nearestPoint(m_plot, m_points, pos, radius);
}

void RooflineView::onMouseMove(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    plotstyle::showCandidateTip(m_plot, m_data, candidateAt(pos, 8.0), pos, [](const CandidateRow& r) {
        QStringList lines;
        lines << (r.correct ? tr("%1 from %2").arg(plotstyle::speedup(r.speedup), originTitle(r.origin))
                            : tr("%1 (%2)").arg(r.status, originTitle(r.origin)));
        lines << tr("%1, %2").arg(intensityText(r.intensity), plotstyle::rate(r.achievedFlops, QStringLiteral("FLOP")));
        if (!r.bound.isEmpty())
            lines << tr("%1-bound").arg(r.bound);
        if (diagnose::heldToSplitTf32Third(r.splitTf32Fraction))
            lines << tr("%1% of what a 3xTF32 kernel can reach on %2")
                         .arg(r.splitTf32Fraction * 100.0, 0, 'f', 0)
                         .arg(diagnose::peakTitle(r.peakName));
        return lines;
    });
}

} // namespace kforge::ui
