// The workbench window driven through its real widgets under the offscreen platform: a run set up
// in the New Run dialog and started on the real OpenCL worker (PoCL on the CPU in CI), with a
// language model served by the fake LLM server on 127.0.0.1; then, while it is paused, a heatmap
// cell clicked, its elite pinned, another candidate vetoed with a reason, a kernel edited and
// submitted (evaluated as a human child), two candidates compared side by side, a diagnostic
// followed to its source line; the human actions found in the experience library; and every view
// of the stored run rendered to PNG files.

#include "candidatespanel.h"
#include "candidatetablemodel.h"
#include "codeview.h"
#include "diagnosticsview.h"
#include "experience/experiencelibrary.h"
#include "experiencebrowser.h"
#include "heatmapmodel.h"
#include "heatmapview.h"
#include "insightmodel.h"
#include "islandsview.h"
#include "kerneleditordialog.h"
#include "listingview.h"
#include "mainwindow.h"
#include "progressplot.h"
#include "runcomparedialog.h"
#include "runpickerdialog.h"
#include "runsession.h"
#include "runsetupdialog.h"
#include "runstatuswidget.h"
#include "scriptedllm.h"
#include "sidebysidediff.h"
#include "syntheticrun.h"
#include "theme.h"
#include "viewrenderer.h"
#include "workerthread.h"

#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QScopeGuard>
#include <QScreen>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include <Qsci/qsciscintilla.h>
#include <qcustomplot.h>

#include <set>
#include <tuple>

using namespace kforge;
using namespace kforge::ui;

namespace {

QAction* action(QWidget& window, const char* name) {
    return window.findChild<QAction*>(QLatin1String(name));
}

// The mean lightness of what a widget shows (0 black, 1 white), from a coarse sample of its pixels.
double meanLightness(QWidget* widget) {
    const QImage image = widget->grab().toImage();
    double sum = 0.0;
    int n = 0;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7, ++n)
            sum += image.pixelColor(x, y).lightnessF();
    return n ? sum / n : 0.0;
}

// The paper and text colours of an editor's default style (Scintilla keeps 0xBBGGRR).
QColor editorColour(QsciScintilla* editor, bool paper) {
    const long bgr =
        editor->SendScintilla(paper ? QsciScintillaBase::SCI_STYLEGETBACK : QsciScintillaBase::SCI_STYLEGETFORE,
                              QsciScintillaBase::STYLE_DEFAULT);
    return QColor(static_cast<int>(bgr & 0xff), static_cast<int>((bgr >> 8) & 0xff),
                  static_cast<int>((bgr >> 16) & 0xff));
}

// Fills the New Run dialog: vector_add on OpenCL, two islands, a budget, one model on the fake server.
void fillSetup(RunSetupDialog& d, const QString& store, int port, int budget) {
    d.choose(QStringLiteral("vector_add"), QStringLiteral("opencl"), budget);
    d.findChild<QSpinBox*>(QStringLiteral("islands"))->setValue(2);
    d.findChild<QSpinBox*>(QStringLiteral("children"))->setValue(3);
    d.findChild<QCheckBox*>(QStringLiteral("useLlm"))->setChecked(true);
    d.findChild<QLineEdit*>(QStringLiteral("models"))->setText(QStringLiteral("local:gpt-4.1-mini"));
    d.findChild<QLineEdit*>(QStringLiteral("endpoints"))
        ->setText(QStringLiteral("local=http://127.0.0.1:%1/v1,retries=1").arg(port));
    d.setStorePath(store);
}

// Shows `w` with the run of `store` open, once its candidate table lists `rows` candidates.
bool showRun(MainWindow& w, const QString& store, int rows) {
    w.show();
    return QTest::qWaitForWindowActive(&w) && w.openRun(store)
           && QTest::qWaitFor([&] { return w.candidatesPanel()->view()->model()->rowCount() == rows; });
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    kforgetest::ScriptedLlmServer m_server;
    int m_port = 0;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        m_port = m_server.start(QStringLiteral(KFORGE_FAKE_LLM_SERVER), m_dir.path());
        QVERIFY(m_port > 0);
    }

    void cleanupTestCase() {
        QVERIFY2(joinWorkerThreads(), "the reader and engine threads end once their work is done");
        m_server.stop();
    }

    void startsWithoutARun() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QCOMPARE(w.docks().size(), 12);
        QVERIFY(w.statusWidget()->text().contains(QStringLiteral("No run open")));
        QVERIFY(action(w, "newRun")->isEnabled());
        QVERIFY(!action(w, "pause")->isEnabled());
        QVERIFY(!action(w, "pin")->isEnabled());
        // Steering without a run says why instead of doing nothing.
        QVERIFY(!w.pinSelected());
    }

    // The window fits a 1366x768 screen at scale 1 and a 1920x1080 one at scale 1.5 (less a panel
    // and the window's frame): with a real run's long labels in the code header, the lineage, the
    // compared kernels' titles, the diagnostics and the status bar, and whichever tab is in front,
    // it neither asks for more nor grows past it.
    void windowFitsSmallScreens() {
        const QSize laptop(1366 - 8, 768 - 32 - 30);
        const QSize scaled((1920 - 12) * 2 / 3, (1080 - 48 - 45) * 2 / 3);
        const QSize room = laptop.boundedTo(scaled);
        const QString store = m_dir.filePath(QStringLiteral("h200-llm.kforge"));
        QVERIFY(QFile::copy(QStringLiteral(KFORGE_SOURCE_DIR "/tests/gpu/runs/h200-llm-2026-11-30.kforge"), store));
        MainWindow w;
        w.resize(room);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openRun(store));
        RunData* data = w.session()->data();
        QTRY_VERIFY(data->hasRun() && data->complete() && data->candidateCount() > 40);
        // The run's best is shown at once, in every view.
        QTRY_COMPARE(w.session()->selection()->current(), data->run().bestCandidate);

        const auto fits = [&w, room](const char* step) {
            QCoreApplication::sendPostedEvents();
            w.layout()->activate();
            const QString what = QStringLiteral("%1: window %2x%3, asks for at least %4x%5, room %6x%7")
                                     .arg(QLatin1String(step))
                                     .arg(w.width())
                                     .arg(w.height())
                                     .arg(w.minimumSizeHint().width())
                                     .arg(w.minimumSizeHint().height())
                                     .arg(room.width())
                                     .arg(room.height());
            QVERIFY2(w.minimumSizeHint().width() <= room.width() && w.minimumSizeHint().height() <= room.height(),
                     qPrintable(what));
            QVERIFY2(w.width() <= room.width() && w.height() <= room.height(), qPrintable(what));
        };
        fits("opened");
        // The longest label, and the longest result line (a failure's message).
        qint64 longLabel = 0, longMessage = 0;
        for (int r = 0, label = 0, message = 0; r < data->candidateCount(); ++r) {
            const CandidateRow& row = data->candidateAt(r);
            if (row.label.size() > label)
                label = static_cast<int>(row.label.size()), longLabel = row.id;
            if (row.message.size() > message && !row.correct)
                message = static_cast<int>(row.message.size()), longMessage = row.id;
        }
        QVERIFY(longLabel && longMessage);
        for (qint64 id : {longLabel, longMessage}) {
            w.session()->selection()->select(id);
            QTRY_COMPARE_WITH_TIMEOUT(w.codeView()->shownCandidate(), id, 30000);
            fits("a candidate with a long label or message");
        }
        w.session()->selection()->compare(longMessage, longLabel);
        QTRY_VERIFY_WITH_TIMEOUT(
            w.codeView()->mode() == CodeView::Mode::Compare && w.codeView()->placeholderText().isEmpty(), 30000);
        fits("two kernels compared");
        w.codeView()->setMode(CodeView::Mode::Listing);
        fits("PTX and SASS");
        w.codeView()->setMode(CodeView::Mode::Source);
        for (QDockWidget* dock : w.docks()) {
            dock->raise();
            fits(qPrintable(dock->objectName()));
        }
    }

    // PTX and SASS of a CUDA kernel of the stored H200 run, made here by the CUDA worker (NVRTC;
    // nvdisasm where installed) without a GPU: the caret's source line marks its instructions and
    // the other way round, the listing is kept in the run's store and read from there next time,
    // and Compare sets two kernels' PTX side by side.
    void ptxAndSassOfAStoredH200Run() {
        if (!QFileInfo::exists(qEnvironmentVariable("KFORGE_WORKER_DIR") + QStringLiteral("/kforge-worker-cuda")))
            QSKIP("this build has no CUDA worker (no CUDA toolkit)");
        const QString store = m_dir.filePath(QStringLiteral("h200-listing.kforge"));
        QVERIFY(QFile::copy(QStringLiteral(KFORGE_SOURCE_DIR "/tests/gpu/runs/h200-llm-2026-11-30.kforge"), store));
        QFile::setPermissions(store, QFile::ReadOwner | QFile::WriteOwner);
        qint64 best = 0;
        qint64 runId = 0;
        {
            MainWindow w;
            w.resize(1300, 700);
            w.show();
            QVERIFY(w.openRun(store));
            RunData* data = w.session()->data();
            QTRY_VERIFY(data->hasRun() && data->complete());
            best = data->run().bestCandidate;
            runId = data->run().id;
            QTRY_COMPARE(w.session()->selection()->current(), best);
            QVERIFY(action(w, "showListing")->isEnabled());
            action(w, "showListing")->trigger();
            QCOMPARE(w.codeView()->mode(), CodeView::Mode::Listing);
            ListingView* view = w.codeView()->listingView();
            QVERIFY(view);
            QCOMPARE(view->target(), 90); // the run's GPU, an H200
            QTRY_VERIFY_WITH_TIMEOUT(view->shownCandidate() == best, 60000);
            QVERIFY2(view->placeholderText().isEmpty(), qPrintable(view->placeholderText()));
            QVERIFY(view->listingEditor()->text().contains(QStringLiteral(".target sm_90")));
            QVERIFY2(view->statusText().contains(QStringLiteral("NVRTC")), qPrintable(view->statusText()));

            // The caret on a line of code marks that line's instructions, and an instruction's
            // line marks its source line.
            // (QScintilla reports caret moves when it next updates, from the event loop.)
            QsciScintilla* source = view->sourceEditor();
            const auto moveCaret = [](QsciScintilla* editor, int line) {
                editor->setCursorPosition(line, 0);
                editor->viewport()->repaint();
                QCoreApplication::processEvents();
            };
            int codeLine = -1;
            for (int line = 0; line < source->lines() && codeLine < 0; ++line) {
                moveCaret(source, line);
                if (!view->relatedListingLines().isEmpty())
                    codeLine = line;
            }
            QVERIFY2(codeLine >= 0, "no source line has instructions");
            QCOMPARE(view->relatedSourceLines(), QList<int>{codeLine});
            const int instruction = view->relatedListingLines().first();
            QVERIFY(!view->listingEditor()->text(instruction).trimmed().startsWith(QLatin1Char('.')));
            moveCaret(view->listingEditor(), instruction);
            QCOMPARE(view->relatedSourceLines(), QList<int>{codeLine});
            QVERIFY(view->relatedListingLines().contains(instruction));

            view->setFormat(ListingFormat::Sass);
            if (view->statusText().contains(QStringLiteral("nvdisasm"))
                && !view->statusText().contains(QStringLiteral("no SASS"))) {
                QVERIFY(view->placeholderText().isEmpty());
                QVERIFY(view->listingEditor()->text().contains(QStringLiteral("//## File")));
                moveCaret(source, 0);
                moveCaret(source, codeLine);
                QVERIFY(!view->relatedListingLines().isEmpty());
            } else {
                QVERIFY2(view->placeholderText().contains(QStringLiteral("nvdisasm")),
                         qPrintable(view->placeholderText()));
            }
            view->setFormat(ListingFormat::Ptx);

            // Compare: the best against the run's first kernel, as PTX.
            const qint64 first = data->candidateAt(0).id;
            w.codeView()->setCompareWhat(CodeView::CompareWhat::Ptx);
            w.session()->selection()->compare(first, best);
            QTRY_VERIFY_WITH_TIMEOUT(
                w.codeView()->mode() == CodeView::Mode::Compare && w.codeView()->placeholderText().isEmpty(), 60000);
            QVERIFY(w.codeView()->compareView()->leftEditor()->text().contains(QStringLiteral(".entry")));
            QVERIFY(w.codeView()->compareView()->rightEditor()->text().contains(QStringLiteral(".entry")));
        }
        // Kept in the store, for this run's candidate and target.
        {
            auto opened = store::RunStore::open(store, store::OpenMode::ReadOnly);
            QVERIFY(opened);
            auto kept = (*opened)->listing(runId, best, 90);
            QVERIFY2(kept && kept->has_value(), "the listing was not kept");
            QVERIFY((*kept)->intermediate.find(".entry") != std::string::npos);
        }
        // Read from there next time: no worker is needed.
        qputenv("KFORGE_WORKER_CUDA", m_dir.filePath(QStringLiteral("no-such-worker")).toLocal8Bit());
        const auto restore = qScopeGuard([] { qunsetenv("KFORGE_WORKER_CUDA"); });
        MainWindow again;
        again.show();
        QVERIFY(again.openRun(store));
        QTRY_COMPARE(again.session()->selection()->current(), best);
        again.codeView()->setMode(CodeView::Mode::Listing);
        QTRY_COMPARE_WITH_TIMEOUT(again.codeView()->listingView()->shownCandidate(), best, 30000);
        // A kernel whose listing was not kept, and without a worker the tab says why.
        RunData* data = again.session()->data();
        qint64 other = 0;
        for (int r = data->candidateCount() - 1; r > 0 && !other; --r)
            if (data->candidateAt(r).id != best)
                other = data->candidateAt(r).id;
        again.session()->selection()->select(other);
        QTRY_VERIFY(again.codeView()->listingView()->placeholderText().contains(QStringLiteral("CUDA worker")));
    }

    // A geometry saved on a larger screen is not restored past the edges of this one.
    void restoredGeometryFitsTheScreen() {
        const QRect available = QGuiApplication::primaryScreen()->availableGeometry();
        {
            MainWindow large;
            large.show();
            QVERIFY(QTest::qWaitForWindowExposed(&large));
            large.resize(available.width() + 1200, available.height() + 900);
            QTRY_VERIFY(large.width() > available.width());
            QVERIFY(large.close()); // saves the geometry and the docks
        }
        QSettings settings;
        QVERIFY(settings.contains(QStringLiteral("mainwindow/geometry")));
        MainWindow w;
        const QSize least = w.minimumSizeHint();
        QVERIFY2(w.width() <= std::max(available.width(), least.width()) && w.width() < available.width() + 1200,
                 qPrintable(QStringLiteral("%1 on a screen %2 wide").arg(w.width()).arg(available.width())));
        QVERIFY2(w.height() <= std::max(available.height(), least.height()),
                 qPrintable(QStringLiteral("%1 on a screen %2 high").arg(w.height()).arg(available.height())));
        settings.remove(QStringLiteral("mainwindow")); // the other tests start with the default layout
    }

    // Without a saved layout the docks get their shares of the width the window is first shown at,
    // also when it is resized between being made and shown (as `kforge render-views` does): the
    // MAP-Elites dock three tenths, the candidates dock at least as much.
    void defaultDocksFollowTheSizeShown() {
        QSettings().remove(QStringLiteral("mainwindow"));
        MainWindow w;
        w.resize(1700, 1050);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const auto* heatmap = w.findChild<QDockWidget*>(QStringLiteral("heatmap"));
        const auto* candidates = w.findChild<QDockWidget*>(QStringLiteral("candidates"));
        QVERIFY(heatmap && candidates);
        const int side = 1700 * 3 / 10;
        QTRY_VERIFY2(std::abs(heatmap->width() - side) <= 12, qPrintable(QString::number(heatmap->width())));
        QVERIFY2(candidates->width() >= side - 12, qPrintable(QString::number(candidates->width())));
    }

    // The views show the run that is open: the tab in front when a run opens draws it without being
    // clicked (Islands), a plot in front follows another run opened (Progress), and a tab brought to
    // the front later catches up.
    void viewsFollowTheRunShown() {
        const QString first = m_dir.filePath(QStringLiteral("follow-2.kforge"));
        const QString second = m_dir.filePath(QStringLiteral("follow-4.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(first, 60, 2));
        QVERIFY(kforgetest::writeSyntheticRun(second, 200, 4));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const auto raise = [&w](const char* name) {
            for (QDockWidget* dock : w.docks())
                if (dock->objectName() == QLatin1String(name))
                    dock->raise();
        };
        raise("islands");
        QVERIFY(w.openRun(first));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 60);
        QTRY_COMPARE(w.islandsView()->laneLabels().size(), 2);
        QVERIFY(w.islandsView()->laneLabels().first().contains(QStringLiteral("30 cand.")));
        QTRY_VERIFY(w.session()->selection()->current() != 0); // a kernel is shown at once

        raise("progress");
        QTRY_COMPARE(w.progressPlot()->plot()->graphCount(), 3 + 2 * 2);
        QVERIFY(w.openRun(second));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 200);
        QTRY_COMPARE(w.progressPlot()->plot()->graphCount(), 3 + 2 * 4);
        QVERIFY(w.progressPlot()->islandBest(3) > 0.0);

        raise("islands");
        QTRY_COMPARE(w.islandsView()->laneLabels().size(), 4);
        QVERIFY(w.islandsView()->laneLabels().first().contains(QStringLiteral("50 cand.")));
    }

    // View > Theme switches the open window between the platform's colours, light and dark at once,
    // and the choice is kept for the next start.
    void themeMenuRestylesTheOpenWindow() {
        const QString store = m_dir.filePath(QStringLiteral("theme.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 120, 2));
        MainWindow w;
        w.resize(1366, 768);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openRun(store));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 120);
        QTRY_VERIFY(w.codeView()->shownCandidate() != 0);
        QVERIFY(action(w, "themeSystem")->isChecked());
        const double light = meanLightness(&w);
        QVERIFY2(light > 0.6, qPrintable(QString::number(light)));

        action(w, "themeDark")->trigger();
        QCoreApplication::processEvents(); // Qt posts a palette change to each window
        QVERIFY(theme::isDark(QGuiApplication::palette()));
        QVERIFY(action(w, "themeDark")->isChecked());
        QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("dark"));
        QCOMPARE(theme::savedChoice(), theme::Choice::Dark);
        QsciScintilla* editor = w.codeView()->sourceEditor();
        QVERIFY(editorColour(editor, true).lightnessF() < 0.3);
        QVERIFY(editorColour(editor, false).lightnessF() > 0.6);
        QCustomPlot* heatmap = w.heatmapView()->plot();
        QVERIFY(heatmap->toPixmap(200, 150).toImage().pixelColor(1, 1).lightnessF() < 0.3);
        QVERIFY(heatmap->xAxis->tickLabelColor().lightnessF() > 0.6);
        QCoreApplication::processEvents();
        const double dark = meanLightness(&w);
        QVERIFY2(dark < 0.3, qPrintable(QString::number(dark)));

        action(w, "themeLight")->trigger();
        QCoreApplication::processEvents(); // Qt posts a palette change to each window
        QVERIFY(!theme::isDark(QGuiApplication::palette()));
        QVERIFY(editorColour(editor, true).lightnessF() > 0.7);
        QVERIFY(editorColour(editor, false).lightnessF() < 0.3);
        QVERIFY(heatmap->xAxis->tickLabelColor().lightnessF() < 0.4);

        action(w, "themeSystem")->trigger();
        QCoreApplication::processEvents();
        QCOMPARE(theme::savedChoice(), theme::Choice::System);
        QVERIFY(!theme::isDark(QGuiApplication::palette())); // the offscreen platform's palette is light
        QVERIFY(meanLightness(&w) > 0.6);
    }

    // The experience panel said there was no library; a run creates one (when it first learns
    // something) and reports progress: the panel reads it without a restart.
    void experiencePanelSeesALibraryARunCreates() {
        const QString library = m_dir.filePath(QStringLiteral("created-by-a-run.kforge-library"));
        MainWindow w;
        w.setExperienceLibrary(library);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        ExperienceBrowser* browser = w.experienceBrowser();
        QTRY_VERIFY(browser->findChild<QLabel*>(QStringLiteral("message"))
                        ->text()
                        .contains(QStringLiteral("no experience library yet")));
        {
            auto created = experience::ExperienceLibrary::open(library);
            QVERIFY(created);
            experience::Insight insight;
            insight.kind = model::InsightKind::Helped;
            insight.task = QStringLiteral("vector_add");
            insight.backend = QStringLiteral("opencl");
            insight.transformation = QStringLiteral("float4 loads");
            insight.summary = QStringLiteral("vector loads helped");
            insight.speedup = 1.3;
            QVERIFY((*created)->add(insight));
        }
        QSignalSpy loaded(browser, &ExperienceBrowser::loaded);
        search::RunProgress progress;
        progress.state = search::RunState::Running;
        w.session()->data()->setProgress(progress); // as the engine's progress arrives
        QTRY_COMPARE(loaded.size(), 1);
        QCOMPARE(loaded.first().first().toInt(), 1);
        QCOMPARE(browser->model()->rowCount(), 1);
    }

    void setupDialogNamesWhatIsWrong() {
        RunSetupDialog d;
        fillSetup(d, m_dir.filePath(QStringLiteral("x.kforge")), m_port, 10);
        d.findChild<QLineEdit*>(QStringLiteral("models"))->setText(QStringLiteral("gpt-4o"));
        QVERIFY(!d.check());
        QVERIFY(d.findChild<QLabel*>(QStringLiteral("problem"))->text().contains(QStringLiteral("ENDPOINT:MODEL")));
        d.findChild<QLineEdit*>(QStringLiteral("models"))->setText(QStringLiteral("nowhere:m"));
        QVERIFY(!d.check());
        QVERIFY(
            d.findChild<QLabel*>(QStringLiteral("problem"))->text().contains(QStringLiteral("no endpoint 'nowhere'")));
        d.findChild<QLineEdit*>(QStringLiteral("models"))->setText(QStringLiteral("local:gpt-4.1-mini"));
        // Where the workers run: a place that is not local or ssh:// is named.
        auto* workersOn = d.findChild<QLineEdit*>(QStringLiteral("workersOn"));
        workersOn->setText(QStringLiteral("local gpu1"));
        QVERIFY(!d.check());
        QVERIFY(d.findChild<QLabel*>(QStringLiteral("problem"))->text().contains(QStringLiteral("--worker gpu1")));
        workersOn->setText(QStringLiteral("local ssh://me@gpu1:2222"));
        QVERIFY(d.check());
        QCOMPARE(d.setup().config.workerPlaces,
                 (QStringList{QStringLiteral("local"), QStringLiteral("ssh://me@gpu1:2222")}));
        workersOn->clear();
        QVERIFY(d.check());
        if (const QString dir = qEnvironmentVariable("KFORGE_RENDER_DIR"); !dir.isEmpty() && QDir().mkpath(dir))
            d.grab().save(dir + QStringLiteral("/run-setup.png")); // for people to look at
        QCOMPARE(d.setup().config.backend, model::Backend::OpenCL);
        QCOMPARE(d.setup().config.islands, 2);
        QCOMPARE(d.setup().config.llm.models.size(), 1);
        // The yardstick: PyTorch compared by default, over the rounds chosen; without it, no rounds to choose.
        QVERIFY(d.setup().config.pytorch);
        auto* rounds = d.findChild<QSpinBox*>(QStringLiteral("pytorchRounds"));
        QCOMPARE(rounds->minimum(), protocol::kMinPyTorchRounds);
        rounds->setValue(80);
        QVERIFY(d.check());
        QCOMPARE(d.setup().config.pytorchRounds, 80);
        d.findChild<QCheckBox*>(QStringLiteral("pytorch"))->setChecked(false);
        QVERIFY(!rounds->isEnabled());
        QVERIFY(d.check());
        QVERIFY(!d.setup().config.pytorch);
        // Review and promotion: the run configuration's defaults, and what is chosen.
        QVERIFY(d.setup().config.confirmBest);
        QCOMPARE(d.findChild<QDoubleSpinBox*>(QStringLiteral("rejectCeiling"))->value(), 1.1);
        QCOMPARE(d.findChild<QDoubleSpinBox*>(QStringLiteral("rejectCeiling"))->minimum(), 1.0);
        // 0 reads as what it means, not as a limit or a ceiling of nothing.
        auto* memoryReview = d.findChild<QDoubleSpinBox*>(QStringLiteral("memoryReviewCeiling"));
        memoryReview->setValue(0.0);
        QCOMPARE(memoryReview->text(), QStringLiteral("never"));
        auto* evaluations = d.findChild<QSpinBox*>(QStringLiteral("budgetEvaluations"));
        const int budget = evaluations->value();
        evaluations->setValue(0);
        QCOMPARE(evaluations->text(), QStringLiteral("no limit"));
        evaluations->setValue(budget);
        memoryReview->setValue(0.95);
        d.findChild<QCheckBox*>(QStringLiteral("confirmBest"))->setChecked(false);
        QVERIFY(d.check());
        QCOMPARE(d.setup().config.memoryReviewCeiling, 0.95);
        QVERIFY(!d.setup().config.confirmBest);
    }

    // A CUDA run whose workers run here is checked for a GPU before the dialog closes: without the
    // driver the dialog stays open and says why (the GUI never touches the driver: the CUDA worker,
    // here the fake one in no-device mode, is asked); with a device it starts. OpenCL is not asked.
    void aCudaRunIsCheckedForAGpuBeforeItStarts() {
        qputenv("KFORGE_WORKER_CUDA", KFORGE_FAKE_WORKER);
        qputenv("KFORGE_FAKE_BACKEND", "cuda");
        qputenv("KFORGE_FAKE_MODE", "no-device");
        const auto restore = qScopeGuard([] {
            for (const char* name : {"KFORGE_WORKER_CUDA", "KFORGE_FAKE_BACKEND", "KFORGE_FAKE_MODE"})
                qunsetenv(name);
        });
        RunSetupDialog d;
        fillSetup(d, m_dir.filePath(QStringLiteral("cuda.kforge")), m_port, 10);
        d.choose(QStringLiteral("vector_add"), QStringLiteral("cuda"), 10);
        QSignalSpy accepted(&d, &QDialog::accepted);
        d.accept();
        auto* problem = d.findChild<QLabel*>(QStringLiteral("problem"));
        QTRY_VERIFY(!problem->isHidden());
        QVERIFY2(problem->text().contains(QStringLiteral("cannot run CUDA kernels")), qPrintable(problem->text()));
        QVERIFY2(problem->text().contains(QStringLiteral("libcuda.so.1")), qPrintable(problem->text()));
        QCOMPARE(accepted.size(), 0);

        // Workers on another host are that host's business: no local check.
        d.findChild<QLineEdit*>(QStringLiteral("workersOn"))->setText(QStringLiteral("ssh://me@gpu1"));
        d.accept();
        QCOMPARE(accepted.size(), 1);
        QCOMPARE(d.setup().config.backend, model::Backend::Cuda);

        // Here, with a device: starts.
        qputenv("KFORGE_FAKE_MODE", "ok");
        RunSetupDialog ok;
        fillSetup(ok, m_dir.filePath(QStringLiteral("cuda.kforge")), m_port, 10);
        ok.choose(QStringLiteral("vector_add"), QStringLiteral("cuda"), 10);
        ok.findChild<QLineEdit*>(QStringLiteral("workersOn"))->clear();
        QSignalSpy started(&ok, &QDialog::accepted);
        ok.accept();
        QTRY_COMPARE(started.size(), 1);
        QVERIFY(ok.findChild<QLabel*>(QStringLiteral("problem"))->isHidden());
    }

    // F1 lists each shortcut once, and Quit has Ctrl+Q whatever the platform theme gives.
    void shortcutsAreListedOnceAndQuitHasCtrlQ() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(action(w, "quit")->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::Key_Q)));
        QCOMPARE(action(w, "quit")->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_Q));
        action(w, "keyboardShortcuts")->trigger();
        QMessageBox* box = nullptr;
        QTRY_VERIFY((box = w.findChild<QMessageBox*>()));
        const QString text = box->text();
        for (const char* key : {"<b>F8</b>", "<b>Shift+F8</b>", "<b>Ctrl+Q</b>", "<b>Ctrl+P</b>"})
            QVERIFY2(text.count(QLatin1String(key)) == 1, key);
        box->close();
    }

    // The candidate table: End and Home go to the last and first row in the current column, and
    // Tab moves on to the next widget instead of the next cell.
    void candidateTableMovesByRowAndLetsTabLeave() {
        const QString store = m_dir.filePath(QStringLiteral("keys.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 40));
        MainWindow w;
        QVERIFY(showRun(w, store, 40));
        QTableView* table = w.candidatesPanel()->view();
        table->setFocus();
        QTRY_VERIFY(table->hasFocus());
        table->setCurrentIndex(table->model()->index(3, CandidateTableModel::Status));
        for (auto [key, modifiers, row] : std::initializer_list<std::tuple<Qt::Key, Qt::KeyboardModifiers, int>>{
                 {Qt::Key_End, Qt::NoModifier, 39},
                 {Qt::Key_Home, Qt::NoModifier, 0},
                 {Qt::Key_End, Qt::ControlModifier, 39},
                 {Qt::Key_Home, Qt::ControlModifier, 0}}) {
            QTest::keyClick(table, key, modifiers);
            QCOMPARE(table->currentIndex().row(), row);
            QCOMPARE(table->currentIndex().column(), int(CandidateTableModel::Status));
        }
        QTRY_COMPARE(w.session()->selection()->current(),
                     table->currentIndex().data(CandidateTableModel::CandidateRole).toLongLong());
        QTest::keyClick(table, Qt::Key_Tab);
        QVERIFY(!table->hasFocus());
        QCOMPARE(table->currentIndex().row(), 0);
        QCOMPARE(table->currentIndex().column(), int(CandidateTableModel::Status));
    }

    // The Device column shows when a run was timed on more than one model, and only then.
    void deviceColumnForRunsThatMixModels() {
        const QString one = m_dir.filePath(QStringLiteral("one-model.kforge"));
        const QString two = m_dir.filePath(QStringLiteral("two-models.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(one, 20));
        QVERIFY(kforgetest::writeSyntheticRun(two, 20, 4, nullptr, "NVIDIA A100"));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QTableView* table = w.candidatesPanel()->view();
        QVERIFY(w.openRun(two));
        QTRY_COMPARE(table->model()->rowCount(), 20);
        QTRY_VERIFY(!table->isColumnHidden(CandidateTableModel::Device));
        QVERIFY(w.openRun(one));
        QTRY_COMPARE(table->model()->rowCount(), 20);
        QTRY_VERIFY(table->isColumnHidden(CandidateTableModel::Device));
    }

    // In the window's first layout the candidate table shows each candidate's status and speedup
    // beside its id, without scrolling; the confirmed speedup follows, then where it came from.
    void candidateTableShowsWhatACandidateIsWorthFirst() {
        const QString store = m_dir.filePath(QStringLiteral("worth.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 10));
        MainWindow w;
        QVERIFY(showRun(w, store, 10));
        QTableView* table = w.candidatesPanel()->view();
        const QHeaderView* header = table->horizontalHeader();
        QCOMPARE(header->visualIndex(CandidateTableModel::Id), 0);
        // The offscreen screen is 800 pixels wide, the smallest a workbench would see: the dock is at
        // its narrowest and the status and the measured speedup still show.
        int previous = 0;
        for (int column : {CandidateTableModel::Status, CandidateTableModel::Speedup, CandidateTableModel::Confirmed}) {
            QVERIFY2(header->visualIndex(column) > previous, qPrintable(QString::number(column)));
            previous = header->visualIndex(column);
            if (column == CandidateTableModel::Confirmed)
                continue;
            QVERIFY2(header->sectionViewportPosition(column) + header->sectionSize(column)
                         <= table->viewport()->width(),
                     qPrintable(QStringLiteral("column %1 ends at %2 of %3")
                                    .arg(column)
                                    .arg(header->sectionViewportPosition(column) + header->sectionSize(column))
                                    .arg(table->viewport()->width())));
        }
        QVERIFY(header->visualIndex(CandidateTableModel::Origin) > previous);
        // No PyTorch timed in this run: no column of empty speedups over eager.
        QVERIFY(table->isColumnHidden(CandidateTableModel::VsEager));

        // On a screen with room for it (the default window is 1500 pixels wide), the dock is as wide
        // as the panel's leading columns: the kernel time shows whole, with its unit, with a vertical
        // scroll bar beside it.
        CandidatesPanel panel(w.session()->data(), w.session()->selection());
        panel.resize(panel.leadingColumnsWidth(), 120); // a few rows: the scroll bar shows
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QTableView* alone = panel.view();
        QTRY_VERIFY(alone->verticalScrollBar()->isVisible());
        const QHeaderView* aloneHeader = alone->horizontalHeader();
        const int timeEnd = aloneHeader->sectionViewportPosition(CandidateTableModel::Time)
                            + aloneHeader->sectionSize(CandidateTableModel::Time);
        QVERIFY2(timeEnd <= alone->viewport()->width(),
                 qPrintable(QStringLiteral("Time ends at %1 of %2").arg(timeEnd).arg(alone->viewport()->width())));
        QVERIFY(aloneHeader->sectionViewportPosition(CandidateTableModel::Origin) >= timeEnd);
        const QString time = alone->model()->index(0, CandidateTableModel::Time).data().toString();
        QVERIFY2(time.endsWith(QLatin1String("s")), qPrintable(time)); // "8.557 ms", "937.8 µs"
        QVERIFY2(alone->fontMetrics().horizontalAdvance(time) < aloneHeader->sectionSize(CandidateTableModel::Time),
                 qPrintable(time));
    }

    // Columns moved, resized or sorted by are where the user left them in the next session; a
    // layout saved for another set of columns is not applied.
    void candidateColumnsAreKeptAcrossSessions() {
        const QString store = m_dir.filePath(QStringLiteral("columns.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 10));
        const QString key = QStringLiteral("candidates/columns");
        int defaultOrigin = 0;
        {
            MainWindow w;
            QVERIFY(showRun(w, store, 10));
            QHeaderView* header = w.candidatesPanel()->view()->horizontalHeader();
            defaultOrigin = header->visualIndex(CandidateTableModel::Origin);
            header->moveSection(defaultOrigin, 1);
            header->resizeSection(CandidateTableModel::Label, 333);
            w.candidatesPanel()->view()->sortByColumn(CandidateTableModel::Speedup, Qt::DescendingOrder);
            QVERIFY(w.close());
        }
        {
            MainWindow w;
            QVERIFY(showRun(w, store, 10));
            QTableView* table = w.candidatesPanel()->view();
            QCOMPARE(table->horizontalHeader()->visualIndex(CandidateTableModel::Origin), 1);
            QCOMPARE(table->horizontalHeader()->sectionSize(CandidateTableModel::Label), 333);
            QCOMPARE(table->horizontalHeader()->sortIndicatorSection(), int(CandidateTableModel::Speedup));
            const auto speedup = [table](int row) {
                return table->model()->index(row, CandidateTableModel::Speedup).data(CandidateTableModel::SortRole);
            };
            QVERIFY(speedup(0).toDouble() >= speedup(9).toDouble());
            QVERIFY(table->isColumnHidden(CandidateTableModel::VsEager)); // follows the run, not the session
        }
        QSettings settings;
        QVariantMap saved = settings.value(key).toMap();
        saved.insert(QStringLiteral("columns"), 3);
        settings.setValue(key, saved);
        {
            MainWindow w;
            QCOMPARE(w.candidatesPanel()->view()->horizontalHeader()->visualIndex(CandidateTableModel::Origin),
                     defaultOrigin);
        }
        settings.remove(key);
    }

    // A filter typed for one run does not hide the next run's candidates.
    void anotherRunStartsUnfiltered() {
        const QString first = m_dir.filePath(QStringLiteral("first.kforge"));
        const QString second = m_dir.filePath(QStringLiteral("second.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(first, 30));
        QVERIFY(kforgetest::writeSyntheticRun(second, 50));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openRun(first));
        QTableView* table = w.candidatesPanel()->view();
        QTRY_COMPARE(table->model()->rowCount(), 30);
        QTest::keyClicks(w.candidatesPanel()->filterField(), QStringLiteral("no such candidate"));
        QCOMPARE(table->model()->rowCount(), 0);
        QVERIFY(w.openRun(second));
        QTRY_COMPARE(table->model()->rowCount(), 50);
        QVERIFY(w.candidatesPanel()->filterField()->text().isEmpty());
    }

    // A store of several runs opens with a picker (newest first, filterable); the run chosen is
    // the one shown, and File > Switch Run offers the others of that store. A store of one run
    // opens it directly.
    void statusBarSaysWhenASpeedupOverPyTorchIsATie() {
        // The best timed beside PyTorch at the end: a figure the paired rounds cannot tell from 1
        // says so in the status bar; one they can does not, and the tooltip gives both intervals.
        const QString store = m_dir.filePath(QStringLiteral("tie.kforge"));
        qint64 runId = 0;
        QVERIFY(kforgetest::writeSyntheticRun(store, 12, 2, &runId));
        {
            auto opened = store::RunStore::open(store);
            QVERIFY(opened);
            auto run = (*opened)->run(runId);
            QVERIFY(run);
            run->bestCandidate = 5;
            run->bestSpeedup = 2.0;
            QVERIFY((*opened)->updateRun(*run));
            protocol::EvaluateResult last;
            last.id = 5;
            last.status = protocol::Status::Ok;
            last.candidateTiming = protocol::TimingStats{"cupti-activity", 20, 50.0, 50.0, 49.0, 51.0, 0.01};
            last.speedupVsEager = 1.32;
            last.speedupVsEagerInterval = protocol::RatioInterval{1.30, 1.34, 20};
            last.speedupVsCompile = 0.998;
            last.speedupVsCompileInterval = protocol::RatioInterval{0.993, 1.004, 20};
            QVERIFY((*opened)->insertEvaluation(runId, 5, model::EvaluationPurpose::Yardstick, last));
            protocol::EvaluateResult start; // the seed, timed beside eager at the start
            start.id = 1;
            start.status = protocol::Status::Ok;
            start.candidateTiming = protocol::TimingStats{"cupti-activity", 20, 80.0, 80.0, 79.0, 81.0, 0.01};
            start.eagerTiming = protocol::TimingStats{"cupti-activity", 20, 64.0, 64.0, 63.0, 65.0, 0.01};
            start.speedup = 1.0;
            start.speedupVsEager = 0.8;
            QVERIFY((*opened)->insertEvaluation(runId, 1, model::EvaluationPurpose::Search, start));
        }
        MainWindow w;
        w.show();
        QVERIFY(w.openRun(store));
        QTRY_VERIFY(w.session()->data()->hasRun() && w.session()->data()->complete());
        const QString text = w.statusWidget()->text();
        QVERIFY2(text.contains(QStringLiteral("1.32× eager, 1.00× torch.compile (a tie)")), qPrintable(text));
        bool hinted = false;
        for (auto* label : w.statusWidget()->findChildren<QLabel*>())
            hinted = hinted || label->toolTip().contains(QStringLiteral("a tie, 95% interval 0.993x-1.004x"));
        QVERIFY(hinted);
        // With eager timed, the candidate table gives each correct candidate's speedup over it.
        QVERIFY(!w.candidatesPanel()->view()->isColumnHidden(CandidateTableModel::VsEager));
    }

    void aStoreOfSeveralRunsOpensWithAPicker() {
        const QString store = m_dir.filePath(QStringLiteral("several.kforge"));
        qint64 first = 0, second = 0, third = 0;
        QVERIFY(kforgetest::writeSyntheticRun(store, 12, 2, &first));
        QVERIFY(kforgetest::writeSyntheticRun(store, 20, 2, &second));
        QVERIFY(kforgetest::writeSyntheticRun(store, 31, 2, &third));
        {
            auto opened = store::RunStore::open(store);
            QVERIFY(opened);
            auto run = (*opened)->run(second);
            QVERIFY(run);
            run->name = QStringLiteral("the layernorm sweep");
            QVERIFY((*opened)->updateRun(*run));
        }
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.openStoreFile(store);
        RunPickerDialog* picker = nullptr;
        QTRY_VERIFY((picker = w.findChild<RunPickerDialog*>()) != nullptr);
        QCOMPARE(picker->list()->topLevelItemCount(), 3);
        QCOMPARE(picker->chosenRun(), third); // the newest, first
        QCOMPARE(picker->list()->topLevelItem(0)->text(0), QString::number(third));
        // The filter narrows the list and the choice follows it.
        QTest::keyClicks(picker->filterField(), QStringLiteral("layernorm"));
        QCOMPARE(picker->chosenRun(), second);
        QVERIFY(!w.session()->data()->hasRun()); // nothing is opened before the choice
        picker->accept();
        QTRY_COMPARE(w.session()->runId(), second);
        QTRY_COMPARE(w.session()->data()->candidateCount(), 20);
        QTRY_VERIFY(w.findChildren<RunPickerDialog*>().isEmpty()); // closed, and gone

        // Switch Run lists the same store with the run shown chosen; Enter on another opens it.
        QVERIFY(action(w, "switchRun")->isEnabled());
        action(w, "switchRun")->trigger();
        RunPickerDialog* again = nullptr;
        QTRY_VERIFY((again = w.findChild<RunPickerDialog*>()) != nullptr);
        QCOMPARE(again->chosenRun(), second);
        again->choose(first);
        QTest::keyClick(again->list(), Qt::Key_Return);
        QTRY_COMPARE(w.session()->runId(), first);
        QTRY_COMPARE(w.session()->data()->candidateCount(), 12);

        // One run: no picker.
        const QString single = m_dir.filePath(QStringLiteral("single.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(single, 9));
        QTRY_VERIFY(w.findChildren<RunPickerDialog*>().isEmpty());
        w.openStoreFile(single);
        QTRY_COMPARE(w.session()->data()->candidateCount(), 9);
        QVERIFY(w.findChildren<RunPickerDialog*>().isEmpty());
    }

    // A stored run is steered as a live one: pin and veto are kept in its store at once (nothing
    // else in it changes), the window offers to resume the run, and the engine applies them then.
    void steersAStoredRun() {
        const QString store = m_dir.filePath(QStringLiteral("stored-steering.kforge"));
        qint64 runId = 0;
        QVERIFY(kforgetest::writeSyntheticRun(store, 40, 4, &runId));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openRun(store));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 40);
        QVERIFY(!w.session()->isLive());
        w.session()->selection()->select(12);
        QTRY_VERIFY(action(w, "pin")->isEnabled());
        QVERIFY(action(w, "veto")->isEnabled());
        QVERIFY(action(w, "edit")->isEnabled());

        QVERIFY(w.pinSelected());
        QMessageBox* offer = nullptr;
        QTRY_VERIFY((offer = w.findChild<QMessageBox*>(QStringLiteral("resumeOffer"))) != nullptr);
        QVERIFY2(offer->text().contains(QStringLiteral("1 steering action")), qPrintable(offer->text()));
        w.session()->selection()->select(13);
        QVERIFY(w.vetoSelected(QStringLiteral("wrong on odd sizes")));
        QTRY_VERIFY((offer = w.findChild<QMessageBox*>(QStringLiteral("resumeOffer"))) != nullptr
                    && offer->text().contains(QStringLiteral("2 steering action")));
        offer->close();

        auto opened = store::RunStore::open(store, store::OpenMode::ReadOnly);
        QVERIFY(opened);
        auto queued = (*opened)->queuedCommands(runId);
        QVERIFY(queued);
        QCOMPARE(queued->size(), 2);
        QCOMPARE(queued->at(0).command.value(QStringLiteral("kind")).toString(), QStringLiteral("pin"));
        QCOMPARE(queued->at(0).command.value(QStringLiteral("candidate")).toInteger(), 12);
        QCOMPARE(queued->at(1).command.value(QStringLiteral("kind")).toString(), QStringLiteral("veto"));
        QCOMPARE(queued->at(1).command.value(QStringLiteral("reason")).toString(),
                 QStringLiteral("wrong on odd sizes"));
        // The run itself is as it was until it resumes.
        auto flagged = (*opened)->flaggedCandidates(runId);
        QVERIFY(flagged);
        QVERIFY(flagged->first.isEmpty() && flagged->second.isEmpty());
        // Pause, stop and resume stay the live run's.
        QVERIFY(!w.session()->pause());
    }

    // Another run beside the one shown: both runs summarised, both best-so-far curves, and the two
    // best kernels' code with their figures.
    void comparesTwoRuns() {
        const QString first = m_dir.filePath(QStringLiteral("compare-a.kforge"));
        const QString second = m_dir.filePath(QStringLiteral("compare-b.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(first, 60, 2));
        QVERIFY(kforgetest::writeSyntheticRun(second, 90, 4));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(!action(w, "compareRuns")->isEnabled()); // nothing to compare with yet
        QVERIFY(w.openRun(first));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 60);
        QTRY_VERIFY(action(w, "compareRuns")->isEnabled());
        w.openComparison(second, 0);
        RunCompareDialog* dialog = nullptr;
        QTRY_VERIFY((dialog = w.findChild<RunCompareDialog*>()) != nullptr);
        QTRY_COMPARE(dialog->other()->data()->candidateCount(), 90);
        QTRY_COMPARE(dialog->summary()->item(4, 0)->text(), QStringLiteral("60"));
        QTRY_COMPARE(dialog->summary()->item(4, 1)->text(), QStringLiteral("90"));
        QVERIFY(dialog->summary()->horizontalHeaderItem(1)->text().contains(QStringLiteral("compare-b.kforge")));
        QCOMPARE(dialog->progress()->graphCount(), 2);
        QVERIFY(dialog->progress()->graph(0)->dataCount() > 0);
        QVERIFY(dialog->progress()->graph(1)->dataCount() > 0);
        // The roofline: both runs' timed candidates, under the shown run's roofs.
        QCOMPARE(dialog->roofline()->graphCount(), 3);
        QVERIFY(dialog->roofline()->graph(1)->dataCount() > 0);
        QVERIFY(dialog->roofline()->graph(2)->dataCount() > dialog->roofline()->graph(1)->dataCount());
        QCOMPARE(dialog->roofline()->graph(0)->dataCount(), 3);
        QVERIFY(dialog->bestOf(0) != 0 && dialog->bestOf(1) != 0);
        QTRY_VERIFY(!dialog->kernels()->leftEditor()->text().isEmpty());
        QVERIFY(!dialog->kernels()->rightEditor()->text().isEmpty());
        QVERIFY2(dialog->metrics()->text().contains(QStringLiteral("kernel time")),
                 qPrintable(dialog->metrics()->text()));
        if (const QString dir = qEnvironmentVariable("KFORGE_RENDER_DIR"); !dir.isEmpty() && QDir().mkpath(dir)) {
            dialog->grab().save(dir + QStringLiteral("/run-compare.png"));
            dialog->roofline()->grab().save(dir + QStringLiteral("/run-compare-roofline.png"));
        }
        dialog->close();
    }

    // A file that is empty or no run store is refused with its name, left as it was, and the window
    // goes on showing the run it showed; no run picker opens for it.
    void aFileThatIsNoRunStoreIsRefusedAndLeftAlone() {
        const QString store = m_dir.filePath(QStringLiteral("shown.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 25));
        const QString empty = m_dir.filePath(QStringLiteral("empty.kforge"));
        const QString text = m_dir.filePath(QStringLiteral("notes.kforge"));
        for (const auto& [path, bytes] : {std::pair{empty, QByteArray()}, std::pair{text, QByteArray("notes\n")}}) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(bytes);
        }
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.openRun(store));
        QTRY_COMPARE(w.session()->data()->candidateCount(), 25);
        w.session()->selection()->select(5);
        const QString title = w.windowTitle();
        QVERIFY(title.contains(QStringLiteral("shown.kforge")));
        const qint64 selected = w.session()->selection()->current();

        // Straight to a run, and through File > Open, which lists the store's runs for the picker.
        const std::pair<QString, bool> attempts[] = {{empty, false}, {text, false}, {empty, true}, {text, true}};
        for (const auto& [path, throughPicker] : attempts) {
            QSignalSpy failed(w.session(), &RunSession::failed);
            if (throughPicker)
                w.openStoreFile(path);
            else
                w.openRun(path);
            QTRY_COMPARE(failed.size(), 1);
            QVERIFY(w.findChildren<RunPickerDialog*>().isEmpty());
            const QString message = failed.first().first().toString();
            QVERIFY2(message.contains(QFileInfo(path).fileName()), qPrintable(message));
            QVERIFY2(message.contains(QStringLiteral("not a kforge run store")), qPrintable(message));
            QTest::qWait(50); // nothing more arrives for the refused file
            QCOMPARE(w.windowTitle(), title);
            QCOMPARE(w.session()->data()->candidateCount(), 25);
            QCOMPARE(w.session()->selection()->current(), selected);
            QCOMPARE(QFileInfo(w.session()->storePath()).fileName(), QStringLiteral("shown.kforge"));
            for (QMessageBox* box : w.findChildren<QMessageBox*>())
                box->close();
        }
        QCOMPARE(QFileInfo(empty).size(), 0);
        QCOMPARE(QFileInfo(text).size(), 6);
        QVERIFY(!QFileInfo::exists(empty + QStringLiteral("-wal")));
        // The run shown is still read: reloading it works.
        w.session()->refresh();
        QTRY_COMPARE(w.session()->data()->candidateCount(), 25);
    }

    void steersALiveRunOnPocl() {
        const QString store = m_dir.filePath(QStringLiteral("gui.kforge"));
        const QString library = m_dir.filePath(QStringLiteral("experience.kforge-library"));
        MainWindow w;
        w.setExperienceLibrary(library);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        RunSession* session = w.session();
        RunData* data = session->data();
        CandidateSelection* selection = session->selection();

        // New Run, through the dialog the menu opens.
        action(w, "newRun")->trigger();
        auto* dialog = w.findChild<RunSetupDialog*>();
        QVERIFY(dialog);
        fillSetup(*dialog, store, m_port, 400);
        dialog->accept();
        QTRY_VERIFY(session->isLive());
        QTRY_VERIFY_WITH_TIMEOUT(data->hasRun(), 60000);

        // Pause once there are elites to steer.
        const auto correctCount = [data] {
            int n = 0;
            for (int r = 0; r < data->candidateCount(); ++r)
                n += data->candidateAt(r).correct && !data->candidateAt(r).vetoed;
            return n;
        };
        QTRY_VERIFY_WITH_TIMEOUT(correctCount() >= 4, 240000);
        action(w, "pause")->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(session->state(), search::RunState::Paused, 240000);
        QVERIFY(w.statusWidget()->text().contains(QStringLiteral("paused"), Qt::CaseInsensitive));

        // Click a filled heatmap cell: its elite becomes the selection everywhere.
        HeatmapView* heatmap = w.heatmapView();
        for (QDockWidget* dock : w.docks())
            if (dock->widget() == heatmap)
                dock->raise();
        QTRY_VERIFY(heatmap->model()->rowCount() > 0);
        qint64 elite = 0;
        QPoint cell;
        for (int y = 0; y < heatmap->model()->rowCount() && !elite; ++y)
            for (int x = 0; x < heatmap->model()->columnCount() && !elite; ++x)
                if (const qint64 id = heatmap->model()->index(y, x).data(HeatmapModel::EliteRole).toLongLong()) {
                    elite = id;
                    cell = heatmap->cellCenter(heatmap->model()->xLevelOf(heatmap->model()->index(y, x)),
                                               heatmap->model()->yLevelOf(heatmap->model()->index(y, x)));
                }
        QVERIFY(elite);
        QTest::mouseClick(heatmap->plot(), Qt::LeftButton, {}, cell);
        QTRY_COMPARE(selection->current(), elite);
        const auto currentRow = w.candidatesPanel()->view()->currentIndex();
        QCOMPARE(currentRow.data(CandidateTableModel::CandidateRole).toLongLong(), elite);

        // Pin it.
        QTRY_VERIFY(action(w, "pin")->isEnabled());
        action(w, "pin")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(data->candidate(elite)->pinned, 30000);

        // Veto another correct candidate, chosen in the candidate list, with a reason.
        qint64 vetoed = 0;
        for (int r = data->candidateCount() - 1; r >= 0 && !vetoed; --r)
            if (data->candidateAt(r).correct && data->candidateAt(r).id != elite
                && !data->candidateAt(r).parents.isEmpty())
                vetoed = data->candidateAt(r).id;
        QVERIFY(vetoed);
        QTableView* table = w.candidatesPanel()->view();
        const QModelIndex vetoIndex =
            w.candidatesPanel()->filter()->mapFromSource(w.candidatesPanel()->model()->indexOf(vetoed));
        table->scrollTo(vetoIndex);
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(vetoIndex).center());
        QTRY_COMPARE(selection->current(), vetoed);
        QVERIFY(w.vetoSelected(QStringLiteral("reads past the end in review")));
        QTRY_VERIFY_WITH_TIMEOUT(data->candidate(vetoed)->vetoed, 30000);

        // Edit the pinned kernel and submit it: a new child with origin human.
        selection->select(elite);
        action(w, "edit")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<KernelEditorDialog*>(), 30000);
        auto* editor = w.findChild<KernelEditorDialog*>();
        editor->editor()->setText(QStringLiteral("#define KFORGE_HAND_EDITED 1\n") + editor->source());
        QVERIFY2(editor->submit(), qPrintable(editor->errorText()));
        action(w, "pause")->trigger(); // continue
        const auto human = [data]() -> const CandidateRow* {
            for (int r = 0; r < data->candidateCount(); ++r)
                if (data->candidateAt(r).origin == model::Origin::Human)
                    return &data->candidateAt(r);
            return nullptr;
        };
        QTRY_VERIFY_WITH_TIMEOUT(human() && human()->evaluated(), 240000);
        QVERIFY(human()->parents.contains(elite));
        // The edit is the pinned elite's kernel, so it is correct; on a loaded 2-core machine its
        // time may still beat the DRAM ceiling measured earlier, and the run then rejects it as an
        // impossible timing. Either way the edit was evaluated as the elite's child.
        QVERIFY2(human()->correct || human()->message.contains(QStringLiteral("impossible timing")),
                 qPrintable(human()->message));

        // Compare two candidates side by side: the human edit and its parent, selected in the list.
        const qint64 edit = human()->id;
        table->clearSelection();
        for (qint64 id : {elite, edit}) {
            const QModelIndex at =
                w.candidatesPanel()->filter()->mapFromSource(w.candidatesPanel()->model()->indexOf(id));
            table->selectionModel()->select(at, QItemSelectionModel::Select | QItemSelectionModel::Rows);
        }
        QVERIFY(w.compareSelected());
        QCOMPARE(w.codeView()->mode(), CodeView::Mode::Compare);
        QTRY_VERIFY_WITH_TIMEOUT(
            w.codeView()->compareView()->rightEditor()->text().contains(QStringLiteral("KFORGE_HAND_EDITED")), 30000);
        QVERIFY(!w.codeView()->compareView()->leftEditor()->text().contains(QStringLiteral("KFORGE_HAND_EDITED")));
        QCOMPARE(w.codeView()->compareView()->addedLines(), 1);

        // A candidate the model broke: its compile error leads to its source line.
        const auto broken = [data]() -> qint64 {
            for (int r = 0; r < data->candidateCount(); ++r)
                if (data->candidateAt(r).status == QLatin1String("compile_error"))
                    return data->candidateAt(r).id;
            return 0;
        };
        QTRY_VERIFY_WITH_TIMEOUT(broken(), 120000);
        selection->select(broken());
        QAbstractItemView* findings = w.diagnosticsView()->findingsView();
        QSignalSpy lines(w.diagnosticsView(), &DiagnosticsView::lineActivated);
        QTRY_VERIFY_WITH_TIMEOUT(findings->model()->rowCount() > 0, 30000);
        for (int r = 0; r < findings->model()->rowCount() && lines.isEmpty(); ++r) {
            findings->setCurrentIndex(findings->model()->index(r, 0));
            QTest::keyClick(findings, Qt::Key_Return);
        }
        QVERIFY(!lines.isEmpty());
        const int line = lines.first().first().toInt();
        QVERIFY(line > 0);
        QCOMPARE(w.codeView()->mode(), CodeView::Mode::Source);
        int cursorLine = 0, cursorIndex = 0;
        w.codeView()->sourceEditor()->getCursorPosition(&cursorLine, &cursorIndex);
        QCOMPARE(cursorLine + 1, line);

        // Stop; the run can be resumed later.
        action(w, "stop")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(!session->isLive(), 120000);
        QVERIFY(action(w, "resumeRun")->isEnabled());
        QTRY_VERIFY(!data->llmCalls().isEmpty());

        // Every human action reached the experience library.
        auto lib = experience::ExperienceLibrary::open(library);
        QVERIFY(lib);
        auto insights = (*lib)->all();
        QVERIFY(insights);
        std::set<QString> kinds;
        for (const auto& i : *insights)
            kinds.insert(model::insightKindName(i.kind));
        QVERIFY(kinds.count(QStringLiteral("human_pin")));
        QVERIFY(kinds.count(QStringLiteral("human_veto")));
        QVERIFY(kinds.count(QStringLiteral("human_edit")));
    }

    // Every view of the stored run as PNG files: into KFORGE_RENDER_DIR when set (for people to
    // look at), else a temporary folder.
    void rendersEveryViewOfTheStoredRun() {
        // A run of its own, so the test does not depend on the others or their order.
        const QString store = m_dir.filePath(QStringLiteral("rendered.kforge"));
        QVERIFY(kforgetest::writeSyntheticRun(store, 300));
        RenderOptions o;
        o.storePath = store;
        o.outDir = qEnvironmentVariable("KFORGE_RENDER_DIR", m_dir.filePath(QStringLiteral("png")));
        o.experiencePath = m_dir.filePath(QStringLiteral("experience.kforge-library"));
        auto written = renderViews(o);
        QVERIFY2(written, written ? "" : written.error().c_str());
        QCOMPARE(written->size(), 18); // a CUDA run: PTX and SASS too
        for (const QString& file : *written) {
            QImage image(file);
            QVERIFY2(!image.isNull() && image.width() > 300 && image.height() > 200, qPrintable(file));
        }
        auto missing = renderViews({m_dir.filePath(QStringLiteral("none.kforge")),
                                    0,
                                    0,
                                    m_dir.filePath(QStringLiteral("none")),
                                    {},
                                    {},
                                    {},
                                    60});
        QVERIFY(!missing);
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
