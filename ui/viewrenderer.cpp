#include "viewrenderer.h"

#include "candidatespanel.h"
#include "codeview.h"
#include "listingservice.h"
#include "listingview.h"
#include "llmlogview.h"
#include "mainwindow.h"
#include "plotstyle.h"
#include "runsession.h"

#include <Qsci/qsciscintilla.h>
#include <qcustomplot.h>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QDockWidget>
#include <QEventLoop>
#include <QTableView>
#include <QTimer>

namespace kforge::ui {

namespace {

// Runs the event loop until `done()` holds, checking it again whenever one of the signals it was
// told to wake on arrives; false at the deadline. Nothing polls and nothing sleeps.
class Waiter {
public:
    template <typename Sender, typename Signal> void wakeOn(const Sender* sender, Signal signal) {
        QObject::connect(sender, signal, &m_loop, [this] { m_loop.quit(); });
    }

    template <typename Done> bool until(Done&& done, const QDeadlineTimer& deadline) {
        QTimer timeout;
        timeout.setSingleShot(true);
        QObject::connect(&timeout, &QTimer::timeout, &m_loop, &QEventLoop::quit);
        while (!done()) {
            if (deadline.hasExpired())
                return false;
            timeout.start(std::chrono::milliseconds(std::max<qint64>(1, deadline.remainingTime())));
            m_loop.exec();
        }
        return true;
    }

private:
    QEventLoop m_loop;
};

// Until every visible view under `root` has drawn what it knows: its coalesced refresh has run
// (woken by the refresh timers themselves; showing a view starts its timer if it has news), its
// queued replot is done.
bool drawn(QWidget* root, const QDeadlineTimer& deadline) {
    Waiter waiter;
    const auto timers = root->findChildren<plotstyle::RefreshTimer*>();
    for (const auto* timer : timers)
        waiter.wakeOn(timer, &QTimer::timeout);
    const bool idle = waiter.until(
        [&] {
            QCoreApplication::sendPostedEvents(); // show events arm refreshes; deltas and replots queue
            return std::none_of(timers.begin(), timers.end(), [](const plotstyle::RefreshTimer* t) {
                return t->isActive() && t->view()->isVisible();
            });
        },
        deadline);
    QCoreApplication::sendPostedEvents();
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>())
        if (plot->isVisible())
            plot->replot(QCustomPlot::rpImmediateRefresh);
    return idle;
}

// The line (0-based) of the first statement inside the first kernel's body, so that a rendered
// listing shows some instructions marked.
int firstKernelLine(const QString& source) {
    const QStringList lines = source.split(QLatin1Char('\n'));
    bool inKernel = false;
    for (int i = 0; i < lines.size(); ++i) {
        const QString line = lines[i].trimmed();
        if (line.contains(QStringLiteral("__global__")))
            inKernel = true;
        else if (inKernel && !line.isEmpty() && !line.startsWith(QStringLiteral("//")) && line != QStringLiteral("{")
                 && line.contains(QLatin1Char(';')))
            return i;
    }
    return 0;
}

} // namespace

spec::Expected<QStringList> renderViews(const RenderOptions& options) {
    if (!QDir().mkpath(options.outDir))
        return spec::fail(QStringLiteral("cannot create the folder %1").arg(options.outDir).toStdString());
    const QDir out(options.outDir);
    const QDeadlineTimer deadline(std::chrono::seconds(options.timeoutSeconds));

    MainWindow window;
    window.setExperienceLibrary(options.experiencePath);
    window.resize(options.windowSize);
    window.show();
    RunSession* session = window.session();
    QString failure;
    QObject::connect(session, &RunSession::failed, &window, [&failure](const QString& message) { failure = message; });
    if (!window.openRun(options.storePath, options.run))
        return spec::fail(failure.isEmpty() ? QStringLiteral("cannot open %1").arg(options.storePath).toStdString()
                                            : failure.toStdString());
    RunData* data = session->data();
    Waiter waiter; // wakes whenever the run, a candidate's details or a failure arrive
    waiter.wakeOn(data, &RunData::runChanged);
    waiter.wakeOn(session, &RunSession::failed);
    waiter.wakeOn(session->details(), &CandidateDetails::loaded);
    if (!waiter.until([&] { return !failure.isEmpty() || (data->hasRun() && !data->loading()); }, deadline))
        return spec::fail(QStringLiteral("%1 did not load within %2 s")
                              .arg(options.storePath)
                              .arg(options.timeoutSeconds)
                              .toStdString());
    if (!failure.isEmpty())
        return spec::fail(failure.toStdString());
    if (data->candidateCount() == 0)
        return spec::fail(QStringLiteral("run %1 has no candidates to show").arg(data->run().id).toStdString());

    qint64 shown = options.candidate ? options.candidate : data->run().bestCandidate;
    if (!data->candidate(shown))
        shown = options.candidate ? 0 : data->candidateAt(data->candidateCount() - 1).id;
    if (!shown)
        return spec::fail(
            QStringLiteral("run %1 has no candidate %2").arg(data->run().id).arg(options.candidate).toStdString());
    session->selection()->select(shown);
    const CandidateRow* row = data->candidate(shown);
    const qint64 parent = row->parents.isEmpty() ? 0 : row->parents.front();
    const qint64 baseline = data->candidateAt(0).id;
    const auto loaded = [&](qint64 id) { return id == 0 || session->details()->details(id) != nullptr; };
    waiter.until([&] { return loaded(shown) && loaded(parent) && loaded(baseline); }, deadline);
    if (auto* calls = window.llmLogView()->callsView(); calls->model() && calls->model()->rowCount() > 0)
        calls->selectRow(0);
    drawn(&window, deadline);

    QStringList written;
    const auto save = [&](const QPixmap& pixmap, const QString& name) -> spec::Status {
        const QString file = out.filePath(name);
        if (!pixmap.save(file))
            return spec::fail(QStringLiteral("cannot write %1").arg(file).toStdString());
        written << file;
        return spec::success();
    };
    if (auto s = save(window.grab(), QStringLiteral("00-window.png")); !s)
        return spec::Error{s.error()};

    // Each docked view on its own, floated to a readable size.
    int n = 1;
    for (QDockWidget* dock : window.docks()) {
        const bool wasFloating = dock->isFloating();
        dock->setFloating(true);
        dock->show();
        dock->raise();
        dock->resize(options.viewSize);
        drawn(dock, deadline);
        const QString name = QStringLiteral("%1-%2.png").arg(n++, 2, 10, QLatin1Char('0')).arg(dock->objectName());
        const auto s = save(dock->widget()->grab(), name);
        dock->setFloating(wasFloating);
        if (!s)
            return spec::Error{s.error()};
    }

    // The code view in its three modes, on its own at a readable size. The diff needs a kernel
    // with a parent: when the shown one has none (a seed or an expert), the best child is used.
    CodeView* code = window.codeView();
    window.takeCentralWidget();
    code->resize(options.viewSize);
    code->show();
    const auto grabCode = [&](CodeView::Mode mode, const QString& what) -> spec::Status {
        code->setMode(mode);
        drawn(code, deadline);
        return save(code->grab(), QStringLiteral("%1-code-%2.png").arg(n++, 2, 10, QLatin1Char('0')).arg(what));
    };
    const auto restore = [&] { window.setCentralWidget(code); };
    if (auto s = grabCode(CodeView::Mode::Source, QStringLiteral("source")); !s) {
        restore();
        return spec::Error{s.error()};
    }
    // Prefer a child whose code differs from its parent's (a tuner child only changes parameters).
    qint64 child = row->parents.isEmpty() || row->origin == model::Origin::Tuner ? 0 : shown;
    for (bool anyOrigin : {false, true})
        for (int r = 0; r < data->candidateCount() && !child; ++r) {
            const CandidateRow& c = data->candidateAt(r);
            if (c.correct && !c.parents.isEmpty() && (anyOrigin || c.origin != model::Origin::Tuner))
                child = c.id;
        }
    if (child) {
        session->selection()->select(child);
        const qint64 childParent = data->candidate(child)->parents.front();
        waiter.until([&] { return loaded(child) && loaded(childParent); }, deadline);
    }
    if (auto s = grabCode(CodeView::Mode::DiffParent, QStringLiteral("diff-parent")); !s) {
        restore();
        return spec::Error{s.error()};
    }
    session->selection()->select(shown);
    session->selection()->compare(baseline, shown);
    waiter.until([&] { return loaded(baseline) && loaded(shown); }, deadline);
    const auto compared = grabCode(CodeView::Mode::Compare, QStringLiteral("compare-baseline"));
    if (!compared) {
        restore();
        return spec::Error{compared.error()};
    }
    // A CUDA run's PTX and SASS of the shown kernel, listed by a CUDA worker of this machine (or
    // read from the store), with the caret on the kernel's first line of code.
    if (ListingView* listing = code->listingView(); listing && data->run().backend == model::Backend::Cuda) {
        ListingService* listings = code->listings();
        waiter.wakeOn(listings, &ListingService::changed);
        code->setMode(CodeView::Mode::Listing);
        const auto listed = [&] {
            const ListingService::Entry* entry = listings->entry(shown, listing->target());
            return entry && entry->state == ListingService::Entry::State::Done;
        };
        waiter.until(listed, deadline);
        for (ListingFormat format : {ListingFormat::Ptx, ListingFormat::Sass}) {
            listing->setFormat(format);
            listing->refresh();
            if (listing->sourceEditor()->lines() > 0) {
                const int firstCode = firstKernelLine(listing->sourceEditor()->text());
                listing->sourceEditor()->setCursorPosition(firstCode, 0);
            }
            const QString what = format == ListingFormat::Ptx ? QStringLiteral("ptx") : QStringLiteral("sass");
            if (auto s = grabCode(CodeView::Mode::Listing, what); !s) {
                restore();
                return spec::Error{s.error()};
            }
        }
        listing->setFormat(ListingFormat::Ptx);
    }
    restore();
    return written;
}

} // namespace kforge::ui
