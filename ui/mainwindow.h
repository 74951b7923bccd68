#pragma once
// The workbench window: a run (new, resumed or stored) shown in docked views that all follow one
// selection — candidates, MAP-Elites heatmap, islands, progress, roofline, lineage, diagnostics,
// LLM log, events, experience library — around the code view. The run menu drives the engine
// (start, pause, stop); the candidate menu steers it (pin, veto with a reason, edit and submit,
// review decisions). The window only composes: each view is its own class, and RunSession owns the
// threads.

#include "search/engine.h"

#include <QMainWindow>
#include <QPointer>

#include "store/runstore.h"

class QAction;
class QDockWidget;
class QLabel;
class QMessageBox;
class QShowEvent;

namespace kforge::ui {

class CandidatesPanel;
class CodeView;
class CostPlot;
class LineageGraph;
class DiagnosticsView;
class EventLogView;
class ExperienceBrowser;
class HeatmapView;
class IslandsView;
class LineageView;
class LlmLogView;
class ProgressPlot;
class RooflineView;
class RunSession;
class RunStatusWidget;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    RunSession* session() const { return m_session; }

    // Starts a run as the New Run dialog would (tests, the demo).
    bool startRun(const search::Engine::Setup& setup);
    // The demo: a short search of a built-in task on OpenCL (PoCL on any machine) into `storePath`.
    void startDemo(const QString& task, const QString& storePath);
    bool openRun(const QString& storePath, qint64 run = 0);
    // Opens a store as File > Open Run does once the file is chosen: its one run, or, when it holds
    // several, the run picker (RunPickerDialog) to choose one.
    void openStoreFile(const QString& storePath);
    // Opens another run beside the one shown (File > Compare with Run once it is chosen).
    void openComparison(const QString& storePath, qint64 run);
    void setExperienceLibrary(const QString& path);

    // The views, for tests and the renderer.
    CandidatesPanel* candidatesPanel() const { return m_candidates; }
    CodeView* codeView() const { return m_code; }
    HeatmapView* heatmapView() const { return m_heatmap; }
    IslandsView* islandsView() const { return m_islands; }
    CostPlot* costPlot() const { return m_cost; }
    LineageGraph* lineageGraph() const { return m_lineageGraph; }
    ProgressPlot* progressPlot() const { return m_progress; }
    RooflineView* rooflineView() const { return m_roofline; }
    LineageView* lineageView() const { return m_lineage; }
    DiagnosticsView* diagnosticsView() const { return m_diagnostics; }
    LlmLogView* llmLogView() const { return m_llmLog; }
    EventLogView* eventLogView() const { return m_events; }
    ExperienceBrowser* experienceBrowser() const { return m_experience; }
    RunStatusWidget* statusWidget() const { return m_status; }
    QList<QDockWidget*> docks() const { return m_docks; }

    // Steering the selected candidate, as the menu does; `reason` and the edit are asked for
    // when not given.
    bool pinSelected();
    bool vetoSelected(const QString& reason = {});
    void editSelected();
    bool compareSelected();

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void createViews();
    QDockWidget* addDock(QWidget* widget, const QString& title, const QString& name, Qt::DockWidgetArea area);
    void createActions();
    void updateActions();
    void newRun();
    // A run file chosen in a file dialog, starting where the last one was; empty when cancelled.
    QString chooseRunFile(const QString& title);
    void openRunDialog();
    void switchRun();
    void compareWithRunDialog();
    void pickRun(const QString& storePath, const QList<store::RunRecord>& runs);
    void resumeRun();
    void offerResume(int waiting);
    void exportView();
    void decideReview(bool accept);
    void openEditor(qint64 candidate, const QString& source);
    void showShortcuts();
    void showAbout();
    void showError(const QString& message);
    void updateTitle();
    void restoreLayout();
    void fitToScreen();

    RunSession* m_session = nullptr;
    CandidatesPanel* m_candidates = nullptr;
    CodeView* m_code = nullptr;
    HeatmapView* m_heatmap = nullptr;
    IslandsView* m_islands = nullptr;
    CostPlot* m_cost = nullptr;
    LineageGraph* m_lineageGraph = nullptr;
    ProgressPlot* m_progress = nullptr;
    RooflineView* m_roofline = nullptr;
    LineageView* m_lineage = nullptr;
    DiagnosticsView* m_diagnostics = nullptr;
    LlmLogView* m_llmLog = nullptr;
    EventLogView* m_events = nullptr;
    ExperienceBrowser* m_experience = nullptr;
    RunStatusWidget* m_status = nullptr;
    QLabel* m_message = nullptr;
    QList<QDockWidget*> m_docks;
    QString m_experiencePath;
    bool m_closeAfterStop = false;
    bool m_defaultDockSizes = false; // no saved layout: size the docks when first shown

    QAction* m_newRun = nullptr;
    QAction* m_open = nullptr;
    QAction* m_switchRun = nullptr;
    QAction* m_compareRuns = nullptr;
    bool m_pickForComparison = false; // the next run picked is compared, not opened
    QPointer<QMessageBox> m_resumeOffer;
    QAction* m_resume = nullptr;
    QAction* m_pause = nullptr;
    QAction* m_stop = nullptr;
    QAction* m_reload = nullptr;
    QAction* m_pin = nullptr;
    QAction* m_veto = nullptr;
    QAction* m_edit = nullptr;
    QAction* m_compareParent = nullptr;
    QAction* m_showListing = nullptr;
    QAction* m_compareTwo = nullptr;
    QAction* m_accept = nullptr;
    QAction* m_reject = nullptr;
    QAction* m_export = nullptr;
    QAction* m_nextBest = nullptr;
};

} // namespace kforge::ui
