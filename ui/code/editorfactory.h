#pragma once
// The one place that configures QScintilla editors (as RenderDoc's ShaderViewer::MakeEditor does):
// lexer, fixed-width font, margins, markers and indicators, so that the source view, the diffs and
// the kernel editor look and behave alike. Line arguments here are QScintilla's, 0-based.

#include "kernelfile.h"

#include <QString>

class QWidget;
class QsciScintilla;

namespace kforge::ui {

// Line marks. Each kind has a line background (its markerNumber(), the bit tests read from
// markersAtLine) and a symbol in the marker margin.
// Related: lines that belong to the line the caret is on in another view (source and PTX/SASS).
enum class Marker { Added, Removed, Changed, Error, Warning, Info, Related };

// Indicators drawn over text ranges.
enum class Indicator {
    Diagnostic, // squiggle under the column a compiler or parser points at
    Directive,  // colours `// kforge:` directive lines
    Focus,      // box around the line showLine() jumped to
};

QsciScintilla* makeEditor(QWidget* parent, spec::Dialect dialect, bool readOnly);
// Switches the editor's highlighting to another dialect (keywords of CUDA or OpenCL C).
void setDialect(QsciScintilla* editor, spec::Dialect dialect);

int markerNumber(Marker marker);
int indicatorNumber(Indicator indicator);
// The marker for a diagnostic severity ("error", "warning", anything else: info).
Marker severityMarker(const QString& severity);

// Replaces the text of an editor, read-only or not, without leaving an undo step behind.
void setEditorText(QsciScintilla* editor, const QString& text);
void markLine(QsciScintilla* editor, int line, Marker marker);
// Squiggles the token at `column` (0-based), or the whole line when the column is unknown (< 0).
void markColumn(QsciScintilla* editor, int line, int column);
// Adds a line of explanation below `line`, coloured by severity; several calls accumulate.
void annotateLine(QsciScintilla* editor, int line, const QString& text, Marker severity);
// Moves the caret to `line`, selects it, scrolls it into view and boxes it (until the next call).
void focusLine(QsciScintilla* editor, int line);
// Removes every mark of one kind.
void clearMarker(QsciScintilla* editor, Marker marker);
// Removes markers, diagnostic and focus indicators, and annotations (not the directive colouring).
void clearMarks(QsciScintilla* editor);

} // namespace kforge::ui
