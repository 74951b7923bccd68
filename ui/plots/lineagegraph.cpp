#include "lineagegraph.h"

#include "candidateselection.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"

#include <QGraphicsEllipseItem>
#include <QGraphicsPathItem>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace kforge::ui {

namespace {

constexpr double kColumn = 56.0; // scene units between generations
constexpr double kRow = 16.0;    // between the nodes of one generation in one island's band
constexpr double kBandGap = 22.0;
constexpr double kRadius = 5.0;
constexpr int kNodeId = 0; // QGraphicsItem::data key holding the candidate

// Speedup on a log scale: 0.5x at the bottom of the gradient, `top` (4x or more) at the top.
QColor speedupColour(double speedup, double top, const QPalette& palette) {
    const double t = std::clamp((std::log2(std::max(speedup, 1e-3)) + 1.0) / (std::log2(top) + 1.0), 0.0, 1.0);
    return QColor::fromRgb(plotstyle::speedupGradient(palette).color(t, QCPRange(0.0, 1.0)));
}

// The gradient's top: 4x, or the run's best speedup (rounded up to two significant digits) where
// that is higher, so that a run whose kernels are all far above 4x still shows them apart.
double colourTop(const RunData& data, const QList<int>& rows) {
    double best = 0.0;
    for (int row : rows)
        if (const CandidateRow& r = data.candidateAt(row); r.correct)
            best = std::max(best, r.speedup);
    return best <= 4.0 ? 4.0 : plotstyle::twoSignificantDigits(best, plotstyle::Rounding::Up);
}

} // namespace

LineageGraph::LineageGraph(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QGraphicsView(parent), m_data(data), m_selection(selection) {
    m_scene = new QGraphicsScene(this);
    setScene(m_scene);
    setRenderHint(QPainter::Antialiasing);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(200, 140);
    setToolTip(tr("Wheel: zoom; drag: pan; Ctrl+0: fit; click a node to select it; arrow keys: Left parent, Right "
                  "child, Up/Down same generation"));
    m_noteLabel = new QLabel(viewport());
    m_noteLabel->setObjectName(QStringLiteral("lineageGraphNote"));
    m_noteLabel->setMargin(4);
    m_noteLabel->setWordWrap(true);
    m_noteLabel->setAutoFillBackground(true);
    m_noteLabel->hide();

    m_refresh = new plotstyle::RefreshTimer(this, 250, [this] { refresh(); });
    m_refresh->followCandidates(data);
    connect(data, &RunData::cleared, this, [this] {
        m_fitted = false;
        m_centre = 0;
        m_refresh->schedule();
    });
    theme::onPaletteChange(this, [this] { m_refresh->schedule(); });
    if (selection)
        connect(selection, &CandidateSelection::currentChanged, this, [this] {
            // A neighbourhood follows the selection; a whole graph only moves its ring.
            if (m_neighbourhood && m_selection->current() != m_centre)
                m_refresh->schedule();
            updateSelected();
        });
    refresh();
}

QString LineageGraph::note() const {
    return m_note;
}

double LineageGraph::zoom() const {
    return transform().m11();
}

void LineageGraph::fit() {
    if (m_nodes.isEmpty())
        return;
    QRectF bounds = m_scene->itemsBoundingRect().adjusted(-20, -20, 20, 20);
    fitInView(bounds, Qt::KeepAspectRatio);
    if (zoom() > 2.0) // a small graph is not blown up
        setTransform(QTransform::fromScale(2.0, 2.0));
    centerOn(bounds.center());
}

QPoint LineageGraph::nodePosition(qint64 candidate) {
    if (m_refresh->pending())
        m_refresh->flush();
    const auto it = m_nodes.constFind(candidate);
    if (it == m_nodes.constEnd())
        return {-1, -1};
    return mapFromScene((*it)->sceneBoundingRect().center());
}

void LineageGraph::refresh() {
    m_refresh->stop();
    QList<int> rows;
    const int n = m_data ? m_data->candidateCount() : 0;
    m_neighbourhood = n > kMaxNodes;
    if (m_neighbourhood) {
        m_centre = m_selection && m_selection->current()
                       ? m_selection->current()
                       : (m_data->run().bestCandidate ? m_data->run().bestCandidate : m_data->candidateAt(0).id);
        rows = neighbourhood(m_centre);
    } else {
        rows.reserve(n);
        for (int row = 0; row < n; ++row)
            rows << row;
    }
    m_colourTop = m_data ? colourTop(*m_data, rows) : 4.0;
    rebuild(rows);
    if (m_neighbourhood)
        m_note = tr("%1 candidates: showing #%2's ancestry and its descendants %3 generations on (%4 nodes); select "
                    "another candidate to move")
                     .arg(n)
                     .arg(m_centre)
                     .arg(kNeighbourhoodDepth)
                     .arg(m_nodes.size());
    else if (n == 0)
        m_note = m_data && m_data->hasRun() ? tr("no candidates yet") : QString();
    else
        m_note.clear();
    // What the marks mean, and the note when there is one.
    const QString key = tr("colour: speedup over the baseline, 0.5× (dark) to %1× (light); grey: failed; hollow: "
                           "not evaluated; thick rim: pinned; cross: vetoed")
                            .arg(m_colourTop);
    m_noteLabel->setText(m_note.isEmpty() ? key : m_note + QLatin1Char('\n') + key);
    m_noteLabel->setVisible(m_data && m_data->hasRun());
    placeNote();
    if (!m_fitted && !m_nodes.isEmpty() && isVisible()) {
        fit();
        m_fitted = true;
    } else if (m_neighbourhood) {
        if (const auto it = m_nodes.constFind(m_centre); it != m_nodes.constEnd())
            centerOn(*it);
    }
    updateSelected();
}

QList<int> LineageGraph::neighbourhood(qint64 centre) const {
    std::set<int> rows;
    // The ancestry, every parent of every ancestor.
    QList<qint64> stack{centre};
    while (!stack.isEmpty() && rows.size() < static_cast<size_t>(kMaxNodes)) {
        const qint64 id = stack.takeLast();
        const int row = m_data->rowOf(id);
        if (row < 0 || !rows.insert(row).second)
            continue;
        for (qint64 parent : m_data->candidateAt(row).parents)
            stack << parent;
    }
    // Descendants a few generations on.
    const CandidateRow* c = m_data->candidate(centre);
    const int last = (c ? c->generation : 0) + kNeighbourhoodDepth;
    QList<qint64> frontier{centre};
    while (!frontier.isEmpty() && rows.size() < static_cast<size_t>(kMaxNodes)) {
        const qint64 id = frontier.takeFirst();
        for (qint64 child : m_data->childrenOf(id)) {
            const int row = m_data->rowOf(child);
            if (row < 0 || m_data->candidateAt(row).generation > last || !rows.insert(row).second)
                continue;
            frontier << child;
        }
    }
    return QList<int>(rows.begin(), rows.end());
}

void LineageGraph::rebuild(const QList<int>& rows) {
    m_scene->clear();
    m_nodes.clear();
    m_ring = nullptr;
    m_edges = 0;
    const QPalette pal = palette();
    setBackgroundBrush(pal.color(QPalette::Base));
    if (!m_data || rows.isEmpty()) {
        m_scene->setSceneRect(QRectF());
        return;
    }
    // Bands: an island's height is its busiest generation's count.
    std::map<std::pair<int, int>, int> perCell; // (island, generation) -> nodes so far
    std::map<int, int> bandHeight;              // island -> rows
    for (int row : rows) {
        const CandidateRow& r = m_data->candidateAt(row);
        const int count = ++perCell[{r.island, std::max(0, r.generation)}];
        bandHeight[r.island] = std::max(bandHeight[r.island], count);
    }
    std::map<int, double> bandTop;
    double top = 0.0;
    for (const auto& [island, height] : bandHeight) {
        bandTop[island] = top;
        top += height * kRow + kBandGap;
    }
    // Island bands, lightly shaded in turn, named at their left.
    int shade = 0;
    for (const auto& [island, height] : bandHeight) {
        if (shade++ % 2 == 1) {
            auto* band = m_scene->addRect(-kColumn, bandTop[island] - kBandGap / 2, 1, height * kRow + kBandGap,
                                          Qt::NoPen, theme::ink(pal, 0.05));
            band->setZValue(-2);
            band->setData(1, island);
        }
        auto* label = m_scene->addSimpleText(tr("island %1").arg(island));
        label->setBrush(theme::ink(pal, 0.6));
        label->setPos(-kColumn - label->boundingRect().width(), bandTop[island] - 6);
    }

    perCell.clear();
    QHash<qint64, QPointF> at;
    at.reserve(rows.size());
    double right = 0.0;
    for (int row : rows) {
        const CandidateRow& r = m_data->candidateAt(row);
        const int generation = std::max(0, r.generation);
        const int index = perCell[{r.island, generation}]++;
        const QPointF p(generation * kColumn, bandTop[r.island] + index * kRow);
        at.insert(r.id, p);
        right = std::max(right, p.x());
    }
    // Generations along the top, every one or, in a long run, every few.
    const int lastGeneration = static_cast<int>(std::lround(right / kColumn));
    const int every = std::max(1, lastGeneration / 25);
    const double labelY = -kBandGap - 14;
    for (int g = 0; g <= lastGeneration; g += every) {
        auto* label = m_scene->addSimpleText(QString::number(g));
        label->setBrush(theme::ink(pal, 0.6));
        label->setPos(g * kColumn - label->boundingRect().width() / 2, labelY);
    }
    auto* generations = m_scene->addSimpleText(tr("generation"));
    generations->setBrush(theme::ink(pal, 0.6));
    generations->setPos(-kColumn - generations->boundingRect().width(), labelY);
    // Bands span the graph's width.
    for (QGraphicsItem* item : m_scene->items())
        if (auto* band = qgraphicsitem_cast<QGraphicsRectItem*>(item))
            band->setRect(-kColumn * 0.6, band->rect().y(), right + kColumn * 1.2, band->rect().height());

    // Edges, one path: parent to child, a gentle curve.
    QPainterPath edges;
    for (int row : rows) {
        const CandidateRow& r = m_data->candidateAt(row);
        const QPointF to = at.value(r.id);
        for (qint64 parent : r.parents) {
            const auto from = at.constFind(parent);
            if (from == at.constEnd())
                continue;
            const double dx = (to.x() - from->x()) / 2.0;
            edges.moveTo(*from);
            edges.cubicTo(from->x() + dx, from->y(), to.x() - dx, to.y(), to.x(), to.y());
            ++m_edges;
        }
    }
    auto* edgeItem = m_scene->addPath(edges, QPen(theme::ink(pal, 0.3), 0.8));
    edgeItem->setZValue(-1);

    const QColor failed = plotstyle::failedColor();
    for (int row : rows) {
        const CandidateRow& r = m_data->candidateAt(row);
        const QPointF p = at.value(r.id);
        QPen pen(theme::ink(pal, 0.75), r.pinned ? 2.4 : 0.8);
        QBrush brush = Qt::NoBrush;
        if (r.evaluated())
            brush = r.correct ? QBrush(speedupColour(r.speedup, m_colourTop, pal)) : QBrush(failed);
        auto* node = m_scene->addEllipse(p.x() - kRadius, p.y() - kRadius, 2 * kRadius, 2 * kRadius, pen, brush);
        node->setData(kNodeId, r.id);
        QString tip = QStringLiteral("#%1 %2").arg(r.id).arg(r.label.toHtmlEscaped());
        tip += r.correct ? QStringLiteral(" — %1").arg(plotstyle::speedup(r.speedup))
                         : (r.evaluated() ? QStringLiteral(" — %1").arg(r.status) : tr(" — not evaluated yet"));
        if (r.pinned)
            tip += tr(" (pinned)");
        if (r.vetoed)
            tip += tr(" (vetoed)");
        node->setToolTip(tip);
        if (r.vetoed) {
            QPainterPath cross;
            cross.moveTo(p + QPointF(-kRadius, -kRadius));
            cross.lineTo(p + QPointF(kRadius, kRadius));
            cross.moveTo(p + QPointF(-kRadius, kRadius));
            cross.lineTo(p + QPointF(kRadius, -kRadius));
            m_scene->addPath(cross, QPen(theme::ink(pal, 0.9), 1.4))->setZValue(1);
        }
        m_nodes.insert(r.id, node);
    }
    m_ring = m_scene->addEllipse(-9, -9, 18, 18, QPen(QColor(220, 30, 60), 2.5), Qt::NoBrush);
    m_ring->setZValue(2);
    m_ring->hide();
    m_scene->setSceneRect(m_scene->itemsBoundingRect().adjusted(-40, -40, 40, 40));
}

void LineageGraph::updateSelected() {
    if (!m_ring)
        return;
    const qint64 id = m_selection ? m_selection->current() : 0;
    const auto it = m_nodes.constFind(id);
    if (it == m_nodes.constEnd()) {
        m_ring->hide();
        return;
    }
    m_ring->setPos((*it)->rect().center());
    m_ring->show();
    ensureVisible(*it, 40, 40);
}

qint64 LineageGraph::nodeAt(const QPoint& viewportPos) const {
    // The nearest node within a few pixels, whatever the zoom.
    const QPointF scenePos = mapToScene(viewportPos);
    const double radius = std::max(kRadius + 1.0, 8.0 / std::max(zoom(), 1e-3));
    qint64 best = 0;
    double bestDistance = radius;
    for (QGraphicsItem* item :
         m_scene->items(QRectF(scenePos - QPointF(radius, radius), QSizeF(2 * radius, 2 * radius)))) {
        const QVariant id = item->data(kNodeId);
        if (!id.isValid())
            continue;
        const double d = QLineF(item->sceneBoundingRect().center(), scenePos).length();
        if (d <= bestDistance) {
            bestDistance = d;
            best = id.toLongLong();
        }
    }
    return best;
}

void LineageGraph::wheelEvent(QWheelEvent* event) {
    const double factor = std::pow(1.0015, event->angleDelta().y());
    const double next = std::clamp(zoom() * factor, 0.02, 8.0);
    scale(next / zoom(), next / zoom());
    event->accept();
}

void LineageGraph::mousePressEvent(QMouseEvent* event) {
    m_pressPos = event->position().toPoint();
    QGraphicsView::mousePressEvent(event);
}

void LineageGraph::mouseReleaseEvent(QMouseEvent* event) {
    QGraphicsView::mouseReleaseEvent(event);
    // A click, not the end of a drag, selects the node under it.
    if (event->button() == Qt::LeftButton && (event->position().toPoint() - m_pressPos).manhattanLength() < 4)
        if (const qint64 id = nodeAt(event->position().toPoint()); id && m_selection)
            m_selection->select(id);
}

void LineageGraph::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
    case Qt::Key_Left:
    case Qt::Key_Right:
    case Qt::Key_Up:
    case Qt::Key_Down:
        step(event->key());
        event->accept();
        return;
    case Qt::Key_0:
        if (event->modifiers() & Qt::ControlModifier) {
            fit();
            event->accept();
            return;
        }
        break;
    default:
        break;
    }
    QGraphicsView::keyPressEvent(event);
}

void LineageGraph::step(int key) {
    if (!m_selection || !m_data)
        return;
    const qint64 id = m_selection->current();
    const CandidateRow* r = m_data->candidate(id);
    if (!r) {
        if (m_data->candidateCount() > 0)
            m_selection->select(m_data->candidateAt(0).id);
        return;
    }
    qint64 next = 0;
    if (key == Qt::Key_Left) {
        if (!r->parents.isEmpty())
            next = r->parents.front();
    } else if (key == Qt::Key_Right) {
        const QList<qint64> children = m_data->childrenOf(id);
        if (!children.isEmpty())
            next = children.front();
    } else if (const auto self = m_nodes.constFind(id); self != m_nodes.constEnd()) {
        // The nearest node above or below in the same generation's column.
        const QPointF p = (*self)->rect().center();
        double best = 1e300;
        for (auto it = m_nodes.constBegin(); it != m_nodes.constEnd(); ++it) {
            const QPointF q = it.value()->rect().center();
            if (std::abs(q.x() - p.x()) > 0.5 || it.key() == id)
                continue;
            const double dy = q.y() - p.y();
            if ((key == Qt::Key_Up ? -dy : dy) > 0 && std::abs(dy) < best) {
                best = std::abs(dy);
                next = it.key();
            }
        }
    }
    if (next && m_data->candidate(next))
        m_selection->select(next);
}

void LineageGraph::placeNote() {
    // Along the bottom of the view, wrapped to its width.
    const int width = std::max(120, viewport()->width() - 8);
    m_noteLabel->setFixedWidth(width);
    m_noteLabel->setFixedHeight(m_noteLabel->heightForWidth(width));
    m_noteLabel->move(4, std::max(0, viewport()->height() - m_noteLabel->height() - 4));
}

void LineageGraph::resizeEvent(QResizeEvent* event) {
    QGraphicsView::resizeEvent(event);
    placeNote();
}

// Scrolling moves the viewport's children with its pixels (QWidget::scroll): the note goes back
// to the bottom left corner, or a pan or a fit would carry it out of view.
void LineageGraph::scrollContentsBy(int dx, int dy) {
    QGraphicsView::scrollContentsBy(dx, dy);
    placeNote();
}

void LineageGraph::showEvent(QShowEvent* event) {
    QGraphicsView::showEvent(event);
    if (!m_fitted && !m_nodes.isEmpty()) {
        fit();
        m_fitted = true;
    }
}

} // namespace kforge::ui
