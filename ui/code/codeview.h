#pragma once
// The kernel source of the selected candidate, with its findings and compiler diagnostics marked on
// their lines; the candidate against its first parent; any two candidates side by side (source,
// PTX or SASS); and, for CUDA runs, the candidate's PTX and SASS beside its source (ListingView).
// Sources arrive on demand from CandidateDetails: a tab says "Loading kernel N…" until they do.

#include "comparemetrics.h"
#include "kernelfile.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QStackedWidget;
class QTabWidget;
class QToolButton;
class QsciScintilla;

namespace kforge::ui {

class CandidateDetails;
class CandidateSelection;
class ElidedLabel;
class ListingService;
class ListingView;
class RunData;
class SideBySideDiff;
struct CandidateDetail;

class CodeView : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Source, DiffParent, Compare, Listing };
    // What the Compare tab sets side by side.
    enum class CompareWhat { Source, Ptx, Sass };

    // Without `listings` there is no PTX / SASS tab, and Compare compares sources only.
    CodeView(RunData* data, CandidateDetails* details, CandidateSelection* selection,
             ListingService* listings = nullptr, QWidget* parent = nullptr);

    void setMode(Mode mode);
    Mode mode() const;

    QsciScintilla* sourceEditor() const { return m_editor; }
    SideBySideDiff* diffView() const { return m_diff; }
    SideBySideDiff* compareView() const { return m_compare; }
    // The compared kernels' figures (time, registers, occupancy, memory, roofline) and their changes.
    QLabel* compareMetrics() const { return m_compareMetrics; }
    ListingView* listingView() const { return m_listingView; }
    ListingService* listings() const { return m_listings; }
    void setCompareWhat(CompareWhat what);
    CompareWhat compareWhat() const;
    // The candidate whose source the Source tab shows; 0 while none is (nothing selected, loading).
    qint64 shownCandidate() const;
    // What the current tab says instead of code ("Loading kernel 7…"); empty while it shows code.
    QString placeholderText() const;

public slots:
    // Shows the current candidate's source at `line` (1-based, as findings and compilers count),
    // selected and marked; once the source has loaded if it has not yet.
    void showLine(int line);

signals:
    void modeChanged(kforge::ui::CodeView::Mode mode);
    // The user asked to edit the shown kernel into a new child (the window opens KernelEditorDialog).
    void editRequested(qint64 candidate, const QString& source, kforge::spec::Dialect dialect);

private:
    // What a tab shows, so that unrelated signals leave it (and its scroll position) alone.
    struct Shown {
        qint64 left = 0;
        qint64 right = 0;
        bool stale = false; // its details were loaded again
        bool shows(qint64 l, qint64 r) const { return !stale && left == l && right == r; }
    };

    spec::Dialect dialect() const;
    void refresh();
    void refreshSource();
    void refreshDiff();
    void refreshCompare();
    // The two candidates' listings for Compare's PTX or SASS: false (with the placeholder set)
    // until both are there.
    bool compareListings(const CandidateDetail& before, const CandidateDetail& after);
    void showCompareMetrics();
    void fillSource(const CandidateDetail& detail);
    void updateHeader();
    bool showsCandidate(qint64 id) const; // whether the current tab needs this candidate
    void candidateLoaded(qint64 id);
    void candidatesChanged(const QList<int>& rows);
    void forgetShown();
    // Shows `text` instead of the tab's code.
    void setPlaceholder(QStackedWidget* page, const QString& text);
    void showContent(QStackedWidget* page);
    QString titleOf(qint64 id, const CandidateDetail& detail) const;
    QString loadingText(const QList<qint64>& missing) const;

    RunData* m_data;
    CandidateDetails* m_details;
    CandidateSelection* m_selection;
    QTabWidget* m_tabs = nullptr;
    QStackedWidget* m_sourcePage = nullptr;
    QStackedWidget* m_diffPage = nullptr;
    QStackedWidget* m_comparePage = nullptr;
    ElidedLabel* m_header = nullptr;
    QToolButton* m_editButton = nullptr;
    QsciScintilla* m_editor = nullptr;
    SideBySideDiff* m_diff = nullptr;
    SideBySideDiff* m_compare = nullptr;
    QLabel* m_compareMetrics = nullptr;
    QComboBox* m_compareWhat = nullptr;
    CompareWhat m_compareShownWhat = CompareWhat::Source;
    ListingService* m_listings = nullptr;
    ListingView* m_listingView = nullptr;
    QList<MetricRow> m_metricRows; // of the pair shown
    Shown m_sourceShown;
    Shown m_diffShown;
    Shown m_compareShown;
    spec::Dialect m_dialect = spec::Dialect::OpenCL;
    int m_pendingLine = 0; // showLine() before the source arrived
};

} // namespace kforge::ui
