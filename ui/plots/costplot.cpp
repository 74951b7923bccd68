#include "costplot.h"

#include "model/kinds.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "rundata.h"
#include "theme.h"

#include <QLocale>

#include <qcustomplot.h>

#include <algorithm>
#include <map>

namespace kforge::ui {

CostPlot::CostPlot(RunData* data, QWidget* parent) : QWidget(parent), m_data(data) {
    m_plot = plotstyle::createSolePlot(this, QSize(280, 160), plotstyle::Hover::Off);
    plotstyle::generationAxis(m_plot->xAxis);
    m_plot->yAxis->setLabel(tr("LLM spend (USD)"));
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setLabel(tr("tokens"));
    m_plot->yAxis2->setNumberFormat(QStringLiteral("gb"));
    plotstyle::applyPalette(m_plot); // the second axis too

    m_spend = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_spend->setName(tr("spend per generation (USD, priced calls)"));
    m_spend->setWidth(0.6);
    m_tokens = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_tokens->setName(tr("tokens per generation (input + output)"));
    m_tokens->setLineStyle(QCPGraph::lsLine);

    m_note = plotstyle::cornerNote(m_plot);
    m_empty = plotstyle::centredNote(m_plot);

    const auto applyPalette = [this] {
        const QPalette palette = m_plot->palette();
        QColor bar = plotstyle::islandColor(0);
        m_spend->setPen(QPen(theme::isDark(palette) ? bar.lighter(130) : bar.darker(120), 1));
        bar.setAlpha(170);
        m_spend->setBrush(bar);
        const QColor tokens = plotstyle::islandColor(1);
        m_tokens->setPen(QPen(tokens, 1.8));
        m_tokens->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(tokens, 1.2), palette.color(QPalette::Base), 5));
    };
    applyPalette();
    theme::onPaletteChange(m_plot, applyPalette);
    plotstyle::legendBelow(m_plot);
    addExportMenu(m_plot, QStringLiteral("llm-cost"));

    m_refresh = new plotstyle::RefreshTimer(this, 200, [this] { refresh(); });
    connect(data, &RunData::cleared, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(data, &RunData::llmCallsAdded, m_refresh, &plotstyle::RefreshTimer::schedule);
    connect(data, &RunData::llmCallsChanged, m_refresh, &plotstyle::RefreshTimer::schedule);
    refresh();
}

QMap<int, double> CostPlot::spendByGeneration() const {
    QMap<int, double> out;
    for (auto it = m_spend->data()->constBegin(); it != m_spend->data()->constEnd(); ++it)
        out.insert(static_cast<int>(it->key), it->value);
    return out;
}

QMap<int, double> CostPlot::tokensByGeneration() const {
    QMap<int, double> out;
    for (auto it = m_tokens->data()->constBegin(); it != m_tokens->data()->constEnd(); ++it)
        out.insert(static_cast<int>(it->key), it->value);
    return out;
}

QString CostPlot::note() const {
    return m_empty->visible() ? m_empty->text() : m_note->text();
}

void CostPlot::refresh() {
    m_refresh->stop();
    struct Generation {
        double usd = 0.0;
        qint64 tokens = 0;
    };
    std::map<int, Generation> generations;
    double usd = 0.0;
    qint64 tokens = 0;
    int calls = 0, inFlight = 0, unpriced = 0, unreported = 0;
    if (m_data)
        for (const auto& call : m_data->llmCalls()) {
            if (call.status == QLatin1String("in-flight")) {
                ++inFlight; // nothing spent that is known yet
                continue;
            }
            ++calls;
            Generation& g = generations[std::max(0, call.generation)];
            if (call.costUsd) {
                g.usd += *call.costUsd;
                usd += *call.costUsd;
            } else {
                ++unpriced;
            }
            if (call.inputTokens || call.outputTokens) {
                const qint64 n = call.inputTokens.value_or(0) + call.outputTokens.value_or(0);
                g.tokens += n;
                tokens += n;
            } else {
                ++unreported;
            }
        }
    QVector<double> keys, spend, used;
    for (const auto& [generation, g] : generations) {
        keys << generation;
        spend << g.usd;
        used << static_cast<double>(g.tokens);
    }
    m_spend->setData(keys, spend, true);
    m_tokens->setData(keys, used, true);

    const int last = generations.empty() ? 10 : std::max(generations.rbegin()->first, 1);
    m_plot->xAxis->setRange(-0.7, last + 0.7);
    double maxUsd = 0.0, maxTokens = 0.0;
    for (const double v : spend)
        maxUsd = std::max(maxUsd, v);
    for (const double v : used)
        maxTokens = std::max(maxTokens, v);
    // Headroom for the totals written at the top.
    m_plot->yAxis->setRange(0.0, maxUsd > 0.0 ? maxUsd * 1.35 : 0.01);
    m_plot->yAxis2->setRange(0.0, maxTokens > 0.0 ? maxTokens * 1.35 : 1000.0);

    const QLocale locale;
    QString text;
    if (calls > 0) {
        text = tr("%1 calls, $%2 spent, %3 tokens").arg(calls).arg(usd, 0, 'f', 4).arg(locale.toString(tokens));
        if (unpriced > 0)
            text += tr("; %1 without a known price (not in the spend)").arg(unpriced);
        if (unreported > 0)
            text += tr("; %1 without token counts").arg(unreported);
    }
    m_note->setText(text);
    m_note->setVisible(!text.isEmpty());
    const bool empty = calls == 0 && m_data && m_data->hasRun();
    if (empty) {
        const QStringList models = m_data->llmModels();
        const model::RunState state = m_data->run().state;
        const bool ended =
            state == model::RunState::Finished || state == model::RunState::Stopped || state == model::RunState::Failed;
        QString why;
        if (models.isEmpty())
            why = tr("This run used no language model\n"
                     "Its candidates came from the seeds, the tuner and the expert library;\n"
                     "a run with language-model proposers shows their spend and tokens here");
        else if (ended)
            why = tr("No language model calls in this run\nModels: %1").arg(models.join(QStringLiteral(", ")));
        else
            why = tr("No language model call has finished yet%1\nModels: %2")
                      .arg(inFlight > 0 ? tr(" (%n in flight)", nullptr, inFlight) : QString(),
                           models.join(QStringLiteral(", ")));
        m_empty->setText(why);
    }
    m_empty->setVisible(empty);
    // No made-up scale under the note: the ranges above are placeholders until a call is made.
    m_plot->yAxis->setTickLabels(!empty);
    m_plot->yAxis2->setTickLabels(!empty);
    plotstyle::replotWhenShown(m_plot);
}

} // namespace kforge::ui
