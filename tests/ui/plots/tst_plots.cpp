// The plot views of a run: the heatmap model's elites and incremental updates, clicks that select
// candidates, and image export.

#include "appliedpalette.h"
#include "candidateselection.h"
#include "costplot.h"
#include "elidedlabel.h"
#include "flowlayout.h"
#include "heatmapmodel.h"
#include "heatmapview.h"
#include "islandsview.h"
#include "lineagegraph.h"
#include "plotexport.h"
#include "progressplot.h"
#include "rooflineview.h"
#include "rundata.h"
#include "theme.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QMainWindow>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QWheelEvent>
#include <qcustomplot.h>

#include <cmath>
#include <limits>
#include <random>

using namespace kforge;
using namespace kforge::ui;

namespace {

std::array<search::Dimension, model::kDimensions> dimensions() {
    return {search::Dimension{QStringLiteral("memory"),
                              QStringLiteral("Memory hierarchy"),
                              {QStringLiteral("global only"), QStringLiteral("vectorised / read-only loads"),
                               QStringLiteral("shared-memory tiling"),
                               QStringLiteral("register tiling, async copy or tensor-core fragments")}},
            search::Dimension{QStringLiteral("compute"),
                              QStringLiteral("Compute style"),
                              {QStringLiteral("scalar"), QStringLiteral("vector types / fused math"),
                               QStringLiteral("warp-level (shuffles, sub-groups)"), QStringLiteral("tensor cores")}},
            search::Dimension{QStringLiteral("granularity"),
                              QStringLiteral("Parallel granularity"),
                              {QStringLiteral("one element per thread"), QStringLiteral("several elements per thread"),
                               QStringLiteral("a warp per row / tile"), QStringLiteral("a block per row / tile")}}};
}

CandidateRow row(qint64 id, model::Cell cell, double speedup, bool correct = true, int island = 0, int generation = 0) {
    CandidateRow r;
    r.id = id;
    r.island = island;
    r.generation = generation;
    r.origin = id == 1 ? model::Origin::Seed : model::Origin::Tuner;
    r.label = QStringLiteral("variant %1").arg(id);
    r.status = correct ? QStringLiteral("ok") : QStringLiteral("incorrect");
    r.correct = correct;
    r.speedup = correct ? speedup : 0.0;
    r.cell = cell;
    return r;
}

RunDelta delta(bool fresh = false) {
    RunDelta d;
    d.fresh = fresh;
    d.run.id = 1;
    d.run.name = QStringLiteral("test");
    d.islands = 2;
    d.dimensions = dimensions();
    return d;
}

// A run as a long search leaves it: islands, generations, failures, pending ones, migrations.
RunDelta syntheticRun(int candidates, int islands) {
    RunDelta d = delta(true);
    d.islands = islands;
    d.ceilings = diagnose::Ceilings{QStringLiteral("NVIDIA H200"), 4.0e12, 1.2e13, 6.0e13, 9.9e14, 0.0};
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int n = 1; n <= candidates; ++n) {
        CandidateRow r;
        r.id = n;
        r.island = (n - 1) % islands;
        r.generation = (n - 1) / (islands * 6);
        r.origin =
            n == 1 ? model::Origin::Seed
                   : (n % 5 == 0 ? model::Origin::Llm : (n % 11 == 0 ? model::Origin::Expert : model::Origin::Tuner));
        r.label = n == 1 ? QStringLiteral("baseline") : QStringLiteral("variant %1").arg(n);
        if (n > candidates - 5) {
            d.added.push_back(r); // still being evaluated
            continue;
        }
        const bool ok = n == 1 || n % 7 != 3;
        r.status = ok ? QStringLiteral("ok") : QStringLiteral("incorrect");
        r.correct = ok;
        const double level = std::min(3.0, r.generation / 6.0);
        r.cell = model::Cell{std::min(3, static_cast<int>(unit(rng) * (1.0 + level))),
                             static_cast<int>(unit(rng) * 3.2), static_cast<int>(unit(rng) * 4)};
        r.speedup = n == 1 ? 1.0 : (ok ? 0.6 + unit(rng) * (0.8 + r.generation / 8.0) + (*r.cell)[0] * 0.3 : 0.0);
        r.hasRoofline = true;
        r.intensity = 0.25 * (1 << (n % 7)) * (0.8 + 0.4 * unit(rng));
        r.achievedBytes = 4.0e12 * std::min(0.9, 0.1 + 0.25 * std::max(r.speedup, 0.3));
        r.achievedFlops = std::min(r.achievedBytes * r.intensity, 5.5e13 * unit(rng) + 1e11);
        d.added.push_back(r);
    }
    const int generations = candidates / (islands * 6);
    for (int g = 2; g <= generations; g += 3)
        for (int i = 0; i < islands; ++i)
            for (int k = 0; k < 2; ++k)
                d.events.push_back({0,
                                    g,
                                    kforge::model::EventKind::Migration,
                                    QStringLiteral("migration"),
                                    QJsonObject{{QStringLiteral("from"), i},
                                                {QStringLiteral("to"), (i + 1) % islands},
                                                {QStringLiteral("candidate"), g * islands * 6 + i + k},
                                                {QStringLiteral("speedup"), 1.5},
                                                {QStringLiteral("accepted"), k == 0}},
                                    {}});
    return d;
}

QModelIndex cell(const HeatmapModel& model, int x, int y) {
    return model.indexOf(x, y);
}

qint64 eliteAt(const HeatmapModel& model, int x, int y) {
    return cell(model, x, y).data(HeatmapModel::EliteRole).toLongLong();
}

// Whether a view under `widget` still has a coalesced refresh to run.
bool refreshPending(QWidget* widget) {
    const auto timers = widget->findChildren<plotstyle::RefreshTimer*>();
    return std::any_of(timers.begin(), timers.end(), [](const plotstyle::RefreshTimer* t) { return t->isActive(); });
}

// Until the views under `widget` have drawn what they know: refreshed, then replotted.
bool drawn(QWidget* widget) {
    if (!QTest::qWaitFor([widget] { return !refreshPending(widget); }, 5000))
        return false;
    for (QCustomPlot* plot : widget->findChildren<QCustomPlot*>())
        plot->replot(QCustomPlot::rpImmediateRefresh);
    return true;
}

// Saves what a widget looks like when KFORGE_PLOT_SNAPSHOTS names a folder, to look at by eye.
void snapshot(QWidget* widget, const QString& name) {
    const QString dir = qEnvironmentVariable("KFORGE_PLOT_SNAPSHOTS");
    if (dir.isEmpty())
        return;
    drawn(widget);
    widget->grab().save(QDir(dir).filePath(name + QStringLiteral(".png")));
}

using kforgetest::AppliedPalette;

// Whether a plot reads as its palette says: a dark background with light axes, labels, legend
// text and colour scale under a dark palette, the reverse under a light one.
void verifyPlotColours(QCustomPlot* plot, bool dark) {
    const auto background = [&](double lightness) { return dark ? lightness < 0.3 : lightness > 0.7; };
    const auto foreground = [&](double lightness) { return dark ? lightness > 0.6 : lightness < 0.4; };
    const auto check = [&](bool ok, const QString& what, const QColor& color) {
        QVERIFY2(ok, qPrintable(QStringLiteral("%1 is %2 (lightness %3) under the %4 palette")
                                    .arg(what, color.name())
                                    .arg(color.lightnessF())
                                    .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))));
    };
    // What is drawn in a corner, outside the axes, is the background.
    const QColor corner = plot->toPixmap(plot->width(), plot->height()).toImage().pixelColor(1, 1);
    check(background(corner.lightnessF()), QStringLiteral("the background"), corner);
    QList<QCPAxis*> axes = plot->axisRect()->axes();
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true))
        if (auto* scale = qobject_cast<QCPColorScale*>(element))
            axes << scale->axis();
    for (QCPAxis* axis : axes) {
        if (!axis->visible())
            continue;
        check(foreground(axis->basePen().color().lightnessF()), QStringLiteral("an axis"), axis->basePen().color());
        check(foreground(axis->tickLabelColor().lightnessF()), QStringLiteral("tick labels"), axis->tickLabelColor());
        check(foreground(axis->labelColor().lightnessF()), QStringLiteral("an axis label"), axis->labelColor());
    }
    if (plot->legend->visible()) {
        check(foreground(plot->legend->textColor().lightnessF()), QStringLiteral("the legend's text"),
              plot->legend->textColor());
        check(background(plot->legend->brush().color().lightnessF()), QStringLiteral("the legend's background"),
              plot->legend->brush().color());
    }
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i));
            text && text->visible() && !text->text().isEmpty() && text->brush().style() != Qt::NoBrush)
            check(foreground(text->color().lightnessF()), QStringLiteral("a note"), text->color());
}

} // namespace

class TestPlots : public QObject {
    Q_OBJECT
private slots:
    void heatmapModelUpdatesIncrementally();
    void heatmapElites();
    void heatmapChangedElite();
    void heatmapShowsTheStoredArchives();
    void heatmapAxesAndIslands();
    void heatmapClickSelectsElite();
    void heatmapLevelNamesFitTheirColumns();
    void heatmapSummaryMakesRoomForTheChoosers();
    void flowLayoutWrapsItsItemsIntoLines();
    void rooflineClickSelects();
    void islandsClickSelects();
    void selectionRedrawsItsLayerAlone();
    void progressPlotDraws();
    void rooflineZoomsAndPans();
    void legendsSitBelowAndFit();
    void costPlotSumsSpendAndTokensPerGeneration();
    void lineageGraphSelectsZoomsAndWalks();
    void lineageGraphOfAHugeRunShowsANeighbourhood();
    void bestsAreConfirmedSpeedups();
    void islandsNameAMigrantBest();
    void islandsShowTheirConfirmedBestOutsideTheArchive();
    void generationAxesTickWholeGenerations();
    void rooflineSaysWhyItIsEmpty();
    void rooflineLabelsEveryHopperRoofApart();
    void exportDrawsAViewInABackgroundTab();
    void largeRun();
    void exportFormats();
    void exportRejectsUnknownSuffix();
    void plotsFollowThePalette_data();
    void plotsFollowThePalette();
    void plotsRestyleWhenThePaletteChanges();
};

void TestPlots::heatmapModelUpdatesIncrementally() {
    RunData data;
    HeatmapModel model(&data, nullptr);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);

    RunDelta first = delta(true);
    first.added = {row(1, {0, 0, 0}, 1.0), row(2, {1, 2, 0}, 1.5)};
    data.apply(first);
    QCOMPARE(resets.size(), 1);  // cleared() of the fresh run
    QCOMPARE(changes.size(), 2); // one per touched cell
    QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("global only"));
    QCOMPARE(model.headerData(0, Qt::Vertical).toString(), QStringLiteral("tensor cores")); // row 0: highest level
    QCOMPARE(cell(model, 1, 2).data().toString(), QStringLiteral("1.50×"));
    QCOMPARE(cell(model, 1, 2), model.index(1, 1));

    changes.clear();
    RunDelta more = delta();
    more.added = {row(3, {1, 2, 3}, 2.0), row(4, {1, 2, 1}, 0.0, false)};
    data.apply(more);
    QCOMPARE(resets.size(), 1);
    QCOMPARE(changes.size(), 1);
    const auto changed = changes.front().front().value<QModelIndex>();
    QCOMPARE(changed, cell(model, 1, 2));
    QCOMPARE(eliteAt(model, 1, 2), 3);
    QCOMPARE(cell(model, 1, 2).data(HeatmapModel::CountRole).toInt(), 3);
    QCOMPARE(cell(model, 1, 2).data(HeatmapModel::CorrectCountRole).toInt(), 2);
    QVERIFY(cell(model, 3, 3).data().toString().isEmpty());
    QCOMPARE(cell(model, 3, 3).data(HeatmapModel::EliteRole).toLongLong(), 0);

    // A pending candidate gets its result and its cell later.
    RunDelta pending = delta();
    CandidateRow p;
    p.id = 5;
    pending.added = {p};
    data.apply(pending);
    RunDelta evaluated = delta();
    evaluated.changed = {row(5, {3, 3, 0}, 4.0)};
    changes.clear();
    data.apply(evaluated);
    QCOMPARE(changes.size(), 1);
    QCOMPARE(eliteAt(model, 3, 3), 5);
    QVERIFY(cell(model, 3, 3).data(Qt::ToolTipRole).toString().contains(QStringLiteral("#5")));

    data.clear();
    QCOMPARE(resets.size(), 2);
    QCOMPARE(eliteAt(model, 3, 3), 0);
}

void TestPlots::heatmapElites() {
    RunData data;
    HeatmapModel model(&data, nullptr);
    RunDelta d = delta(true);
    CandidateRow vetoed = row(2, {2, 1, 0}, 9.0);
    vetoed.vetoed = true;
    CandidateRow waiting = row(3, {2, 1, 0}, 8.0);
    waiting.review = model::ReviewState::Pending;
    CandidateRow accepted = row(4, {2, 1, 1}, 3.0); // another level of the third dimension
    accepted.review = model::ReviewState::Accepted;
    d.added = {row(1, {2, 1, 2}, 1.0), vetoed, waiting, accepted, row(5, {2, 1, 3}, 0.0, false),
               row(6, {2, 1, 0}, 3.0)};
    data.apply(d);
    QCOMPARE(eliteAt(model, 2, 1), 4); // ties go to the older candidate
    QCOMPARE(cell(model, 2, 1).data(HeatmapModel::SpeedupRole).toDouble(), 3.0);
    QCOMPARE(cell(model, 2, 1).data(HeatmapModel::CountRole).toInt(), 6);
    QCOMPARE(cell(model, 2, 1).data(HeatmapModel::CorrectCountRole).toInt(), 5);
}

void TestPlots::heatmapShowsTheStoredArchives() {
    RunData data;
    HeatmapModel model(&data, nullptr);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    RunDelta d = delta(true);
    // Kernel 2 was made on island 0 and migrated to island 1; kernel 3 is faster but the engine's
    // archive of island 0 does not hold it (its elite there is 2): the stored archives decide.
    d.added = {row(1, {0, 0, 0}, 1.0, true, 0), row(2, {1, 1, 0}, 2.0, true, 0), row(3, {1, 1, 1}, 2.5, true, 1)};
    d.archives = QList<store::ArchiveMemberRecord>{
        {0, {0, 0, 0}, 1, 1.0}, {0, {1, 1, 0}, 2, 2.0}, {1, {0, 0, 0}, 1, 1.0}, {1, {1, 1, 0}, 2, 2.0}};
    d.archivesChanged = true;
    data.apply(d);
    QCOMPARE(eliteAt(model, 1, 1), 2);
    QCOMPARE(cell(model, 1, 1).data(HeatmapModel::CountRole).toInt(), 2); // density still counts every kernel
    model.setIsland(1);
    QCOMPARE(eliteAt(model, 1, 1), 2); // the migrant, which island 1's own kernels would not show
    QCOMPARE(eliteAt(model, 0, 0), 1);

    // The engine's archives change (kernel 3 is accepted on island 1): the cell follows.
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    RunDelta next = delta();
    next.archives = QList<store::ArchiveMemberRecord>{
        {0, {0, 0, 0}, 1, 1.0}, {0, {1, 1, 0}, 2, 2.0}, {1, {0, 0, 0}, 1, 1.0}, {1, {1, 1, 1}, 3, 2.5}};
    next.archivesChanged = true;
    data.apply(next);
    QCOMPARE(changes.size(), 1);
    QCOMPARE(eliteAt(model, 1, 1), 3);
    QVERIFY(cell(model, 1, 1).data(Qt::ToolTipRole).toString().contains(QStringLiteral("#3")));

    // A member whose candidate has not arrived yet is shown by id until it does.
    RunDelta early = delta();
    early.archives = QList<store::ArchiveMemberRecord>{{1, {2, 2, 0}, 9, 4.0}};
    early.archivesChanged = true;
    data.apply(early);
    QCOMPARE(eliteAt(model, 2, 2), 9);
    QVERIFY(cell(model, 2, 2).data(Qt::ToolTipRole).toString().contains(QStringLiteral("#9")));
    RunDelta arrives = delta();
    arrives.added = {row(9, {2, 2, 0}, 4.0, true, 1)};
    data.apply(arrives);
    QVERIFY(cell(model, 2, 2).data(Qt::ToolTipRole).toString().contains(QStringLiteral("variant")));
}

void TestPlots::heatmapChangedElite() {
    RunData data;
    HeatmapModel model(&data, nullptr);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    RunDelta d = delta(true);
    d.added = {row(1, {0, 0, 0}, 1.0), row(2, {0, 0, 1}, 2.0), row(3, {1, 1, 0}, 1.2)};
    data.apply(d);
    QCOMPARE(eliteAt(model, 0, 0), 2);

    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    RunDelta veto = delta();
    CandidateRow v = row(2, {0, 0, 1}, 2.0);
    v.vetoed = true;
    veto.changed = {v};
    data.apply(veto);
    QCOMPARE(changes.size(), 1);
    QCOMPARE(eliteAt(model, 0, 0), 1);

    // A candidate whose cell moves leaves the old cell and enters the new one.
    changes.clear();
    RunDelta moved = delta();
    moved.changed = {row(3, {0, 0, 2}, 1.2)};
    data.apply(moved);
    QCOMPARE(changes.size(), 2);
    QCOMPARE(eliteAt(model, 0, 0), 3);
    QCOMPARE(eliteAt(model, 1, 1), 0);
    QCOMPARE(cell(model, 1, 1).data(HeatmapModel::CountRole).toInt(), 0);
    QCOMPARE(cell(model, 0, 0).data(HeatmapModel::CountRole).toInt(), 3);
}

void TestPlots::heatmapAxesAndIslands() {
    RunData data;
    HeatmapModel model(&data, nullptr);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    RunDelta d = delta(true);
    d.added = {row(1, {0, 0, 0}, 1.0, true, 0), row(2, {3, 1, 2}, 2.0, true, 1), row(3, {3, 2, 2}, 1.5, true, 0)};
    data.apply(d);
    QCOMPARE(eliteAt(model, 3, 1), 2);
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);

    model.setAxes(0, 2); // memory x granularity
    QCOMPARE(resets.size(), 1);
    QCOMPARE(eliteAt(model, 3, 2), 2);
    QCOMPARE(model.headerData(1, Qt::Vertical).toString(), QStringLiteral("a warp per row / tile"));
    model.setAxes(2, 1);
    QCOMPARE(eliteAt(model, 2, 1), 2);
    QCOMPARE(eliteAt(model, 2, 2), 3);
    model.setAxes(1, 1); // not a projection: ignored
    model.setAxes(0, 3);
    QCOMPARE(model.xDimension(), 2);
    QCOMPARE(model.yDimension(), 1);
    QCOMPARE(resets.size(), 2);

    model.setAxes(0, 1);
    model.setIsland(0);
    QCOMPARE(eliteAt(model, 3, 1), 0);
    QCOMPARE(eliteAt(model, 3, 2), 3);
    QCOMPARE(eliteAt(model, 0, 0), 1);
    model.setIsland(1);
    QCOMPARE(eliteAt(model, 3, 1), 2);
    QCOMPARE(eliteAt(model, 0, 0), 1); // the seed belongs to every island
}

void TestPlots::heatmapSummaryMakesRoomForTheChoosers() {
    // "N of 16 cells filled, top elite ..." sits beside the axis and island choosers in a wide view;
    // in a dock too narrow for both it goes to a line of its own, uncut, and the choosers keep the
    // room they had, and it comes back when the view widens again.
    RunData data;
    CandidateSelection selection;
    data.apply(syntheticRun(40, 2));
    HeatmapView view(&data, &selection);
    auto* summary = view.findChild<ElidedLabel*>();
    QComboBox* island = nullptr;
    for (auto* combo : view.findChildren<QComboBox*>())
        if (combo->itemText(0) == QStringLiteral("All islands"))
            island = combo;
    QVERIFY(summary && island);
    const auto besideTheChoosers = [&] { return summary->geometry().top() < island->geometry().bottom(); };
    view.resize(1200, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(summary->plainText().contains(QStringLiteral("cells filled")));
    QTRY_VERIFY(besideTheChoosers());
    QVERIFY(!summary->isElided());
    const int roomWide = island->width();

    view.resize(500, 520);
    QTRY_VERIFY(!besideTheChoosers());
    QVERIFY(!summary->isElided());
    QCOMPARE(island->width(), roomWide);

    // As narrow as the window's dock: the choosers wrap onto more lines instead of cutting the
    // axis titles ("Memory hierarchy"), and the summary stays whole; the plot starts below them.
    for (const int width : {400, 340}) {
        view.resize(width, 520);
        QTRY_VERIFY(!besideTheChoosers());
        for (auto* combo : view.findChildren<QComboBox*>()) {
            QVERIFY2(combo->width() >= combo->sizeHint().width(), qPrintable(combo->currentText()));
            QVERIFY(combo->mapTo(&view, QPoint(combo->width(), 0)).x() <= view.width());
        }
        QVERIFY(!summary->isElided());
        QVERIFY(summary->mapTo(&view, QPoint(0, summary->height())).y() <= view.plot()->geometry().top());
    }

    view.resize(1200, 520);
    QTRY_VERIFY(besideTheChoosers());
}

void TestPlots::flowLayoutWrapsItsItemsIntoLines() {
    // Items 100, 80 and 120 pixels wide with 10 between them: one line where all fit (320), a
    // line per item as the width shrinks, the height growing with the lines; an item wider than
    // the whole line gets the line. Items never overlap and keep their order.
    QWidget host;
    auto* flow = new FlowLayout(&host);
    flow->setContentsMargins(0, 0, 0, 0);
    flow->setSpacing(10);
    struct Item : QWidget {
        using QWidget::QWidget;
        QSize hint;
        QSize sizeHint() const override { return hint; }
    };
    QList<QWidget*> items;
    for (const int width : {100, 80, 120}) {
        auto* item = new Item(&host);
        item->hint = QSize(width, 20);
        item->setMinimumSize(40, 20); // like a combo box that may cut its text
        flow->addWidget(item);
        items << item;
    }
    QVERIFY(flow->hasHeightForWidth());
    QCOMPARE(flow->sizeHint(), QSize(320, 20));
    QCOMPARE(flow->minimumSize(), QSize(40, 20));
    QCOMPARE(flow->heightForWidth(320), 20);
    QCOMPARE(flow->heightForWidth(319), 50); // the third item on a second line
    QCOMPARE(flow->heightForWidth(189), 80); // one a line
    struct Case {
        int width, lines;
    };
    for (const Case c : {Case{400, 1}, Case{200, 2}, Case{150, 3}}) {
        flow->setGeometry(QRect(0, 0, c.width, flow->heightForWidth(c.width)));
        QCOMPARE(flow->lineCount(), c.lines);
        for (int i = 0; i < items.size(); ++i) {
            QVERIFY(items[i]->geometry().right() < c.width);
            if (i > 0) {
                const QRect before = items[i - 1]->geometry(), at = items[i]->geometry();
                QVERIFY(!before.intersects(at));
                QVERIFY(at.top() > before.top() || at.left() > before.right()); // reading order
            }
        }
    }
    flow->setGeometry(QRect(0, 0, 90, flow->heightForWidth(90)));
    QCOMPARE(items[2]->geometry().width(), 90);
    QCOMPARE(flow->lineCount(), 3);
}

void TestPlots::heatmapLevelNamesFitTheirColumns() {
    // The names under the columns ("shared-memory tiling", "vectorised / read-only loads") wrap,
    // breaking after a hyphen where a column is narrow, so that no line is wider than its column,
    // in a dock as narrow as the window's and wider ones; no word of a name is lost.
    RunData data;
    CandidateSelection selection;
    data.apply(syntheticRun(40, 2));
    for (const int width : {400, 600, 900}) {
        HeatmapView view(&data, &selection);
        view.resize(width, 520);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(drawn(&view));
        QVERIFY(drawn(&view)); // the labels follow the column width the first layout gave
        auto* plot = view.findChild<QCustomPlot*>();
        const double column = plot->axisRect()->width() / 4.0;
        const QFontMetrics metrics(plot->xAxis->tickLabelFont());
        const auto ticks = qSharedPointerCast<QCPAxisTickerText>(plot->xAxis->ticker())->ticks();
        QCOMPARE(ticks.size(), 4);
        for (const QString& label : ticks) {
            for (const QString& line : label.split(u'\n'))
                QVERIFY2(metrics.horizontalAdvance(line) <= column,
                         qPrintable(QStringLiteral("'%1' of '%2' is wider than its column (%3 px) at width %4")
                                        .arg(line, label)
                                        .arg(column)
                                        .arg(width)));
            const QString name =
                QString(label).replace(QStringLiteral("-\n"), QStringLiteral("-")).replace(u'\n', u' ');
            QVERIFY2(!name.contains(QStringLiteral("  ")) && !name.trimmed().isEmpty(), qPrintable(label));
        }
    }
}

void TestPlots::heatmapClickSelectsElite() {
    RunData data;
    CandidateSelection selection;
    HeatmapView view(&data, &selection);
    view.resize(700, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    data.apply(syntheticRun(600, 4));
    RunDelta d = delta();
    d.added = {row(1000, {2, 3, 1}, 50.0)};
    data.apply(d);
    QTRY_COMPARE(eliteAt(*view.model(), 2, 3), 1000);

    QSignalSpy spy(&selection, &CandidateSelection::currentChanged);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, view.cellCenter(2, 3));
    QCOMPARE(spy.size(), 1);
    QCOMPARE(spy.front().front().toLongLong(), 1000);
    snapshot(&view, QStringLiteral("heatmap"));

    view.setAxes(1, 2);
    QTRY_COMPARE(eliteAt(*view.model(), 3, 1), 1000);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, view.cellCenter(0, 0));
    const qint64 elite = eliteAt(*view.model(), 0, 0);
    if (elite)
        QCOMPARE(selection.current(), elite);
    snapshot(&view, QStringLiteral("heatmap-compute-granularity"));

    RunData empty;
    HeatmapView nothing(&empty, &selection);
    nothing.resize(700, 520);
    snapshot(&nothing, QStringLiteral("heatmap-empty"));
    // The note in the middle says why nothing is there: no run, then no candidate placed yet.
    const auto note = [](const HeatmapView& v) {
        QStringList shown;
        for (const auto* text : v.plot()->findChildren<QCPItemText*>())
            if (text->visible() && text->position->type() == QCPItemPosition::ptAxisRectRatio)
                shown << text->text();
        return shown;
    };
    plotstyle::flushRefreshes(&nothing);
    QCOMPARE(note(nothing), QStringList{QStringLiteral("No run is open.")});
    empty.apply(delta(true));
    plotstyle::flushRefreshes(&nothing);
    QCOMPARE(note(nothing), QStringList{QStringLiteral("No candidate has a behaviour cell yet")});
}

void TestPlots::rooflineClickSelects() {
    RunData data;
    CandidateSelection selection;
    RooflineView view(&data, &selection);
    view.resize(800, 560);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    data.apply(syntheticRun(600, 4));
    const qint64 target = 202;
    QVERIFY(data.candidate(target)->hasRoofline);
    const QPoint at = view.pointPosition(target);
    QVERIFY(view.plot()->axisRect()->rect().contains(at));
    QSignalSpy spy(&selection, &CandidateSelection::currentChanged);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, at);
    QCOMPARE(spy.size(), 1);
    // Several points may sit on one pixel; the one chosen is drawn there.
    QCOMPARE(view.pointPosition(selection.current()), at);
    QCOMPARE(view.pointPosition(599), QPoint(-1, -1)); // pending: no point
    snapshot(&view, QStringLiteral("roofline"));

    RunData bare;
    RunDelta d = delta(true);
    CandidateRow r = row(1, {0, 0, 0}, 1.0);
    r.hasRoofline = true;
    r.intensity = 2.0;
    r.achievedFlops = 1e12;
    d.added = {r};
    bare.apply(d);
    RooflineView points(&bare, &selection);
    points.resize(600, 400);
    QCOMPARE(points.candidateAt(points.pointPosition(1)), 1);
    snapshot(&points, QStringLiteral("roofline-no-ceilings"));
}

void TestPlots::islandsClickSelects() {
    RunData data;
    CandidateSelection selection;
    IslandsView view(&data, &selection);
    view.resize(900, 560);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    data.apply(syntheticRun(600, 4));
    QCOMPARE(view.migrationCount(), 2 * 4 * 8);
    const QPoint at = view.pointPosition(123);
    QVERIFY(view.plot()->axisRect()->rect().contains(at));
    QSignalSpy spy(&selection, &CandidateSelection::currentChanged);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, at);
    QCOMPARE(spy.size(), 1);
    QCOMPARE(view.pointPosition(selection.current()), at);
    snapshot(&view, QStringLiteral("islands"));

    data.clear();
    QCOMPARE(view.migrationCount(), 0);
}

// A new selection redraws the markers' own layer, not the whole plot: what shows is what a whole
// replot would show, and the points' layers are not drawn again.
void TestPlots::selectionRedrawsItsLayerAlone() {
    RunData data;
    CandidateSelection selection;
    QWidget window;
    auto* islands = new IslandsView(&data, &selection);
    auto* roofline = new RooflineView(&data, &selection);
    auto* heatmap = new HeatmapView(&data, &selection);
    auto* layout = new QHBoxLayout(&window);
    for (QWidget* w : {static_cast<QWidget*>(islands), static_cast<QWidget*>(roofline), static_cast<QWidget*>(heatmap)})
        layout->addWidget(w);
    window.resize(1500, 500);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    data.apply(syntheticRun(600, 4));
    const QList<plotstyle::RefreshTimer*> refreshes = window.findChildren<plotstyle::RefreshTimer*>();
    QTRY_VERIFY(std::none_of(refreshes.begin(), refreshes.end(), [](const QTimer* t) { return t->isActive(); }));
    selection.select(202);
    for (QCustomPlot* plot : {islands->plot(), roofline->plot(), heatmap->plot()}) {
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QCPLayer* layer = plot->layer(QStringLiteral("selection"));
        QVERIFY(layer);
        QCOMPARE(layer->mode(), QCPLayer::lmBuffered);
        QVERIFY(!layer->children().isEmpty());
    }
    int fullReplots = 0;
    for (QCustomPlot* plot : {islands->plot(), roofline->plot(), heatmap->plot()})
        connect(plot, &QCustomPlot::beforeReplot, this, [&fullReplots] { ++fullReplots; });
    const auto images = [&] {
        QList<QImage> all;
        for (QCustomPlot* plot : {islands->plot(), roofline->plot(), heatmap->plot()})
            all << plot->grab().toImage();
        return all;
    };
    const QList<QImage> before = images();
    selection.select(123);
    const QList<QImage> after = images();
    QCOMPARE(fullReplots, 0);
    for (QCustomPlot* plot : {islands->plot(), roofline->plot(), heatmap->plot()})
        plot->replot(QCustomPlot::rpImmediateRefresh);
    const QList<QImage> whole = images();
    for (int i = 0; i < 3; ++i) {
        QVERIFY2(after[i] != before[i], qPrintable(QStringLiteral("plot %1 did not move its marker").arg(i)));
        QVERIFY2(after[i] == whole[i], qPrintable(QStringLiteral("plot %1 differs from a whole replot").arg(i)));
    }
}

void TestPlots::progressPlotDraws() {
    RunData data;
    ProgressPlot plot(&data);
    plot.resize(800, 420);
    data.apply(syntheticRun(2000, 4));
    // Best-so-far and median per island, behind the baseline line, the legend's median key and
    // the marks of unconfirmed steps.
    QTRY_COMPARE(plot.plot()->graphCount(), 3 + 2 * 4);
    QTRY_VERIFY(plot.plot()->graph(3)->dataCount() > 0);
    const auto best = plot.plot()->graph(3)->data();
    for (auto it = best->begin(); it + 1 != best->end(); ++it)
        QVERIFY((it + 1)->value >= it->value); // never falls
    snapshot(&plot, QStringLiteral("progress"));
}

// The wheel zooms the roofline, the view stays where the user put it while candidates arrive, and
// a double-click fits it to the run again.
void TestPlots::rooflineZoomsAndPans() {
    RunData data;
    CandidateSelection selection;
    RooflineView view(&data, &selection);
    view.resize(800, 560);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    data.apply(syntheticRun(300, 4));
    plotstyle::flushRefreshes(&view);
    const QCPRange fitted = view.plot()->xAxis->range();
    const auto span = [](const QCPRange& r) { return r.upper / r.lower; }; // a log axis
    QVERIFY(!view.userRange());

    const QPoint centre = view.plot()->axisRect()->rect().center();
    QWheelEvent wheel(centre, view.plot()->mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(view.plot(), &wheel);
    QVERIFY(view.userRange());
    const QCPRange zoomed = view.plot()->xAxis->range();
    QVERIFY2(span(zoomed) < span(fitted) / 1.5,
             qPrintable(QStringLiteral("%1 .. %2").arg(zoomed.lower).arg(zoomed.upper)));

    // A candidate far outside the view arrives: the view stays.
    RunDelta more = delta();
    more.islands = 4;
    CandidateRow far = row(5000, {0, 0, 0}, 1.2);
    far.hasRoofline = true;
    far.intensity = 5000.0;
    far.achievedFlops = 1e13;
    more.added = {far};
    data.apply(more);
    plotstyle::flushRefreshes(&view);
    QCOMPARE(view.plot()->xAxis->range().lower, zoomed.lower);
    QCOMPARE(view.plot()->xAxis->range().upper, zoomed.upper);

    // A double-click fits the whole run again, the new point included.
    QTest::mouseDClick(view.plot(), Qt::LeftButton, {}, centre);
    QVERIFY(!view.userRange());
    QVERIFY(view.plot()->xAxis->range().contains(5000.0));
    QVERIFY(view.plot()->xAxis->range().lower <= fitted.lower * 1.0001);

    // Zoomed out past the fitted view, the roofs reach its edges at once.
    const auto roofsReach = [&](double x) {
        for (int i = 0; i < view.plot()->graphCount(); ++i) {
            const QCPGraph* g = view.plot()->graph(i);
            if (g->layer() && g->layer()->name() == QLatin1String("grid") && !g->data()->isEmpty()
                && g->data()->constBegin()->key <= x && (g->data()->constEnd() - 1)->key >= x)
                return true;
        }
        return false;
    };
    const double fittedSpan = span(view.plot()->xAxis->range());
    QWheelEvent out(centre, view.plot()->mapToGlobal(centre), QPoint(), QPoint(0, -720), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
    QApplication::sendEvent(view.plot(), &out);
    const QCPRange wide = view.plot()->xAxis->range();
    QVERIFY(span(wide) > fittedSpan);
    QVERIFY(roofsReach(wide.lower * 1.01));
    QVERIFY(roofsReach(wide.upper / 1.2));
}

// The progress and islands legends sit under their plots (covering no line or dot) and, however
// narrow the dock, every entry stays inside the plot; the islands legend says what the migration
// arrows' colours and dashes mean.
void TestPlots::legendsSitBelowAndFit() {
    RunData data;
    CandidateSelection selection;
    ProgressPlot progress(&data);
    IslandsView islands(&data, &selection);
    data.apply(syntheticRun(400, 4));
    QStringList names;
    for (int i = 0; i < islands.plot()->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(islands.plot()->legend->item(i)))
            names << item->plottable()->name();
    QVERIFY2(names.contains(QStringLiteral("latest migrations")), qPrintable(names.join(QStringLiteral(", "))));
    QVERIFY(names.contains(QStringLiteral("earlier migrations")));
    QVERIFY(names.contains(QStringLiteral("migrant not taken (dashed)")));
    for (QCustomPlot* plot : {progress.plot(), islands.plot()})
        for (const int width : {900, 420, 260}) {
            plot->window()->resize(width, 460);
            plot->replot(QCustomPlot::rpImmediateRefresh);
            plot->replot(QCustomPlot::rpImmediateRefresh); // the legend's rows follow the width
            const QRect axes = plot->axisRect()->outerRect();
            for (int i = 0; i < plot->legend->itemCount(); ++i) {
                const QRect entry = plot->legend->item(i)->outerRect();
                QVERIFY2(entry.top() >= axes.bottom() - 1,
                         qPrintable(QStringLiteral("entry %1 overlaps the axes at width %2").arg(i).arg(width)));
                QVERIFY2(plot->rect().contains(entry),
                         qPrintable(QStringLiteral("entry %1 (%2 px from the left, %3 wide) is clipped at width %4")
                                        .arg(i)
                                        .arg(entry.left())
                                        .arg(entry.width())
                                        .arg(width)));
            }
        }
}

// The LLM cost chart: money and tokens per generation from the calls as they arrive, the totals
// written above, calls without a price or token counts named instead of counted as free, calls
// still in flight left out; a run without language models says so.
void TestPlots::costPlotSumsSpendAndTokensPerGeneration() {
    RunData data;
    CostPlot plot(&data);
    plot.resize(700, 420);
    RunDelta d = delta(true);
    const auto call = [](qint64 id, int generation, std::optional<double> usd, std::optional<qint64> in,
                         std::optional<qint64> out, const char* status = "ok") {
        store::LlmCallRecord c;
        c.id = id;
        c.generation = generation;
        c.status = QString::fromLatin1(status);
        c.costUsd = usd;
        c.inputTokens = in;
        c.outputTokens = out;
        return c;
    };
    d.llmCalls = {call(1, 0, 0.010, 1000, 200), call(2, 0, 0.005, 500, 100), call(3, 1, std::nullopt, 800, 300),
                  call(4, 2, 0.020, std::nullopt, std::nullopt),
                  call(5, 2, std::nullopt, std::nullopt, std::nullopt, "in-flight")};
    data.apply(d);
    plotstyle::flushRefreshes(&plot);
    const auto spend = plot.spendByGeneration();
    QCOMPARE(spend.keys(), (QList<int>{0, 1, 2}));
    QVERIFY(qFuzzyCompare(spend.value(0), 0.015));
    QCOMPARE(spend.value(1), 0.0);
    QVERIFY(qFuzzyCompare(spend.value(2), 0.020));
    const auto tokens = plot.tokensByGeneration();
    QCOMPARE(tokens.value(0), 1800.0);
    QCOMPARE(tokens.value(1), 1100.0);
    QCOMPARE(tokens.value(2), 0.0);
    QVERIFY2(plot.note().contains(QStringLiteral("4 calls, $0.0350 spent")), qPrintable(plot.note()));
    QVERIFY2(plot.note().contains(QStringLiteral("1 without a known price")), qPrintable(plot.note()));
    QVERIFY2(plot.note().contains(QStringLiteral("1 without token counts")), qPrintable(plot.note()));
    snapshot(&plot, QStringLiteral("llm-cost"));

    RunData offline;
    offline.apply(delta(true));
    CostPlot none(&offline);
    plotstyle::flushRefreshes(&none);
    none.resize(700, 420);
    QVERIFY2(none.note().startsWith(QStringLiteral("This run used no language model\n")), qPrintable(none.note()));
    QVERIFY(!none.plot()->yAxis->tickLabels() && !none.plot()->yAxis2->tickLabels()); // no made-up scale
    QVERIFY(plot.plot()->yAxis->tickLabels() && plot.plot()->yAxis2->tickLabels());
    snapshot(&none, QStringLiteral("llm-cost-none"));

    // Language models configured, no call finished yet: the note names them, and the calls in
    // flight; once the run has ended, that it made none.
    RunDelta waiting = delta(true);
    waiting.run.state = model::RunState::Running;
    waiting.run.config.insert(QStringLiteral("llm"),
                              QJsonObject{{QStringLiteral("models"), QJsonArray{QStringLiteral("local/qwen")}}});
    waiting.llmCalls = {call(1, 0, std::nullopt, std::nullopt, std::nullopt, "in-flight")};
    RunData started;
    started.apply(waiting);
    CostPlot soon(&started);
    plotstyle::flushRefreshes(&soon);
    QCOMPARE(soon.note(), QStringLiteral("No language model call has finished yet (1 in flight)\nModels: local/qwen"));
    waiting.run.state = model::RunState::Finished;
    waiting.llmCalls.clear();
    RunData ended;
    ended.apply(waiting);
    CostPlot over(&ended);
    plotstyle::flushRefreshes(&over);
    QCOMPARE(over.note(), QStringLiteral("No language model calls in this run\nModels: local/qwen"));

    RunData idle;
    CostPlot nothing(&idle);
    plotstyle::flushRefreshes(&nothing);
    QVERIFY2(nothing.note().isEmpty(), qPrintable(nothing.note())); // no run: nothing to explain
    QVERIFY(none.spendByGeneration().isEmpty());
}

// Shows `view` at `size` and waits until it is on screen.
bool shownAt(QWidget* view, QSize size) {
    view->resize(size);
    view->show();
    return QTest::qWaitForWindowExposed(view);
}

// A first delta of a two-island run with these candidates and these stored archives.
RunDelta twoIslands(const QList<CandidateRow>& rows, const QList<store::ArchiveMemberRecord>& archives) {
    RunDelta d = delta(true);
    d.islands = 2;
    d.added = rows;
    d.archives = archives;
    d.archivesChanged = true;
    return d;
}

// A chain-and-fan lineage: candidate n's parent is n - 4 (two islands, four a generation).
RunDelta lineageRun(int candidates) {
    RunDelta d = delta(true);
    d.islands = 2;
    for (int n = 1; n <= candidates; ++n) {
        CandidateRow r = row(n, {0, 0, 0}, 0.8 + (n % 9) * 0.2, n % 13 != 5, (n - 1) % 2, (n - 1) / 4);
        if (n > 4)
            r.parents = {n - 4};
        r.pinned = n == 9;
        r.vetoed = n == 11;
        d.added.push_back(r);
    }
    return d;
}

// The lineage graph: a node per candidate and an edge per parent; a click selects, the arrow keys
// walk parent and child and the generation's column, the wheel zooms and Ctrl+0 fits again.
void TestPlots::lineageGraphSelectsZoomsAndWalks() {
    RunData data;
    CandidateSelection selection;
    LineageGraph graph(&data, &selection);
    graph.resize(800, 500);
    graph.show();
    QVERIFY(QTest::qWaitForWindowExposed(&graph));
    data.apply(lineageRun(40));
    plotstyle::flushRefreshes(&graph);
    QCOMPARE(graph.nodeCount(), 40);
    QCOMPARE(graph.edgeCount(), 36);
    QVERIFY(!graph.showsNeighbourhood());

    const QPoint at = graph.nodePosition(10);
    QVERIFY(graph.viewport()->rect().contains(at));
    QTest::mouseClick(graph.viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(selection.current(), 10);
    graph.setFocus();
    QTest::keyClick(&graph, Qt::Key_Left);
    QCOMPARE(selection.current(), 6);
    QTest::keyClick(&graph, Qt::Key_Left);
    QCOMPARE(selection.current(), 2);
    QTest::keyClick(&graph, Qt::Key_Left); // a seed: nowhere further
    QCOMPARE(selection.current(), 2);
    QTest::keyClick(&graph, Qt::Key_Right);
    QCOMPARE(selection.current(), 6);
    // Up and down stay in generation 1's column (candidates 5 to 8).
    QTest::keyClick(&graph, Qt::Key_Down);
    QVERIFY2(selection.current() >= 5 && selection.current() <= 8 && selection.current() != 6,
             qPrintable(QString::number(selection.current())));
    const qint64 below = selection.current();
    QTest::keyClick(&graph, Qt::Key_Up);
    QCOMPARE(selection.current(), 6);
    QVERIFY(graph.nodePosition(below).y() > graph.nodePosition(6).y());

    const double before = graph.zoom();
    const QPoint centre = graph.viewport()->rect().center();
    QWheelEvent wheel(centre, graph.viewport()->mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(graph.viewport(), &wheel);
    QVERIFY2(graph.zoom() > before * 1.2, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(graph.zoom())));
    QTest::keyClick(&graph, Qt::Key_0, Qt::ControlModifier);
    QVERIFY(std::abs(graph.zoom() - before) < 1e-6);
    snapshot(&graph, QStringLiteral("lineage-graph"));

    // The colours span 0.5x to 4x, or to the run's best where that is higher (rounded up).
    auto* key = graph.findChild<QLabel*>(QStringLiteral("lineageGraphNote"));
    QVERIFY(key);
    QVERIFY2(key->text().contains(QStringLiteral("0.5× (dark) to 4× (light)")), qPrintable(key->text()));
    RunDelta faster = delta();
    CandidateRow far = row(41, {0, 0, 0}, 9.107, true, 0, 10);
    far.parents = {37};
    faster.added << far;
    data.apply(faster);
    plotstyle::flushRefreshes(&graph);
    QVERIFY2(key->text().contains(QStringLiteral("0.5× (dark) to 9.2× (light)")), qPrintable(key->text()));

    // The key stays in the bottom left corner while the graph is zoomed and panned: scrolling moves
    // the viewport's children along with its pixels.
    const QRect home = key->geometry();
    QApplication::sendEvent(graph.viewport(), &wheel);
    QApplication::sendEvent(graph.viewport(), &wheel);
    QVERIFY(graph.horizontalScrollBar()->maximum() > 0);
    for (int value : {graph.horizontalScrollBar()->minimum(), graph.horizontalScrollBar()->maximum()}) {
        graph.horizontalScrollBar()->setValue(value);
        graph.verticalScrollBar()->setValue(graph.verticalScrollBar()->maximum());
        QCOMPARE(key->geometry().left(), home.left());
        QVERIFY2(
            graph.viewport()->rect().contains(key->geometry()),
            qPrintable(
                QStringLiteral("key at %1,%2 %3x%4").arg(key->x()).arg(key->y()).arg(key->width()).arg(key->height())));
    }
}

// Beyond kMaxNodes the graph draws the selected candidate's ancestry and descendants, says so, and
// follows the selection.
void TestPlots::lineageGraphOfAHugeRunShowsANeighbourhood() {
    RunData data;
    CandidateSelection selection;
    LineageGraph graph(&data, &selection);
    graph.resize(600, 400);
    const int n = LineageGraph::kMaxNodes + 200;
    data.apply(lineageRun(n));
    selection.select(2001);
    plotstyle::flushRefreshes(&graph);
    QVERIFY(graph.showsNeighbourhood());
    // Its ancestry (2001, 1997, ..., 1: 501 nodes) and its descendants three generations on (3).
    QCOMPARE(graph.nodeCount(), 501 + 3);
    QVERIFY2(graph.note().contains(QStringLiteral("#2001's ancestry")), qPrintable(graph.note()));
    QVERIFY(graph.nodePosition(2001) != QPoint(-1, -1));
    QCOMPARE(graph.nodePosition(2002), QPoint(-1, -1)); // another line of descent
    selection.select(2002);
    plotstyle::flushRefreshes(&graph);
    QVERIFY(graph.nodePosition(2002) != QPoint(-1, -1));
    QVERIFY(graph.note().contains(QStringLiteral("#2002's ancestry")));
}

void TestPlots::largeRun() {
    RunData data;
    CandidateSelection selection;
    HeatmapView heatmap(&data, &selection);
    RooflineView roofline(&data, &selection);
    IslandsView islands(&data, &selection);
    ProgressPlot progress(&data);
    const RunDelta run = syntheticRun(100000, 8);
    data.apply(run);
    int withCell = 0;
    for (const CandidateRow& r : run.added)
        withCell += r.cell ? 1 : 0;
    int counted = 0;
    for (int x = 0; x < search::kLevels; ++x)
        for (int y = 0; y < search::kLevels; ++y)
            counted += cell(*heatmap.model(), x, y).data(HeatmapModel::CountRole).toInt();
    QCOMPARE(counted, withCell);
    QVERIFY(islands.pointPosition(50000) != QPoint(-1, -1));
    QVERIFY(roofline.pointPosition(50000) != QPoint(-1, -1));

    // One more result touches one cell, without a reset.
    QSignalSpy resets(heatmap.model(), &QAbstractItemModel::modelReset);
    QSignalSpy changes(heatmap.model(), &QAbstractItemModel::dataChanged);
    RunDelta one = delta();
    one.islands = 8;
    one.changed = {row(99999, {1, 1, 1}, 2.0)};
    data.apply(one);
    QCOMPARE(resets.size(), 0);
    QCOMPARE(changes.size(), 1);
    islands.resize(900, 600);
    snapshot(&islands, QStringLiteral("islands-large"));
    roofline.resize(800, 560);
    snapshot(&roofline, QStringLiteral("roofline-large"));
}

void TestPlots::exportFormats() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunData data;
    CandidateSelection selection;
    RooflineView view(&data, &selection);
    view.resize(640, 480);
    data.apply(syntheticRun(200, 2));
    QVERIFY(drawn(&view));
    for (const QString& name : {QStringLiteral("roofline.png"), QStringLiteral("roofline.SVG")}) {
        const QString file = dir.filePath(name);
        const auto done = exportPlot(view.plot(), file, 800, 600);
        QVERIFY2(done.ok(), done.ok() ? "" : done.error().c_str());
        QVERIFY(QFileInfo(file).size() > 0);
    }
    QFile svg(dir.filePath(QStringLiteral("roofline.SVG")));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
    QImage png(dir.filePath(QStringLiteral("roofline.png")));
    QCOMPARE(png.size(), QSize(800, 600));

    HeatmapView heatmap(&data, &selection);
    heatmap.resize(500, 400);
    for (const QString& name : {QStringLiteral("heatmap.png"), QStringLiteral("heatmap.svg")}) {
        const auto done = exportWidget(&heatmap, dir.filePath(name));
        QVERIFY2(done.ok(), done.ok() ? "" : done.error().c_str());
        QVERIFY(QFileInfo(dir.filePath(name)).size() > 0);
    }
}

void TestPlots::exportRejectsUnknownSuffix() {
    QTemporaryDir dir;
    QCustomPlot plot;
    const QString file = dir.filePath(QStringLiteral("plot.bmpx"));
    const auto done = exportPlot(&plot, file);
    QVERIFY(!done.ok());
    QVERIFY2(QString::fromStdString(done.error()).contains(QStringLiteral(".bmpx")), done.error().c_str());
    QVERIFY(!QFileInfo::exists(file));
    QWidget widget;
    QVERIFY(!exportWidget(&widget, dir.filePath(QStringLiteral("noformat"))).ok());
}

// One meaning of "best", the status bar's: a candidate re-measured before promotion counts by its
// confirmed speedup, and a first measurement alone is marked unconfirmed wherever it shows.
void TestPlots::bestsAreConfirmedSpeedups() {
    RunData data;
    IslandsView islands(&data, nullptr);
    ProgressPlot progress(&data);
    for (QWidget* view : std::initializer_list<QWidget*>{&islands, &progress})
        QVERIFY(shownAt(view, QSize(700, 420)));
    RunDelta d = delta(true);
    d.islands = 3;
    d.added << row(1, {0, 0, 0}, 1.0, true, 0, 0);
    CandidateRow remeasuredLower = row(2, {1, 0, 0}, 11.85, true, 0, 1); // 11.85x first, 8.48x confirmed
    remeasuredLower.confirmedSpeedup = 8.48;
    CandidateRow best = row(3, {2, 0, 0}, 9.90, true, 1, 2); // the run's best, confirmed at 10.03x
    best.confirmedSpeedup = 10.03;
    CandidateRow onceOnly = row(4, {3, 0, 0}, 10.50, true, 1, 3); // never re-measured
    CandidateRow lowerOnce = row(5, {0, 1, 0}, 6.0, true, 0, 3);
    CandidateRow unconfirmedIsland = row(6, {1, 1, 0}, 4.0, true, 2, 3);
    d.added << remeasuredLower << best << onceOnly << lowerOnce << unconfirmedIsland;
    d.run.bestCandidate = 3;
    d.run.bestSpeedup = 10.03;
    data.apply(d);
    QVERIFY(drawn(&islands) && drawn(&progress));

    const QStringList lanes = islands.laneLabels();
    QCOMPARE(lanes.size(), 3);
    QVERIFY2(lanes[0].contains(QStringLiteral("best 8.480× (#2)")), qPrintable(lanes[0]));
    QVERIFY2(!lanes[0].contains(QStringLiteral("11.85")), qPrintable(lanes[0]));
    QVERIFY2(!lanes[0].contains(QStringLiteral("unconfirmed")), qPrintable(lanes[0])); // 6x is below 8.48x
    QVERIFY2(lanes[1].contains(QStringLiteral("best 10.030× (#3)")), qPrintable(lanes[1]));
    QVERIFY2(lanes[1].contains(QStringLiteral("10.500× unconfirmed (#4)")), qPrintable(lanes[1]));
    QVERIFY2(lanes[2].contains(QStringLiteral("no confirmed best")), qPrintable(lanes[2]));
    QVERIFY2(lanes[2].contains(QStringLiteral("4.000× unconfirmed (#6)")), qPrintable(lanes[2]));

    // The progress lines judge the same way: island 0 ends at its confirmed 8.48x, not 11.85x;
    // the steps standing on a first measurement alone are marked (island 1's 10.5x, island 2's 4x,
    // and the seed's 1x, which nothing re-measures).
    QCOMPARE(progress.islandBest(0), 8.48);
    QCOMPARE(progress.islandBest(1), 10.50);
    QCOMPARE(progress.islandBest(2), 4.0);
    QCOMPARE(progress.unconfirmedSteps(), 5);
}

// An island's best may be a kernel another island made and sent it: the lane says so, so that
// "best 9.1x (#12)" on an island without a dot that fast is not a puzzle.
void TestPlots::islandsNameAMigrantBest() {
    RunData data;
    IslandsView islands(&data, nullptr);
    QVERIFY(shownAt(&islands, QSize(700, 420)));
    CandidateRow own = row(1, {0, 0, 0}, 2.0, true, 0, 0);
    own.confirmedSpeedup = 2.0;
    CandidateRow fast = row(2, {1, 1, 0}, 9.0, true, 1, 1); // made on island 1, migrated to island 0
    fast.confirmedSpeedup = 9.1;
    data.apply(twoIslands({own, fast}, {{0, {0, 0, 0}, 1, 2.0}, {0, {1, 1, 0}, 2, 9.1}, {1, {1, 1, 0}, 2, 9.1}}));
    QVERIFY(drawn(&islands));
    const QStringList lanes = islands.laneLabels();
    QCOMPARE(lanes.size(), 2);
    QVERIFY2(lanes[0].contains(QStringLiteral("best 9.100× (#2 from island 1)")), qPrintable(lanes[0]));
    QVERIFY2(lanes[1].contains(QStringLiteral("best 9.100× (#2)")), qPrintable(lanes[1]));
    QVERIFY2(!lanes[1].contains(QStringLiteral("from island")), qPrintable(lanes[1]));

    // The baseline belongs to every island: where it is a lane's best, it came from nowhere else.
    RunData seeded;
    IslandsView seedLanes(&seeded, nullptr);
    QVERIFY(shownAt(&seedLanes, QSize(700, 420)));
    CandidateRow baseline = row(1, {0, 0, 0}, 1.0, true, 0, 0);
    baseline.origin = model::Origin::Seed;
    baseline.confirmedSpeedup = 1.0;
    seeded.apply(twoIslands({baseline}, {{0, {0, 0, 0}, 1, 1.0}, {1, {0, 0, 0}, 1, 1.0}}));
    QVERIFY(drawn(&seedLanes));
    QVERIFY2(seedLanes.laneLabels()[1].contains(QStringLiteral("best 1.000× (#1)")),
             qPrintable(seedLanes.laneLabels()[1]));
}

// An archive cell can hold a kernel measured once (9.3x) over one whose re-measurement came out
// lower (14.5x first, 8.9x confirmed): the lane still names its confirmed best, which may be the
// run's best, and shows the one-off measurement beside it as unconfirmed.
void TestPlots::islandsShowTheirConfirmedBestOutsideTheArchive() {
    RunData data;
    IslandsView islands(&data, nullptr);
    QVERIFY(shownAt(&islands, QSize(700, 420)));
    CandidateRow once = row(1, {1, 1, 0}, 9.278, true, 1, 1);
    CandidateRow remeasured = row(2, {1, 1, 0}, 14.48, true, 1, 2);
    remeasured.confirmedSpeedup = 8.898;
    CandidateRow other = row(3, {0, 0, 0}, 2.0, true, 0, 0);
    RunDelta d = twoIslands({once, remeasured, other}, {{0, {0, 0, 0}, 3, 2.0}, {1, {1, 1, 0}, 1, 9.278}});
    d.run.bestCandidate = 2;
    d.run.bestSpeedup = 8.898;
    data.apply(d);
    QVERIFY(drawn(&islands));
    const QStringList lanes = islands.laneLabels();
    QCOMPARE(lanes.size(), 2);
    QVERIFY2(lanes[1].contains(QStringLiteral("best 8.898× (#2)")), qPrintable(lanes[1]));
    QVERIFY2(lanes[1].contains(QStringLiteral("9.278× unconfirmed (#1)")), qPrintable(lanes[1]));
    QVERIFY2(lanes[0].contains(QStringLiteral("no confirmed best")), qPrintable(lanes[0]));
    QVERIFY2(!lanes[0].contains(QStringLiteral("#2")), qPrintable(lanes[0])); // not island 0's
}

// Generations are whole numbers: a short run's axis does not read 0.5 or 2.5, a long one's thins out.
void TestPlots::generationAxesTickWholeGenerations() {
    RunData data;
    IslandsView islands(&data, nullptr);
    ProgressPlot progress(&data);
    for (QWidget* view : std::initializer_list<QWidget*>{&islands, &progress})
        QVERIFY(shownAt(view, QSize(700, 420)));
    for (int generations : {2, 7, 130}) {
        RunDelta d = delta(true);
        d.islands = 2;
        for (int g = 0; g < generations; ++g)
            d.added << row(g + 1, {0, 0, 0}, 1.0 + g * 0.01, true, g % 2, g);
        data.apply(d);
        QVERIFY(drawn(&islands) && drawn(&progress));
        for (QWidget* view : std::initializer_list<QWidget*>{&islands, &progress}) {
            auto* plot = view->findChild<QCustomPlot*>();
            plot->replot();
            const QVector<double> ticks = plot->xAxis->tickVector();
            QVERIFY(ticks.size() >= 2);
            for (double t : ticks)
                QVERIFY2(t == std::round(t),
                         qPrintable(QStringLiteral("%1 generations: a tick at %2").arg(generations).arg(t)));
            QCOMPARE(plot->xAxis->label(), QStringLiteral("generation"));
        }
    }
}

// A stored run without roofline figures does not show an empty plot without a word.
void TestPlots::rooflineSaysWhyItIsEmpty() {
    RunData data;
    RooflineView view(&data, nullptr);
    view.resize(600, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    RunDelta d = delta(true);
    for (qint64 id = 1; id <= 3; ++id) {
        CandidateRow r = row(id, {0, 0, 0}, 1.0 + static_cast<double>(id) / 10.0);
        r.candidateUs = 40.0;
        d.added << r; // timed, but without FLOP and byte figures
    }
    data.apply(d);
    QVERIFY(drawn(&view));
    QVERIFY2(view.note().contains(QStringLiteral("no roofline data")), qPrintable(view.note()));
    QVERIFY2(view.note().contains(QStringLiteral("3 timed candidates")), qPrintable(view.note()));

    // With points, the note is about the roofs only.
    data.apply(syntheticRun(60, 2));
    QVERIFY(drawn(&view));
    QVERIFY2(!view.note().contains(QStringLiteral("no roofline data")), qPrintable(view.note()));
}

namespace {

// The texts of the roofline's visible labels, and in `overlap` the first two that print over each
// other (empty when none do).
QStringList roofLabels(QCustomPlot* plot, QString* overlap) {
    QStringList names;
    QList<QRect> boxes;
    overlap->clear();
    for (int i = 0; i < plot->itemCount(); ++i) {
        const auto* label = qobject_cast<QCPItemText*>(plot->item(i));
        if (!label || label->text().isEmpty() || !label->visible())
            continue;
        const QPointF at = label->position->pixelPosition();
        QRect box = QFontMetrics(label->font()).boundingRect(label->text());
        const Qt::Alignment a = label->positionAlignment();
        box.moveLeft(a & Qt::AlignRight ? qRound(at.x()) - box.width() : qRound(at.x()));
        box.moveTop(a & Qt::AlignBottom ? qRound(at.y()) - box.height() : qRound(at.y()));
        for (int j = 0; j < boxes.size() && overlap->isEmpty(); ++j)
            if (box.intersects(boxes[j]))
                *overlap = label->text() + QStringLiteral(" over ") + names[j];
        names << label->text();
        boxes << box;
    }
    return names;
}

} // namespace

// An H200's roofs (as its worker measures them): every compute roof is named by its precision and
// instruction, and no two labels print over each other, though TF32 wgmma, FP16 mma.sync and the
// wgmma roofs lie within a factor 1.3-2 of each other; and so again after the window is made
// shorter (where a label goes depends on the pixels a decade takes).
void TestPlots::rooflineLabelsEveryHopperRoofApart() {
    RunData data;
    CandidateSelection selection;
    RooflineView view(&data, &selection);
    view.resize(640, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    RunDelta run = syntheticRun(60, 2);
    diagnose::Ceilings& c = *run.ceilings;
    c.dramBytes = 4.6e12;
    c.l2Bytes = 1.1e13;
    c.fp32Flops = 6.5e13;
    c.tf32TensorFlops = 3.18e14;
    c.tf32WgmmaFlops = 4.9e14;
    c.fp16TensorFlops = 6.3e14;
    c.bf16TensorFlops = 6.3e14;
    c.fp16WgmmaFlops = 9.72e14;
    c.bf16WgmmaFlops = 9.32e14;
    data.apply(run);
    QVERIFY(drawn(&view));
    QCustomPlot* plot = view.plot();
    QString overlap;
    roofLabels(plot, &overlap);
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));

    view.resize(640, 440);
    QTRY_VERIFY2((roofLabels(plot, &overlap), overlap.isEmpty()), qPrintable(overlap));
    snapshot(&view, QStringLiteral("roofline-hopper"));
    const QStringList names = roofLabels(plot, &overlap);
    for (const QString& roof :
         {QStringLiteral("FP32 65"), QStringLiteral("TF32 tensor (mma.sync) 318"),
          QStringLiteral("TF32 tensor (wgmma) 490"), QStringLiteral("FP16/BF16 tensor (mma.sync) 630"),
          QStringLiteral("FP16/BF16 tensor (wgmma) 972")})
        QVERIFY2(names.filter(roof).size() == 1,
                 qPrintable(roof + QStringLiteral(" in ") + names.join(QStringLiteral(" | "))));
    QVERIFY2(names.filter(QStringLiteral("3xTF32")).isEmpty(), qPrintable(names.join(QStringLiteral(" | "))));

    // Float32 kernels held to the TF32 wgmma roof in the task's FLOPs: a float32-accurate (3xTF32)
    // one can reach a third of it, and that third is drawn and named beside the others. Kernels
    // past the third are not issuing three products per product: it is not their ceiling.
    auto heldTo = [&run](double splitTf32Fraction) {
        RunDelta split;
        for (const CandidateRow& r : run.added) {
            if (!r.hasRoofline || r.id % 3 != 0)
                continue;
            CandidateRow row = r;
            row.peakName = QStringLiteral("tf32_wgmma");
            row.splitTf32Fraction = splitTf32Fraction;
            split.changed.push_back(row);
        }
        return split;
    };
    const RunDelta past = heldTo(1.4);
    QVERIFY(!past.changed.isEmpty());
    data.apply(past);
    QTRY_VERIFY(roofLabels(plot, &overlap).filter(QStringLiteral("TF32 tensor (wgmma)")).size() == 1);
    QVERIFY2(roofLabels(plot, &overlap).filter(QStringLiteral("3xTF32")).isEmpty(),
             qPrintable(roofLabels(plot, &overlap).join(QStringLiteral(" | "))));
    data.apply(heldTo(0.5));
    QTRY_VERIFY(roofLabels(plot, &overlap).filter(QStringLiteral("3xTF32")).size() == 1);
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
    const QStringList withThird = roofLabels(plot, &overlap);
    QVERIFY2(withThird.filter(QStringLiteral("3xTF32 (wgmma) 163")).size() == 1,
             qPrintable(withThird.join(QStringLiteral(" | "))));
    QVERIFY2(withThird.filter(QStringLiteral("3xTF32 (mma.sync)")).isEmpty(),
             qPrintable(withThird.join(QStringLiteral(" | "))));
    snapshot(&view, QStringLiteral("roofline-hopper-3xtf32"));
}

// A view in a background dock tab redraws only when shown; exporting it draws what the run holds
// first, so the picture is not empty or of an earlier run.
void TestPlots::exportDrawsAViewInABackgroundTab() {
    QMainWindow window;
    RunData data;
    auto* front = new QDockWidget(QStringLiteral("front"), &window);
    front->setWidget(new QWidget);
    auto* back = new QDockWidget(QStringLiteral("back"), &window);
    auto* progress = new ProgressPlot(&data);
    back->setWidget(progress);
    window.addDockWidget(Qt::RightDockWidgetArea, front);
    window.tabifyDockWidget(front, back);
    window.resize(900, 600);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    front->raise();
    QTRY_VERIFY(hiddenInShownWindow(progress));

    data.apply(syntheticRun(400, 4));
    // The refresh waits for the tab to come to the front: the plot is still that of no run.
    QVERIFY(progress->findChild<plotstyle::RefreshTimer*>()->pending());
    QVERIFY(!progress->findChild<plotstyle::RefreshTimer*>()->isActive());
    QCOMPARE(progress->plot()->graphCount(), 3 + 2 * 1);
    plotstyle::flushRefreshes(back);
    QCOMPARE(progress->plot()->graphCount(), 3 + 2 * 4);
    QVERIFY(progress->islandBest(0) > 1.0);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("progress.png"));
    QVERIFY(exportPlot(progress->plot(), file));
    QVERIFY(!QImage(file).isNull());

    // Brought to the front, a plot filled edge to edge by its QCustomPlot counts as shown.
    back->raise();
    QTRY_VERIFY(!hiddenInShownWindow(progress));
}

QTEST_MAIN(TestPlots)
#include "tst_plots.moc"

void TestPlots::plotsFollowThePalette_data() {
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
}

void TestPlots::plotsFollowThePalette() {
    QFETCH(bool, dark);
    AppliedPalette applied(dark ? theme::darkPalette() : theme::lightPalette());
    RunData data;
    CandidateSelection selection;
    HeatmapView heatmap(&data, &selection);
    IslandsView islands(&data, &selection);
    ProgressPlot progress(&data);
    RooflineView roofline(&data, &selection);
    const QList<QWidget*> views{&heatmap, &islands, &progress, &roofline};
    for (QWidget* view : views)
        view->resize(800, 420);
    // Empty first: the notes that say so are drawn.
    for (QWidget* view : views)
        verifyPlotColours(view->findChild<QCustomPlot*>(), dark);
    data.apply(syntheticRun(300, 3));
    for (QWidget* view : views) {
        QVERIFY(drawn(view));
        verifyPlotColours(view->findChild<QCustomPlot*>(), dark);
    }
    // Empty cells stay apart from the background: their grey is a step off it.
    const QColor nan =
        plotstyle::speedupGradient(heatmap.palette()).color(std::numeric_limits<double>::quiet_NaN(), QCPRange(0, 1));
    const double base = heatmap.palette().color(QPalette::Base).lightnessF();
    QVERIFY(std::abs(nan.lightnessF() - base) > 0.04);
    QVERIFY(std::abs(nan.lightnessF() - base) < 0.2);
    snapshot(&heatmap, dark ? QStringLiteral("heatmap-dark") : QStringLiteral("heatmap-light"));
    snapshot(&roofline, dark ? QStringLiteral("roofline-dark") : QStringLiteral("roofline-light"));
}

void TestPlots::plotsRestyleWhenThePaletteChanges() {
    AppliedPalette light(theme::lightPalette());
    RunData data;
    CandidateSelection selection;
    QMainWindow window;
    auto* heatmap = new HeatmapView(&data, &selection);
    auto* islands = new IslandsView(&data, &selection);
    auto* progress = new ProgressPlot(&data);
    auto* roofline = new RooflineView(&data, &selection);
    // Two views in view, two in background tabs: both kinds follow.
    QList<QDockWidget*> docks;
    for (QWidget* view : QList<QWidget*>{heatmap, islands, progress, roofline}) {
        auto* dock = new QDockWidget(&window);
        dock->setWidget(view);
        window.addDockWidget(Qt::RightDockWidgetArea, dock);
        docks << dock;
    }
    window.tabifyDockWidget(docks[0], docks[1]);
    window.tabifyDockWidget(docks[2], docks[3]);
    window.resize(1000, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    data.apply(syntheticRun(200, 2));
    QVERIFY(drawn(&window));
    for (QCustomPlot* plot : window.findChildren<QCustomPlot*>())
        verifyPlotColours(plot, false);
    {
        AppliedPalette dark(theme::darkPalette());
        for (QCustomPlot* plot : window.findChildren<QCustomPlot*>())
            verifyPlotColours(plot, true);
        plotstyle::flushRefreshes(&window);
        for (QCustomPlot* plot : window.findChildren<QCustomPlot*>())
            verifyPlotColours(plot, true);
    }
    for (QCustomPlot* plot : window.findChildren<QCustomPlot*>())
        verifyPlotColours(plot, false);
}
