// How the workbench copes with big runs: a synthetic run store of 10k and of 100k candidates (as a
// long search leaves it: lineage, results, findings, roofline points) opened in the real window,
// side by side in one process. Prints, for each size, the time until every candidate is in the
// views, how long the GUI thread was busy at most in one go while it loaded (what a user feels
// as stutter), the time a selection takes to reach every view (median and slowest of nine), and
// the process's peak resident memory while it opened; then the 100k/10k ratios
// (`kforge-guibench SMALL LARGE` for other sizes).
// Runs under the offscreen platform when there is no display.

#include "mainwindow.h"
#include "plotstyle.h"
#include "runsession.h"
#include "syntheticrun.h"

#include <QAbstractEventDispatcher>
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace kforge;

// Under `valgrind --tool=callgrind --instr-atstart=no` only the selections are counted: their
// instructions are a figure other processes on the machine do not change, though timers and
// background loads still move it by some 10% (tests/bench/RESULTS.md).
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

namespace {

struct Figures {
    int candidates = 0;
    double writeSeconds = 0;
    double openSeconds = 0;
    double longestStallMs = 0;  // the longest the GUI thread did not get back to its event loop
    double selectMs = 0;        // the median of several selections
    double longestSelectMs = 0; // the slowest of them
    double peakMiB = 0;         // the process's peak resident memory while the run opened and was selected in
};

// A positive whole number from the environment variable `name`, else `fallback`.
int positiveFromEnvironment(const char* name, int fallback) {
    const int value = qEnvironmentVariableIntValue(name);
    return value > 0 ? value : fallback;
}

// The process's peak resident set (VmHWM) in MiB; 0 where /proc does not say.
double peakResidentMiB() {
    QFile status(QStringLiteral("/proc/self/status"));
    if (!status.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray& line : status.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').value(0).toDouble() / 1024.0;
    return 0;
}

// Starts the peak over (Linux resets VmHWM to the current resident set), so that each size's peak
// is its own and not the one before's.
void resetPeakResident() {
    QFile clear(QStringLiteral("/proc/self/clear_refs"));
    if (clear.open(QIODevice::WriteOnly))
        clear.write("5");
}

// Measures the gaps between event-loop iterations while `done` is false.
template <typename Done> double runUntil(Done&& done, double* longestStallMs) {
    QElapsedTimer total;
    total.start();
    QElapsedTimer gap;
    gap.start();
    double longest = 0;
    QEventLoop loop;
    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
        longest = std::max(longest, gap.nsecsElapsed() / 1e6);
        gap.restart();
        if (done())
            loop.quit();
    });
    tick.start(10); // a stall is a gap much longer than this
    loop.exec();
    if (longestStallMs)
        *longestStallMs = longest;
    return total.nsecsElapsed() / 1e9;
}

Figures measure(int n) {
    Figures f;
    f.candidates = n;
    // KFORGE_GUIBENCH_DIR keeps the stores between runs (for profiling the opening alone).
    QTemporaryDir temporary;
    const QString kept = qEnvironmentVariable("KFORGE_GUIBENCH_DIR");
    const QString path = (kept.isEmpty() ? temporary.path() : kept) + QStringLiteral("/bench-%1.kforge").arg(n);
    QElapsedTimer t;
    t.start();
    if (QFile::exists(path) && !kept.isEmpty()) {
        // written by an earlier run
    } else if (auto s = kforgetest::writeSyntheticRun(path, n, 8); !s) {
        std::fprintf(stderr, "cannot write the synthetic run: %s\n", s.error().c_str());
        std::exit(1);
    }
    f.writeSeconds = t.nsecsElapsed() / 1e9;

    resetPeakResident();
    ui::MainWindow window;
    window.resize(1600, 1000);
    window.show();
    auto* data = window.session()->data();
    window.openRun(path);
    f.openSeconds = runUntil([&] { return data->candidateCount() == n && !data->loading(); }, &f.longestStallMs);
    // Let the coalesced redraws of the last chunk happen, then time a selection reaching the views.
    runUntil(
        [&, started = QElapsedTimer()]() mutable {
            if (!started.isValid())
                started.start();
            return started.elapsed() > 300;
        },
        nullptr);
    // Several candidates spread over the run, each a selection of its own: the median is what a
    // click costs, the longest what the slowest one did (KFORGE_GUIBENCH_SELECTIONS: how many, 9).
    const int selections = positiveFromEnvironment("KFORGE_GUIBENCH_SELECTIONS", 9);
    std::vector<double> selectMs;
    // A selection has reached the views once no shown view waits for a coalesced refresh and the
    // window has painted what they drew (a view in a background tab redraws when it is shown).
    const QList<ui::plotstyle::RefreshTimer*> refreshes = window.findChildren<ui::plotstyle::RefreshTimer*>();
    const auto settled = [&] {
        return std::none_of(refreshes.begin(), refreshes.end(), [](const QTimer* timer) { return timer->isActive(); });
    };
    CALLGRIND_START_INSTRUMENTATION;
    for (int i = 0; i < selections; ++i) {
        QElapsedTimer select;
        select.start();
        window.session()->selection()->select(1 + qint64(n - 1) * (2 * (i % 9) + 1) / 18);
        const double direct = select.nsecsElapsed() / 1e6;
        do
            QCoreApplication::processEvents();
        while (!settled());
        QCoreApplication::processEvents(); // the paint of what the last refresh drew
        selectMs.push_back(select.nsecsElapsed() / 1e6);
        if (qEnvironmentVariableIsSet("KFORGE_GUIBENCH_SPLIT"))
            std::fprintf(stderr, "selection %d: %.1f ms in the signal's receivers, %.1f ms in all\n", i, direct,
                         selectMs.back());
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    f.longestSelectMs = *std::max_element(selectMs.begin(), selectMs.end());
    std::nth_element(selectMs.begin(), selectMs.begin() + selectMs.size() / 2, selectMs.end());
    f.selectMs = selectMs[selectMs.size() / 2];
    f.peakMiB = peakResidentMiB();
    return f;
}

} // namespace

// With KFORGE_GUIBENCH_SLOW set, names every event that kept the GUI thread longer than that many
// milliseconds (100 where the value is no number).
class TimedApplication : public QApplication {
public:
    using QApplication::QApplication;
    bool notify(QObject* receiver, QEvent* event) override {
        if (!m_report)
            return QApplication::notify(receiver, event);
        QElapsedTimer t;
        t.start();
        const int type = event->type();
        const bool result = QApplication::notify(receiver, event);
        if (t.elapsed() > m_threshold)
            std::fprintf(stderr, "slow: %lld ms in event %d to %s (in %s)\n", static_cast<long long>(t.elapsed()), type,
                         receiver->metaObject()->className(),
                         receiver->parent() ? receiver->parent()->metaObject()->className() : "");
        return result;
    }

private:
    bool m_report = !qEnvironmentVariableIsEmpty("KFORGE_GUIBENCH_SLOW");
    qint64 m_threshold = positiveFromEnvironment("KFORGE_GUIBENCH_SLOW", 100);
};

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    TimedApplication app(argc, argv);
    // kforge-guibench [SMALL LARGE]: the two run sizes (default 10000 and 100000).
    const QStringList args = QCoreApplication::arguments();
    const Figures small = measure(args.size() > 2 ? args[1].toInt() : 10000);
    const Figures large = measure(args.size() > 2 ? args[2].toInt() : 100000);
    std::printf(
        "| candidates | write store s | open until every view has all s | longest GUI stall ms | select ms, median "
        "| select ms, slowest | peak memory MiB |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const Figures& f : {small, large})
        std::printf("| %d | %.2f | %.2f | %.1f | %.1f | %.1f | %.0f |\n", f.candidates, f.writeSeconds, f.openSeconds,
                    f.longestStallMs, f.selectMs, f.longestSelectMs, f.peakMiB);
    std::printf(
        "\nratios large / small: open %.2f (%.0f = linear), longest stall %.2f, select %.2f, peak memory %.2f\n",
        large.openSeconds / small.openSeconds, double(large.candidates) / small.candidates,
        large.longestStallMs / small.longestStallMs, large.selectMs / std::max(0.001, small.selectMs),
        large.peakMiB / std::max(1.0, small.peakMiB));
    return 0;
}
