#include "heatmapview.h"

#include "candidateselection.h"
#include "elidedlabel.h"
#include "flowlayout.h"
#include "heatmapmodel.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kforge::ui {

namespace {

constexpr int kLevels = search::kLevels;

// The pieces a level name may break between: its words, and a hyphenated word longer than `width`
// after each hyphen ("shared-memory" as "shared-" and "memory"), each with whether a space comes
// before it.
struct Piece {
    QString text;
    bool spaced;
};
QList<Piece> breakable(const QString& text, qsizetype width = 0) {
    QList<Piece> pieces;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        qsizetype from = 0;
        for (qsizetype hyphen = word.size() > width ? word.indexOf(u'-') : -1; hyphen > 0 && hyphen + 1 < word.size();
             hyphen = word.indexOf(u'-', hyphen + 1)) {
            pieces.append({word.mid(from, hyphen + 1 - from), from == 0});
            from = hyphen + 1;
        }
        pieces.append({word.mid(from), from == 0});
    }
    return pieces;
}

// Level names are phrases ("register tiling, async copy or tensor-core fragments"): break them
// into short lines so four of them fit under a plot of ordinary width, between words and, where
// a column is narrow, after a hyphen.
QString wrapped(const QString& text, int width = 18) {
    QStringList lines;
    QString line;
    for (const Piece& piece : breakable(text, width)) {
        const QString joined =
            line.isEmpty() ? piece.text : line + (piece.spaced ? QStringLiteral(" ") : QString()) + piece.text;
        if (!line.isEmpty() && joined.size() > width) {
            lines << line;
            line = piece.text;
        } else {
            line = joined;
        }
    }
    if (!line.isEmpty())
        lines << line;
    return lines.join(QLatin1Char('\n'));
}

QString dimensionTitle(const RunData* data, int d) {
    const QString title = data ? data->dimensions()[static_cast<size_t>(d)].title : QString();
    return title.isEmpty() ? QObject::tr("dimension %1").arg(d + 1) : title;
}

} // namespace

HeatmapView::HeatmapView(RunData* data, CandidateSelection* selection, QWidget* parent)
    : QWidget(parent), m_data(data), m_selection(selection), m_model(new HeatmapModel(data, this)) {
    m_xCombo = new QComboBox(this);
    m_yCombo = new QComboBox(this);
    m_islandCombo = new QComboBox(this);
    m_summary = new ElidedLabel(this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    for (QComboBox* combo : {m_xCombo, m_yCombo, m_islandCombo})
        combo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    // The axis titles are as wide as the longest one; only in a view narrower than one chooser
    // are they cut (by the style), rather than widening the window.
    for (QComboBox* combo : {m_xCombo, m_yCombo})
        combo->setMinimumWidth(combo->fontMetrics().averageCharWidth() * 8 + 32);

    // The choosers, each with its label, and the summary flow into as many lines as the view's
    // width needs: one in a wide view, more in a narrow dock, where nothing is cut.
    m_bar = new FlowLayout;
    m_bar->setContentsMargins(6, 4, 6, 0);
    m_bar->setSpacing(6);
    const auto chooser = [this](const QString& label, QComboBox* combo) {
        auto* box = new QWidget(this);
        auto* row = new QHBoxLayout(box);
        row->setContentsMargins(0, 0, 0, 0);
        row->addWidget(new QLabel(label, box));
        row->addWidget(combo);
        m_bar->addWidget(box);
    };
    chooser(tr("X:"), m_xCombo);
    chooser(tr("Y:"), m_yCombo);
    chooser(tr("Island:"), m_islandCombo);
    m_bar->addWidget(m_summary);

    m_plot = plotstyle::createPlot(this, QSize(300, 180), plotstyle::Hover::On);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(m_bar);
    layout->addWidget(m_plot, 1);

    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setRange(-0.5, kLevels - 0.5);
        axis->grid()->setVisible(false);
        axis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        axis->setSubTicks(false);
        axis->setTickLength(0, 4);
    }

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->data()->setSize(kLevels, kLevels);
    m_map->data()->setRange(QCPRange(0, kLevels - 1), QCPRange(0, kLevels - 1));
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);

    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->axis()->setLabel(tr("speedup ×"));
    m_map->setColorScale(m_scale);
    // The scale imposes its gradient on the map, so the gradient goes on the scale.
    m_scale->setGradient(plotstyle::speedupGradient(m_plot->palette()));
    // The scale's height follows the plot's, not the plot's tick labels.
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

    // Separators in the background's colour make neighbouring cells of similar colour tell apart.
    for (int i = 1; i < kLevels; ++i) {
        for (bool vertical : {true, false}) {
            auto* line = new QCPItemStraightLine(m_plot);
            line->setSelectable(false);
            m_separators.push_back(line);
            if (vertical) {
                line->point1->setCoords(i - 0.5, 0);
                line->point2->setCoords(i - 0.5, 1);
            } else {
                line->point1->setCoords(0, i - 0.5);
                line->point2->setCoords(1, i - 0.5);
            }
        }
    }
    for (int at = 0; at < kLevels * kLevels; ++at) {
        auto* text = new QCPItemText(m_plot);
        const int column = at % kLevels, row = at / kLevels;
        text->position->setCoords(column, row);
        text->setPositionAlignment(Qt::AlignCenter);
        text->setTextAlignment(Qt::AlignCenter);
        text->setSelectable(false);
        m_texts[static_cast<size_t>(at)] = text;
    }
    m_outline = new QCPItemRect(m_plot);
    m_outline->setPen(QPen(QColor(220, 30, 60), 3));
    m_outline->setBrush(Qt::NoBrush);
    m_outline->setSelectable(false);
    m_outline->setVisible(false);
    m_emptyNote = plotstyle::centredNote(m_plot);
    addExportMenu(m_plot, QStringLiteral("heatmap"));
    applyPalette();
    // The cells' texts take their colours on the refresh.
    theme::onPaletteChange(m_plot, [this] {
        applyPalette();
        m_refresh->schedule();
    });

    m_refresh = new plotstyle::RefreshTimer(this, 50, [this] { refresh(); });

    connect(m_model, &QAbstractItemModel::dataChanged, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(m_model, &QAbstractItemModel::modelReset, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(m_model, &QAbstractItemModel::headerDataChanged, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(data, &RunData::runChanged, this, &HeatmapView::updateCombos);
    connect(data, &RunData::cleared, this, &HeatmapView::updateCombos);
    // A selection moves the outline at once; the cells stay as they are.
    plotstyle::followSelection(m_plot, selection, [this] { updateOutline(); }, {m_outline});
    connect(m_xCombo, &QComboBox::currentIndexChanged, this, [this] { onAxisChosen(true); });
    connect(m_yCombo, &QComboBox::currentIndexChanged, this, [this] { onAxisChosen(false); });
    connect(m_islandCombo, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_updatingCombos)
            m_model->setIsland(m_islandCombo->currentData().toInt());
    });
    // The level names under the columns wrap to the columns' width, so that neighbours never run
    // into each other however narrow the dock.
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        if (m_xLevelNames.size() != kLevels)
            return;
        const int column = m_plot->axisRect()->width() / kLevels;
        // A word wider than a column ("vectorised") sets the labels smaller, down to a legible size;
        // hyphenated words count by their parts, since they break after the hyphen.
        QFont font = m_plot->font();
        int longest = 1;
        const QFontMetrics base(font);
        for (const QString& name : std::as_const(m_xLevelNames))
            for (const Piece& piece : breakable(name))
                longest = std::max(longest, base.horizontalAdvance(piece.text));
        if (longest > column - 4 && font.pointSizeF() > 0)
            font.setPointSizeF(std::max(6.5, font.pointSizeF() * (column - 4) / longest));
        const QFontMetrics metrics(font);
        const int wrap = std::clamp(column / std::max(1, metrics.averageCharWidth()) - 1, 6, 18);
        if (wrap == m_xWrap && font == m_plot->xAxis->tickLabelFont())
            return;
        m_xWrap = wrap;
        m_plot->xAxis->setTickLabelFont(font);
        auto ticker = qSharedPointerCast<QCPAxisTickerText>(m_plot->xAxis->ticker());
        ticker->clear();
        for (int level = 0; level < kLevels; ++level)
            ticker->addTick(level, wrapped(m_xLevelNames[level], m_xWrap));
    });
    // The cells' own texts ("1.84×", "14 cand.") shrink with the cells, down to a legible size,
    // rather than being cut at their edges.
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        if (m_plot->font().pointSizeF() <= 0)
            return; // a font sized in pixels: left as it is
        const QRect rect = m_plot->axisRect()->rect();
        const double cellWidth = double(rect.width()) / kLevels - 4.0;
        const double cellHeight = double(rect.height()) / kLevels - 2.0;
        double scale = 1.0;
        for (QCPItemText* text : m_texts) {
            if (text->text().isEmpty())
                continue;
            QFont font = text->font();
            font.setPointSizeF(m_plot->font().pointSizeF());
            const QSize size = QFontMetrics(font).size(0, text->text());
            scale = std::min({scale, cellWidth / std::max(1, size.width()), cellHeight / std::max(1, size.height())});
        }
        const double points = std::max(6.0, m_plot->font().pointSizeF() * scale);
        for (QCPItemText* text : m_texts) {
            if (qFuzzyCompare(text->font().pointSizeF(), points))
                continue;
            QFont font = text->font();
            font.setPointSizeF(points);
            text->setFont(font);
        }
    });
    connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &HeatmapView::onMousePress);

    updateCombos();
    refresh();
}

void HeatmapView::applyPalette() {
    const QPalette palette = m_plot->palette();
    m_scale->setGradient(plotstyle::speedupGradient(palette));
    for (QCPItemStraightLine* line : m_separators)
        line->setPen(QPen(palette.color(QPalette::Base), 2));
    plotstyle::applyPalette(m_plot); // the colour scale came after setUp
}

void HeatmapView::setAxes(int x, int y) {
    m_model->setAxes(x, y);
    updateCombos();
}

QPoint HeatmapView::cellCenter(int xLevel, int yLevel) const {
    // Lays the plot out for its current size, so the answer holds before the first paint.
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
    return QPoint(qRound(m_plot->xAxis->coordToPixel(xLevel)), qRound(m_plot->yAxis->coordToPixel(yLevel)));
}

void HeatmapView::updateCombos() {
    m_updatingCombos = true;
    for (QComboBox* combo : {m_xCombo, m_yCombo}) {
        for (int d = 0; d < model::kDimensions; ++d) {
            const QString title = dimensionTitle(m_data, d);
            if (d < combo->count())
                combo->setItemText(d, title);
            else
                combo->addItem(title);
        }
    }
    m_xCombo->setCurrentIndex(m_model->xDimension());
    m_yCombo->setCurrentIndex(m_model->yDimension());

    const int islands = m_data ? m_data->islands() : 0;
    if (m_islandCombo->count() != islands + 1) {
        const int current = m_model->island();
        m_islandCombo->clear();
        m_islandCombo->addItem(tr("All islands"), -1);
        for (int i = 0; i < islands; ++i)
            m_islandCombo->addItem(tr("Island %1").arg(i), i);
        const int at = m_islandCombo->findData(current);
        m_islandCombo->setCurrentIndex(at < 0 ? 0 : at);
        if (at < 0)
            m_model->setIsland(-1); // the island it showed is gone with its run
    }
    m_updatingCombos = false;
}

void HeatmapView::onAxisChosen(bool xChanged) {
    if (m_updatingCombos)
        return;
    int x = m_xCombo->currentIndex();
    int y = m_yCombo->currentIndex();
    // Choosing the other axis's dimension swaps the two rather than refusing.
    if (x == y) {
        if (xChanged)
            y = m_model->xDimension();
        else
            x = m_model->yDimension();
    }
    setAxes(x, y);
}

void HeatmapView::refresh() {
    m_refresh->stop();
    const int x = m_model->xDimension();
    const int y = m_model->yDimension();

    double lo = std::numeric_limits<double>::max();
    double hi = std::numeric_limits<double>::lowest();
    qint64 top = 0; // the elite with the highest speedup
    int filled = 0;
    int candidates = 0;
    for (int at = 0; at < kLevels * kLevels; ++at) {
        const QModelIndex index = m_model->indexOf(at % kLevels, at / kLevels);
        candidates += index.data(HeatmapModel::CountRole).toInt();
        if (index.data(HeatmapModel::EliteRole).toLongLong() == 0)
            continue;
        const double s = index.data(HeatmapModel::SpeedupRole).toDouble();
        lo = std::min(lo, s);
        if (s > hi)
            top = index.data(HeatmapModel::EliteRole).toLongLong();
        hi = std::max(hi, s);
        ++filled;
    }
    const double best = hi; // before the range is widened for the colours
    if (filled == 0) {
        lo = 0.0;
        hi = 2.0;
    } else if (hi - lo < 0.05) {
        lo -= 0.25;
        hi += 0.25;
    }
    // One outstanding kernel would flatten every other cell into one colour: past a ratio of ten
    // the colours follow the logarithm of the speedup.
    const bool logarithmic = filled > 0 && lo > 0.0 && hi / lo >= 10.0;
    m_scale->setDataScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_scale->axis()->setTicker(logarithmic ? QSharedPointer<QCPAxisTicker>(QSharedPointer<QCPAxisTickerLog>::create())
                                           : QSharedPointer<QCPAxisTicker>::create());
    const QCPRange range(lo, hi);
    m_map->setDataRange(range);
    QCPColorGradient gradient = m_map->gradient();

    QFont bold = m_plot->font();
    bold.setBold(true);
    for (int at = 0; at < kLevels * kLevels; ++at) {
        const int cx = at % kLevels;
        const int cy = at / kLevels;
        const QModelIndex index = m_model->indexOf(cx, cy);
        const bool elite = index.data(HeatmapModel::EliteRole).toLongLong() != 0;
        const double s = index.data(HeatmapModel::SpeedupRole).toDouble();
        const int count = index.data(HeatmapModel::CountRole).toInt();
        m_map->data()->setCell(cx, cy, elite ? s : std::numeric_limits<double>::quiet_NaN());
        QCPItemText* text = m_texts[static_cast<size_t>(at)];
        if (elite) {
            text->setText(tr("%1\n%n cand.", nullptr, count).arg(plotstyle::speedup(s)));
            const QColor fill = QColor::fromRgb(gradient.color(s, range, logarithmic));
            text->setColor(fill.lightnessF() > 0.55 ? Qt::black : Qt::white);
            text->setFont(bold);
        } else {
            // With nothing anywhere, the note in the middle says it once instead.
            text->setText(count ? tr("no correct\n%n cand.", nullptr, count) : candidates ? tr("empty") : QString());
            text->setColor(theme::ink(m_plot->palette(), 0.55));
            text->setFont(m_plot->font());
        }
    }

    auto labelAxis = [this](QCPAxis* axis, int dimension, Qt::Orientation orientation) {
        auto ticker = qSharedPointerCast<QCPAxisTickerText>(axis->ticker());
        ticker->clear();
        if (orientation == Qt::Horizontal)
            m_xLevelNames.clear();
        for (int level = 0; level < kLevels; ++level) {
            const int section = orientation == Qt::Horizontal ? level : kLevels - 1 - level;
            const QString name = m_model->headerData(section, orientation).toString();
            if (orientation == Qt::Horizontal)
                m_xLevelNames << name;
            ticker->addTick(level, wrapped(name, orientation == Qt::Horizontal ? m_xWrap : 18));
        }
        axis->setLabel(dimensionTitle(m_data, dimension));
    };
    labelAxis(m_plot->xAxis, x, Qt::Horizontal);
    labelAxis(m_plot->yAxis, y, Qt::Vertical);

    m_emptyNote->setText(m_data && m_data->hasRun() ? tr("No candidate has a behaviour cell yet")
                                                    : tr("No run is open."));
    m_emptyNote->setVisible(candidates == 0);
    // Cells show the archives' figures (a kernel's re-measurement once it had one; a run stored
    // without archives, first measurements); the top one says whether a re-measurement confirmed
    // it (the run's best is judged by confirmed speedups only).
    const CandidateRow* topRow = m_data && top ? m_data->candidate(top) : nullptr;
    const QString topText = topRow && topRow->confirmed()
                                ? tr("top elite %1, confirmed %2")
                                      .arg(plotstyle::speedup(best), plotstyle::speedup(topRow->confirmedSpeedup))
                                : tr("top elite %1 unconfirmed").arg(plotstyle::speedup(best));
    m_summary->setFullText(!m_data || !m_data->hasRun() ? QString()
                           : filled ? tr("%1 of %2 cells filled, %3").arg(filled).arg(kLevels * kLevels).arg(topText)
                                    : tr("no elites yet"));
    updateOutline();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::updateOutline() {
    const QModelIndex index = m_selection ? m_model->indexOfCandidate(m_selection->current()) : QModelIndex();
    m_outline->setVisible(index.isValid());
    if (!index.isValid())
        return;
    const int cx = m_model->xLevelOf(index);
    const int cy = m_model->yLevelOf(index);
    m_outline->topLeft->setCoords(cx - 0.47, cy + 0.47);
    m_outline->bottomRight->setCoords(cx + 0.47, cy - 0.47);
}

QModelIndex HeatmapView::cellAt(const QPoint& pos) const {
    if (!m_plot->axisRect()->rect().contains(pos))
        return {};
    const int cx = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    const int cy = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
    return m_model->indexOf(cx, cy);
}

void HeatmapView::onMouseMove(QMouseEvent* event) {
    const QModelIndex index = cellAt(event->position().toPoint());
    if (!index.isValid()) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(m_plot->mapToGlobal(event->position().toPoint()), index.data(Qt::ToolTipRole).toString(),
                       m_plot);
}

void HeatmapView::onMousePress(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || !m_selection)
        return;
    const qint64 elite = cellAt(event->position().toPoint()).data(HeatmapModel::EliteRole).toLongLong();
    if (elite)
        m_selection->select(elite);
}

} // namespace kforge::ui
