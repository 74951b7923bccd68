#pragma once
// The PTX / SASS tab of the code view: the selected CUDA kernel's source beside what the compiler
// made of it, for a chosen GPU target. The caret's line in either pane marks the lines it belongs
// to in the other (through PTX's .loc directives and nvdisasm's line comments), as Compiler
// Explorer does. Listings come from ListingService: the run store, else a CUDA worker here.

#include "protocol.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QComboBox;
class QLabel;
class QStackedWidget;
class QToolButton;
class QsciScintilla;

namespace kforge::ui {

class CandidateDetails;
class CandidateSelection;
class ListingService;
class RunData;

enum class ListingFormat { Ptx, Sass };

// The source line (1-based) each line of a listing came from, 0 for lines that are not code
// (directives, labels, comments) or that came from another file (a toolkit header). `file` is the
// source's name as the compiler knew it ("candidate.cu"); annotations may give it with a folder.
QVector<int> listingSourceLines(const QString& listing, ListingFormat format, const QString& file);

class ListingView : public QWidget {
    Q_OBJECT
public:
    ListingView(RunData* data, CandidateDetails* details, CandidateSelection* selection, ListingService* listings,
                QWidget* parent = nullptr);

    void setFormat(ListingFormat format);
    ListingFormat format() const;
    // The GPU target (compute capability); 0: the one the candidate's device suggests.
    void setTarget(int target);
    int target() const; // as shown: the chosen one, or the suggested one

    QsciScintilla* sourceEditor() const { return m_source; }
    QsciScintilla* listingEditor() const { return m_listing; }
    // The line under the panes: compiler, target, disassembler, or why there is no SASS.
    QString statusText() const;
    // What the tab says instead of code; empty while it shows code.
    QString placeholderText() const;
    qint64 shownCandidate() const { return m_shownCandidate; }
    // 0-based lines marked as belonging to the other pane's caret line.
    QList<int> relatedListingLines() const { return m_relatedListing; }
    QList<int> relatedSourceLines() const { return m_relatedSource; }

public slots:
    void refresh();

private:
    int suggestedTarget(qint64 candidate) const;
    void fill(qint64 candidate, int target, const protocol::DisassembleResult& listing, const QString& source);
    void setPlaceholder(const QString& text, bool canRetry = false);
    void sourceCaretMoved(int line);
    void listingCaretMoved(int line);
    QList<int> listingLinesOf(int sourceLine) const; // 0-based listing lines of a 1-based source line
    void markRelated(QsciScintilla* editor, QList<int>& marked, const QList<int>& lines, bool scroll);

    RunData* m_data;
    CandidateDetails* m_details;
    CandidateSelection* m_selection;
    ListingService* m_listings;
    QComboBox* m_formatBox = nullptr;
    QComboBox* m_targetBox = nullptr;
    QLabel* m_status = nullptr;
    QToolButton* m_retry = nullptr;
    QStackedWidget* m_pages = nullptr;
    QLabel* m_placeholder = nullptr;
    QsciScintilla* m_source = nullptr;
    QsciScintilla* m_listing = nullptr;

    // What the panes show.
    qint64 m_shownCandidate = 0;
    int m_shownTarget = 0;
    ListingFormat m_shownFormat = ListingFormat::Ptx;
    QVector<int> m_lineOfListing; // per listing line: its source line (1-based), 0 for none
    QList<int> m_relatedListing;
    QList<int> m_relatedSource;
};

} // namespace kforge::ui
