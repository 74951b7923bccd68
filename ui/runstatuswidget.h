#pragma once
// The status bar's run summary: state and generation, evaluations against the budget, evaluations
// per second, the confirmed best speedup, what the language models cost so far, and the time left;
// a progress bar while a large stored run is still loading. Live figures come from the engine's
// progress; a stored run shows what its record and LLM calls say. On a narrow screen the figures
// are cut short ("…", the whole text as a tooltip) rather than widening the window.

#include <QWidget>

class QProgressBar;

namespace kforge::ui {

class ElidedLabel;
class RunSession;

class RunStatusWidget : public QWidget {
    Q_OBJECT
public:
    explicit RunStatusWidget(RunSession* session, QWidget* parent = nullptr);

    QString text() const; // everything shown, for tests and the window title

private:
    void update();

    RunSession* m_session;
    ElidedLabel* m_state = nullptr;
    ElidedLabel* m_evaluations = nullptr;
    ElidedLabel* m_rate = nullptr;
    ElidedLabel* m_best = nullptr;
    ElidedLabel* m_pytorch = nullptr; // speedups over PyTorch eager and torch.compile
    ElidedLabel* m_cost = nullptr;
    ElidedLabel* m_eta = nullptr;
    QProgressBar* m_loading = nullptr;
};

QString formatDuration(double seconds); // "42 s", "3 min 5 s", "2 h 10 min"

} // namespace kforge::ui
