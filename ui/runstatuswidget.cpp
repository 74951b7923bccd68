#include "runstatuswidget.h"

#include "diagnose/roofline.h"
#include "elidedlabel.h"
#include "runsession.h"
#include "store/runexport.h"
#include "timeformat.h"

#include <QHBoxLayout>
#include <QProgressBar>

#include <cmath>

namespace kforge::ui {

QString formatDuration(double seconds) {
    if (seconds < 0)
        return QStringLiteral("—");
    const qint64 s = std::llround(seconds);
    if (s < 60)
        return QObject::tr("%1 s").arg(s);
    if (s < 3600)
        return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

RunStatusWidget::RunStatusWidget(RunSession* session, QWidget* parent) : QWidget(parent), m_session(session) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(14);
    m_state = new ElidedLabel;
    m_evaluations = new ElidedLabel;
    m_rate = new ElidedLabel;
    m_best = new ElidedLabel;
    m_pytorch = new ElidedLabel;
    m_cost = new ElidedLabel;
    m_eta = new ElidedLabel;
    m_evaluations->setHint(tr("Evaluations counted against the budget (re-measurements included)"));
    m_rate->setHint(tr("Evaluations per second in this session"));
    m_best->setHint(tr("The confirmed best: verified, and re-measured against its yardstick in the same run "
                       "(the task's baseline kernel, or PyTorch eager for a task that has none)"));
    m_cost->setHint(tr("Language-model calls, tokens and known cost so far"));
    m_eta->setHint(tr("Time until the evaluation budget is spent, at the current rate"));
    m_loading = new QProgressBar;
    m_loading->setMaximumWidth(180);
    m_loading->setFormat(tr("loading %v / %m"));
    m_loading->hide();
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_state, m_evaluations, m_rate, m_best, m_pytorch, m_cost, m_eta, m_loading})
        layout->addWidget(w);
    layout->addStretch();

    auto* data = session->data();
    connect(data, &RunData::progressChanged, this, &RunStatusWidget::update);
    connect(data, &RunData::runChanged, this, &RunStatusWidget::update);
    connect(data, &RunData::cleared, this, &RunStatusWidget::update);
    connect(data, &RunData::llmCallsAdded, this, &RunStatusWidget::update);
    connect(session, &RunSession::stateChanged, this, &RunStatusWidget::update);
    update();
}

void RunStatusWidget::update() {
    const RunData* data = m_session->data();
    if (!data->hasRun() && !m_session->isLive()) {
        m_state->setFullText(tr("No run open — File ▸ New Run (Ctrl+N) or Open Run (Ctrl+O)"));
        for (ElidedLabel* l : {m_evaluations, m_rate, m_best, m_pytorch, m_cost, m_eta})
            l->setFullText({});
        m_loading->hide();
        return;
    }
    const auto& run = data->run();
    const auto& p = data->progress();
    const bool live = m_session->isLive();
    m_state->setFullText(
        live ? tr("<b>%1</b>, generation %2").arg(search::runStateName(m_session->state())).arg(p.generation)
             : (run.generation == 0 ? tr("<b>%1</b> (stored), 1 generation").arg(model::runStateName(run.state))
                                    : tr("<b>%1</b> (stored), %2 generations")
                                          .arg(model::runStateName(run.state))
                                          .arg(run.generation + 1)));
    const qint64 evaluations = live ? p.evaluations : run.evaluations;
    const qint64 budget =
        live ? p.budgetEvaluations : run.config.value(QStringLiteral("budget_evaluations")).toInteger();
    m_evaluations->setFullText(budget > 0 ? tr("%1 / %2 evaluations").arg(evaluations).arg(budget)
                                          : tr("%1 evaluations").arg(evaluations));
    m_rate->setFullText(live ? tr("%1 evals/s").arg(p.evaluationsPerSecond, 0, 'f', 2)
                             : tr("%1 of wall time").arg(formatDuration(run.wallSeconds)));
    const qint64 best = live && p.bestCandidate ? p.bestCandidate : run.bestCandidate;
    const double speedup = live && p.bestCandidate ? p.bestSpeedup : run.bestSpeedup;
    const auto& pytorch = data->pytorch();
    const QString base = live ? p.speedupBase : pytorch.speedupBase;
    m_best->setFullText(best ? tr("best <b>%1×</b> over %2 (#%3)").arg(speedup, 0, 'f', 3).arg(base).arg(best)
                             : tr("no confirmed best yet"));
    // Against PyTorch: the best's last comparison, else eager and torch.compile as timed at the start.
    if (pytorch.bestVsEager || pytorch.bestVsCompile) {
        QStringList parts;
        // A figure the paired rounds cannot tell from 1 says so; the tooltip has the interval.
        const auto tie = [](const std::optional<protocol::RatioInterval>& i) {
            return i && i->tie() ? tr(" (a tie)") : QString();
        };
        if (pytorch.bestVsEager)
            parts << tr("%1× eager%2").arg(*pytorch.bestVsEager, 0, 'f', 2).arg(tie(pytorch.bestVsEagerInterval));
        if (pytorch.bestVsCompile)
            parts << tr("%1× torch.compile%2")
                         .arg(*pytorch.bestVsCompile, 0, 'f', 2)
                         .arg(tie(pytorch.bestVsCompileInterval));
        if (pytorch.bestFractionOfBound)
            parts << tr("%1% of roofline bound%2")
                         .arg(*pytorch.bestFractionOfBound * 100.0, 0, 'f', 0)
                         .arg(diagnose::splitTf32Note(pytorch.bestSplitTf32Fraction.value_or(0.0)));
        m_pytorch->setFullText(tr("PyTorch: %1").arg(parts.join(QStringLiteral(", "))));
    } else if (pytorch.startEagerUs) {
        m_pytorch->setFullText(
            tr("PyTorch: eager %1, torch.compile %2 (compared with the best at the end)")
                .arg(formatKernelTime(*pytorch.startEagerUs),
                     pytorch.startCompileUs ? formatKernelTime(*pytorch.startCompileUs) : tr("not timed")));
    } else {
        m_pytorch->setFullText(data->complete() ? tr("PyTorch: no comparison") : QString());
    }
    m_pytorch->setHint(pytorch.text().trimmed());
    if (live) {
        m_cost->setFullText(p.llmCalls
                                ? tr("LLM: %1 calls, %2 tokens, $%3%4")
                                      .arg(p.llmCalls)
                                      .arg(p.llmTokens)
                                      .arg(p.llmUsd, 0, 'f', 4)
                                      .arg(p.llmUnknownCost ? tr(" (+%1 unpriced)").arg(p.llmUnknownCost) : QString())
                                : tr("LLM: none"));
        m_eta->setFullText(p.etaSeconds >= 0 ? tr("ETA %1").arg(formatDuration(p.etaSeconds)) : QString());
    } else {
        const auto spend = store::LlmSpend::of(data->llmCalls());
        m_cost->setFullText(spend.calls
                                ? tr("LLM: %1 calls, %2 tokens, $%3%4")
                                      .arg(spend.calls)
                                      .arg(spend.inputTokens + spend.outputTokens)
                                      .arg(spend.usd, 0, 'f', 4)
                                      .arg(spend.unknownCost ? tr(" (+%1 unpriced)").arg(spend.unknownCost) : QString())
                                : tr("LLM: none"));
        m_eta->setFullText({});
    }
    m_loading->setVisible(data->loading());
    if (data->loading()) {
        m_loading->setRange(0, static_cast<int>(std::max<qint64>(1, data->total())));
        m_loading->setValue(static_cast<int>(data->loaded()));
    }
}

QString RunStatusWidget::text() const {
    QStringList parts;
    for (ElidedLabel* l : {m_state, m_evaluations, m_rate, m_best, m_pytorch, m_cost, m_eta})
        if (!l->fullText().isEmpty())
            parts << l->fullText();
    return parts.join(QStringLiteral("  "));
}

} // namespace kforge::ui
