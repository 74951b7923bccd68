// The QScintilla views over real widgets (offscreen): dialect keywords, diff marks and scrolling,
// the code view following the selection as details arrive, and the kernel editor's checks.
// With KFORGE_TEST_SNAPSHOTS naming a folder, the views are also saved there as PNGs to look at.

#include "appliedpalette.h"
#include "candidatedetails.h"
#include "candidateselection.h"
#include "codeview.h"
#include "comparemetrics.h"
#include "editorfactory.h"
#include "kerneleditordialog.h"
#include "kernellexer.h"
#include "listingview.h"
#include "rundata.h"
#include "sidebysidediff.h"
#include "theme.h"

#include <Qsci/qsciscintilla.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>
#include <QToolButton>

using namespace kforge;
using namespace kforge::ui;

namespace {

QString taskFile(const QString& relative) {
    const QString dir = qEnvironmentVariable("KFORGE_TASKS_DIR", QStringLiteral(KFORGE_SOURCE_DIR "/tasks"));
    QFile file(QDir(dir).filePath(relative));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(file.readAll());
}

QStringList words(const char* list) {
    return QString::fromLatin1(list ? list : "").split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

bool hasMarker(QsciScintilla* editor, int line, Marker marker) {
    return editor->markersAtLine(line) & (1 << markerNumber(marker));
}

QList<int> linesWith(QsciScintilla* editor, Marker marker) {
    QList<int> lines;
    for (int line = 0; line < editor->lines(); ++line)
        if (hasMarker(editor, line, marker))
            lines << line;
    return lines;
}

int styleAt(QsciScintilla* editor, const QString& word) {
    editor->SendScintilla(QsciScintillaBase::SCI_COLOURISE, 0, -1);
    const int offset = static_cast<int>(editor->text().toUtf8().indexOf(word.toUtf8()));
    return static_cast<int>(editor->SendScintilla(QsciScintillaBase::SCI_GETSTYLEAT, offset));
}

QString numbered(int count, int from = 1) {
    QString text;
    for (int i = 0; i < count; ++i)
        text += QStringLiteral("int line%1 = %1;\n").arg(from + i);
    return text;
}

// The parent (the task's baseline) and an edited child: one directive changed, a comment line
// removed, two lines added.
struct Sources {
    QString parent;
    QString child;
};

Sources sgemmSources() {
    Sources s;
    s.parent = taskFile(QStringLiteral("sgemm/baseline.cu"));
    s.child = s.parent;
    s.child.replace(QStringLiteral("// kforge:param TILE in {16, 32} = 16"),
                    QStringLiteral("// kforge:param TILE in {16, 32} = 32"));
    s.child.replace(
        QStringLiteral("    // x runs along N so that a warp's reads of B and writes of C are contiguous.\n"),
        QString());
    s.child.replace(QStringLiteral("    float acc = 0.0f;\n"),
                    QStringLiteral("    float acc = 0.0f;\n    // Prefetch the first tiles' rows.\n    const float* a "
                                   "= A + (size_t)row * K;\n"));
    return s;
}

CandidateRow row(qint64 id, QList<qint64> parents, model::Origin origin, const QString& label) {
    CandidateRow r;
    r.id = id;
    r.generation = parents.isEmpty() ? 0 : 1;
    r.parents = std::move(parents);
    r.origin = origin;
    r.label = label;
    return r;
}

// Scintilla keeps colours as 0xBBGGRR.
QColor scintillaColour(long bgr) {
    return QColor(static_cast<int>(bgr & 0xff), static_cast<int>((bgr >> 8) & 0xff),
                  static_cast<int>((bgr >> 16) & 0xff));
}

QColor paperOf(QsciScintilla* editor, int style) {
    return scintillaColour(editor->SendScintilla(QsciScintillaBase::SCI_STYLEGETBACK, style));
}

QColor inkOf(QsciScintilla* editor, int style) {
    return scintillaColour(editor->SendScintilla(QsciScintillaBase::SCI_STYLEGETFORE, style));
}

// Whether the editor's paper and text read as the palette says: dark paper and light text under
// a dark palette, the reverse under a light one.
void verifyEditorColours(QsciScintilla* editor, bool dark) {
    for (int style : {int(QsciLexerCPP::Default), int(QsciLexerCPP::Identifier), int(QsciLexerCPP::Keyword),
                      int(QsciLexerCPP::Comment), int(QsciScintillaBase::STYLE_DEFAULT)}) {
        const double paper = paperOf(editor, style).lightnessF();
        const double ink = inkOf(editor, style).lightnessF();
        if (dark) {
            QVERIFY2(paper < 0.3, qPrintable(QStringLiteral("style %1: paper lightness %2").arg(style).arg(paper)));
            QVERIFY2(ink > 0.5, qPrintable(QStringLiteral("style %1: text lightness %2").arg(style).arg(ink)));
        } else {
            QVERIFY2(paper > 0.7, qPrintable(QStringLiteral("style %1: paper lightness %2").arg(style).arg(paper)));
            QVERIFY2(ink < 0.5, qPrintable(QStringLiteral("style %1: text lightness %2").arg(style).arg(ink)));
        }
    }
    const QColor text = inkOf(editor, QsciLexerCPP::Default);
    QVERIFY(dark ? text.lightnessF() > 0.6 : text.lightnessF() < 0.3);
    // A note under the first line, where there is one, is a tint of the paper too.
    if (!editor->annotation(0).isEmpty()) {
        const int note = static_cast<int>(editor->SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLE, 0L)
                                          + editor->SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLEOFFSET));
        QVERIFY(dark ? paperOf(editor, note).lightnessF() < 0.3 : paperOf(editor, note).lightnessF() > 0.7);
        QVERIFY(dark ? inkOf(editor, note).lightnessF() > 0.6 : inkOf(editor, note).lightnessF() < 0.4);
    }
}

using kforgetest::AppliedPalette;

CandidateDetail detail(qint64 id, const QString& source, QList<qint64> parents = {}) {
    CandidateDetail d;
    d.id = id;
    d.candidate.id = id;
    d.candidate.source = source;
    d.candidate.parents = std::move(parents);
    return d;
}

void snapshot(QWidget* widget, const QString& name) {
    const QString dir = qEnvironmentVariable("KFORGE_TEST_SNAPSHOTS");
    if (dir.isEmpty())
        return;
    QVERIFY(widget->grab().save(QDir(dir).filePath(name + QStringLiteral(".png"))));
}

// A run on CUDA with a seed (1) and its LLM child (2), and views over it.
struct Fixture {
    RunData data;
    CandidateDetails details;
    CandidateSelection selection;
    Sources sources = sgemmSources();

    Fixture() {
        RunDelta delta;
        delta.fresh = true;
        delta.run.id = 1;
        delta.run.backend = model::Backend::Cuda;
        delta.run.task = QStringLiteral("sgemm");
        delta.added << row(1, {}, model::Origin::Seed, QStringLiteral("baseline"));
        CandidateRow child = row(2, {1}, model::Origin::Llm, QStringLiteral("LLM: larger tiles"));
        child.params = QStringLiteral("TILE=32");
        child.status = QStringLiteral("ok");
        child.correct = true;
        child.speedup = 1.73;
        child.findings = 2;
        delta.added << child;
        delta.loaded = delta.total = 2;
        data.apply(delta);
    }

    CandidateDetail childDetail() const {
        CandidateDetail d = detail(2, sources.child, {1});
        d.candidate.label = QStringLiteral("LLM: larger tiles");
        store::EvaluationRecord evaluation;
        evaluation.candidateId = 2;
        evaluation.purpose = model::EvaluationPurpose::Search;
        evaluation.findings.append(
            QJsonObject{{QStringLiteral("rule"), QStringLiteral("bank-conflicts")},
                        {QStringLiteral("severity"), QStringLiteral("warning")},
                        {QStringLiteral("message"), QStringLiteral("shared loads conflict 2-way")},
                        {QStringLiteral("direction"), QStringLiteral("pad the tile by one column")},
                        {QStringLiteral("line"), 12}});
        evaluation.findings.append(QJsonObject{{QStringLiteral("severity"), QStringLiteral("info")},
                                               {QStringLiteral("message"), QStringLiteral("no line")}});
        protocol::Diagnostic diagnostic;
        diagnostic.kind = "compile";
        diagnostic.severity = "error";
        diagnostic.message = "identifier \"acc2\" is undefined";
        diagnostic.role = "candidate";
        diagnostic.line = 18;
        diagnostic.column = 11;
        evaluation.result.diagnostics.push_back(diagnostic);
        protocol::Diagnostic reference = diagnostic;
        reference.role = "reference";
        reference.line = 3;
        evaluation.result.diagnostics.push_back(reference);
        d.evaluations << evaluation;
        return d;
    }
};

} // namespace

class TestCodeViews : public QObject {
    Q_OBJECT
private slots:
    void lexerKeywords_data() {
        QTest::addColumn<spec::Dialect>("dialect");
        QTest::addColumn<int>("set");
        QTest::addColumn<QString>("word");
        QTest::addColumn<bool>("present");
        const auto cuda = spec::Dialect::Cuda;
        const auto ocl = spec::Dialect::OpenCL;
        QTest::newRow("cuda __global__") << cuda << 1 << "__global__" << true;
        QTest::newRow("cuda __shared__") << cuda << 1 << "__shared__" << true;
        QTest::newRow("cuda keeps C++ for") << cuda << 1 << "for" << true;
        QTest::newRow("cuda threadIdx") << cuda << 2 << "threadIdx" << true;
        QTest::newRow("cuda __syncthreads") << cuda << 2 << "__syncthreads" << true;
        QTest::newRow("cuda __ldg") << cuda << 2 << "__ldg" << true;
        QTest::newRow("cuda __hfma2") << cuda << 2 << "__hfma2" << true;
        QTest::newRow("cuda mma_sync") << cuda << 2 << "mma_sync" << true;
        QTest::newRow("cuda float4") << cuda << 4 << "float4" << true;
        QTest::newRow("cuda __nv_bfloat16") << cuda << 4 << "__nv_bfloat16" << true;
        QTest::newRow("cuda has no __kernel") << cuda << 1 << "__kernel" << false;
        QTest::newRow("cuda has no get_global_id") << cuda << 2 << "get_global_id" << false;
        QTest::newRow("opencl __kernel") << ocl << 1 << "__kernel" << true;
        QTest::newRow("opencl __local") << ocl << 1 << "__local" << true;
        QTest::newRow("opencl get_global_id") << ocl << 2 << "get_global_id" << true;
        QTest::newRow("opencl barrier") << ocl << 2 << "barrier" << true;
        QTest::newRow("opencl CLK_LOCAL_MEM_FENCE") << ocl << 2 << "CLK_LOCAL_MEM_FENCE" << true;
        QTest::newRow("opencl vload4") << ocl << 2 << "vload4" << true;
        QTest::newRow("opencl float4") << ocl << 4 << "float4" << true;
        QTest::newRow("opencl has no __global__") << ocl << 1 << "__global__" << false;
        QTest::newRow("opencl has no threadIdx") << ocl << 2 << "threadIdx" << false;
        QTest::newRow("directive marker cuda") << cuda << 6 << "kforge" << true;
        QTest::newRow("directive marker opencl") << ocl << 6 << "kforge" << true;
    }

    void lexerKeywords() {
        QFETCH(spec::Dialect, dialect);
        QFETCH(int, set);
        QFETCH(QString, word);
        QFETCH(bool, present);
        KernelLexer lexer(dialect);
        QCOMPARE(words(lexer.keywords(set)).contains(word), present);
        // Switching dialects gives the same lists as starting in that dialect.
        KernelLexer other(dialect == spec::Dialect::Cuda ? spec::Dialect::OpenCL : spec::Dialect::Cuda);
        other.setDialect(dialect);
        QCOMPARE(QByteArray(other.keywords(set)), QByteArray(lexer.keywords(set)));
    }

    void editorHighlightsByDialect() {
        QWidget parent;
        QsciScintilla* editor = makeEditor(&parent, spec::Dialect::Cuda, true);
        QVERIFY(editor->isReadOnly());
        QCOMPARE(editor->wrapMode(), QsciScintilla::WrapNone);
        QCOMPARE(editor->tabWidth(), 4);
        QVERIFY(editor->isUtf8());
        setEditorText(
            editor, QStringLiteral(
                        "// kforge:param X = 1\n__global__ void k() { __syncthreads(); int i = get_global_id(0); }\n"));
        QCOMPARE(editor->text().left(9), QStringLiteral("// kforge"));
        QCOMPARE(styleAt(editor, QStringLiteral("__syncthreads")), int(QsciLexerCPP::KeywordSet2));
        QCOMPARE(styleAt(editor, QStringLiteral("__global__")), int(QsciLexerCPP::Keyword));
        QCOMPARE(styleAt(editor, QStringLiteral("get_global_id")), int(QsciLexerCPP::Identifier));
        QCOMPARE(styleAt(editor, QStringLiteral("kforge")), int(QsciLexerCPP::TaskMarker));
        // The whole directive is coloured, not just its `kforge`.
        const int directive = indicatorNumber(Indicator::Directive);
        QVERIFY(editor->SendScintilla(QsciScintillaBase::SCI_INDICATORVALUEAT, directive, 15) != 0);
        QVERIFY(editor->SendScintilla(QsciScintillaBase::SCI_INDICATORVALUEAT, directive, 30) == 0);
        setDialect(editor, spec::Dialect::OpenCL);
        QCOMPARE(styleAt(editor, QStringLiteral("__syncthreads")), int(QsciLexerCPP::Identifier));
        QCOMPARE(styleAt(editor, QStringLiteral("get_global_id")), int(QsciLexerCPP::KeywordSet2));
    }

    void editorFollowsThePalette_data() {
        QTest::addColumn<bool>("dark");
        QTest::newRow("light") << false;
        QTest::newRow("dark") << true;
    }

    void editorFollowsThePalette() {
        QFETCH(bool, dark);
        AppliedPalette applied(dark ? theme::darkPalette() : theme::lightPalette());
        QWidget parent;
        QsciScintilla* editor = makeEditor(&parent, spec::Dialect::Cuda, true);
        setEditorText(editor, QStringLiteral("__global__ void k() { int i = 1; } // note\n"));
        annotateLine(editor, 0, QStringLiteral("error: a note"), Marker::Error);
        QCOMPARE(editor->annotation(0), QStringLiteral("error: a note"));
        verifyEditorColours(editor, dark);
        const double margin = scintillaColour(editor->SendScintilla(QsciScintillaBase::SCI_STYLEGETBACK,
                                                                    QsciScintillaBase::STYLE_LINENUMBER))
                                  .lightnessF();
        QVERIFY(dark ? margin < 0.3 : margin > 0.7);
    }

    void openEditorsRestyleWhenThePaletteChanges() {
        AppliedPalette light(theme::lightPalette());
        SideBySideDiff diff;
        diff.setTexts(QStringLiteral("before"), numbered(5), QStringLiteral("after"), numbered(6), spec::Dialect::Cuda);
        diff.show();
        QVERIFY(QTest::qWaitForWindowExposed(&diff));
        annotateLine(diff.leftEditor(), 0, QStringLiteral("warning: a note"), Marker::Warning);
        verifyEditorColours(diff.leftEditor(), false);
        verifyEditorColours(diff.rightEditor(), false);
        {
            AppliedPalette dark(theme::darkPalette());
            verifyEditorColours(diff.leftEditor(), true);
            verifyEditorColours(diff.rightEditor(), true);
            // The diff's titles and summary follow the palette too.
            for (const QLabel* label : diff.findChildren<QLabel*>())
                QVERIFY(label->palette().color(label->foregroundRole()).lightnessF() > 0.6);
            // Still after the editors have handled the change themselves.
            QCoreApplication::processEvents();
            verifyEditorColours(diff.leftEditor(), true);
            // The caret line stays a tint, so that a marked line under the caret keeps its colour.
            QCOMPARE(diff.leftEditor()->SendScintilla(QsciScintillaBase::SCI_GETCARETLINEBACKALPHA), 40L);
            snapshot(&diff, QStringLiteral("diff-dark"));
        }
        verifyEditorColours(diff.leftEditor(), false);
        verifyEditorColours(diff.rightEditor(), false);
    }

    void diffMarksExactlyTheChangedLines() {
        const QString before = numbered(10);
        QString after = before;
        after.replace(QStringLiteral("int line3 = 3;"), QStringLiteral("int line3 = 33;")); // changed
        after.replace(QStringLiteral("int line6 = 6;\n"), QString());                       // removed
        after.replace(QStringLiteral("int line8 = 8;\n"), QStringLiteral("int line8 = 8;\nint x;\nint y;\n"));
        SideBySideDiff diff;
        diff.setTexts(QStringLiteral("before"), before, QStringLiteral("after"), after, spec::Dialect::Cuda);
        QCOMPARE(diff.leftEditor()->text(), before);
        QCOMPARE(diff.rightEditor()->text(), after);
        QCOMPARE(diff.removedLines(), 2);
        QCOMPARE(diff.addedLines(), 3);
        QCOMPARE(diff.changeCount(), 3);
        QCOMPARE(linesWith(diff.leftEditor(), Marker::Removed), (QList<int>{2, 5}));
        QCOMPARE(linesWith(diff.leftEditor(), Marker::Added), QList<int>());
        // after: line1 line2 line3' line4 line5 line7 line8 x y line9 line10
        QCOMPARE(linesWith(diff.rightEditor(), Marker::Added), (QList<int>{2, 7, 8}));
        QCOMPARE(linesWith(diff.rightEditor(), Marker::Removed), QList<int>());
        bool found = false;
        for (const QLabel* label : diff.findChildren<QLabel*>())
            found = found || label->text().startsWith(QStringLiteral("+3 \u22122 lines"));
        QVERIFY(found);

        // New texts replace the old marks.
        diff.setTexts(QStringLiteral("a"), before, QStringLiteral("b"), before, spec::Dialect::OpenCL);
        QCOMPARE(diff.addedLines(), 0);
        QCOMPARE(diff.removedLines(), 0);
        QCOMPARE(linesWith(diff.leftEditor(), Marker::Removed), QList<int>());
        QCOMPARE(linesWith(diff.rightEditor(), Marker::Added), QList<int>());
    }

    void diffScrollsBothEditorsTogether() {
        const QString before = numbered(300);
        // 20 lines inserted after line 100, lines 201-210 removed.
        QString after = numbered(100) + numbered(20, 1000) + numbered(100, 101) + numbered(90, 211);
        SideBySideDiff diff;
        diff.resize(900, 400);
        diff.setTexts(QStringLiteral("before"), before, QStringLiteral("after"), after, spec::Dialect::Cuda);
        diff.show();
        QVERIFY(QTest::qWaitForWindowExposed(&diff));
        QCOMPARE(diff.addedLines(), 20);
        QCOMPARE(diff.removedLines(), 10);

        // Scintilla reports scrolling when it repaints, hence QTRY.
        diff.leftEditor()->setFirstVisibleLine(150); // below the insertion: 20 lines further on the right
        QTRY_COMPARE(diff.rightEditor()->firstVisibleLine(), 170);
        diff.rightEditor()->setFirstVisibleLine(40); // above every change
        QTRY_COMPARE(diff.leftEditor()->firstVisibleLine(), 40);
        diff.rightEditor()->setFirstVisibleLine(110); // inside the insertion: the left waits at line 100
        QTRY_COMPARE(diff.leftEditor()->firstVisibleLine(), 100);
        // The left reports its scrolling as it paints: paint it now, and deliver what that posts.
        diff.leftEditor()->viewport()->repaint();
        QCoreApplication::processEvents();
        QCOMPARE(diff.rightEditor()->firstVisibleLine(), 110); // the left's own report did not pull it back
        diff.leftEditor()->setFirstVisibleLine(240);           // below the removal: 20 - 10 lines further
        QTRY_COMPARE(diff.rightEditor()->firstVisibleLine(), 250);
        // Keyboard scrolling goes through Scintilla too.
        diff.leftEditor()->setFocus();
        QTest::keyClick(diff.leftEditor(), Qt::Key_Down, Qt::ControlModifier); // scrolls one line
        QTRY_COMPARE(diff.rightEditor()->firstVisibleLine(), 251);
        diff.leftEditor()->SendScintilla(QsciScintillaBase::SCI_SETXOFFSET, 30);
        QTRY_COMPARE(diff.rightEditor()->SendScintilla(QsciScintillaBase::SCI_GETXOFFSET), 30L);

        // F8 walks the changes; Shift+F8 goes back, both wrapping around.
        QCOMPARE(diff.changeCount(), 2);
        QTest::keyClick(diff.leftEditor(), Qt::Key_F8);
        QCOMPARE(diff.currentChange(), 0);
        int line = 0;
        int index = 0;
        diff.rightEditor()->getCursorPosition(&line, &index);
        QCOMPARE(line, 100);
        QTest::keyClick(diff.leftEditor(), Qt::Key_F8);
        QCOMPARE(diff.currentChange(), 1);
        diff.leftEditor()->getCursorPosition(&line, &index);
        QCOMPARE(line, 200);
        const int first = diff.leftEditor()->firstVisibleLine();
        QVERIFY(first <= 200 && first + 10 > 200);
        QTest::keyClick(diff.leftEditor(), Qt::Key_F8);
        QCOMPARE(diff.currentChange(), 0);
        QTest::keyClick(diff.leftEditor(), Qt::Key_F8, Qt::ShiftModifier);
        QCOMPARE(diff.currentChange(), 1);
    }

    // Which source line each listing line came from: PTX through .file/.loc (another file's
    // lines, e.g. an inlined toolkit header, belong to no source line), SASS through nvdisasm's
    // comments; directives, labels and comments belong to none.
    void listingLinesMapToTheSource() {
        const QString ptx = QStringLiteral(".version 9.0\n"                     // 0
                                           "\t.file\t1 \"/tmp/candidate.cu\"\n" // 1
                                           "\t.file\t2 \"/usr/local/cuda/include/cuda_fp16.hpp\"\n"
                                           ".visible .entry k(\n" // 3
                                           ")\n"
                                           "{\n"             // 5
                                           "\t.loc\t1 7 5\n" // 6
                                           "\tld.param.u64 \t%rd1, [k_param_0];\n"
                                           "\tmov.u32 \t%r1, %tid.x;\n"
                                           "\t.loc\t2 120 3\n" // 9
                                           "\tadd.f16 \t%h1, %h2, %h3;\n"
                                           "$L__BB0_2:\n" // 11
                                           "\t.loc\t1 9 1\n"
                                           "\tret;\n" // 13
                                           "}\n");
        const QVector<int> p = listingSourceLines(ptx, ListingFormat::Ptx, QStringLiteral("candidate.cu"));
        QCOMPARE(p.size(), ptx.count(QLatin1Char('\n')) + 1);
        QCOMPARE(p[7], 7);
        QCOMPARE(p[8], 7);
        QCOMPARE(p[10], 0); // the header's
        QCOMPARE(p[11], 0); // a label
        QCOMPARE(p[13], 9);
        for (int i : {0, 1, 2, 3, 5, 6, 9, 12, 14})
            QCOMPARE(p[i], 0);

        const QString sass = QStringLiteral("\t.target\tsm_90a\n"
                                            "//--------------------- .text.k --------------------------\n"
                                            "k:\n"
                                            "\t//## File \"/tmp/candidate.cu\", line 7\n" // 3
                                            "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
                                            "        /*0010*/                   S2R R0, SR_TID.X ;\n"
                                            "\t//## File \"/usr/include/header.h\", line 40\n"
                                            "        /*0020*/                   IADD3 R2, R0, 0x1, RZ ;\n" // 7
                                            "\t//## File \"/tmp/candidate.cu\", line 9\n"
                                            "        /*0030*/                   EXIT ;\n"); // 9
        const QVector<int> q = listingSourceLines(sass, ListingFormat::Sass, QStringLiteral("candidate.cu"));
        QCOMPARE(q[4], 7);
        QCOMPARE(q[5], 7);
        QCOMPARE(q[7], 0);
        QCOMPARE(q[9], 9);
        for (int i : {0, 1, 2, 3, 6, 8})
            QCOMPARE(q[i], 0);
    }

    void codeViewShowsSourceOnceLoaded() {
        Fixture f;
        QSignalSpy requested(&f.details, &CandidateDetails::requested);
        CodeView view(&f.data, &f.details, &f.selection);
        view.resize(1000, 700);
        view.show();
        QCOMPARE(view.mode(), CodeView::Mode::Source);
        QVERIFY(view.placeholderText().startsWith(QStringLiteral("Select")));

        f.selection.select(2);
        QCOMPARE(view.placeholderText(), QStringLiteral("Loading kernel 2\u2026"));
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.first().first().toLongLong(), 2);
        QCOMPARE(view.shownCandidate(), 0);

        // An answer for another candidate changes nothing.
        f.details.deliver(0, detail(1, f.sources.parent));
        QCOMPARE(view.placeholderText(), QStringLiteral("Loading kernel 2\u2026"));

        f.details.deliver(0, f.childDetail());
        QCOMPARE(view.placeholderText(), QString());
        QCOMPARE(view.shownCandidate(), 2);
        QCOMPARE(view.sourceEditor()->text(), f.sources.child);
        auto* lexer = qobject_cast<KernelLexer*>(view.sourceEditor()->lexer());
        QVERIFY(lexer);
        QCOMPARE(lexer->dialect(), spec::Dialect::Cuda);
        // The finding on line 12 and the compile error on line 18 (1-based), and nothing else.
        QCOMPARE(linesWith(view.sourceEditor(), Marker::Warning), QList<int>{11});
        QCOMPARE(linesWith(view.sourceEditor(), Marker::Error), QList<int>{17});
        QCOMPARE(linesWith(view.sourceEditor(), Marker::Info), QList<int>());
        QVERIFY(view.sourceEditor()->annotation(11).contains(QStringLiteral("shared loads conflict")));
        bool headerFound = false;
        for (const QLabel* label : view.findChildren<QLabel*>())
            headerFound =
                headerFound
                || (label->text().contains(QStringLiteral("#2")) && label->text().contains(QStringLiteral("TILE=32")));
        QVERIFY(headerFound);
        snapshot(&view, QStringLiteral("codeview-source"));

        // The diagnostics view jumps to a line: selected and in view.
        view.showLine(25);
        snapshot(&view, QStringLiteral("codeview-showline"));
        int line = 0;
        int index = 0;
        view.sourceEditor()->getCursorPosition(&line, &index);
        QCOMPARE(line, 24);
        QCOMPARE(view.sourceEditor()->selectedText(), view.sourceEditor()->text(24).chopped(1)); // without the newline
        QVERIFY(view.sourceEditor()->firstVisibleLine() <= 24);

        // The header's button hands the shown kernel to whoever opens the editor.
        QSignalSpy edits(&view, &CodeView::editRequested);
        auto* edit = view.findChild<QToolButton*>(QStringLiteral("editAsChild"));
        QVERIFY(edit);
        edit->click();
        QCOMPARE(edits.count(), 1);
        QCOMPARE(edits.first().at(0).toLongLong(), 2);
        QCOMPARE(edits.first().at(1).toString(), f.sources.child);

        // Another selection waits for its own details.
        f.selection.select(1);
        QCOMPARE(view.sourceEditor()->text(), f.sources.parent); // delivered earlier, cached
        QCOMPARE(view.shownCandidate(), 1);
        f.selection.select(0);
        QVERIFY(view.placeholderText().startsWith(QStringLiteral("Select")));
    }

    void showLineBeforeTheSourceArrives() {
        Fixture f;
        CodeView view(&f.data, &f.details, &f.selection);
        view.resize(800, 400);
        view.show();
        f.selection.select(2);
        view.setMode(CodeView::Mode::Compare);
        view.showLine(18);
        QCOMPARE(view.mode(), CodeView::Mode::Source);
        f.details.deliver(0, f.childDetail());
        int line = 0;
        int index = 0;
        view.sourceEditor()->getCursorPosition(&line, &index);
        QCOMPARE(line, 17);
        QVERIFY(view.sourceEditor()->hasSelectedText());
    }

    void codeViewDiffsAgainstTheParent() {
        Fixture f;
        CodeView view(&f.data, &f.details, &f.selection);
        QSignalSpy modes(&view, &CodeView::modeChanged);
        view.resize(1200, 700);
        view.show();
        f.selection.select(2);
        view.setMode(CodeView::Mode::DiffParent);
        QCOMPARE(modes.count(), 1);
        QCOMPARE(view.placeholderText(), QStringLiteral("Loading kernels 1 and 2\u2026"));
        f.details.deliver(0, f.childDetail());
        QCOMPARE(view.placeholderText(), QStringLiteral("Loading kernel 1\u2026"));
        f.details.deliver(0, detail(1, f.sources.parent));
        QCOMPARE(view.placeholderText(), QString());
        SideBySideDiff* diff = view.diffView();
        QCOMPARE(diff->leftEditor()->text(), f.sources.parent);
        QCOMPARE(diff->rightEditor()->text(), f.sources.child);
        QCOMPARE(diff->removedLines(), 2); // the directive and the comment
        QCOMPARE(diff->addedLines(), 3);   // the directive and two new lines
        QCOMPARE(linesWith(diff->leftEditor(), Marker::Removed).size(), 2);
        QCOMPARE(linesWith(diff->rightEditor(), Marker::Added).size(), 3);
        const int directive = static_cast<int>(
            f.sources.child.left(f.sources.child.indexOf(QStringLiteral("// kforge:param"))).count(QLatin1Char('\n')));
        QVERIFY(hasMarker(diff->rightEditor(), directive, Marker::Added));
        QVERIFY(hasMarker(diff->leftEditor(), directive, Marker::Removed));
        snapshot(&view, QStringLiteral("codeview-diff"));

        // A seed has nothing to diff against.
        f.selection.select(1);
        QVERIFY2(view.placeholderText().contains(QStringLiteral("seed")), qPrintable(view.placeholderText()));
    }

    // A tuner's child has its parent's source with other parameter values: the diff says so rather
    // than calling the two identical.
    void diffNamesParameterChangesOfTheSameSource() {
        const model::ParamValues parent{{"BLOCK", 64}, {"VW", 16}}, child{{"BLOCK", 32}, {"VW", 16}, {"UNROLL", 2}};
        QCOMPARE(model::formatParamChanges(parent, child),
                 QStringLiteral("BLOCK 64 \u2192 32, UNROLL \u2014 \u2192 2"));
        QVERIFY(model::formatParamChanges(parent, parent).isEmpty());
        SideBySideDiff diff;
        const QString source = QStringLiteral("// kforge:param BLOCK in {32, 64} = 64\n__global__ void k() {}\n");
        diff.setTexts(QStringLiteral("#3"), source, QStringLiteral("#4"), source, spec::Dialect::Cuda,
                      model::formatParamChanges(parent, child));
        QCOMPARE(diff.summary(),
                 QStringLiteral("the same source; parameters BLOCK 64 \u2192 32, UNROLL \u2014 \u2192 2"));
        diff.setTexts(QStringLiteral("#3"), source, QStringLiteral("#4"), source, spec::Dialect::Cuda);
        QCOMPARE(diff.summary(), QStringLiteral("identical"));
    }

    // Compare puts the two kernels' figures above their code: time, speedup, registers, occupancy,
    // memory and the roofline fraction, each with the right one's change, better and worse told
    // apart; a figure only one side has shows a dash on the other and no change.
    void compareShowsMetricDeltas() {
        const auto evaluated = [](qint64 id, double us, double speedup, double registers, double occupancy,
                                  std::optional<double> dramBytes, double fraction) {
            CandidateDetail d = detail(id, QStringLiteral("// kernel %1\n").arg(id));
            store::EvaluationRecord e;
            e.candidateId = id;
            e.purpose = model::EvaluationPurpose::Search;
            e.result.status = protocol::Status::Ok;
            protocol::TimingStats t;
            t.medianUs = us;
            e.result.candidateTiming = t;
            e.result.speedup = speedup;
            protocol::CompileInfo c;
            c.role = "candidate";
            c.ok = true;
            c.resources = {{"sgemm.registers", registers}, {"sgemm.occupancy", occupancy}, {"cache_hit", 0.0}};
            e.result.compile = {c};
            if (dramBytes) {
                protocol::ProfileResult p;
                p.status = "ok";
                p.metrics = {{"dram_bytes", *dramBytes}};
                e.result.profile = p;
            }
            e.roofline = QJsonObject{{QStringLiteral("fraction_of_bound"), fraction}};
            d.evaluations = {e};
            return d;
        };
        const CandidateDetail a = evaluated(1, 50.0, 1.0, 32, 1.0, 8.0e6, 0.40);
        const CandidateDetail b = evaluated(2, 40.0, 1.25, 40, 0.75, std::nullopt, 0.55);
        const QList<MetricRow> rows = compareMetrics(a, b);
        QMap<QString, MetricRow> by;
        for (const MetricRow& m : rows)
            by.insert(m.name, m);
        QCOMPARE(by.value(QStringLiteral("kernel time (median)")).change, QStringLiteral("-20.0%"));
        QCOMPARE(by.value(QStringLiteral("kernel time (median)")).better, 1);
        QCOMPARE(by.value(QStringLiteral("speedup over the baseline")).change, QStringLiteral("1.250×"));
        QCOMPARE(by.value(QStringLiteral("registers per thread (most)")).change, QStringLiteral("+8"));
        QCOMPARE(by.value(QStringLiteral("registers per thread (most)")).better, -1);
        QCOMPARE(by.value(QStringLiteral("occupancy (theoretical, least)")).change, QStringLiteral("-25.0 pts"));
        QCOMPARE(by.value(QStringLiteral("occupancy (theoretical, least)")).better, -1);
        QCOMPARE(by.value(QStringLiteral("of the roofline bound")).change, QStringLiteral("+15.0 pts"));
        const MetricRow dram = by.value(QStringLiteral("DRAM bytes (measured)"));
        QCOMPARE(dram.right, QStringLiteral("–"));
        QVERIFY(dram.change.isEmpty());
        QVERIFY(!by.contains(QStringLiteral("occupancy (achieved)"))); // neither side measured it

        Fixture f;
        CodeView view(&f.data, &f.details, &f.selection);
        view.resize(1200, 700);
        view.show();
        f.selection.compare(1, 2);
        f.details.deliver(0, a);
        f.details.deliver(0, b);
        QVERIFY(!view.compareMetrics()->isHidden());
        QVERIFY(view.compareMetrics()->text().contains(QStringLiteral("-20.0%")));
        QVERIFY(view.compareMetrics()->text().contains(QStringLiteral("#2 vs #1")));
    }

    void compareRequestShowsBoth() {
        Fixture f;
        CodeView view(&f.data, &f.details, &f.selection);
        view.resize(1200, 700);
        view.show();
        QCOMPARE(view.mode(), CodeView::Mode::Source);
        f.selection.compare(1, 2);
        QCOMPARE(view.mode(), CodeView::Mode::Compare);
        QVERIFY(view.placeholderText().startsWith(QStringLiteral("Loading kernels")));
        f.details.deliver(0, detail(1, f.sources.parent));
        f.details.deliver(0, f.childDetail());
        QCOMPARE(view.placeholderText(), QString());
        QCOMPARE(view.compareView()->leftEditor()->text(), f.sources.parent);
        QCOMPARE(view.compareView()->rightEditor()->text(), f.sources.child);
        QCOMPARE(view.compareView()->addedLines(), 3);

        // From the other tab, a new request switches back and shows the new pair (cached now).
        view.setMode(CodeView::Mode::Source);
        f.selection.compare(2, 1);
        QCOMPARE(view.mode(), CodeView::Mode::Compare);
        QCOMPARE(view.compareView()->leftEditor()->text(), f.sources.child);
        QCOMPARE(view.compareView()->rightEditor()->text(), f.sources.parent);
        snapshot(&view, QStringLiteral("codeview-compare"));

        // Another run: nothing is shown any more.
        f.data.clear();
        QCOMPARE(view.placeholderText(), QStringLiteral("No run is open."));
    }

    void editorRejectsUnchangedAndBrokenKernels() {
        const QString source = taskFile(QStringLiteral("sgemm/baseline.cu"));
        QVERIFY(!source.isEmpty());
        KernelEditorDialog dialog(7, source, spec::Dialect::Cuda);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        QSignalSpy accepted(&dialog, &QDialog::accepted);

        QVERIFY(!dialog.submit());
        QVERIFY2(dialog.errorText().contains(QStringLiteral("same")), qPrintable(dialog.errorText()));

        // A choice that is not an integer on the param directive (line 6).
        QString broken = source;
        broken.replace(QStringLiteral("TILE in {16, 32} = 16"), QStringLiteral("TILE in {16, big} = 16"));
        setEditorText(dialog.editor(), broken);
        QVERIFY(!dialog.submit());
        QVERIFY2(dialog.errorText().contains(QStringLiteral("line 6")), qPrintable(dialog.errorText()));
        QVERIFY(hasMarker(dialog.editor(), 5, Marker::Error));
        QCOMPARE(linesWith(dialog.editor(), Marker::Error).size(), 1);
        int line = 0;
        int index = 0;
        dialog.editor()->getCursorPosition(&line, &index);
        QCOMPARE(line, 5);
        QCOMPARE(accepted.count(), 0);
        QCOMPARE(dialog.result(), int(QDialog::Rejected));
        snapshot(&dialog, QStringLiteral("kerneleditor-error"));

        // A launch of a kernel the file does not define.
        QString unknown = source;
        unknown.replace(QStringLiteral("kforge:launch sgemm"), QStringLiteral("kforge:launch sgemm2"));
        setEditorText(dialog.editor(), unknown);
        QVERIFY(!dialog.submit());
        QVERIFY(dialog.errorText().contains(QStringLiteral("sgemm2")));
        QVERIFY(hasMarker(dialog.editor(), 6, Marker::Error));
        QVERIFY(!hasMarker(dialog.editor(), 5, Marker::Error)); // the old mark is gone
    }

    void editorAcceptsAnEdit() {
        const QString source = taskFile(QStringLiteral("vector_add/baseline.cl"));
        QVERIFY(!source.isEmpty());
        KernelEditorDialog dialog(3, source, spec::Dialect::OpenCL);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        QCOMPARE(dialog.parentId(), 3);
        QString edited = source;
        edited.replace(QStringLiteral("= 256"), QStringLiteral("= 128"));
        setEditorText(dialog.editor(), edited);
        auto* note = dialog.findChild<QLineEdit*>();
        QVERIFY(note);
        note->setText(QStringLiteral("  smaller work-groups  "));
        // Ctrl+Return from inside the editor submits.
        dialog.editor()->setFocus();
        QTest::keyClick(dialog.editor(), Qt::Key_Return, Qt::ControlModifier);
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(dialog.source(), edited);
        QCOMPARE(dialog.note(), QStringLiteral("smaller work-groups"));
        QVERIFY(dialog.errorText().isEmpty());
    }
    // With the run's task set, names are checked as the worker would bind them: a kernel argument
    // the task does not have, or a launch expression over an unknown size, is refused before it
    // costs an evaluation, naming it; a fitting edit is accepted.
    void editorChecksAnEditAgainstTheTask() {
        const QString dir = qEnvironmentVariable("KFORGE_TASKS_DIR", QStringLiteral(KFORGE_SOURCE_DIR "/tasks"));
        auto bundle = spec::loadTaskDir((QDir(dir).filePath(QStringLiteral("vector_add"))).toStdString());
        QVERIFY2(bundle, bundle ? "" : bundle.error().c_str());
        auto sizes = bundle->spec.sizesFor("small");
        QVERIFY(sizes);
        const QString source = taskFile(QStringLiteral("vector_add/baseline.cu"));
        KernelEditorDialog dialog(4, source, spec::Dialect::Cuda);
        dialog.setTask(bundle->spec, *sizes);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));

        QString wrongArgument = source;
        wrongArgument.replace(QStringLiteral("float* __restrict__ z, int N"),
                              QStringLiteral("float* __restrict__ out, int N"));
        setEditorText(dialog.editor(), wrongArgument);
        QVERIFY(!dialog.submit());
        QVERIFY2(dialog.errorText().contains(QStringLiteral("vector_add")), qPrintable(dialog.errorText()));
        QVERIFY2(dialog.errorText().contains(QStringLiteral("out")), qPrintable(dialog.errorText()));

        QString unknownSize = source;
        unknownSize.replace(QStringLiteral("grid=(cdiv(N, BLOCK))"), QStringLiteral("grid=(cdiv(M, BLOCK))"));
        setEditorText(dialog.editor(), unknownSize);
        QVERIFY(!dialog.submit());
        QVERIFY2(dialog.errorText().contains(QStringLiteral("M")), qPrintable(dialog.errorText()));
        QCOMPARE(dialog.result(), int(QDialog::Rejected));

        QString fits = source;
        fits.replace(QStringLiteral("= 256"), QStringLiteral("= 512"));
        setEditorText(dialog.editor(), fits);
        QVERIFY2(dialog.submit(), qPrintable(dialog.errorText()));
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
    }
};

QTEST_MAIN(TestCodeViews)
#include "tst_codeviews.moc"
