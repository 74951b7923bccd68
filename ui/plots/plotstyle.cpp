#include "plotstyle.h"

#include "candidateselection.h"
#include "rundata.h"
#include "theme.h"

#include <QGuiApplication>
#include <QMouseEvent>
#include <QPointer>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <array>
#include <cmath>

namespace kforge::ui::plotstyle {

bool isArchiveCandidate(const CandidateRow& row) {
    return row.correct && !row.vetoed && (!row.review || *row.review == model::ReviewState::Accepted);
}

bool onIsland(const CandidateRow& row, int island) {
    return island < 0 || row.island == island || row.origin == model::Origin::Seed;
}

double twoSignificantDigits(double value, Rounding rounding) {
    const double scale = std::pow(10.0, std::floor(std::log10(value)) - 1.0);
    const double digits = value / scale;
    return (rounding == Rounding::Up ? std::ceil(digits) : std::round(digits)) * scale;
}

QCPColorGradient speedupGradient() {
    return speedupGradient(QGuiApplication::palette());
}

QCPColorGradient speedupGradient(const QPalette& palette) {
    // Viridis-like: ordered in lightness, readable by the colour blind, grey stays apart from it.
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(68, 1, 84));
    g.setColorStopAt(0.25, QColor(59, 82, 139));
    g.setColorStopAt(0.5, QColor(33, 145, 140));
    g.setColorStopAt(0.75, QColor(94, 201, 98));
    g.setColorStopAt(1.0, QColor(253, 231, 37));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(theme::pick(palette, QColor(232, 232, 232), theme::ink(palette, 0.12)));
    return g;
}

QColor islandColor(int island) {
    // Tableau 10; beyond it the hues repeat darker so neighbours still differ.
    static const std::array<QColor, 10> palette = {
        QColor(31, 119, 180), QColor(255, 127, 14),  QColor(44, 160, 44),   QColor(214, 39, 40),  QColor(148, 103, 189),
        QColor(140, 86, 75),  QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34), QColor(23, 190, 207),
    };
    const int n = static_cast<int>(palette.size());
    const int i = island < 0 ? 0 : island;
    const QColor c = palette[static_cast<size_t>(i % n)];
    return i < n ? c : c.darker(100 + 30 * (i / n));
}

QColor failedColor() {
    return QColor(170, 170, 170);
}

QString speedup(double value) {
    return QStringLiteral("%1×").arg(value, 0, 'f', value >= 100 ? 0 : 2);
}

QString rate(double perSecond, const QString& unit) {
    static const std::array<std::pair<double, const char*>, 5> prefixes = {
        std::pair{1e15, "P"}, std::pair{1e12, "T"}, std::pair{1e9, "G"}, std::pair{1e6, "M"}, std::pair{1e3, "k"}};
    for (const auto& [scale, prefix] : prefixes)
        if (perSecond >= scale)
            return QStringLiteral("%1 %2%3/s").arg(perSecond / scale, 0, 'g', 3).arg(QLatin1String(prefix), unit);
    return QStringLiteral("%1 %2/s").arg(perSecond, 0, 'g', 3).arg(unit);
}

void setUp(QCustomPlot* plot) {
    plot->setAntialiasedElements(QCP::aePlottables | QCP::aeItems | QCP::aeLegend | QCP::aeLegendItems);
    plot->setNoAntialiasingOnDrag(true);
    // A replot marks the plot for the window's next paint instead of painting the whole window's
    // dirty parts at once: several plots that follow one selection then cost one paint.
    plot->setPlottingHint(QCP::phImmediateRefresh, false);
    QFont small = plot->font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    plot->legend->setFont(small);
    applyPalette(plot);
    theme::onPaletteChange(plot, [plot] {
        applyPalette(plot);
        replotWhenShown(plot);
    });
}

void applyPalette(QCustomPlot* plot) {
    const QPalette palette = plot->palette();
    const QColor text = palette.color(QPalette::Text);
    const QColor axisColor = theme::ink(palette, 0.7);
    const auto recolour = [](QPen pen, const QColor& color) {
        pen.setColor(color);
        return pen;
    };
    const auto styleAxis = [&](QCPAxis* axis) {
        axis->setBasePen(recolour(axis->basePen(), axisColor));
        axis->setTickPen(recolour(axis->tickPen(), axisColor));
        axis->setSubTickPen(recolour(axis->subTickPen(), axisColor));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        QCPGrid* grid = axis->grid();
        grid->setPen(recolour(grid->pen(), theme::ink(palette, 0.2)));
        grid->setSubGridPen(recolour(grid->subGridPen(), theme::ink(palette, 0.1)));
        grid->setZeroLinePen(recolour(grid->zeroLinePen(), theme::ink(palette, 0.2)));
    };
    plot->setBackground(palette.color(QPalette::Base));
    for (QCPAxisRect* rect : plot->axisRects())
        for (QCPAxis* axis : rect->axes())
            styleAxis(axis);
    QColor legendBrush = palette.color(QPalette::Base);
    legendBrush.setAlpha(220);
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* scale = qobject_cast<QCPColorScale*>(element)) {
            // The bar's frame is the other axes of the scale's own axis rect.
            for (QCPAxis* axis : scale->axis()->axisRect()->axes())
                styleAxis(axis);
        } else if (auto* legend = qobject_cast<QCPLegend*>(element)) {
            legend->setBrush(legendBrush);
            legend->setTextColor(text);
            if (legend->borderPen().style() != Qt::NoPen)
                legend->setBorderPen(recolour(legend->borderPen(), theme::ink(palette, 0.45)));
        }
    }
}

QCustomPlot* createPlot(QWidget* parent, QSize minimum, Hover hover) {
    auto* plot = new QCustomPlot(parent);
    setUp(plot);
    if (hover == Hover::On)
        plot->setMouseTracking(true);
    plot->setMinimumSize(minimum);
    return plot;
}

QCustomPlot* createSolePlot(QWidget* view, QSize minimum, Hover hover) {
    QCustomPlot* plot = createPlot(view, minimum, hover);
    auto* layout = new QVBoxLayout(view);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot);
    return plot;
}

RefreshTimer::RefreshTimer(QWidget* view, int intervalMs, std::function<void()> refresh)
    : QTimer(view), m_view(view), m_watcher(new ShowWatcher(view, [this] { start(); })), m_refresh(std::move(refresh)) {
    setSingleShot(true);
    setInterval(intervalMs);
    connect(this, &QTimer::timeout, view, [this] { m_refresh(); });
}

void RefreshTimer::flush() {
    if (!pending())
        return;
    m_watcher->disarm();
    stop();
    m_refresh();
}

void flushRefreshes(QWidget* root) {
    QList<RefreshTimer*> timers = root->findChildren<RefreshTimer*>();
    for (RefreshTimer* timer : timers)
        timer->flush();
    flushWhenShown(root); // the panels that follow the selection from a background tab
}

void RefreshTimer::schedule() {
    if (hiddenInShownWindow(m_view)) {
        m_watcher->arm();
        return;
    }
    if (!isActive())
        start();
}

void replotWhenShown(QCustomPlot* plot) {
    whenShown(plot, [plot] { plot->replot(QCustomPlot::rpQueuedReplot); });
}

namespace {

// QCustomPlot's readable steps (1, 2, 2.5, 5 times a power of ten), never below one and never a
// fraction: a generation is a whole number.
class WholeNumberTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override {
        return std::max(1.0, std::floor(QCPAxisTicker::getTickStep(range)));
    }
    int getSubTickCount(double tickStep) override {
        const auto step = static_cast<int>(tickStep);
        return step % 5 == 0 ? 4 : step % 2 == 0 ? 1 : 0;
    }
};

} // namespace

void generationAxis(QCPAxis* axis) {
    axis->setLabel(QObject::tr("generation"));
    auto ticker = QSharedPointer<WholeNumberTicker>::create();
    ticker->setTickStepStrategy(QCPAxisTicker::tssReadability);
    axis->setTicker(ticker);
}

namespace {

QCPItemText* makeNote(QCustomPlot* plot, QPointF at, Qt::Alignment alignment, QMargins padding) {
    auto* note = new QCPItemText(plot);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(at);
    note->setPositionAlignment(alignment);
    note->setTextAlignment(alignment & Qt::AlignHorizontal_Mask);
    note->setPadding(padding);
    note->setClipToAxisRect(true);
    note->setSelectable(false);
    const auto applyPalette = [plot, note] {
        const QPalette& palette = plot->palette();
        note->setColor(theme::ink(palette, 0.75));
        QColor plate = palette.color(QPalette::Base);
        plate.setAlpha(220);
        note->setBrush(plate);
    };
    applyPalette();
    theme::onPaletteChange(plot, applyPalette);
    return note;
}

} // namespace

QCPItemText* cornerNote(QCustomPlot* plot) {
    return makeNote(plot, QPointF(0.02, 0.03), Qt::AlignLeft | Qt::AlignTop, QMargins(6, 3, 6, 3));
}

QCPItemText* centredNote(QCustomPlot* plot) {
    return makeNote(plot, QPointF(0.5, 0.5), Qt::AlignCenter, QMargins(10, 6, 10, 6));
}

void RefreshTimer::followCandidates(RunData* data) {
    connect(data, &RunData::runChanged, this, &RefreshTimer::schedule);
    connect(data, &RunData::candidatesAdded, this, &RefreshTimer::schedule);
    connect(data, &RunData::candidatesChanged, this, &RefreshTimer::schedule);
}

QPoint pixelOf(const QCustomPlot* plot, const QVector<PlotPoint>& points, qint64 id) {
    for (const PlotPoint& p : points)
        if (p.id == id)
            return QPoint(qRound(plot->xAxis->coordToPixel(p.x)), qRound(plot->yAxis->coordToPixel(p.y)));
    return QPoint(-1, -1);
}

qint64 nearestPoint(const QCustomPlot* plot, const QVector<PlotPoint>& points, const QPoint& pos, double radius) {
    qint64 best = 0;
    double bestDistance = radius * radius;
    const QCPAxis* x = plot->xAxis;
    const QCPAxis* y = plot->yAxis;
    for (const PlotPoint& p : points) {
        const double dx = x->coordToPixel(p.x) - pos.x();
        if (std::abs(dx) > radius)
            continue;
        const double dy = y->coordToPixel(p.y) - pos.y();
        const double d = dx * dx + dy * dy;
        if (d <= bestDistance) {
            bestDistance = d;
            best = p.id;
        }
    }
    return best;
}

void showCandidateTip(QCustomPlot* plot, const RunData* data, qint64 id, const QPoint& pos,
                      const std::function<QStringList(const CandidateRow&)>& details) {
    const CandidateRow* r = id && data ? data->candidate(id) : nullptr;
    if (!r) {
        QToolTip::hideText();
        return;
    }
    QStringList lines;
    lines << QObject::tr("#%1  %2").arg(r->id).arg(r->label);
    lines << details(*r);
    QToolTip::showText(plot->mapToGlobal(pos), lines.join(QLatin1Char('\n')), plot);
}

void selectOnClick(QCustomPlot* plot, CandidateSelection* selection, std::function<qint64(const QPoint&)> pick) {
    if (!selection)
        return;
    QObject::connect(plot, &QCustomPlot::mousePress, selection,
                     [selection, pick = std::move(pick)](QMouseEvent* event) {
                         if (event->button() != Qt::LeftButton)
                             return;
                         if (const qint64 id = pick(event->position().toPoint()))
                             selection->select(id);
                     });
}

void followSelection(QCustomPlot* plot, CandidateSelection* selection, std::function<void()> update,
                     const QList<QCPLayerable*>& markers) {
    if (!selection)
        return;
    const QString name = QStringLiteral("selection");
    if (!plot->layer(name)) {
        plot->addLayer(name, plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);
        plot->layer(name)->setMode(QCPLayer::lmBuffered);
    }
    QCPLayer* layer = plot->layer(name);
    for (QCPLayerable* marker : markers)
        marker->setLayer(layer);
    QObject::connect(selection, &CandidateSelection::currentChanged, plot,
                     [plot, layer = QPointer<QCPLayer>(layer), update = std::move(update)] {
                         update();
                         // On screen the layer's own buffer is redrawn alone (QCPLayer::replot
                         // replots the whole plot while its buffers are not drawn yet); behind
                         // another tab the plot is replotted whole when it is shown.
                         if (layer && !hiddenInShownWindow(plot))
                             layer->replot();
                         else
                             replotWhenShown(plot);
                     });
}

void legendBelow(QCustomPlot* plot) {
    QCPLegend* legend = plot->legend;
    legend->setVisible(true);
    plot->axisRect()->insetLayout()->take(legend);
    plot->plotLayout()->addElement(1, 0, legend);
    plot->plotLayout()->setRowStretchFactor(1, 0.001);
    legend->setBorderPen(Qt::NoPen);
    legend->setMargins(QMargins(4, 0, 4, 2));
    legend->setColumnSpacing(12);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    // Before each replot: the widest entry decides how many fit a row.
    QObject::connect(plot, &QCustomPlot::beforeReplot, legend, [plot, legend] {
        int widest = 1;
        for (int i = 0; i < legend->itemCount(); ++i)
            if (QCPAbstractLegendItem* item = legend->item(i))
                widest = std::max(widest, item->minimumOuterSizeHint().width());
        const QMargins m = legend->margins();
        const int room = plot->width() - m.left() - m.right();
        const int columns = std::max(1, (room + legend->columnSpacing()) / (widest + legend->columnSpacing()));
        if (columns != legend->wrap()) {
            legend->setWrap(columns);
            legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true); // lays the entries out again
        }
    });
}

} // namespace kforge::ui::plotstyle
