#include "editorfactory.h"

#include "kernellexer.h"
#include "theme.h"

#include <Qsci/qsciscintilla.h>
#include <Qsci/qscistyle.h>
#include <Qsci/qscistyledtext.h>

#include <QColor>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QPalette>
#include <QRegularExpression>

namespace kforge::ui {

namespace {

constexpr int kMarkerKinds = 7;
constexpr int kSymbolBase = kMarkerKinds; // symbol markers follow the line backgrounds
constexpr int kNumberMargin = 0;
constexpr int kSymbolMargin = 1;
constexpr int kFoldMargin = 2;
constexpr int kFirstIndicator = 8; // 0-7 belong to lexers

struct MarkerLook {
    QsciScintilla::MarkerSymbol symbol;
    QColor line; // background of the marked line
    QColor symbolColor;
};

// Light and dark pairs, picked by the editor's palette: a marked line stays a tint of the paper.
MarkerLook lookOf(Marker marker, bool dark) {
    switch (marker) {
    case Marker::Added:
        return dark ? MarkerLook{QsciScintilla::Plus, QColor(0x1b, 0x3a, 0x26), QColor(0x3f, 0xb9, 0x50)}
                    : MarkerLook{QsciScintilla::Plus, QColor(0xd8, 0xf5, 0xdf), QColor(0x1a, 0x7f, 0x37)};
    case Marker::Removed:
        return dark ? MarkerLook{QsciScintilla::Minus, QColor(0x4a, 0x1f, 0x22), QColor(0xf8, 0x51, 0x49)}
                    : MarkerLook{QsciScintilla::Minus, QColor(0xfb, 0xdf, 0xdc), QColor(0xcf, 0x22, 0x2e)};
    case Marker::Changed:
        return dark ? MarkerLook{QsciScintilla::LeftRectangle, QColor(0x3d, 0x35, 0x18), QColor(0xd2, 0x99, 0x22)}
                    : MarkerLook{QsciScintilla::LeftRectangle, QColor(0xfc, 0xf1, 0xc4), QColor(0xbf, 0x87, 0x00)};
    case Marker::Error:
        return dark ? MarkerLook{QsciScintilla::Circle, QColor(0x4a, 0x1f, 0x22), QColor(0xf8, 0x51, 0x49)}
                    : MarkerLook{QsciScintilla::Circle, QColor(0xfd, 0xe3, 0xe1), QColor(0xd1, 0x24, 0x2f)};
    case Marker::Warning:
        return dark ? MarkerLook{QsciScintilla::RightTriangle, QColor(0x3f, 0x34, 0x17), QColor(0xd2, 0x99, 0x22)}
                    : MarkerLook{QsciScintilla::RightTriangle, QColor(0xfd, 0xf1, 0xd0), QColor(0xc2, 0x7c, 0x0e)};
    case Marker::Info:
        return dark ? MarkerLook{QsciScintilla::SmallRectangle, QColor(0x1c, 0x2e, 0x4a), QColor(0x58, 0xa6, 0xff)}
                    : MarkerLook{QsciScintilla::SmallRectangle, QColor(0xe2, 0xec, 0xfb), QColor(0x09, 0x69, 0xda)};
    case Marker::Related:
        return dark ? MarkerLook{QsciScintilla::RightArrow, QColor(0x33, 0x29, 0x52), QColor(0xa3, 0x71, 0xf7)}
                    : MarkerLook{QsciScintilla::RightArrow, QColor(0xec, 0xe4, 0xfc), QColor(0x82, 0x50, 0xdf)};
    }
    return {};
}

QFont editorFont() {
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setStyleHint(QFont::Monospace);
    return font;
}

void setLexerFonts(KernelLexer* lexer) {
    const QFont font = editorFont();
    QFont bold = font;
    bold.setBold(true);
    lexer->setDefaultFont(font);
    lexer->setFont(font); // every style
    lexer->setFont(bold, QsciLexerCPP::TaskMarker);
}

// The paper and plain text come from the palette; the syntax colours are a light/dark pair each.
void setLexerColours(KernelLexer* lexer, const QPalette& palette) {
    const bool dark = theme::isDark(palette);
    const auto pick = [dark](QRgb light, QRgb onDark) { return QColor::fromRgb(dark ? onDark : light); };
    const QColor paper = palette.color(QPalette::Base);
    const QColor text = palette.color(QPalette::Text);
    lexer->setDefaultPaper(paper);
    lexer->setPaper(paper); // every style
    lexer->setDefaultColor(text);
    lexer->setColor(text); // every style; the ones below differ
    const QColor comment = pick(0x6e7781, 0x8b949e);
    lexer->setColor(comment, QsciLexerCPP::Comment);
    lexer->setColor(comment, QsciLexerCPP::CommentLine);
    lexer->setColor(comment, QsciLexerCPP::CommentDoc);
    lexer->setColor(pick(0xcf222e, 0xff7b72), QsciLexerCPP::Keyword);
    lexer->setColor(pick(0x8250df, 0xd2a8ff), QsciLexerCPP::KeywordSet2);
    lexer->setColor(pick(0x953800, 0xffa657), QsciLexerCPP::GlobalClass);
    lexer->setColor(pick(0x0550ae, 0x79c0ff), QsciLexerCPP::Number);
    lexer->setColor(pick(0x0a3069, 0xa5d6ff), QsciLexerCPP::DoubleQuotedString);
    lexer->setColor(pick(0x0a3069, 0xa5d6ff), QsciLexerCPP::SingleQuotedString);
    lexer->setColor(pick(0x116329, 0x7ee787), QsciLexerCPP::PreProcessor);
    lexer->setColor(pick(0xbf3989, 0xf778ba), QsciLexerCPP::TaskMarker);
}

// Re-sends the word lists after the lexer's dialect changed; setLexer() only sends them once.
void sendKeywords(QsciScintilla* editor, const KernelLexer* lexer) {
    for (int set = 1; set <= KernelLexer::kKeywordSets; ++set) {
        const char* words = lexer->keywords(set);
        editor->SendScintilla(QsciScintillaBase::SCI_SETKEYWORDS, static_cast<unsigned long>(set - 1),
                              words ? words : "");
    }
    editor->recolor();
}

void clearIndicator(QsciScintilla* editor, int indicator) {
    editor->SendScintilla(QsciScintillaBase::SCI_SETINDICATORCURRENT, indicator);
    editor->SendScintilla(QsciScintillaBase::SCI_INDICATORCLEARRANGE, 0,
                          editor->SendScintilla(QsciScintillaBase::SCI_GETLENGTH));
}

// The line's length without its terminator.
int contentLength(const QString& text) {
    int length = static_cast<int>(text.size());
    while (length > 0 && (text[length - 1] == QLatin1Char('\n') || text[length - 1] == QLatin1Char('\r')))
        --length;
    return length;
}

// Directive lines get one colour over their whole text, comment and all; LexCPP alone can only
// mark the word `kforge` in them.
void colourDirectives(QsciScintilla* editor) {
    static const QRegularExpression directive(QStringLiteral("^\\s*//\\s*kforge:"));
    const int indicator = indicatorNumber(Indicator::Directive);
    clearIndicator(editor, indicator);
    const int lines = editor->lines();
    for (int line = 0; line < lines; ++line) {
        const QString text = editor->text(line);
        if (directive.match(text).hasMatch())
            editor->fillIndicatorRange(line, static_cast<int>(text.indexOf(QLatin1String("//"))), line,
                                       contentLength(text), indicator);
    }
}

void fitNumberMargin(QsciScintilla* editor) {
    const int digits = qMax(3, static_cast<int>(QString::number(editor->lines()).size()));
    editor->setMarginWidth(kNumberMargin, QString(digits + 1, QLatin1Char('9')));
}

QsciStyle& annotationStyle(Marker severity) {
    // QsciStyle numbers are allocated per process: make each style once, not per annotation; its
    // colours are set for the editor's palette before it is applied.
    static QsciStyle error(-1, QStringLiteral("kforge error note"), QColor(), QColor(), editorFont());
    static QsciStyle warning(-1, QStringLiteral("kforge warning note"), QColor(), QColor(), editorFont());
    static QsciStyle info(-1, QStringLiteral("kforge info note"), QColor(), QColor(), editorFont());
    switch (severity) {
    case Marker::Error:
        return error;
    case Marker::Warning:
        return warning;
    default:
        return info;
    }
}

const QsciStyle& annotationStyle(Marker severity, const QPalette& palette) {
    const bool dark = theme::isDark(palette);
    QsciStyle& style = annotationStyle(severity);
    switch (severity) {
    case Marker::Error:
        style.setColor(dark ? QColor(0xff, 0xdc, 0xd7) : QColor(0x82, 0x07, 0x1e));
        style.setPaper(dark ? QColor(0x5a, 0x1e, 0x22) : QColor(0xff, 0xeb, 0xe9));
        break;
    case Marker::Warning:
        style.setColor(dark ? QColor(0xf8, 0xe3, 0xa1) : QColor(0x6c, 0x4a, 0x00));
        style.setPaper(dark ? QColor(0x4a, 0x3b, 0x12) : QColor(0xff, 0xf8, 0xc5));
        break;
    default:
        style.setColor(dark ? QColor(0xca, 0xe8, 0xff) : QColor(0x0a, 0x30, 0x69));
        style.setPaper(dark ? QColor(0x16, 0x30, 0x4d) : QColor(0xdd, 0xf4, 0xff));
        break;
    }
    return style;
}

// A light selection that keeps the syntax colours: showLine() selects whole lines of code.
void setSelectionColours(QsciScintilla* editor) {
    editor->setSelectionBackgroundColor(
        theme::pick(editor->palette(), QColor(0xc8, 0xdc, 0xf8), QColor(0x26, 0x4f, 0x78)));
    editor->SendScintilla(QsciScintillaBase::SCI_SETSELFORE, false, 0L);
}

// Everything in the editor that has a colour, for its palette as it is now.
void setEditorColours(QsciScintilla* editor) {
    const QPalette palette = editor->palette();
    const bool dark = theme::isDark(palette);
    if (auto* lexer = qobject_cast<KernelLexer*>(editor->lexer()))
        setLexerColours(lexer, palette);
    // Beyond the last line and the lexer's styles.
    editor->SendScintilla(QsciScintillaBase::SCI_STYLESETBACK, QsciScintillaBase::STYLE_DEFAULT,
                          palette.color(QPalette::Base));
    editor->SendScintilla(QsciScintillaBase::SCI_STYLESETFORE, QsciScintillaBase::STYLE_DEFAULT,
                          palette.color(QPalette::Text));
    editor->setCaretForegroundColor(palette.color(QPalette::Text));
    editor->setCaretLineBackgroundColor(palette.color(QPalette::Highlight));
    // Translucent, so that a marked line under the caret keeps its colour (after the colour, which
    // sets an opaque line).
    editor->SendScintilla(QsciScintillaBase::SCI_SETCARETLINEBACKALPHA, 40);
    setSelectionColours(editor);
    editor->setMarginsForegroundColor(theme::ink(palette, 0.45));
    editor->setMarginsBackgroundColor(theme::ink(palette, 0.04));
    for (int kind = 0; kind < kMarkerKinds; ++kind) {
        const MarkerLook look = lookOf(static_cast<Marker>(kind), dark);
        editor->setMarkerBackgroundColor(look.line, kind);
        editor->setMarkerBackgroundColor(look.symbolColor, kSymbolBase + kind);
        editor->setMarkerForegroundColor(look.symbolColor, kSymbolBase + kind);
    }
    const int diagnostic = indicatorNumber(Indicator::Diagnostic);
    editor->setIndicatorForegroundColor(dark ? QColor(0xf8, 0x51, 0x49) : QColor(0xd1, 0x24, 0x2f), diagnostic);
    const int directive = indicatorNumber(Indicator::Directive);
    editor->setIndicatorForegroundColor(dark ? QColor(0xf7, 0x78, 0xba) : QColor(0xbf, 0x39, 0x89), directive);
    const int focus = indicatorNumber(Indicator::Focus);
    editor->setIndicatorForegroundColor(QColor(0xf0, 0xb0, 0x00, 90), focus);
    editor->setIndicatorOutlineColor(dark ? QColor(0xd2, 0x99, 0x22) : QColor(0xbf, 0x87, 0x00), focus);
    // Notes already shown take the new colours too.
    for (Marker severity : {Marker::Error, Marker::Warning, Marker::Info})
        annotationStyle(severity, palette).apply(editor);
}

} // namespace

int markerNumber(Marker marker) {
    return static_cast<int>(marker);
}

int indicatorNumber(Indicator indicator) {
    return kFirstIndicator + static_cast<int>(indicator);
}

Marker severityMarker(const QString& severity) {
    if (severity == QLatin1String("error"))
        return Marker::Error;
    if (severity == QLatin1String("warning"))
        return Marker::Warning;
    return Marker::Info;
}

QsciScintilla* makeEditor(QWidget* parent, spec::Dialect dialect, bool readOnly) {
    auto* editor = new QsciScintilla(parent);
    editor->setUtf8(true);
    auto* lexer = new KernelLexer(dialect, editor);
    setLexerFonts(lexer);
    setLexerColours(lexer, editor->palette());
    editor->setLexer(lexer);
    editor->setFont(editorFont());

    editor->setWrapMode(QsciScintilla::WrapNone);
    editor->setTabWidth(4);
    editor->setIndentationsUseTabs(false);
    editor->setAutoIndent(true);
    editor->setBraceMatching(QsciScintilla::SloppyBraceMatch);
    editor->setEolMode(QsciScintilla::EolUnix);
    editor->setCaretLineVisible(true);
    editor->setReadOnly(readOnly);

    // Margins: line numbers, marker symbols, no folding.
    editor->setMarginType(kNumberMargin, QsciScintilla::NumberMargin);
    editor->setMarginLineNumbers(kNumberMargin, true);
    editor->setMarginsFont(editorFont());
    editor->setMarginType(kSymbolMargin, QsciScintilla::SymbolMargin);
    editor->setMarginWidth(kSymbolMargin, 16);
    editor->setMarginWidth(kFoldMargin, 0);
    editor->setFolding(QsciScintilla::NoFoldStyle);
    fitNumberMargin(editor);
    QObject::connect(editor, &QsciScintilla::linesChanged, editor, [editor] { fitNumberMargin(editor); });

    // Line backgrounds show only for markers outside every margin's mask, so the symbol margin
    // takes the symbol markers and the number margin none.
    int symbolMask = 0;
    for (int kind = 0; kind < kMarkerKinds; ++kind) {
        editor->markerDefine(QsciScintilla::Background, kind);
        editor->markerDefine(lookOf(static_cast<Marker>(kind), false).symbol, kSymbolBase + kind);
        symbolMask |= 1 << (kSymbolBase + kind);
    }
    editor->setMarginMarkerMask(kNumberMargin, 0);
    editor->setMarginMarkerMask(kSymbolMargin, symbolMask);

    const int diagnostic = indicatorNumber(Indicator::Diagnostic);
    editor->indicatorDefine(QsciScintilla::SquiggleIndicator, diagnostic);
    const int directive = indicatorNumber(Indicator::Directive);
    editor->indicatorDefine(QsciScintilla::TextColorIndicator, directive);
    const int focus = indicatorNumber(Indicator::Focus);
    editor->indicatorDefine(QsciScintilla::StraightBoxIndicator, focus);
    editor->setIndicatorDrawUnder(true, focus);
    setEditorColours(editor);
    theme::onPaletteChange(editor, [editor] { setEditorColours(editor); });

    editor->setAnnotationDisplay(QsciScintilla::AnnotationBoxed);
    QObject::connect(editor, &QsciScintilla::textChanged, editor, [editor] { colourDirectives(editor); });
    return editor;
}

void setDialect(QsciScintilla* editor, spec::Dialect dialect) {
    auto* lexer = qobject_cast<KernelLexer*>(editor->lexer());
    if (!lexer || lexer->dialect() == dialect)
        return;
    lexer->setDialect(dialect);
    sendKeywords(editor, lexer);
}

void setEditorText(QsciScintilla* editor, const QString& text) {
    const bool readOnly = editor->isReadOnly();
    editor->setReadOnly(false); // Scintilla refuses to change a read-only document
    editor->setText(text);
    setSelectionColours(editor);
    editor->setReadOnly(readOnly);
    editor->setModified(false);
    editor->SendScintilla(QsciScintillaBase::SCI_EMPTYUNDOBUFFER);
}

void markLine(QsciScintilla* editor, int line, Marker marker) {
    editor->markerAdd(line, markerNumber(marker));
    editor->markerAdd(line, kSymbolBase + markerNumber(marker));
}

void markColumn(QsciScintilla* editor, int line, int column) {
    if (line < 0 || line >= editor->lines())
        return;
    const int indicator = indicatorNumber(Indicator::Diagnostic);
    const QString text = editor->text(line);
    const int length = contentLength(text);
    if (column < 0 || column >= length) {
        int first = 0;
        while (first < length && text[first].isSpace())
            ++first;
        editor->fillIndicatorRange(line, first, line, qMax(first + 1, length), indicator);
        return;
    }
    // The token at the column: an identifier or number, else the one character.
    int end = column;
    while (end < length && (text[end].isLetterOrNumber() || text[end] == QLatin1Char('_')))
        ++end;
    editor->fillIndicatorRange(line, column, line, qMax(end, column + 1), indicator);
}

void annotateLine(QsciScintilla* editor, int line, const QString& text, Marker severity) {
    if (line < 0 || line >= editor->lines())
        return;
    const QString before = editor->annotation(line);
    const QString all = before.isEmpty() ? text : before + QLatin1Char('\n') + text;
    editor->annotate(line, all, annotationStyle(severity, editor->palette()));
}

void focusLine(QsciScintilla* editor, int line) {
    if (line < 0 || line >= editor->lines())
        return;
    const int indicator = indicatorNumber(Indicator::Focus);
    clearIndicator(editor, indicator);
    const int length = contentLength(editor->text(line));
    editor->fillIndicatorRange(line, 0, line, qMax(1, length), indicator);
    editor->setCursorPosition(line, 0);
    editor->setSelection(line, 0, line, length);
    // Some context above the line rather than the line at the very top.
    const int onScreen = static_cast<int>(editor->SendScintilla(QsciScintillaBase::SCI_LINESONSCREEN));
    editor->setFirstVisibleLine(qMax(0, line - onScreen / 3));
    editor->ensureLineVisible(line);
}

void clearMarker(QsciScintilla* editor, Marker marker) {
    editor->markerDeleteAll(markerNumber(marker));
    editor->markerDeleteAll(kSymbolBase + markerNumber(marker));
}

void clearMarks(QsciScintilla* editor) {
    editor->markerDeleteAll();
    clearIndicator(editor, indicatorNumber(Indicator::Diagnostic));
    clearIndicator(editor, indicatorNumber(Indicator::Focus));
    editor->clearAnnotations();
}

} // namespace kforge::ui
