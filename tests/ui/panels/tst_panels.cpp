// The run's side panels: their models grow with RunData without resets, and the views select
// candidates, show prompts and findings, and browse an experience library read off the GUI thread.

#include "candidatedetails.h"
#include "candidatelistmodel.h"
#include "candidateselection.h"
#include "diagnosticsview.h"
#include "diffhighlighter.h"
#include "eventlogview.h"
#include "eventmodel.h"
#include "experiencebrowser.h"
#include "findingmodel.h"
#include "insightmodel.h"
#include "lineageview.h"
#include "llmcallmodel.h"
#include "llmlogview.h"
#include "rundata.h"
#include "showwatcher.h"
#include "theme.h"
#include "workerthread.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMainWindow>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextLayout>

using namespace kforge;
using namespace kforge::ui;

namespace {

CandidateRow row(qint64 id, QList<qint64> parents, const QString& status = QStringLiteral("ok"), double speedup = 1.0) {
    CandidateRow r;
    r.id = id;
    r.parents = std::move(parents);
    r.island = static_cast<int>(id % 2);
    r.generation = static_cast<int>(id / 3);
    r.origin = r.parents.isEmpty() ? model::Origin::Seed : model::Origin::Llm;
    r.label = r.parents.isEmpty() ? QStringLiteral("baseline") : QStringLiteral("variant %1").arg(id);
    r.params = QStringLiteral("BLOCK=%1").arg(32 << (id % 3));
    r.status = status;
    r.correct = status == QLatin1String("ok");
    r.speedup = speedup;
    return r;
}

RunDelta delta(bool fresh = false) {
    RunDelta d;
    d.fresh = fresh;
    d.run.id = 1;
    d.run.name = QStringLiteral("sgemm on cuda");
    d.run.task = QStringLiteral("sgemm");
    d.run.backend = model::Backend::Cuda;
    d.islands = 2;
    return d;
}

store::LlmCallRecord call(qint64 id, std::optional<qint64> candidate, std::optional<double> cost) {
    store::LlmCallRecord c;
    c.id = id;
    c.generation = 1;
    c.island = 0;
    c.op = QStringLiteral("mutate");
    c.stage = QStringLiteral("structure");
    c.endpoint = QStringLiteral("local");
    c.model = QStringLiteral("qwen2.5-coder");
    c.candidateId = candidate;
    c.status = candidate ? QStringLiteral("ok") : QStringLiteral("unparsable");
    c.inputTokens = 1200;
    c.outputTokens = 300;
    c.costUsd = cost;
    c.latencySeconds = 2.5;
    c.attempts = 1;
    c.systemPrompt = QStringLiteral("You write CUDA kernels.");
    c.prompt = QStringLiteral("Improve kernel %1").arg(id);
    c.answer = QStringLiteral("```cuda\n__global__ void k%1() {}\n```").arg(id);
    return c;
}

store::EventRecord makeEvent(qint64 id, const QString& kind, const QJsonObject& data) {
    store::EventRecord e;
    e.id = id;
    e.generation = static_cast<int>(id);
    e.kindName = kind;
    e.kind = model::parseEventKind(kind).value_or(model::EventKind::Unknown);
    e.data = data;
    e.at = QDateTime::currentDateTimeUtc();
    return e;
}

store::EvaluationRecord evaluation(qint64 candidate) {
    store::EvaluationRecord e;
    e.id = candidate * 10;
    e.candidateId = candidate;
    e.purpose = model::EvaluationPurpose::Search;
    e.result.status = protocol::Status::Incorrect;
    e.result.message = "output c differs from the reference";
    e.result.device = "NVIDIA H200";
    e.result.compile.push_back({"candidate", true, 0.4, "ptxas info: Used 40 registers", {{"registers", 40.0}}});
    protocol::OutputCheck out;
    out.name = "c";
    out.checked = 4096;
    out.mismatches = 12;
    out.maxAbsError = 0.5;
    out.maxRelError = 0.2;
    out.firstMismatch = 7;
    e.result.outputs.push_back(out);
    e.result.checks.push_back({"inputs_unchanged", true, ""});
    e.result.diagnostics.push_back({"verification", "error", "c: 12 of 4096 elements differ", "candidate", 0, 0});
    e.findings.append(QJsonObject{{QStringLiteral("rule"), QStringLiteral("race")},
                                  {QStringLiteral("kind"), QStringLiteral("correctness")},
                                  {QStringLiteral("severity"), QStringLiteral("error")},
                                  {QStringLiteral("message"), QStringLiteral("shared tile read before the barrier")},
                                  {QStringLiteral("evidence"), QStringLiteral("mismatches at tile edges")},
                                  {QStringLiteral("line"), 42},
                                  {QStringLiteral("direction"), QStringLiteral("add __syncthreads() after the load")}});
    e.findings.append(QJsonObject{{QStringLiteral("rule"), QStringLiteral("occupancy")},
                                  {QStringLiteral("kind"), QStringLiteral("resources")},
                                  {QStringLiteral("severity"), QStringLiteral("info")},
                                  {QStringLiteral("message"), QStringLiteral("40 registers per thread")}});
    return e;
}

experience::Insight insight(const QString& kind, const QString& transformation, double speedup) {
    experience::Insight i;
    i.kind = *model::parseInsightKind(kind);
    i.family = QStringLiteral("gemm");
    i.task = QStringLiteral("sgemm");
    i.backend = QStringLiteral("cuda");
    i.transformation = transformation;
    i.summary = QStringLiteral("%1 changed the time by %2x").arg(transformation).arg(speedup);
    i.speedup = speedup;
    i.before = QStringLiteral("a\nb\n");
    i.after = QStringLiteral("a\nc\n") + transformation;
    i.diff = QStringLiteral("--- before\n+++ after\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
    i.origin = QStringLiteral("/runs/sgemm.kforge#run1/candidate17");
    i.at = QDateTime::currentDateTimeUtc();
    return i;
}

} // namespace

class TestPanels : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase() {
        QVERIFY2(joinWorkerThreads(), "the experience browser's thread ends once its work is done");
    }

    // Added and removed lines of a stored diff read on a light and a dark base, and a pane already
    // open takes the new colours when the palette changes.
    void diffHighlighterFollowsThePalette() {
        QPlainTextEdit pane;
        new DiffHighlighter(pane.document(), &pane);
        pane.setPlainText(QStringLiteral("@@ -1 +1 @@\n-int a;\n+int b;\n"));
        pane.show();
        QVERIFY(QTest::qWaitForWindowExposed(&pane));
        const auto lightness = [&pane](int block) {
            const auto formats = pane.document()->findBlockByNumber(block).layout()->formats();
            return formats.isEmpty() ? -1.0 : formats.first().format.foreground().color().lightnessF();
        };
        QApplication::setPalette(theme::lightPalette());
        QCoreApplication::processEvents();
        for (int block : {0, 1, 2})
            QVERIFY2(lightness(block) >= 0.0 && lightness(block) < 0.55, qPrintable(QString::number(lightness(block))));
        QApplication::setPalette(theme::darkPalette());
        QCoreApplication::processEvents();
        for (int block : {0, 1, 2})
            QVERIFY2(lightness(block) > 0.6, qPrintable(QString::number(lightness(block))));
        QApplication::setPalette(QPalette());
        QCoreApplication::processEvents();
        for (int block : {0, 1, 2})
            QVERIFY(lightness(block) < 0.55);
    }

    void findingItemsMostSevereFirst() {
        const auto items = FindingItem::fromEvaluation(evaluation(5));
        QCOMPARE(items.size(), 3);
        QCOMPARE(items[0].line, 42);
        QCOMPARE(items[2].source, FindingItem::Source::Worker);
        FindingModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setItems(items);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(0, FindingModel::LineColumn).data().toString(), QStringLiteral("42"));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void llmCallModelGrowsIncrementally() {
        RunData data;
        LlmCallModel model(&data);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
        QSignalSpy inserts(&model, &QAbstractItemModel::rowsInserted);
        auto first = delta(true);
        first.llmCalls = {call(1, 3, 0.01), call(2, std::nullopt, std::nullopt)};
        data.apply(first);
        const int resetsAfterOpen = static_cast<int>(resets.size());
        auto second = delta();
        second.llmCalls = {call(3, std::nullopt, 0.02)};
        second.llmCalls[0].cachedInputTokens = 1000;
        second.llmCalls[0].cacheWriteTokens = 0;
        data.apply(second);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(resets.size(), resetsAfterOpen); // a new call is an insert, not a reset
        QCOMPARE(inserts.size(), 2);
        QCOMPARE(model.index(1, LlmCallModel::CostColumn).data().toString(), QStringLiteral("?"));
        QCOMPARE(model.index(0, LlmCallModel::ModelColumn).data().toString(), QStringLiteral("local:qwen2.5-coder"));
        // The prompt cache's share of the input, where the server reported one; blank elsewhere.
        const QLocale locale;
        QCOMPARE(model.index(0, LlmCallModel::InputTokensColumn).data().toString(), locale.toString(1200));
        QCOMPARE(model.index(0, LlmCallModel::CachedTokensColumn).data().toString(), QString());
        QCOMPARE(model.index(2, LlmCallModel::CachedTokensColumn).data().toString(), locale.toString(1000));
        QVERIFY(model.index(2, LlmCallModel::CachedTokensColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("read from the API's prompt cache")));
        QCOMPARE(model.index(2, LlmCallModel::CachedTokensColumn).data(LlmCallModel::SortRole).toLongLong(), 1000);
        QCOMPARE(model.index(0, LlmCallModel::CachedTokensColumn).data(LlmCallModel::SortRole).toLongLong(), -1);

        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        auto link = delta();
        link.llmLinks = {{3, 9}};
        data.apply(link);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(model.index(2, 0).data(LlmCallModel::CandidateRole).toLongLong(), 9);

        data.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void eventModelSummarises() {
        RunData data;
        EventModel model(&data);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto d = delta(true);
        d.events = {makeEvent(1, QStringLiteral("migration"),
                              {{QStringLiteral("from"), 0},
                               {QStringLiteral("to"), 1},
                               {QStringLiteral("candidate"), 17},
                               {QStringLiteral("speedup"), 1.8},
                               {QStringLiteral("accepted"), true}})};
        data.apply(d);
        auto more = delta();
        more.events = {
            makeEvent(2, QStringLiteral("veto"),
                      {{QStringLiteral("candidate"), 4}, {QStringLiteral("reason"), QStringLiteral("cheats")}}),
            makeEvent(3, QStringLiteral("something_new"), {{QStringLiteral("x"), 1}})};
        data.apply(more);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(0, EventModel::SummaryColumn).data().toString(),
                 QStringLiteral("island 0 → 1, candidate 17 (1.80×), accepted"));
        QCOMPARE(model.index(0, 0).data(EventModel::CandidateRole).toLongLong(), 17);
        QVERIFY(model.index(1, EventModel::SummaryColumn).data().toString().contains(QStringLiteral("cheats")));
        QCOMPARE(model.index(2, EventModel::SummaryColumn).data().toString(), QStringLiteral("x = 1"));
    }

    void diagnosticsShowFindingsAndActivateLines() {
        RunData data;
        CandidateDetails details;
        CandidateSelection selection;
        auto d = delta(true);
        d.added = {row(1, {}), row(5, {1}, QStringLiteral("incorrect"), 0.0)};
        data.apply(d);
        DiagnosticsView view(&data, &details, &selection);
        view.resize(900, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QSignalSpy requested(&details, &CandidateDetails::requested);
        selection.select(5);
        QCOMPARE(requested.size(), 1);
        auto* placeholder = view.findChild<QLabel*>(QStringLiteral("placeholder"));
        QVERIFY(placeholder);
        QCOMPARE(placeholder->text(), QStringLiteral("Loading…"));

        // An answer for another candidate changes nothing.
        CandidateDetail other;
        other.id = 1;
        details.deliver(0, other);
        QCOMPARE(placeholder->text(), QStringLiteral("Loading…"));

        CandidateDetail detail;
        detail.id = 5;
        detail.evaluations = {evaluation(5)};
        details.deliver(0, detail);
        QAbstractItemView* findings = view.findingsView();
        QCOMPARE(findings->model()->rowCount(), 3);
        QAbstractItemModelTester tester(findings->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);

        // Each finding reads whole: in a narrow view its message and direction wrap in their
        // columns, and its row is as tall as the text needs.
        view.resize(560, 500);
        bool wrapped = false;
        const auto fits = [&] {
            wrapped = false;
            for (int r = 0; r < findings->model()->rowCount(); ++r)
                for (int column : {int(FindingModel::MessageColumn), int(FindingModel::DirectionColumn)}) {
                    const QModelIndex cell = findings->model()->index(r, column);
                    const QRect rect = findings->visualRect(cell);
                    const QRect text = findings->fontMetrics().boundingRect(QRect(0, 0, rect.width() - 8, 10000),
                                                                            Qt::TextWordWrap, cell.data().toString());
                    if (rect.height() < text.height())
                        return false;
                    wrapped |= text.height() > findings->fontMetrics().height();
                }
            return true;
        };
        QTRY_VERIFY(fits());
        QVERIFY(wrapped); // the check above saw text on more than one line
        view.resize(900, 500);

        QSignalSpy lines(&view, &DiagnosticsView::lineActivated);
        int withLine = -1;
        for (int r = 0; r < findings->model()->rowCount(); ++r)
            if (findings->model()->index(r, 0).data(FindingModel::LineRole).toInt() == 42)
                withLine = r;
        QVERIFY(withLine >= 0);
        const QModelIndex index = findings->model()->index(withLine, FindingModel::MessageColumn);
        QTest::mouseClick(findings->viewport(), Qt::LeftButton, {}, findings->visualRect(index).center());
        QCOMPARE(lines.size(), 1);
        QCOMPARE(lines.last().at(0).toInt(), 42);
        findings->setFocus();
        findings->setCurrentIndex(index);
        QTest::keyClick(findings, Qt::Key_Return);
        QCOMPARE(lines.size(), 2);
        // A worker diagnostic without a line does not jump anywhere.
        const int withoutLine = withLine == 0 ? 1 : 0;
        findings->setCurrentIndex(findings->model()->index(withoutLine, 0));
        QTest::keyClick(findings, Qt::Key_Return);
        QCOMPARE(lines.size(), 2);

        // The next candidate: the tabs stay, emptied, under the new title while its detail loads
        // (no flip to the placeholder and back for a quick load), then "Loading…" if it takes long.
        // Nothing of the previous candidate is left to activate: its lines are in another kernel.
        details.invalidate(1); // what was delivered for it above
        selection.select(1);
        QCOMPARE(requested.size(), 2);
        QVERIFY(!placeholder->isVisible());
        QCOMPARE(findings->model()->rowCount(), 0);
        QTRY_VERIFY_WITH_TIMEOUT(placeholder->isVisible(), DiagnosticsView::kLoadingDelayMs * 20);
        QCOMPARE(placeholder->text(), QStringLiteral("Loading…"));
        CandidateDetail first;
        first.id = 1;
        first.evaluations = {evaluation(1)};
        details.deliver(0, first);
        QVERIFY(!placeholder->isVisible());
        // A load that is quick: the new detail replaces the old one, and no "Loading…" comes later.
        selection.select(5);
        QVERIFY(!placeholder->isVisible());
        details.invalidate(1);
        selection.select(1);
        QVERIFY(!placeholder->isVisible());
        details.deliver(0, first);
        QTest::qWait(DiagnosticsView::kLoadingDelayMs * 2);
        QVERIFY(!placeholder->isVisible());
        QCOMPARE(view.candidate(), 1);
    }

    void llmLogShowsCallsAndSelectsCandidates() {
        RunData data;
        CandidateSelection selection;
        LlmLogView view(&data, &selection);
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto* placeholder = view.findChild<QLabel*>(QStringLiteral("placeholder"));
        auto d = delta(true);
        d.added = {row(1, {}), row(3, {1})};
        data.apply(d);
        QVERIFY(placeholder->isVisible());
        QVERIFY(placeholder->text().contains(QStringLiteral("Language models")));

        auto calls = delta();
        calls.llmCalls = {call(1, 3, 0.25), call(2, std::nullopt, std::nullopt)};
        data.apply(calls);
        QVERIFY(!placeholder->isVisible());
        QTableView* table = view.callsView();
        QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(table->model()->rowCount(), 2);
        QVERIFY2(view.totalsText().contains(QStringLiteral("1 call of unknown cost")), qPrintable(view.totalsText()));
        QVERIFY2(view.totalsText().contains(QStringLiteral("2,400 input and")), qPrintable(view.totalsText()));
        auto cached = delta();
        cached.llmCalls = {call(3, 5, 0.01)};
        cached.llmCalls[0].cachedInputTokens = 900;
        data.apply(cached);
        QVERIFY2(view.totalsText().contains(QStringLiteral("3,600 input (900 cached) and 900 output tokens")),
                 qPrintable(view.totalsText()));
        QCOMPARE(table->model()->rowCount(), 3);
        QCOMPARE(table->model()->index(2, LlmCallModel::CachedTokensColumn).data().toString(), QStringLiteral("900"));

        table->setFocus();
        table->setCurrentIndex(table->model()->index(0, 0));
        QCOMPARE(view.shownCall(), 1);
        QCOMPARE(view.shownPrompt(), QStringLiteral("Improve kernel 1"));
        QVERIFY(view.shownAnswer().contains(QStringLiteral("k1")));
        QTest::keyClick(table, Qt::Key_Return);
        QCOMPARE(selection.current(), 3);

        // Filtering by status keeps only the unparsable call.
        auto* status = view.findChild<QComboBox*>();
        QVERIFY(status);
        status->setCurrentIndex(status->findText(QStringLiteral("unparsable")));
        QCOMPARE(table->model()->rowCount(), 1);
        status->setCurrentIndex(0);
        auto* filter = view.findChild<QLineEdit*>();
        filter->setText(QStringLiteral("#3"));
        QCOMPARE(table->model()->rowCount(), 1);
    }

    // Behind another dock tab the lineage does not follow each selection; it shows the one of the
    // moment when it comes to the front, or when it is about to be exported.
    void lineageInABackgroundTabCatchesUpWhenShown() {
        RunData data;
        CandidateSelection selection;
        QMainWindow window;
        auto* front = new QDockWidget(QStringLiteral("front"), &window);
        front->setWidget(new QWidget);
        auto* back = new QDockWidget(QStringLiteral("back"), &window);
        auto* lineage = new LineageView(&data, &selection);
        back->setWidget(lineage);
        window.addDockWidget(Qt::LeftDockWidgetArea, front);
        window.tabifyDockWidget(front, back);
        window.resize(800, 600);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        front->raise();
        QTRY_VERIFY(hiddenInShownWindow(lineage));
        auto d = delta(true);
        d.added = {row(1, {}), row(2, {1}), row(3, {2}), row(4, {2, 1})};
        data.apply(d);

        selection.select(2);
        selection.select(3);
        QCOMPARE(lineage->candidate(), 0); // waits
        back->raise();
        QTRY_COMPARE(lineage->candidate(), 3);
        QCOMPARE(lineage->parentsModel()->candidates(), QList<qint64>{2});

        front->raise();
        QTRY_VERIFY(hiddenInShownWindow(lineage));
        selection.select(4);
        QCOMPARE(lineage->candidate(), 3);
        flushWhenShown(&window); // as Export View does
        QCOMPARE(lineage->candidate(), 4);
        QCOMPARE(lineage->parentsModel()->candidates(), (QList<qint64>{2, 1}));
        // Shown later, it does not run the update again for nothing.
        back->raise();
        QTRY_VERIFY(!hiddenInShownWindow(lineage));
        QCOMPARE(lineage->candidate(), 4);
    }

    void lineageListsParentsChildrenAndCompares() {
        RunData data;
        CandidateSelection selection;
        LineageView view(&data, &selection);
        view.resize(600, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QAbstractItemModelTester children(view.childrenModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester parents(view.parentsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto d = delta(true);
        d.added = {row(1, {}), row(2, {1}), row(3, {2}), row(4, {2, 1})};
        data.apply(d);
        selection.select(2);
        QCOMPARE(view.parentsModel()->candidates(), QList<qint64>{1});
        QCOMPARE(view.childrenModel()->candidates(), (QList<qint64>{3, 4}));
        QVERIFY(view.compareButton()->isEnabled());

        auto more = delta();
        more.added = {row(5, {2})};
        data.apply(more);
        QCOMPARE(view.childrenModel()->candidates(), (QList<qint64>{3, 4, 5}));

        QSignalSpy compare(&selection, &CandidateSelection::compareRequested);
        QTest::mouseClick(view.compareButton(), Qt::LeftButton);
        QCOMPARE(compare.size(), 1);
        QCOMPARE(compare.last().at(0).toLongLong(), 1);
        QCOMPARE(compare.last().at(1).toLongLong(), 2);

        QListView* childList = view.childrenView();
        childList->setFocus();
        childList->setCurrentIndex(childList->model()->index(1, 0));
        QTest::keyClick(childList, Qt::Key_Return);
        QCOMPARE(selection.current(), 4);
        QCOMPARE(view.parentsModel()->candidates(), (QList<qint64>{2, 1}));
        QCOMPARE(view.ancestryModel()->candidates(), (QList<qint64>{2, 1}));
        QVERIFY(view.childrenModel()->candidates().isEmpty());
        // A crossover: the button offers each parent (a click on a listed parent selects it).
        QVERIFY(view.compareButton()->menu());
        const auto offered = view.compareButton()->menu()->actions();
        QCOMPARE(offered.size(), 2);
        offered.at(1)->trigger();
        QCOMPARE(compare.last().at(0).toLongLong(), 1);
        QCOMPARE(compare.last().at(1).toLongLong(), 4);

        // A list with nothing in it says why instead of showing a blank box.
        QVERIFY(view.childrenView()->emptyText().startsWith(QStringLiteral("None so far")));
        QVERIFY(view.parentsView()->emptyText().contains(QStringLiteral("made from no other candidate")));
        QCOMPARE(view.parentsView()->model()->index(0, 0).data().toString(),
                 QStringLiteral("#2 LLM · variant 2 · 1.00×"));

        selection.select(1);
        QVERIFY(!view.compareButton()->isEnabled()); // a seed has no parent
        QVERIFY(view.parentsView()->emptyText().contains(QStringLiteral("the search starts from this kernel")));
        QCOMPARE(view.ancestryView()->emptyText(), QStringLiteral("None: this candidate has no parents"));
        QCOMPARE(view.childrenModel()->index(0, 0).data().toString(), QStringLiteral("#2 LLM · variant 2 · 1.00×"));
        // A label that begins with the origin does not repeat it.
        auto expert = delta();
        CandidateRow library = row(6, {});
        library.origin = model::Origin::Expert;
        library.label = QStringLiteral("expert softmax/exp_once_rows");
        CandidateRow tuned = row(10, {6});
        tuned.origin = model::Origin::Tuner;
        tuned.label = QStringLiteral("tuner VW=8");
        expert.added = {library, tuned};
        data.apply(expert);
        selection.select(10);
        QCOMPARE(view.parentsModel()->index(0, 0).data().toString(),
                 QStringLiteral("#6 expert softmax/exp_once_rows · 1.00×"));
        selection.select(6);
        QCOMPARE(view.parentsView()->emptyText(), QStringLiteral("None: a kernel from the expert library"));
        QCOMPARE(view.childrenModel()->index(0, 0).data().toString(), QStringLiteral("#10 tuner VW=8 · 1.00×"));
        QVERIFY(view.childrenView()->emptyText().startsWith(QStringLiteral("None so far"))); // kept, not shown
        selection.select(0);
        QVERIFY(view.parentsView()->emptyText().isEmpty()); // nothing selected: blank lists

        // A damaged store whose lineage loops (9 -> 7 -> 8 -> 7 ...): the ancestry ends where it
        // would repeat itself.
        auto looped = delta();
        looped.added = {row(7, {8}), row(8, {7}), row(9, {7})};
        data.apply(looped);
        selection.select(9);
        QCOMPARE(view.ancestryModel()->candidates(), (QList<qint64>{7, 8}));
        selection.select(8);
        QCOMPARE(view.ancestryModel()->candidates(), QList<qint64>{7});
    }

    void eventLogFiltersAndSelects() {
        RunData data;
        CandidateSelection selection;
        EventLogView view(&data, &selection);
        view.resize(700, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto d = delta(true);
        d.events = {makeEvent(1, QStringLiteral("run_started"),
                              {{QStringLiteral("backend"), QStringLiteral("cuda")}, {QStringLiteral("experts"), 3}}),
                    makeEvent(2, QStringLiteral("new_best"),
                              {{QStringLiteral("candidate"), 12}, {QStringLiteral("confirmed_speedup"), 2.0}}),
                    makeEvent(3, QStringLiteral("pause"), {})};
        data.apply(d);
        QTableView* table = view.eventsView();
        QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(table->model()->rowCount(), 3);
        QCOMPARE(view.kindFilter()->count(), 4);
        view.kindFilter()->setCurrentIndex(view.kindFilter()->findData(QStringLiteral("new_best")));
        QCOMPARE(table->model()->rowCount(), 1);
        table->setFocus();
        table->setCurrentIndex(table->model()->index(0, 0));
        QTest::keyClick(table, Qt::Key_Return);
        QCOMPARE(selection.current(), 12);
        auto more = delta();
        more.events = {makeEvent(4, QStringLiteral("new_best"), {{QStringLiteral("candidate"), 14}}),
                       makeEvent(5, QStringLiteral("migration"), {{QStringLiteral("candidate"), 9}})};
        data.apply(more);
        QCOMPARE(table->model()->rowCount(), 2);
        QCOMPARE(view.kindFilter()->count(), 5);
    }

    // Events, LLM calls and lineage select with one click, and by moving the current row with the
    // keyboard, as the candidate table does; no double click is needed.
    void oneClickAndTheKeyboardSelect() {
        RunData data;
        CandidateSelection selection;
        EventLogView events(&data, &selection);
        LlmLogView calls(&data, &selection);
        LineageView lineage(&data, &selection);
        for (QWidget* view : std::initializer_list<QWidget*>{&events, &calls, &lineage}) {
            view->resize(800, 500);
            view->show();
            QVERIFY(QTest::qWaitForWindowExposed(view));
        }
        auto d = delta(true);
        d.added = {row(1, {}), row(2, {1}), row(3, {2}), row(4, {2})};
        d.events = {makeEvent(1, QStringLiteral("new_best"), {{QStringLiteral("candidate"), 2}}),
                    makeEvent(2, QStringLiteral("pause"), {}),
                    makeEvent(3, QStringLiteral("new_best"), {{QStringLiteral("candidate"), 3}})};
        d.llmCalls = {call(1, 4, 0.1), call(2, 1, 0.1)};
        data.apply(d);

        QTableView* eventTable = events.eventsView();
        const auto clickRow = [](QAbstractItemView* view, int row) {
            const QRect rect = view->visualRect(view->model()->index(row, 0));
            QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, rect.center());
        };
        clickRow(eventTable, 0);
        QCOMPARE(selection.current(), 2);
        QTest::keyClick(eventTable, Qt::Key_Down); // an event without a candidate selects nothing
        QCOMPARE(selection.current(), 2);
        QTest::keyClick(eventTable, Qt::Key_Down);
        QCOMPARE(selection.current(), 3);
        // Filtering moves the current row without the user: the selection stays.
        events.kindFilter()->setCurrentIndex(events.kindFilter()->findData(QStringLiteral("pause")));
        QCOMPARE(selection.current(), 3);
        events.kindFilter()->setCurrentIndex(0);

        QTableView* callTable = calls.callsView();
        clickRow(callTable, 0);
        QCOMPARE(calls.shownCall(), 1);
        QCOMPARE(selection.current(), 4);
        QTest::keyClick(callTable, Qt::Key_Down);
        QCOMPARE(calls.shownCall(), 2);
        QCOMPARE(selection.current(), 1);

        selection.select(2);
        QCOMPARE(lineage.childrenModel()->candidates(), (QList<qint64>{3, 4}));
        clickRow(lineage.childrenView(), 0);
        QCOMPARE(selection.current(), 3);
        QCOMPARE(lineage.candidate(), 3);
        selection.select(2);
        // Focus alone (Tab into the list) makes its first row current without selecting it.
        QListView* children = lineage.childrenView();
        lineage.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&lineage));
        children->setFocus();
        QTRY_VERIFY(children->hasFocus());
        QCOMPARE(selection.current(), 2);
        children->setCurrentIndex(children->model()->index(0, 0)); // as taking the focus may do
        QCOMPARE(selection.current(), 2);
        QTest::keyClick(children, Qt::Key_Down);
        QCOMPARE(selection.current(), 4);
        QCOMPARE(lineage.candidate(), 4);
    }

    // Home and End go to the first and last row and keep the column; Tab leaves the table.
    void recordTablesMoveByRowAndLetTabLeave() {
        RunData data;
        CandidateSelection selection;
        EventLogView view(&data, &selection);
        view.resize(800, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowActive(&view));
        auto d = delta(true);
        for (int i = 1; i <= 6; ++i)
            d.events.push_back(makeEvent(i, QStringLiteral("pause"), {}));
        data.apply(d);
        QTableView* table = view.eventsView();
        QVERIFY(!table->tabKeyNavigation());
        table->setFocus();
        table->setCurrentIndex(table->model()->index(2, 1));
        QTest::keyClick(table, Qt::Key_End);
        QCOMPARE(table->currentIndex().row(), 5);
        QCOMPARE(table->currentIndex().column(), 1);
        QTest::keyClick(table, Qt::Key_Home);
        QCOMPARE(table->currentIndex().row(), 0);
        QCOMPARE(table->currentIndex().column(), 1);
        QTest::keyClick(table, Qt::Key_End, Qt::ControlModifier);
        QCOMPARE(table->currentIndex().row(), 5);
        QCOMPARE(table->currentIndex().column(), 1);
        QTest::keyClick(table, Qt::Key_Home, Qt::ControlModifier);
        QCOMPARE(table->currentIndex().row(), 0);
        QCOMPARE(table->currentIndex().column(), 1);

        QTRY_VERIFY(table->hasFocus());
        QTest::keyClick(table, Qt::Key_Tab);
        QVERIFY(!table->hasFocus());
        QCOMPARE(table->currentIndex().column(), 1);
        table->setFocus();
        QTest::keyClick(table, Qt::Key_Backtab, Qt::ShiftModifier);
        QVERIFY(!table->hasFocus());
        QCOMPARE(QApplication::focusWidget(), view.kindFilter());
    }

    void experienceBrowserListsAndSearches() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("experience.kforge-library"));
        {
            auto library = experience::ExperienceLibrary::open(path);
            QVERIFY2(library, library ? "" : library.error().c_str());
            QVERIFY((*library)->add(insight(QStringLiteral("helped"), QStringLiteral("register tiling 8x8"), 2.1)));
            QVERIFY((*library)->add(insight(QStringLiteral("hurt"), QStringLiteral("BLOCK 256 -> 1024"), 0.6)));
            auto pin = insight(QStringLiteral("human_pin"), QStringLiteral("vectorised loads"), 1.4);
            pin.reason = QStringLiteral("clean and fast");
            QVERIFY((*library)->add(pin));
        }
        ExperienceBrowser browser;
        QAbstractItemModelTester tester(browser.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&browser, &ExperienceBrowser::loaded);
        browser.setLibraryPath(path);
        QTRY_COMPARE(loaded.size(), 1);
        QCOMPARE(loaded.last().at(0).toInt(), 3);
        QCOMPARE(browser.insightsView()->model()->rowCount(), 3);
        QVERIFY(!browser.insightsView()->isColumnHidden(InsightModel::ReasonColumn)); // the pin's reason
        const QModelIndex origin = browser.model()->index(0, InsightModel::OriginColumn);
        QCOMPARE(origin.data().toString(), QStringLiteral("sgemm (run 1, #17)"));
        QCOMPARE(origin.data(Qt::ToolTipRole).toString(), QStringLiteral("/runs/sgemm.kforge#run1/candidate17"));

        browser.kindFilter()->setCurrentIndex(browser.kindFilter()->findData(QStringLiteral("hurt")));
        QCOMPARE(browser.insightsView()->model()->rowCount(), 1);
        browser.kindFilter()->setCurrentIndex(0);

        browser.searchField()->setText(QStringLiteral("tiling"));
        browser.refresh();
        QTRY_COMPARE(loaded.size(), 2);
        QCOMPARE(browser.model()->rowCount(), 1);
        QCOMPARE(browser.model()->insightAt(0).transformation, QStringLiteral("register tiling 8x8"));
        // No insight shown has a reason (the user's words for a pin, veto or edit): no empty column.
        QVERIFY(browser.insightsView()->isColumnHidden(InsightModel::ReasonColumn));
        browser.insightsView()->setCurrentIndex(browser.insightsView()->model()->index(0, 0));
        QVERIFY(browser.shownDiff().contains(QStringLiteral("+c")));
    }

    // Two searches in a row: only the answer to the second is shown.
    void experienceBrowserDropsStaleAnswers() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("experience.kforge-library"));
        {
            auto library = experience::ExperienceLibrary::open(path);
            QVERIFY(library);
            QVERIFY((*library)->add(insight(QStringLiteral("helped"), QStringLiteral("register tiling 8x8"), 2.1)));
            QVERIFY((*library)->add(insight(QStringLiteral("hurt"), QStringLiteral("BLOCK 256 -> 1024"), 0.6)));
        }
        ExperienceBrowser browser;
        QSignalSpy loaded(&browser, &ExperienceBrowser::loaded);
        browser.setLibraryPath(path); // request 1: everything
        browser.searchField()->setText(QStringLiteral("BLOCK"));
        browser.refresh(); // request 2
        // Requests are answered in order by one thread: once the second is shown, the first
        // (superseded) one cannot arrive any more.
        QTRY_COMPARE(browser.model()->rowCount(), 1);
        QCOMPARE(loaded.size(), 1);
    }

    void experienceBrowserExplainsMissingLibrary() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("none.kforge-library"));
        ExperienceBrowser browser;
        QSignalSpy missing(&browser, &ExperienceBrowser::libraryMissing);
        browser.setLibraryPath(path);
        QTRY_COMPARE(missing.size(), 1);
        QVERIFY(!QFileInfo::exists(path)); // browsing does not create it
        auto* message = browser.findChild<QLabel*>(QStringLiteral("message"));
        QVERIFY(message->text().contains(QStringLiteral("no experience library yet")));
    }

    // Renders every panel with a small synthetic run, to look at them: set KFORGE_UI_SNAPSHOTS to
    // a folder and the PNGs are written there.
    void snapshots() {
        const QString out = qEnvironmentVariable("KFORGE_UI_SNAPSHOTS");
        if (out.isEmpty())
            QSKIP("set KFORGE_UI_SNAPSHOTS=<folder> to write PNGs of the panels");
        QDir().mkpath(out);
        RunData data;
        CandidateDetails details;
        CandidateSelection selection;
        auto d = delta(true);
        d.run.config = QJsonObject{
            {QStringLiteral("llm"), QJsonObject{{QStringLiteral("models"), QJsonArray{QStringLiteral("local:qwen")}}}}};
        d.added = {row(1, {}),
                   row(2, {1}, QStringLiteral("ok"), 1.35),
                   row(3, {2}, QStringLiteral("ok"), 1.82),
                   row(4, {2, 1}, QStringLiteral("incorrect"), 0.0),
                   row(5, {3}, QStringLiteral("compile_error"), 0.0),
                   row(6, {3}, QStringLiteral("ok"), 2.4)};
        d.added[2].confirmedSpeedup = 1.79;
        d.added[2].pinned = true;
        d.added[2].findings = 2;
        for (qint64 id = 1; id <= 6; ++id) {
            auto c = call(id, id % 3 ? std::optional<qint64>(id + 1) : std::nullopt,
                          id % 4 ? std::optional<double>(0.0125 * id) : std::nullopt);
            c.prompt = QStringLiteral("## Task\nsgemm, 4096x4096x4096, fp32\n\n## Parent kernel (1.35x)\n__global__ "
                                      "void sgemm(...) {\n  ...\n}\n");
            c.answer = QStringLiteral(
                "Tile the K loop in shared memory, 8x8 per thread.\n\n```cuda\n__global__ void sgemm(const float* a, "
                "const float* b, float* c) {\n  __shared__ float as[64][8];\n}\n```");
            if (id == 3)
                c.status = QStringLiteral("rate_limited");
            d.llmCalls.push_back(c);
        }
        d.events = {makeEvent(1, QStringLiteral("run_started"),
                              {{QStringLiteral("backend"), QStringLiteral("cuda")}, {QStringLiteral("experts"), 3}}),
                    makeEvent(2, QStringLiteral("ceilings"),
                              {{QStringLiteral("device"), QStringLiteral("NVIDIA H200")},
                               {QStringLiteral("dram_bytes_per_s"), 4.0e12},
                               {QStringLiteral("fp32_flops_per_s"), 6.0e13}}),
                    makeEvent(3, QStringLiteral("migration"),
                              {{QStringLiteral("from"), 0},
                               {QStringLiteral("to"), 1},
                               {QStringLiteral("candidate"), 3},
                               {QStringLiteral("speedup"), 1.82},
                               {QStringLiteral("accepted"), true}}),
                    makeEvent(4, QStringLiteral("new_best"),
                              {{QStringLiteral("candidate"), 3},
                               {QStringLiteral("first_speedup"), 1.82},
                               {QStringLiteral("confirmed_speedup"), 1.79},
                               {QStringLiteral("label"), QStringLiteral("variant 3")}}),
                    makeEvent(5, QStringLiteral("veto"),
                              {{QStringLiteral("candidate"), 4},
                               {QStringLiteral("reason"), QStringLiteral("reads past the end of B")}}),
                    makeEvent(6, QStringLiteral("promotion_rejected"),
                              {{QStringLiteral("candidate"), 6},
                               {QStringLiteral("first_speedup"), 2.4},
                               {QStringLiteral("confirmed_speedup"), 1.7},
                               {QStringLiteral("status"), QStringLiteral("ok")},
                               {QStringLiteral("previous_best"), 1.79}}),
                    makeEvent(7, QStringLiteral("budget"),
                              {{QStringLiteral("evaluations"), 500}, {QStringLiteral("seconds"), 0}})};
        data.apply(d);

        DiagnosticsView diagnostics(&data, &details, &selection);
        LlmLogView llm(&data, &selection);
        LineageView lineage(&data, &selection);
        EventLogView events(&data, &selection);
        selection.select(4);
        CandidateDetail detail;
        detail.id = 4;
        detail.evaluations = {evaluation(4)};
        details.deliver(0, detail);
        llm.callsView()->setCurrentIndex(llm.callsView()->model()->index(1, 0));

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("experience.kforge-library"));
        {
            auto library = experience::ExperienceLibrary::open(path);
            QVERIFY(library);
            QVERIFY((*library)->add(insight(QStringLiteral("helped"), QStringLiteral("register tiling 8x8"), 2.1)));
            QVERIFY((*library)->add(insight(QStringLiteral("hurt"), QStringLiteral("BLOCK 256 -> 1024"), 0.6)));
            auto pin = insight(QStringLiteral("human_pin"), QStringLiteral("vectorised loads"), 1.4);
            pin.reason = QStringLiteral("clean and fast");
            QVERIFY((*library)->add(pin));
        }
        ExperienceBrowser browser;
        QSignalSpy loaded(&browser, &ExperienceBrowser::loaded);
        browser.setLibraryPath(path);
        QTRY_COMPARE(loaded.size(), 1);
        ExperienceBrowser empty;
        QSignalSpy missing(&empty, &ExperienceBrowser::libraryMissing);
        empty.setLibraryPath(dir.filePath(QStringLiteral("none")));
        QTRY_COMPARE(missing.size(), 1);
        RunData noLlm;
        auto plain = delta(true);
        noLlm.apply(plain);
        LlmLogView llmPlaceholder(&noLlm, &selection);

        const QList<QPair<QWidget*, QString>> shots{
            {&diagnostics, QStringLiteral("diagnostics")},   {&llm, QStringLiteral("llmlog")},
            {&lineage, QStringLiteral("lineage")},           {&events, QStringLiteral("events")},
            {&browser, QStringLiteral("experience")},        {&empty, QStringLiteral("experience-missing")},
            {&llmPlaceholder, QStringLiteral("llmlog-none")}};
        for (const auto& [widget, name] : shots) {
            widget->resize(900, 560);
            widget->show();
            QVERIFY(QTest::qWaitForWindowExposed(widget));
            QVERIFY(widget->grab().save(QDir(out).filePath(name + QStringLiteral(".png"))));
        }
        // The Verification and Compile log tabs of the diagnostics too.
        auto* tabs = diagnostics.findChild<QTabWidget*>();
        for (int tab = 1; tab < tabs->count(); ++tab) {
            tabs->setCurrentIndex(tab);
            QVERIFY(diagnostics.grab().save(QDir(out).filePath(QStringLiteral("diagnostics-%1.png").arg(tab))));
        }
    }
};

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
