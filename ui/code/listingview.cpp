#include "listingview.h"

#include "candidatedetails.h"
#include "candidateselection.h"
#include "editorfactory.h"
#include "listingservice.h"
#include "rundata.h"
#include "util/text.h"

#include <Qsci/qsciscintilla.h>

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QSplitter>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

using util::q;

constexpr int kPlaceholderPage = 0;
constexpr int kContentPage = 1;

bool sameFile(const QString& annotated, const QString& file) {
    return annotated == file || QFileInfo(annotated).fileName() == QFileInfo(file).fileName();
}

} // namespace

QVector<int> listingSourceLines(const QString& listing, ListingFormat format, const QString& file) {
    const QStringList lines = listing.split(QLatin1Char('\n'));
    QVector<int> result(lines.size(), 0);
    int current = 0;
    if (format == ListingFormat::Ptx) {
        // .file 1 "/tmp/candidate.cu"  then  .loc 1 12 5  before the instructions of line 12.
        static const QRegularExpression fileLine(QStringLiteral("^\\s*\\.file\\s+(\\d+)\\s+\"([^\"]*)\""));
        static const QRegularExpression locLine(QStringLiteral("^\\s*\\.loc\\s+(\\d+)\\s+(\\d+)"));
        QList<int> ours;
        for (const QString& line : lines)
            if (const auto m = fileLine.match(line); m.hasMatch() && sameFile(m.captured(2), file))
                ours << m.captured(1).toInt();
        for (qsizetype i = 0; i < lines.size(); ++i) {
            const QString& line = lines[i];
            if (const auto m = locLine.match(line); m.hasMatch()) {
                current = ours.contains(m.captured(1).toInt()) ? m.captured(2).toInt() : 0;
                continue;
            }
            const QString code = line.trimmed();
            if (code.isEmpty() || code.startsWith(QLatin1Char('.')) || code.startsWith(QStringLiteral("//"))
                || code.startsWith(QLatin1Char('{')) || code.startsWith(QLatin1Char('}'))
                || code.endsWith(QLatin1Char(':'))) {
                if (code.startsWith(QLatin1Char('}')))
                    current = 0; // the end of a function
                continue;
            }
            result[i] = current;
        }
        return result;
    }
    // nvdisasm -g:  //## File "/tmp/candidate.cu", line 12  before the instructions of line 12.
    static const QRegularExpression fileComment(QStringLiteral("//## File \"([^\"]*)\", line (\\d+)"));
    static const QRegularExpression instruction(QStringLiteral("^\\s*/\\*[0-9a-fA-F]{4,}\\*/"));
    for (qsizetype i = 0; i < lines.size(); ++i) {
        const QString& line = lines[i];
        if (const auto m = fileComment.match(line); m.hasMatch()) {
            current = sameFile(m.captured(1), file) ? m.captured(2).toInt() : 0;
            continue;
        }
        if (instruction.match(line).hasMatch())
            result[i] = current;
        else if (line.trimmed().startsWith(QStringLiteral("//-----")))
            current = 0; // the next section (function)
    }
    return result;
}

ListingView::ListingView(RunData* data, CandidateDetails* details, CandidateSelection* selection,
                         ListingService* listings, QWidget* parent)
    : QWidget(parent), m_data(data), m_details(details), m_selection(selection), m_listings(listings) {
    m_formatBox = new QComboBox(this);
    m_formatBox->setObjectName(QStringLiteral("listingFormat"));
    m_formatBox->addItem(tr("PTX"));
    m_formatBox->addItem(tr("SASS"));
    m_formatBox->setToolTip(tr("PTX: the virtual ISA NVRTC emits. SASS: the GPU's machine code, disassembled by "
                               "nvdisasm where the CUDA toolkit has it."));
    m_targetBox = new QComboBox(this);
    m_targetBox->setObjectName(QStringLiteral("listingTarget"));
    m_targetBox->addItem(tr("Run's GPU"), 0);
    for (int target : ListingService::targets())
        m_targetBox->addItem(ListingService::targetName(target), target);
    m_targetBox->setToolTip(tr("The GPU architecture to compile for; by default the one the kernel was evaluated on"));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("listingStatus"));
    m_status->setTextFormat(Qt::PlainText);
    m_status->setWordWrap(true);
    m_status->setForegroundRole(QPalette::PlaceholderText);
    m_retry = new QToolButton(this);
    m_retry->setText(tr("Try Again"));
    m_retry->setAutoRaise(true);
    m_retry->hide();
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(4, 2, 4, 2);
    bar->addWidget(m_formatBox);
    bar->addWidget(m_targetBox);
    bar->addWidget(m_status, 1);
    bar->addWidget(m_retry);

    m_source = makeEditor(this, spec::Dialect::Cuda, true);
    m_source->setObjectName(QStringLiteral("listingSource"));
    m_listing = makeEditor(this, spec::Dialect::Cuda, true);
    m_listing->setObjectName(QStringLiteral("listingCode"));
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_source);
    splitter->addWidget(m_listing);
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    splitter->setChildrenCollapsible(false);

    m_placeholder = new QLabel(this);
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_placeholder->setWordWrap(true);
    m_placeholder->setTextFormat(Qt::PlainText);
    m_placeholder->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_placeholder->setForegroundRole(QPalette::PlaceholderText);
    m_placeholder->setMargin(16);
    m_pages = new QStackedWidget(this);
    m_pages->addWidget(m_placeholder);
    m_pages->addWidget(splitter);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addLayout(bar);
    layout->addWidget(m_pages, 1);

    connect(m_formatBox, &QComboBox::currentIndexChanged, this, &ListingView::refresh);
    connect(m_targetBox, &QComboBox::currentIndexChanged, this, &ListingView::refresh);
    connect(m_retry, &QToolButton::clicked, this, [this] {
        const qint64 id = m_selection->current();
        if (id != 0)
            m_listings->retry(id, target());
    });
    connect(m_listings, &ListingService::changed, this, [this](qint64 candidate, int changedTarget) {
        if (isVisible() && candidate == m_selection->current() && changedTarget == target())
            refresh();
    });
    connect(m_details, &CandidateDetails::loaded, this, [this](qint64 candidate) {
        if (isVisible() && candidate == m_selection->current())
            refresh();
    });
    connect(m_source, &QsciScintilla::cursorPositionChanged, this, [this](int line, int) { sourceCaretMoved(line); });
    connect(m_listing, &QsciScintilla::cursorPositionChanged, this, [this](int line, int) { listingCaretMoved(line); });
    connect(m_data, &RunData::cleared, this, [this] {
        m_shownCandidate = 0;
        refresh();
    });
}

void ListingView::setFormat(ListingFormat format) {
    m_formatBox->setCurrentIndex(format == ListingFormat::Ptx ? 0 : 1);
}

ListingFormat ListingView::format() const {
    return m_formatBox->currentIndex() == 1 ? ListingFormat::Sass : ListingFormat::Ptx;
}

void ListingView::setTarget(int chosen) {
    const int index = m_targetBox->findData(chosen);
    m_targetBox->setCurrentIndex(index < 0 ? 0 : index);
}

int ListingView::target() const {
    const int chosen = m_targetBox->currentData().toInt();
    return chosen != 0 ? chosen : suggestedTarget(m_selection->current());
}

int ListingView::suggestedTarget(qint64 candidate) const {
    // The GPU the kernel ran on, else the run's; H100/H200 (sm_90) where nothing says.
    if (const CandidateRow* row = m_data->candidate(candidate); row && !row->device.isEmpty())
        if (const int cc = ListingService::targetForDevice(row->device))
            return cc;
    for (const QString& device : m_data->deviceModels())
        if (const int cc = ListingService::targetForDevice(device))
            return cc;
    return 90;
}

QString ListingView::statusText() const {
    return m_status->text();
}

QString ListingView::placeholderText() const {
    return m_pages->currentIndex() == kPlaceholderPage ? m_placeholder->text() : QString();
}

void ListingView::setPlaceholder(const QString& text, bool canRetry) {
    m_placeholder->setText(text);
    m_pages->setCurrentIndex(kPlaceholderPage);
    m_retry->setVisible(canRetry);
    m_status->clear();
    m_shownCandidate = 0;
}

void ListingView::refresh() {
    if (!m_data->hasRun())
        return setPlaceholder(tr("No run is open."));
    if (m_data->run().backend != model::Backend::Cuda)
        return setPlaceholder(tr("PTX and SASS are shown for CUDA runs; this run's kernels are %1.")
                                  .arg(model::backendName(m_data->run().backend)));
    const qint64 id = m_selection->current();
    if (id == 0)
        return setPlaceholder(tr("Select a kernel to see its PTX and SASS."));
    const int cc = target();
    const ListingService::Entry* entry = m_listings->entry(id, cc);
    if (!entry) {
        m_listings->request(id, cc);
        entry = m_listings->entry(id, cc);
    }
    const QString targetName = ListingService::targetName(cc);
    if (!entry || entry->state == ListingService::Entry::State::Reading)
        return setPlaceholder(tr("Reading the listing of kernel %1 for %2\u2026").arg(id).arg(targetName));
    if (entry->state == ListingService::Entry::State::Compiling)
        return setPlaceholder(tr("Compiling kernel %1 for %2 with the CUDA worker\u2026").arg(id).arg(targetName));
    if (!entry->listing.ok)
        return setPlaceholder(
            tr("No listing of kernel %1 for %2: %3").arg(id).arg(targetName, q(entry->listing.message)), true);
    const CandidateDetail* detail = m_details->details(id);
    if (!detail)
        return setPlaceholder(tr("Loading kernel %1\u2026").arg(id));
    if (m_shownCandidate == id && m_shownTarget == cc && m_shownFormat == format()
        && m_pages->currentIndex() == kContentPage)
        return;
    fill(id, cc, entry->listing, detail->candidate.source);
}

void ListingView::fill(qint64 candidate, int cc, const protocol::DisassembleResult& listing, const QString& source) {
    const ListingFormat shown = format();
    const bool sameKernel = m_shownCandidate == candidate;
    m_shownCandidate = candidate;
    m_shownTarget = cc;
    m_shownFormat = shown;
    m_retry->hide();
    if (!sameKernel) {
        clearMarks(m_source);
        setEditorText(m_source, source);
    }
    clearMarks(m_listing);
    m_relatedListing.clear();
    m_relatedSource.clear();
    clearMarker(m_source, Marker::Related);

    QStringList facts{q(listing.compiler), q(listing.arch)};
    QString text;
    if (shown == ListingFormat::Ptx) {
        text = q(listing.intermediate);
    } else if (!listing.machineCode.empty()) {
        text = q(listing.machineCode);
        facts << tr("disassembled by %1").arg(q(listing.machineTool));
    }
    if (shown == ListingFormat::Sass && !listing.machineCodeNote.empty())
        facts << q(listing.machineCodeNote);
    facts.removeAll(QString());
    m_status->setText(facts.join(QStringLiteral(" \u00b7 ")));
    if (text.isEmpty()) {
        m_placeholder->setText(
            tr("No SASS of kernel %1: %2")
                .arg(candidate)
                .arg(listing.machineCodeNote.empty() ? tr("the worker gave none") : q(listing.machineCodeNote)));
        m_pages->setCurrentIndex(kPlaceholderPage);
        m_lineOfListing.clear();
        return;
    }
    setEditorText(m_listing, text);
    m_lineOfListing = listingSourceLines(text, shown, q(listing.file));
    m_pages->setCurrentIndex(kContentPage);
    sourceCaretMoved(m_source->SendScintilla(QsciScintillaBase::SCI_LINEFROMPOSITION,
                                             m_source->SendScintilla(QsciScintillaBase::SCI_GETCURRENTPOS)));
}

void ListingView::markRelated(QsciScintilla* editor, QList<int>& marked, const QList<int>& lines, bool scroll) {
    clearMarker(editor, Marker::Related);
    marked = lines;
    for (int line : lines)
        markLine(editor, line, Marker::Related);
    if (scroll && !lines.isEmpty()) {
        // Into view without moving the other pane's caret (which would move this one's back).
        const int first = lines.first();
        const int visible = editor->SendScintilla(QsciScintillaBase::SCI_LINESONSCREEN);
        const int top = editor->firstVisibleLine();
        if (first < top || first >= top + visible)
            editor->setFirstVisibleLine(std::max(0, first - visible / 3));
    }
}

void ListingView::sourceCaretMoved(int line) {
    if (m_lineOfListing.isEmpty())
        return;
    const QList<int> lines = listingLinesOf(line + 1);
    // The caret's line is marked with its instructions, as one group.
    markRelated(m_source, m_relatedSource, lines.isEmpty() ? QList<int>{} : QList<int>{line}, false);
    markRelated(m_listing, m_relatedListing, lines, true);
}

QList<int> ListingView::listingLinesOf(int sourceLine) const {
    QList<int> lines;
    for (qsizetype i = 0; i < m_lineOfListing.size(); ++i)
        if (m_lineOfListing[i] == sourceLine)
            lines << static_cast<int>(i);
    return lines;
}

void ListingView::listingCaretMoved(int line) {
    if (line < 0 || line >= m_lineOfListing.size())
        return;
    const int sourceLine = m_lineOfListing[line];
    markRelated(m_listing, m_relatedListing, sourceLine > 0 ? listingLinesOf(sourceLine) : QList<int>{}, false);
    markRelated(m_source, m_relatedSource, sourceLine > 0 ? QList<int>{sourceLine - 1} : QList<int>{}, true);
}

} // namespace kforge::ui
