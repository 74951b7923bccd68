#pragma once
// New run: the task (built-in or the user's own, or any folder), backend and size variant, the
// search's shape (islands, children, migration), budgets (evaluations, wall time, LLM money and
// tokens), the proposers (experts, experience library, language models with their endpoints) and
// the run store file. Choices are checked before the dialog accepts, with the message naming the
// setting, and remembered (QSettings) for the next run.

#include "search/engine.h"

#include <QDialog>
#include <QPointer>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QListWidget;
class QSpinBox;

namespace kforge::eval {
class WorkerPool;
}

namespace kforge::ui {

class RunSetupDialog : public QDialog {
    Q_OBJECT
public:
    explicit RunSetupDialog(QWidget* parent = nullptr);

    // The engine set-up the choices describe; valid after accept() (or a successful check()).
    const search::Engine::Setup& setup() const { return m_setup; }

    // For tests and the demo: preselect a task and backend, and set the evaluation budget.
    void choose(const QString& task, const QString& backend, int evaluations);
    void setStorePath(const QString& path);
    void setExperiencePath(const QString& path);

public slots:
    // Builds the set-up from the fields; on a problem shows it and returns false.
    bool check();
    void accept() override;

private:
    void loadTasks();
    void taskChanged();
    void browseTask();
    void browseStore();
    void restoreChoices();
    void saveChoices() const;
    QString defaultStorePath() const;
    // A CUDA run whose workers all run here needs a GPU here: the CUDA worker is asked for its
    // devices (the GUI itself never touches the driver) before the dialog closes, so that a machine
    // without the driver is told so now, not by the run's first evaluations failing.
    bool needsDeviceCheck() const;
    void checkDevices();
    void devicesChecked(const QString& problem);
    void finishAccept();

    QListWidget* m_tasks = nullptr;
    QLabel* m_taskInfo = nullptr;
    QComboBox* m_backend = nullptr;
    QComboBox* m_variant = nullptr;
    QSpinBox* m_islands = nullptr;
    QSpinBox* m_children = nullptr;
    QSpinBox* m_migration = nullptr;
    QSpinBox* m_seed = nullptr;
    QSpinBox* m_workers = nullptr;
    QLineEdit* m_workersOn = nullptr; // --worker places, space-separated
    QLineEdit* m_slurmArgs = nullptr; // --slurm-args, enabled when a place is slurm
    QSpinBox* m_budgetEvaluations = nullptr;
    QDoubleSpinBox* m_budgetMinutes = nullptr;
    QCheckBox* m_pytorch = nullptr;      // time PyTorch eager and torch.compile (RunConfig::pytorch)
    QSpinBox* m_pytorchRounds = nullptr; // RunConfig::pytorchRounds
    QCheckBox* m_confirmBest = nullptr;  // RunConfig::confirmBest
    QDoubleSpinBox* m_reviewCeiling = nullptr;
    QDoubleSpinBox* m_memoryReviewCeiling = nullptr;
    QDoubleSpinBox* m_rejectCeiling = nullptr;
    QDoubleSpinBox* m_expertRate = nullptr;
    QCheckBox* m_useExperts = nullptr;
    QCheckBox* m_useExperience = nullptr;
    QCheckBox* m_useTuningCache = nullptr;
    QCheckBox* m_useLlm = nullptr;
    QLineEdit* m_models = nullptr;
    QLineEdit* m_helper = nullptr;
    QLineEdit* m_endpoints = nullptr;
    QDoubleSpinBox* m_llmRate = nullptr;
    QDoubleSpinBox* m_llmBudgetUsd = nullptr;
    QSpinBox* m_llmBudgetTokens = nullptr;
    QLineEdit* m_store = nullptr;
    QLabel* m_problem = nullptr;
    QPushButton* m_start = nullptr;
    QPointer<eval::WorkerPool> m_deviceCheck; // while this machine's GPUs are being looked for
    QString m_experiencePath;
    search::Engine::Setup m_setup;
};

} // namespace kforge::ui
