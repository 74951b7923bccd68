#pragma once
// The workbench window. For now: the task list, evaluation of a task's baseline in a worker, and
// the evaluation report; the run views (islands, heatmap, diffs, roofline) build on it.

#include <QHash>
#include <QMainWindow>
#include <QPointer>

class QListView;
class QPlainTextEdit;
class QStandardItemModel;
class QAction;
class QLabel;

namespace kforge::eval {
class WorkerPool;
}
namespace kforge::protocol {
struct EvaluateResult;
}

namespace kforge::ui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Selects the named task and evaluates its baseline: on OpenCL where the task has an OpenCL
    // reference, else on CUDA.
    void evaluateBaseline(const QString& taskName);

private:
    void createActions();
    void loadTasks();
    void evaluateSelected();
    void showResult(qint64 ticket, const protocol::EvaluateResult& result);
    void showAbout();
    QString selectedTask() const;

    QListView* m_taskView = nullptr;
    QStandardItemModel* m_taskModel = nullptr;
    QPlainTextEdit* m_report = nullptr;
    QLabel* m_statusLabel = nullptr;
    QAction* m_evaluateAction = nullptr;
    QHash<QString, QPointer<eval::WorkerPool>> m_pools; // one per backend, started on first use
    qint64 m_pendingTicket = -1;
    QString m_pendingTask;
    QString m_pendingBackend;
};

} // namespace kforge::ui
