#include "runcomparedialog.h"

#include "candidatedetails.h"
#include "model/candidate.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "runsession.h"
#include "sidebysidediff.h"
#include "timeformat.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <map>

namespace kforge::ui {

namespace {

const CandidateRow* bestRow(const RunData& data) {
    if (const qint64 best = data.run().bestCandidate)
        if (const CandidateRow* r = data.candidate(best))
            return r;
    const CandidateRow* best = nullptr;
    for (int i = 0; i < data.candidateCount(); ++i) {
        const CandidateRow& r = data.candidateAt(i);
        if (r.correct && (!best || r.judgedSpeedup() > best->judgedSpeedup()))
            best = &r;
    }
    return best;
}

QString runName(const RunSession& s) {
    const auto& run = s.data()->run();
    return QObject::tr("run %1 of %2").arg(run.id).arg(QFileInfo(s.storePath()).fileName());
}

} // namespace

RunCompareDialog::RunCompareDialog(RunSession* shown, const QString& otherStore, qint64 otherRun, QWidget* parent)
    : QDialog(parent), m_shown(shown) {
    setObjectName(QStringLiteral("runCompare"));
    setWindowTitle(tr("Compare Runs"));
    m_other = new RunSession(this);

    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    m_problem->hide();
    m_summary = new QTableWidget(this);
    m_summary->setObjectName(QStringLiteral("runSummary"));
    m_summary->setColumnCount(2);
    m_summary->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_summary->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_summary->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    m_plot = plotstyle::createPlot(this, QSize(260, 160), plotstyle::Hover::Off);
    m_plot->xAxis->setLabel(tr("generation"));
    m_plot->yAxis->setLabel(tr("best speedup so far (×)"));
    for (int side = 0; side < 2; ++side) {
        m_curves[side] = m_plot->addGraph();
        m_curves[side]->setLineStyle(QCPGraph::lsStepLeft);
        m_curves[side]->setPen(QPen(plotstyle::islandColor(side), 2));
    }
    plotstyle::legendBelow(m_plot);
    addExportMenu(m_plot, QStringLiteral("runs-progress"));

    m_roofline = plotstyle::createPlot(this, QSize(260, 160), plotstyle::Hover::Off);
    m_roofline->xAxis->setLabel(tr("arithmetic intensity (FLOP/byte)"));
    m_roofline->yAxis->setLabel(tr("achieved FLOP/s"));
    for (QCPAxis* axis : {m_roofline->xAxis, m_roofline->yAxis}) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    }
    m_roofs = m_roofline->addGraph();
    m_roofs->setName(tr("roofs of the shown run's device"));
    m_roofs->setPen(QPen(plotstyle::failedColor().darker(150), 1.2));
    for (int side = 0; side < 2; ++side) {
        m_points[side] = m_roofline->addGraph();
        m_points[side]->setLineStyle(QCPGraph::lsNone);
        QColor fill = plotstyle::islandColor(side);
        fill.setAlpha(150);
        m_points[side]->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(plotstyle::islandColor(side).darker(130), 0.8), fill, 6));
    }
    m_roofline->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plotstyle::legendBelow(m_roofline);
    addExportMenu(m_roofline, QStringLiteral("runs-roofline"));
    auto* plots = new QTabWidget(this);
    plots->setDocumentMode(true);
    plots->addTab(m_plot, tr("Progress"));
    plots->addTab(m_roofline, tr("Roofline"));

    m_metrics = new QLabel(this);
    m_metrics->setObjectName(QStringLiteral("runCompareMetrics"));
    m_metrics->setTextFormat(Qt::RichText);
    m_metrics->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_diff = new SideBySideDiff(this);

    auto* top = new QSplitter(Qt::Horizontal, this);
    top->addWidget(m_summary);
    top->addWidget(plots);
    auto* kernels = new QWidget(this);
    auto* kernelLayout = new QVBoxLayout(kernels);
    kernelLayout->setContentsMargins(0, 0, 0, 0);
    kernelLayout->addWidget(m_metrics);
    kernelLayout->addWidget(m_diff, 1);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(kernels);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_problem);
    layout->addWidget(split, 1);
    resize(1100, 760);

    m_refresh = new plotstyle::RefreshTimer(this, 200, [this] { refresh(); });
    for (RunSession* s : {m_shown.data(), m_other}) {
        if (!s)
            continue;
        // Rebuilt from whole runs: once per burst of chunks, not once per chunk.
        m_refresh->followCandidates(s->data());
        connect(s, &RunSession::opened, m_refresh, &plotstyle::RefreshTimer::schedule);
        connect(s->details(), &CandidateDetails::loaded, this, &RunCompareDialog::refreshKernels);
    }
    connect(m_other, &RunSession::failed, this, [this](const QString& message) {
        m_problem->setText(tr("Cannot show the other run: %1").arg(message));
        m_problem->show();
    });
    m_other->openStored(otherStore, otherRun);
    refresh();
}

RunSession* RunCompareDialog::session(int side) const {
    return side == 0 ? m_shown.data() : m_other;
}

qint64 RunCompareDialog::bestOf(int side) const {
    const RunSession* s = session(side);
    const CandidateRow* r = s ? bestRow(*s->data()) : nullptr;
    return r ? r->id : 0;
}

void RunCompareDialog::refresh() {
    m_refresh->stop();
    const QStringList names = {
        tr("Run"),         tr("Task"), tr("Backend"),          tr("Device"),           tr("Candidates"),
        tr("Evaluations"), tr("Best"), tr("Best kernel time"), tr("Speedups are over")};
    m_summary->setRowCount(static_cast<int>(names.size()));
    m_summary->setVerticalHeaderLabels(names);
    QStringList headers;
    for (int side = 0; side < 2; ++side) {
        const RunSession* s = session(side);
        const RunData* data = s ? s->data() : nullptr;
        const bool has = data && data->hasRun();
        headers << (has ? runName(*s) : tr("(reading…)"));
        const CandidateRow* best = has ? bestRow(*data) : nullptr;
        const bool confirmed = has && best && data->run().bestCandidate == best->id;
        const QStringList values = {
            has ? data->run().name : QString(),
            has ? data->run().task
                      + (data->run().variant.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(data->run().variant))
                : QString(),
            has ? model::backendName(data->run().backend) : QString(),
            has ? data->deviceModels().join(QStringLiteral(", ")) : QString(),
            has ? QString::number(data->candidateCount()) : QString(),
            has ? QString::number(data->run().evaluations) : QString(),
            best ? tr("%1 (#%2%3)")
                       .arg(plotstyle::speedup(best->judgedSpeedup()))
                       .arg(best->id)
                       .arg(confirmed ? QString() : tr(", unconfirmed"))
                 : tr("none yet"),
            best ? formatKernelTime(best->candidateUs) : QString(),
            has ? data->pytorch().speedupBase : QString()};
        for (int row = 0; row < values.size(); ++row)
            m_summary->setItem(row, side, new QTableWidgetItem(values[row]));

        // Best so far by generation: the judged (confirmed where re-measured) speedup.
        std::map<int, double> bestAt;
        if (has)
            for (int i = 0; i < data->candidateCount(); ++i) {
                const CandidateRow& r = data->candidateAt(i);
                if (r.correct && r.generation >= 0)
                    bestAt[r.generation] = std::max(bestAt[r.generation], r.judgedSpeedup());
            }
        QVector<double> xs, ys;
        double running = 0.0;
        for (const auto& [generation, value] : bestAt) {
            running = std::max(running, value);
            xs << generation;
            ys << running;
        }
        m_curves[side]->setData(xs, ys, true);
        m_curves[side]->setName(side == 0 ? tr("%1 (shown)").arg(headers.last()) : headers.last());

        QVector<double> ix, fy;
        if (has)
            for (int i = 0; i < data->candidateCount(); ++i) {
                const CandidateRow& r = data->candidateAt(i);
                if (r.correct && r.hasRoofline) {
                    ix << r.intensity;
                    fy << r.achievedFlops;
                }
            }
        m_points[side]->setData(ix, fy);
        m_points[side]->setName(m_curves[side]->name());
    }
    refreshRoofline();
    m_summary->setHorizontalHeaderLabels(headers);
    m_plot->rescaleAxes();
    m_plot->yAxis->setRangeLower(0.0);
    m_plot->yAxis->setRangeUpper(std::max(1.5, m_plot->yAxis->range().upper * 1.1));
    plotstyle::replotWhenShown(m_plot);
    refreshKernels();
}

void RunCompareDialog::refreshRoofline() {
    bool found = false;
    QCPRange xs, ys;
    for (QCPGraph* g : m_points) {
        bool ok = false;
        const QCPRange x = g->getKeyRange(ok, QCP::sdPositive);
        if (!ok)
            continue;
        const QCPRange y = g->getValueRange(ok, QCP::sdPositive);
        xs = found ? QCPRange(std::min(xs.lower, x.lower), std::max(xs.upper, x.upper)) : x;
        ys = found ? QCPRange(std::min(ys.lower, y.lower), std::max(ys.upper, y.upper)) : y;
        found = true;
    }
    if (!found) {
        xs = QCPRange(0.1, 100.0);
        ys = QCPRange(1e9, 1e13);
    }
    xs = QCPRange(xs.lower / 4.0, xs.upper * 4.0);
    // The shown run's roofs: DRAM bandwidth times intensity, up to the fastest compute peak.
    const diagnose::Ceilings c = m_shown ? m_shown->data()->ceilings() : diagnose::Ceilings{};
    QVector<double> rx, ry;
    if (c.valid()) {
        const double peak = c.fastestFlops();
        const double ridge = peak / c.dramBytes;
        xs = QCPRange(std::min(xs.lower, ridge / 8.0), std::max(xs.upper, ridge * 4.0));
        rx << xs.lower << ridge << xs.upper;
        ry << c.dramBytes * xs.lower << peak << peak;
        ys = QCPRange(std::min(ys.lower, c.dramBytes * xs.lower), std::max(ys.upper, peak));
    }
    m_roofs->setData(rx, ry, true);
    m_roofline->xAxis->setRange(xs);
    m_roofline->yAxis->setRange(ys.lower / 2.0, ys.upper * 3.0);
    plotstyle::replotWhenShown(m_roofline);
}

void RunCompareDialog::refreshKernels() {
    const CandidateDetail* details[2] = {nullptr, nullptr};
    qint64 ids[2] = {bestOf(0), bestOf(1)};
    for (int side = 0; side < 2; ++side) {
        RunSession* s = session(side);
        if (!s || !ids[side])
            return;
        details[side] = s->details()->details(ids[side]); // asks for it when not read yet
    }
    if (!details[0] || !details[1] || (ids[0] == m_kernelsShown[0] && ids[1] == m_kernelsShown[1]))
        return;
    m_kernelsShown[0] = ids[0];
    m_kernelsShown[1] = ids[1];
    const auto title = [this](int side, qint64 id) { return tr("%1: best #%2").arg(runName(*session(side))).arg(id); };
    m_diff->setTexts(title(0, ids[0]), details[0]->candidate.source, title(1, ids[1]), details[1]->candidate.source,
                     session(0)->data()->run().backend,
                     model::formatParamChanges(details[0]->candidate.params, details[1]->candidate.params));
    m_metrics->setText(metricsTable(compareMetrics(*details[0], *details[1]), ids[0], ids[1], palette()));
}

} // namespace kforge::ui
