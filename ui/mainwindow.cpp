#include "mainwindow.h"

#include "candidatespanel.h"
#include "candidatetablemodel.h"
#include "codeview.h"
#include "costplot.h"
#include "diagnosticsview.h"
#include "eventlogview.h"
#include "experience/experiencelibrary.h"
#include "experiencebrowser.h"
#include "heatmapview.h"
#include "islandsview.h"
#include "kerneleditordialog.h"
#include "lineagegraph.h"
#include "lineageview.h"
#include "listingservice.h"
#include "llmlogview.h"
#include "plotexport.h"
#include "plotstyle.h"
#include "progressplot.h"
#include "rooflineview.h"
#include "runcomparedialog.h"
#include "runpickerdialog.h"
#include "runsession.h"
#include "runsetupdialog.h"
#include "runstatuswidget.h"
#include "task/taskcatalog.h"
#include "theme.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QIcon>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>

#include <qcustomplot.h>

#include <tuple>
#include <utility>

namespace kforge::ui {

namespace {
constexpr int kLayoutVersion = 2; // bump when docks change, so an old saved layout is not applied
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowIcon(QIcon(QStringLiteral(":/kforge/icons/kforge.svg")));
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);
    m_session = new RunSession(this);
    createViews();
    createActions();

    connect(m_session, &RunSession::failed, this, &MainWindow::showError);
    connect(m_session, &RunSession::notice, this,
            [this](const QString& message) { statusBar()->showMessage(message, 15000); });
    connect(m_session, &RunSession::opened, this, &MainWindow::updateTitle);
    connect(m_session, &RunSession::runsListed, this, &MainWindow::pickRun);
    connect(m_session, &RunSession::queued, this, &MainWindow::offerResume);
    connect(m_session, &RunSession::stateChanged, this, &MainWindow::updateActions);
    connect(m_session, &RunSession::finished, this, [this](const search::RunSummary& s) {
        m_experience->refresh(); // what the run learned; it may have created the library
        statusBar()->showMessage(
            tr("Run %1 %2: %3 — %4").arg(s.runId).arg(search::runStateName(s.state), s.message, s.pytorch.headline()),
            30000);
        updateActions();
    });
    // A window closing on a live run waits for the run's workers to stop, not only for the run.
    connect(m_session, &RunSession::released, this, [this] {
        if (m_closeAfterStop)
            close();
    });
    auto* data = m_session->data();
    auto* selection = m_session->selection();
    // Once a run is readable, show its best kernel (or its first) so no view starts empty. The
    // candidates of a delta arrive after its run record: both are waited for.
    const auto selectFirst = [data, selection] {
        if (selection->current() || data->candidateCount() == 0)
            return;
        const qint64 best = data->run().bestCandidate;
        if (best && data->candidate(best))
            selection->select(best);
        else if (!data->loading())
            selection->select(data->candidateAt(0).id);
    };
    connect(data, &RunData::runChanged, this, selectFirst);
    connect(data, &RunData::candidatesAdded, this, selectFirst);
    // A run creates the experience library when it first learns something: the browser, which
    // said there was none, reads it as soon as it exists.
    connect(data, &RunData::progressChanged, m_experience, &ExperienceBrowser::refreshIfCreated);
    connect(selection, &CandidateSelection::currentChanged, this, &MainWindow::updateActions);
    connect(data, &RunData::candidatesChanged, this, &MainWindow::updateActions);

    restoreLayout();
    updateTitle();
    updateActions();
}

MainWindow::~MainWindow() = default;

void MainWindow::createViews() {
    auto* data = m_session->data();
    auto* details = m_session->details();
    auto* selection = m_session->selection();
    m_code = new CodeView(data, details, selection, new ListingService(m_session, this));
    setCentralWidget(m_code);
    m_candidates = new CandidatesPanel(data, selection);
    m_lineage = new LineageView(data, selection);
    m_heatmap = new HeatmapView(data, selection);
    m_roofline = new RooflineView(data, selection);
    m_progress = new ProgressPlot(data);
    m_islands = new IslandsView(data, selection);
    m_cost = new CostPlot(data);
    m_lineageGraph = new LineageGraph(data, selection);
    m_diagnostics = new DiagnosticsView(data, details, selection);
    m_llmLog = new LlmLogView(data, selection);
    m_events = new EventLogView(data, selection);
    m_experience = new ExperienceBrowser;

    auto* candidates = addDock(m_candidates, tr("Candidates"), QStringLiteral("candidates"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(candidates, addDock(m_lineage, tr("Lineage"), QStringLiteral("lineage"), Qt::LeftDockWidgetArea));
    candidates->raise();
    auto* heatmap = addDock(m_heatmap, tr("MAP-Elites"), QStringLiteral("heatmap"), Qt::RightDockWidgetArea);
    tabifyDockWidget(heatmap, addDock(m_islands, tr("Islands"), QStringLiteral("islands"), Qt::RightDockWidgetArea));
    tabifyDockWidget(heatmap, addDock(m_progress, tr("Progress"), QStringLiteral("progress"), Qt::RightDockWidgetArea));
    tabifyDockWidget(heatmap, addDock(m_roofline, tr("Roofline"), QStringLiteral("roofline"), Qt::RightDockWidgetArea));
    heatmap->raise();
    auto* diagnostics =
        addDock(m_diagnostics, tr("Diagnostics"), QStringLiteral("diagnostics"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(diagnostics, addDock(m_llmLog, tr("LLM Log"), QStringLiteral("llmlog"), Qt::BottomDockWidgetArea));
    tabifyDockWidget(diagnostics, addDock(m_events, tr("Events"), QStringLiteral("events"), Qt::BottomDockWidgetArea));
    tabifyDockWidget(diagnostics,
                     addDock(m_experience, tr("Experience"), QStringLiteral("experience"), Qt::BottomDockWidgetArea));
    // The wide views along the bottom: the lineage grows by generation, the cost chart beside the
    // LLM log it sums up.
    tabifyDockWidget(diagnostics, addDock(m_lineageGraph, tr("Lineage Graph"), QStringLiteral("lineagegraph"),
                                          Qt::BottomDockWidgetArea));
    tabifyDockWidget(diagnostics, addDock(m_cost, tr("LLM Cost"), QStringLiteral("cost"), Qt::BottomDockWidgetArea));
    diagnostics->raise();

    connect(m_diagnostics, &DiagnosticsView::lineActivated, this, [this](int line) {
        m_code->setMode(CodeView::Mode::Source);
        m_code->showLine(line);
    });
    connect(m_code, &CodeView::editRequested, this,
            [this](qint64 candidate, const QString& source) { openEditor(candidate, source); });

    m_status = new RunStatusWidget(m_session);
    statusBar()->addPermanentWidget(m_status, 1);
}

QDockWidget* MainWindow::addDock(QWidget* widget, const QString& title, const QString& name, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name); // saveState() keys on it
    dock->setWidget(widget);
    addDockWidget(area, dock);
    m_docks << dock;
    return dock;
}

void MainWindow::createActions() {
    auto* fileMenu = menuBar()->addMenu(tr("&File"));
    m_newRun = fileMenu->addAction(QIcon::fromTheme(QStringLiteral("document-new")), tr("&New Run…"), this,
                                   &MainWindow::newRun);
    m_newRun->setShortcut(QKeySequence::New);
    m_newRun->setStatusTip(tr("Choose a task, backend, budgets and proposers, and start a search"));
    m_open = fileMenu->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open Run…"), this,
                                 &MainWindow::openRunDialog);
    m_open->setShortcut(QKeySequence::Open);
    m_open->setStatusTip(tr("Show a stored run (a .kforge file); no GPU is needed"));
    m_switchRun = fileMenu->addAction(tr("S&witch Run…"), this, &MainWindow::switchRun);
    m_switchRun->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_switchRun->setStatusTip(tr("Show another run of the open run file"));
    m_compareRuns = fileMenu->addAction(tr("Compare with &Run…"), this, &MainWindow::compareWithRunDialog);
    m_compareRuns->setStatusTip(
        tr("Open another run (of any run file) beside this one: both bests, both progress curves, their kernels"));
    m_resume = fileMenu->addAction(tr("&Resume Run"), this, &MainWindow::resumeRun);
    m_resume->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_resume->setStatusTip(tr("Go on with the open run where it stopped"));
    fileMenu->addSeparator();
    auto* exportMenu = fileMenu->addMenu(tr("&Export View"));
    m_export = exportMenu->menuAction();
    const auto addExport = [this, exportMenu](const QString& title, QWidget* view) {
        exportMenu->addAction(title, this, [this, title, view] {
            const QString file = QFileDialog::getSaveFileName(this, tr("Export %1").arg(title), QString(),
                                                              tr("PNG image (*.png);;SVG drawing (*.svg)"));
            if (file.isEmpty())
                return;
            // A view in a background tab redraws only when shown: what it holds now is drawn first.
            plotstyle::flushRefreshes(view);
            auto* plot = view->findChild<QCustomPlot*>();
            const auto written = plot ? exportPlot(plot, file) : exportWidget(view, file);
            if (!written)
                showError(QString::fromStdString(written.error()));
            else
                statusBar()->showMessage(tr("Wrote %1").arg(file), 10000);
        });
    };
    addExport(tr("MAP-Elites Heatmap"), m_heatmap);
    addExport(tr("Roofline"), m_roofline);
    addExport(tr("Progress"), m_progress);
    addExport(tr("Islands"), m_islands);
    addExport(tr("LLM Cost"), m_cost);
    addExport(tr("Code"), m_code);
    addExport(tr("Window"), this);
    fileMenu->addSeparator();
    auto* quit = fileMenu->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setObjectName(QStringLiteral("quit"));
    // Some platform themes give QKeySequence::Quit no key at all; Ctrl+Q is what people try.
    QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
    if (!quitKeys.contains(QKeySequence(Qt::CTRL | Qt::Key_Q)))
        quitKeys.prepend(QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setShortcuts(quitKeys);

    auto* run = menuBar()->addMenu(tr("&Run"));
    m_pause = run->addAction(QIcon::fromTheme(QStringLiteral("media-playback-pause")), tr("&Pause"), this, [this] {
        if (m_session->state() == search::RunState::Paused || m_session->state() == search::RunState::Pausing)
            m_session->resume();
        else
            m_session->pause();
    });
    m_pause->setShortcut(QKeySequence(Qt::Key_F6));
    m_pause->setStatusTip(tr("Pause after the evaluations in flight, or continue"));
    m_stop = run->addAction(QIcon::fromTheme(QStringLiteral("media-playback-stop")), tr("&Stop"), this,
                            [this] { m_session->stop(); });
    m_stop->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    m_stop->setStatusTip(tr("Stop the run; it can be resumed later"));
    m_reload = run->addAction(tr("Re&load"), this, [this] { m_session->refresh(); });
    m_reload->setShortcut(QKeySequence::Refresh);
    m_reload->setStatusTip(tr("Read what is new in the run file (another process may be running it)"));

    auto* candidate = menuBar()->addMenu(tr("&Candidate"));
    m_pin = candidate->addAction(tr("&Pin / Unpin"), this, &MainWindow::pinSelected);
    m_pin->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    m_pin->setStatusTip(tr("A pinned kernel stays a parent on its island; pins go into the experience library"));
    m_veto = candidate->addAction(tr("&Veto…"), this, [this] { vetoSelected(); });
    m_veto->setShortcut(QKeySequence::Delete);
    m_veto->setStatusTip(tr("Take the kernel out of the search, with a reason that goes into the experience library"));
    m_edit = candidate->addAction(tr("&Edit and Submit…"), this, &MainWindow::editSelected);
    m_edit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_edit->setStatusTip(tr("Edit the kernel; submitting evaluates it as a new child with origin human"));
    candidate->addSeparator();
    m_compareParent =
        candidate->addAction(tr("Diff with &Parent"), this, [this] { m_code->setMode(CodeView::Mode::DiffParent); });
    m_compareParent->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    m_showListing =
        candidate->addAction(tr("Show PTX and &SASS"), this, [this] { m_code->setMode(CodeView::Mode::Listing); });
    m_showListing->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    m_showListing->setStatusTip(
        tr("What the compiler made of a CUDA kernel, beside its source; the caret's line marks its instructions"));
    m_compareTwo = candidate->addAction(tr("&Compare Two Selected"), this, &MainWindow::compareSelected);
    m_compareTwo->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    m_compareTwo->setStatusTip(tr("Select two rows in the candidate list (Ctrl+click) to see them side by side"));
    m_nextBest = candidate->addAction(tr("&Go to Best"), this, [this] {
        if (const qint64 best = m_session->data()->run().bestCandidate)
            m_session->selection()->select(best);
    });
    m_nextBest->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_G));
    candidate->addSeparator();
    m_accept = candidate->addAction(tr("&Accept Review"), this, [this] { decideReview(true); });
    m_accept->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
    m_accept->setStatusTip(tr("A suspicious result (very large speedup, above a ceiling) was checked and is genuine"));
    m_reject = candidate->addAction(tr("&Reject Review…"), this, [this] { decideReview(false); });
    m_reject->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));

    for (auto [action, name] : std::initializer_list<std::pair<QAction*, const char*>>{{m_newRun, "newRun"},
                                                                                       {m_open, "openRun"},
                                                                                       {m_switchRun, "switchRun"},
                                                                                       {m_compareRuns, "compareRuns"},
                                                                                       {m_resume, "resumeRun"},
                                                                                       {m_pause, "pause"},
                                                                                       {m_stop, "stop"},
                                                                                       {m_reload, "reload"},
                                                                                       {m_pin, "pin"},
                                                                                       {m_veto, "veto"},
                                                                                       {m_edit, "edit"},
                                                                                       {m_compareParent, "diffParent"},
                                                                                       {m_compareTwo, "compareTwo"},
                                                                                       {m_showListing, "showListing"},
                                                                                       {m_accept, "acceptReview"},
                                                                                       {m_reject, "rejectReview"},
                                                                                       {m_nextBest, "goToBest"}})
        action->setObjectName(QLatin1String(name));

    auto* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : m_docks)
        view->addAction(dock->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Focus Candidate Filter"), this,
                    [this] {
                        m_docks.front()->raise();
                        m_candidates->filterField()->setFocus();
                        m_candidates->filterField()->selectAll();
                    })
        ->setShortcut(QKeySequence::Find);
    view->addSeparator();
    // For platforms whose theme has no dark palette: the choice is kept for the next start.
    auto* themeMenu = view->addMenu(tr("&Theme"));
    auto* themes = new QActionGroup(themeMenu);
    for (const auto& [choice, title, name] : {std::tuple{theme::Choice::System, tr("&System"), "themeSystem"},
                                              std::tuple{theme::Choice::Light, tr("&Light"), "themeLight"},
                                              std::tuple{theme::Choice::Dark, tr("&Dark"), "themeDark"}}) {
        QAction* action = themeMenu->addAction(title, this, [choice = choice] {
            theme::apply(choice);
            theme::saveChoice(choice);
        });
        action->setObjectName(QLatin1String(name));
        action->setCheckable(true);
        action->setChecked(theme::applied() == choice);
        themes->addAction(action);
    }
    themeMenu->menuAction()->setStatusTip(
        tr("Colours of the platform theme, or a light or dark theme of kforge's own"));

    auto* help = menuBar()->addMenu(tr("&Help"));
    auto* shortcuts = help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    shortcuts->setShortcut(QKeySequence::HelpContents);
    shortcuts->setObjectName(QStringLiteral("keyboardShortcuts"));
    help->addAction(tr("&About kforge"), this, &MainWindow::showAbout);

    auto* toolbar = addToolBar(tr("Run"));
    toolbar->setObjectName(QStringLiteral("runToolbar"));
    toolbar->addAction(m_newRun);
    toolbar->addAction(m_open);
    toolbar->addAction(m_resume);
    toolbar->addSeparator();
    toolbar->addAction(m_pause);
    toolbar->addAction(m_stop);
    toolbar->addSeparator();
    toolbar->addAction(m_pin);
    toolbar->addAction(m_veto);
    toolbar->addAction(m_edit);
    toolbar->addAction(m_compareTwo);
}

void MainWindow::updateActions() {
    const bool live = m_session->isLive();
    const auto state = m_session->state();
    const auto* row = m_session->data()->candidate(m_session->selection()->current());
    m_newRun->setEnabled(!live);
    m_open->setEnabled(!live);
    m_switchRun->setEnabled(!live && m_session->data()->hasRun());
    m_compareRuns->setEnabled(m_session->data()->hasRun());
    m_resume->setEnabled(!live && m_session->data()->hasRun());
    m_pause->setEnabled(live);
    m_pause->setText(state == search::RunState::Paused || state == search::RunState::Pausing ? tr("&Continue")
                                                                                             : tr("&Pause"));
    m_stop->setEnabled(live);
    // A stored run is steered too: what is done there waits in its store for the run to resume.
    const bool steerable = live || (m_session->data()->hasRun() && !m_session->isWindingDown());
    m_pin->setEnabled(steerable && row && !row->vetoed);
    m_pin->setText(row && row->pinned ? tr("Un&pin") : tr("&Pin"));
    m_veto->setEnabled(steerable && row && !row->vetoed);
    m_edit->setEnabled(steerable && row);
    m_compareParent->setEnabled(row && !row->parents.isEmpty());
    m_showListing->setEnabled(m_session->data()->hasRun() && m_session->data()->run().backend == model::Backend::Cuda);
    m_accept->setEnabled(steerable && row && row->review == model::ReviewState::Pending);
    m_reject->setEnabled(m_accept->isEnabled());
}

bool MainWindow::startRun(const search::Engine::Setup& setup) {
    search::Engine::Setup s = setup;
    if (s.experiencePath.isEmpty())
        s.experiencePath = m_experiencePath;
    if (!m_session->start(std::move(s)))
        return false;
    statusBar()->showMessage(tr("Starting the run: loading the task and starting workers…"), 10000);
    updateActions();
    return true;
}

void MainWindow::startDemo(const QString& task, const QString& storePath) {
    search::Engine::Setup setup;
    setup.config.task = task;
    setup.config.backend = model::Backend::OpenCL;
    setup.config.variant = QStringLiteral("medium"); // a few minutes on a CPU
    setup.config.islands = 2;
    setup.config.childrenPerIsland = 4;
    setup.config.budgetEvaluations = 40;
    setup.useTuningCache = false; // every demo searches afresh, as `kforge demo --help` says
    setup.storePath = storePath;
    startRun(setup);
}

bool MainWindow::openRun(const QString& storePath, qint64 run) {
    return m_session->openStored(storePath, run);
}

void MainWindow::setExperienceLibrary(const QString& path) {
    m_experiencePath = path;
    m_experience->setLibraryPath(path.isEmpty() ? experience::ExperienceLibrary::defaultPath() : path);
}

void MainWindow::newRun() {
    auto* dialog = new RunSetupDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setExperiencePath(m_experiencePath);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { startRun(dialog->setup()); });
    dialog->open();
}

QString MainWindow::chooseRunFile(const QString& title) {
    QSettings settings;
    const QString dir = settings
                            .value(QStringLiteral("mainwindow/lastRunDir"),
                                   QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
                                       .filePath(QStringLiteral("runs")))
                            .toString();
    QString file = QFileDialog::getOpenFileName(this, title, dir, tr("kforge runs (*.kforge);;All files (*)"));
    if (!file.isEmpty())
        settings.setValue(QStringLiteral("mainwindow/lastRunDir"), QFileInfo(file).absolutePath());
    return file;
}

void MainWindow::openRunDialog() {
    if (const QString file = chooseRunFile(tr("Open Run")); !file.isEmpty())
        openStoreFile(file);
}

void MainWindow::compareWithRunDialog() {
    const QString file = chooseRunFile(tr("Compare with Run"));
    if (file.isEmpty())
        return;
    m_pickForComparison = true;
    openStoreFile(file);
}

void MainWindow::openComparison(const QString& storePath, qint64 run) {
    auto* dialog = new RunCompareDialog(m_session, storePath, run, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
}

void MainWindow::openStoreFile(const QString& storePath) {
    statusBar()->showMessage(tr("Reading the runs of %1…").arg(QFileInfo(storePath).fileName()), 10000);
    m_session->listRuns(storePath);
}

void MainWindow::switchRun() {
    if (m_session->isLive() || !m_session->data()->hasRun())
        return;
    openStoreFile(m_session->storePath());
}

void MainWindow::pickRun(const QString& storePath, const QList<store::RunRecord>& runs) {
    statusBar()->clearMessage();
    const bool forComparison = std::exchange(m_pickForComparison, false);
    if (runs.isEmpty()) {
        showError(tr("%1 holds no runs yet").arg(storePath));
        return;
    }
    if (runs.size() == 1) {
        if (forComparison)
            openComparison(storePath, runs.front().id);
        else
            openRun(storePath, runs.front().id);
        return;
    }
    const bool shown = QFileInfo(storePath) == QFileInfo(m_session->storePath());
    auto* dialog = new RunPickerDialog(storePath, runs, shown ? m_session->runId() : 0, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, storePath, forComparison] {
        if (const qint64 run = dialog->chosenRun()) {
            if (forComparison)
                openComparison(storePath, run);
            else
                openRun(storePath, run);
        }
    });
    dialog->open();
}

void MainWindow::offerResume(int waiting) {
    const QString what = tr("%1 steering action(s) are kept with run %2 and apply when it resumes.")
                             .arg(waiting)
                             .arg(m_session->runId());
    statusBar()->showMessage(what, 15000);
    if (m_resumeOffer) // one offer at a time: it names how many wait now
        m_resumeOffer->close();
    auto* box = new QMessageBox(QMessageBox::Question, tr("Resume the Run?"),
                                what + QLatin1Char(' ') + tr("Resume it now?"), QMessageBox::NoButton, this);
    box->setObjectName(QStringLiteral("resumeOffer"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    QPushButton* resume = box->addButton(tr("&Resume Now"), QMessageBox::AcceptRole);
    box->addButton(tr("&Later"), QMessageBox::RejectRole);
    box->setDefaultButton(resume);
    connect(resume, &QPushButton::clicked, this, &MainWindow::resumeRun);
    m_resumeOffer = box;
    box->open(); // never blocks
}

void MainWindow::resumeRun() {
    if (!m_session->data()->hasRun())
        return;
    search::Engine::Setup setup;
    setup.storePath = m_session->storePath();
    setup.resumeRun = m_session->runId();
    startRun(setup);
}

bool MainWindow::pinSelected() {
    const qint64 id = m_session->selection()->current();
    const auto* row = m_session->data()->candidate(id);
    if (!row) {
        showError(tr("Select a candidate to pin."));
        return false;
    }
    if (!m_session->pin(id, !row->pinned))
        return false;
    if (m_session->isLive()) // a stored run's is kept for its resumption: offerResume() says so
        statusBar()->showMessage(row->pinned ? tr("Candidate %1 will be unpinned at the next generation").arg(id)
                                             : tr("Candidate %1 will be pinned at the next generation").arg(id),
                                 10000);
    return true;
}

bool MainWindow::vetoSelected(const QString& givenReason) {
    const qint64 id = m_session->selection()->current();
    if (!m_session->data()->candidate(id)) {
        showError(tr("Select a candidate to veto."));
        return false;
    }
    QString reason = givenReason;
    if (reason.isEmpty()) {
        bool ok = false;
        reason = QInputDialog::getText(this, tr("Veto Candidate %1").arg(id),
                                       tr("Why should the search drop this kernel? (goes into the experience library)"),
                                       QLineEdit::Normal, QString(), &ok)
                     .trimmed();
        if (!ok)
            return false;
        if (reason.isEmpty()) {
            showError(tr("A veto needs a reason: the experience library keeps it for later runs."));
            return false;
        }
    }
    if (!m_session->veto(id, reason))
        return false;
    if (m_session->isLive())
        statusBar()->showMessage(tr("Candidate %1 will be vetoed at the next generation").arg(id), 10000);
    return true;
}

void MainWindow::editSelected() {
    const qint64 id = m_session->selection()->current();
    if (!id) {
        showError(tr("Select a candidate to edit."));
        return;
    }
    if (const auto* detail = m_session->details()->details(id)) {
        openEditor(id, detail->candidate.source);
        return;
    }
    // Opens once the kernel has been read.
    statusBar()->showMessage(tr("Loading kernel %1…").arg(id));
    auto connection = std::make_shared<QMetaObject::Connection>();
    *connection = connect(m_session->details(), &CandidateDetails::loaded, this, [this, id, connection](qint64 loaded) {
        if (loaded != id)
            return;
        disconnect(*connection);
        if (const auto* detail = m_session->details()->details(id))
            openEditor(id, detail->candidate.source);
    });
}

void MainWindow::openEditor(qint64 candidate, const QString& source) {
    const auto& run = m_session->data()->run();
    auto* dialog = new KernelEditorDialog(candidate, source, run.backend, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    // The run's task, to check the edit's names and launch plan before it costs an evaluation.
    auto task = task::TaskCatalog::load(run.taskDir.isEmpty() ? run.task : run.taskDir);
    if (!task && !run.taskDir.isEmpty())
        task = task::TaskCatalog::load(run.task);
    if (task) {
        if (auto sizes = task->spec.sizesFor(run.variant.toStdString()))
            dialog->setTask(task->spec, *sizes);
    }
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        if (m_session->submitEdit(dialog->parentId(), dialog->source(), dialog->note()) && m_session->isLive())
            statusBar()->showMessage(
                tr("Edit of %1 submitted: it is evaluated in the next generation").arg(dialog->parentId()), 15000);
    });
    dialog->open();
}

bool MainWindow::compareSelected() {
    const QList<qint64> ids = m_candidates->selectedCandidates();
    if (ids.size() == 2) {
        m_session->selection()->compare(std::min(ids[0], ids[1]), std::max(ids[0], ids[1]));
        return true;
    }
    const auto* row = m_session->data()->candidate(m_session->selection()->current());
    if (ids.size() < 2 && row && !row->parents.isEmpty()) {
        m_session->selection()->compare(row->parents.front(), row->id);
        return true;
    }
    showError(tr("Select exactly two candidates in the list (Ctrl+click) to compare them."));
    return false;
}

void MainWindow::decideReview(bool accept) {
    const qint64 id = m_session->selection()->current();
    QString note;
    if (!accept) {
        bool ok = false;
        note = QInputDialog::getText(this, tr("Reject Candidate %1").arg(id), tr("What is wrong with the result?"),
                                     QLineEdit::Normal, QString(), &ok);
        if (!ok)
            return;
    }
    m_session->decideReview(id, accept, note);
}

void MainWindow::showError(const QString& message) {
    statusBar()->showMessage(message, 30000);
    auto* box = new QMessageBox(QMessageBox::Warning, tr("kforge"), message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // never blocks: the engine's updates keep arriving
}

void MainWindow::updateTitle() {
    const auto& run = m_session->data()->run();
    if (!run.id) {
        setWindowTitle(tr("kforge"));
        return;
    }
    setWindowTitle(
        tr("%1 — run %2 — %3 — kforge").arg(run.name).arg(run.id).arg(QFileInfo(m_session->storePath()).fileName()));
    updateActions();
}

void MainWindow::showShortcuts() {
    QStringList rows;
    for (QAction* a : findChildren<QAction*>())
        if (!a->shortcut().isEmpty() && !a->text().isEmpty())
            rows << QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                        .arg(a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped(),
                             a->text().remove(QLatin1Char('&')).toHtmlEscaped());
    rows.sort();
    // A view the window holds more than once (the code view's two side-by-side diffs: with the
    // parent, and of two chosen candidates) brings its actions twice: each shortcut is listed once.
    rows.removeDuplicates();
    auto* box =
        new QMessageBox(QMessageBox::Information, tr("Keyboard Shortcuts"),
                        QStringLiteral("<table cellspacing=6>%1</table><p>In lists: arrow keys move the selection, "
                                       "Home/End jump, typing in the filter (Ctrl+F) narrows the list.</p>")
                            .arg(rows.join(QString())),
                        QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About kforge"),
                       tr("<h3>kforge %1</h3><p>A workbench for evolving fast, correct GPU kernels: proposals from "
                          "language models, tuners and an expert library are compiled, verified against a trusted "
                          "reference and timed in sandboxed worker processes.</p>")
                           .arg(QCoreApplication::applicationVersion()));
}

void MainWindow::restoreLayout() {
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("mainwindow/geometry")).toByteArray()))
        resize(1500, 950);
    const bool restored =
        restoreState(settings.value(QStringLiteral("mainwindow/state")).toByteArray(), kLayoutVersion);
    m_candidates->restoreColumns();
    fitToScreen();
    // Without a saved layout the docks get their default sizes when the window is first shown, at
    // the size it is shown at (a caller may still resize it before that).
    m_defaultDockSizes = !restored;
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (!m_defaultDockSizes)
        return;
    m_defaultDockSizes = false;
    // The side docks share the width with the code; the bottom docks take a quarter of the height.
    // The candidates dock is at least wide enough to show each candidate's worth and time.
    const int side = std::clamp(width() * 3 / 10, 300, 560);
    const int candidates = std::clamp(m_candidates->leadingColumnsWidth(), side, std::max(side, width() * 2 / 5));
    const auto dock = [this](const char* name) { return findChild<QDockWidget*>(QLatin1String(name)); };
    resizeDocks({dock("candidates"), dock("heatmap")}, {candidates, side}, Qt::Horizontal);
    resizeDocks({dock("diagnostics")}, {std::clamp(height() / 4, 160, 260)}, Qt::Vertical);
}

void MainWindow::fitToScreen() {
    // A geometry saved on a larger screen (or at a smaller scale), or the default size, is made to
    // fit the screen the window opens on: never wider or taller than its available area, frame
    // included, and not hanging off its edges.
    const QScreen* shown = screen();
    if (!shown || isMaximized() || isFullScreen())
        return;
    const QRect available = shown->availableGeometry();
    // The frame is not known before the window is shown; a title bar and borders are allowed for.
    const QMargins frame =
        isVisible()
            ? QMargins(geometry().left() - frameGeometry().left(), geometry().top() - frameGeometry().top(),
                       frameGeometry().right() - geometry().right(), frameGeometry().bottom() - geometry().bottom())
            : QMargins(4, 32, 4, 4);
    const QRect room = available.marginsRemoved(frame);
    const QSize size = this->size().boundedTo(room.size());
    if (size != this->size())
        resize(size);
    QRect placed(geometry().topLeft(), size);
    if (!room.contains(placed)) {
        placed.moveLeft(std::clamp(placed.left(), room.left(), std::max(room.left(), room.right() - size.width() + 1)));
        placed.moveTop(std::clamp(placed.top(), room.top(), std::max(room.top(), room.bottom() - size.height() + 1)));
        move(placed.topLeft() - QPoint(frame.left(), frame.top()));
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_session->isLive() || m_session->isWindingDown()) {
        if (!m_closeAfterStop && m_session->isLive()) {
            const auto answer =
                QMessageBox::question(this, tr("Stop the Run?"),
                                      tr("A run is in progress. Stop it and quit? It can be resumed later "
                                         "from its run file (File ▸ Open Run, then Resume)."),
                                      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
            if (answer != QMessageBox::Yes) {
                event->ignore();
                return;
            }
            m_session->stop();
        }
        m_closeAfterStop = true;
        statusBar()->showMessage(tr("Stopping the run…"));
        event->ignore(); // closes when the engine reports it stopped
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("mainwindow/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("mainwindow/state"), saveState(kLayoutVersion));
    m_candidates->saveColumns();
    event->accept();
}

} // namespace kforge::ui
