#include "mainwindow.h"

#include "evalrequest.h"
#include "resultformat.h"
#include "taskcatalog.h"
#include "workerlocator.h"
#include "workerpool.h"

#include <QAction>
#include <QApplication>
#include <QFontDatabase>
#include <QIcon>
#include <QKeySequence>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QToolBar>

namespace kforge::ui {

namespace {
constexpr int kTaskDirRole = Qt::UserRole + 1;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("kforge"));
    setWindowIcon(QIcon(QStringLiteral(":/kforge/icons/kforge.svg")));
    m_taskModel = new QStandardItemModel(this);
    m_taskView = new QListView;
    m_taskView->setModel(m_taskModel);
    m_taskView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_report = new QPlainTextEdit;
    m_report->setReadOnly(true);
    m_report->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_report->setPlaceholderText(tr("Select a task and choose Evaluate Baseline (Ctrl+E) to compile, verify and time its "
                                    "baseline kernel in a sandboxed worker."));
    auto* splitter = new QSplitter;
    splitter->addWidget(m_taskView);
    splitter->addWidget(m_report);
    splitter->setStretchFactor(1, 3);
    setCentralWidget(splitter);
    m_statusLabel = new QLabel;
    statusBar()->addWidget(m_statusLabel, 1);

    createActions();
    loadTasks();
    connect(m_taskView, &QListView::activated, this, &MainWindow::evaluateSelected);

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("mainwindow/geometry")).toByteArray());
    if (!settings.contains(QStringLiteral("mainwindow/geometry")))
        resize(1100, 700);
}

MainWindow::~MainWindow() {
    QSettings settings;
    settings.setValue(QStringLiteral("mainwindow/geometry"), saveGeometry());
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* evalMenu = menuBar()->addMenu(tr("&Evaluate"));
    m_evaluateAction = evalMenu->addAction(tr("Evaluate &Baseline"), this, &MainWindow::evaluateSelected);
    m_evaluateAction->setShortcut(Qt::CTRL | Qt::Key_E);
    m_evaluateAction->setStatusTip(tr("Compile, verify and time the selected task's baseline in a worker (OpenCL where the "
                                      "task has it, else CUDA)"));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About kforge"), this, &MainWindow::showAbout);

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->addAction(m_evaluateAction);
}

void MainWindow::loadTasks() {
    m_taskModel->clear();
    for (const auto& t : task::TaskCatalog::list()) {
        auto* item = new QStandardItem(t.name);
        item->setData(t.dir, kTaskDirRole);
        item->setToolTip(t.dir);
        m_taskModel->appendRow(item);
    }
    m_statusLabel->setText(tr("%n task(s) found", nullptr, m_taskModel->rowCount()));
    if (m_taskModel->rowCount() > 0)
        m_taskView->setCurrentIndex(m_taskModel->index(0, 0));
}

QString MainWindow::selectedTask() const {
    const QModelIndex index = m_taskView->currentIndex();
    return index.isValid() ? index.data(kTaskDirRole).toString() : QString();
}

void MainWindow::evaluateBaseline(const QString& taskName) {
    const auto items = m_taskModel->findItems(taskName);
    if (!items.isEmpty())
        m_taskView->setCurrentIndex(items.first()->index());
    evaluateSelected();
}

void MainWindow::evaluateSelected() {
    const QString dir = selectedTask();
    if (dir.isEmpty() || m_pendingTicket >= 0)
        return;
    auto bundle = task::TaskCatalog::load(dir);
    if (!bundle) {
        m_report->setPlainText(tr("Cannot load the task:\n%1").arg(QString::fromStdString(bundle.error())));
        return;
    }
    task::EvalSettings settings;
    if (!bundle->referenceSource.count("opencl"))
        settings.backend = QStringLiteral("cuda");
    auto request = task::makeEvalRequest(*bundle, settings);
    if (!request) {
        m_report->setPlainText(QString::fromStdString(request.error()));
        return;
    }
    QPointer<eval::WorkerPool>& pool = m_pools[settings.backend];
    if (!pool) {
        auto worker = eval::WorkerLocator::find(settings.backend);
        if (!worker) {
            m_report->setPlainText(QString::fromStdString(worker.error()));
            return;
        }
        pool = new eval::WorkerPool(settings.backend, *worker, {}, 1, this);
        connect(pool, &eval::WorkerPool::evaluated, this, &MainWindow::showResult);
    }
    m_pendingTask = QString::fromStdString(bundle->spec.name);
    m_report->setPlainText(tr("Evaluating the baseline of %1 on %2...").arg(m_pendingTask, settings.backend));
    m_statusLabel->setText(tr("Evaluating %1...").arg(m_pendingTask));
    m_evaluateAction->setEnabled(false);
    m_pendingBackend = settings.backend;
    m_pendingTicket = pool->submit(std::move(*request), std::chrono::minutes(5));
}

void MainWindow::showResult(qint64 ticket, const protocol::EvaluateResult& result) {
    if (ticket != m_pendingTicket)
        return;
    m_pendingTicket = -1;
    m_evaluateAction->setEnabled(true);
    m_report->setPlainText(eval::formatResultText(result, m_pendingTask, m_pendingBackend));
    m_statusLabel->setText(tr("%1: %2").arg(m_pendingTask, QString::fromStdString(std::string(protocol::statusName(result.status)))));
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About kforge"),
                       tr("<b>kforge %1</b><p>A workbench for evolving fast, correct GPU kernels.</p>").arg(QStringLiteral(KFORGE_VERSION)));
}

} // namespace kforge::ui
