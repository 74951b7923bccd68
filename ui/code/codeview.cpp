#include "codeview.h"

#include "util/text.h"

#include "candidatedetails.h"
#include "candidateselection.h"
#include "diagnose/finding.h"
#include "editorfactory.h"
#include "elidedlabel.h"
#include "listingservice.h"
#include "listingview.h"
#include "model/candidate.h"
#include "rundata.h"
#include "sidebysidediff.h"
#include "theme.h"

#include <Qsci/qsciscintilla.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QMap>
#include <QStackedWidget>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

constexpr int kPlaceholderPage = 0;
constexpr int kContentPage = 1;

QStackedWidget* stackedPage(QWidget* content, QWidget* parent) {
    auto* page = new QStackedWidget(parent);
    auto* placeholder = new QLabel(page);
    placeholder->setAlignment(Qt::AlignCenter);
    placeholder->setWordWrap(true);
    placeholder->setTextFormat(Qt::PlainText);
    placeholder->setForegroundRole(QPalette::PlaceholderText);
    placeholder->setMargin(16);
    page->addWidget(placeholder);
    page->addWidget(content);
    return page;
}

QLabel* placeholderOf(const QStackedWidget* page) {
    return static_cast<QLabel*>(page->widget(kPlaceholderPage));
}

// One note per line, coloured by its most severe entry.
struct LineNotes {
    QStringList texts;
    Marker worst = Marker::Info;
};

void addNote(QMap<int, LineNotes>& notes, int line, Marker marker, const QString& text) {
    LineNotes& entry = notes[line];
    entry.texts << text;
    // Error, Warning and Info are declared from most to least severe.
    if (entry.texts.size() == 1 || static_cast<int>(marker) < static_cast<int>(entry.worst))
        entry.worst = marker;
}

using util::q;

} // namespace

CodeView::CodeView(RunData* data, CandidateDetails* details, CandidateSelection* selection, ListingService* listings,
                   QWidget* parent)
    : QWidget(parent), m_data(data), m_details(details), m_selection(selection), m_listings(listings) {
    m_dialect = dialect();

    // Source tab: a header line over the editor.
    auto* sourceContent = new QWidget(this);
    // One line that elides (the whole in its tooltip) rather than wrapping: a long label neither
    // widens the window nor, by changing height with each selection, lays the window out again.
    m_header = new ElidedLabel(sourceContent);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_header->setContentsMargins(4, 2, 4, 2);
    m_editButton = new QToolButton(sourceContent);
    m_editButton->setObjectName(QStringLiteral("editAsChild"));
    m_editButton->setText(tr("Edit as New Child…"));
    m_editButton->setToolTip(tr("Edit this kernel by hand and submit the result as a new candidate"));
    m_editButton->setAutoRaise(true);
    m_editor = makeEditor(sourceContent, m_dialect, true);
    auto* headerRow = new QHBoxLayout;
    headerRow->setContentsMargins(0, 0, 0, 0);
    headerRow->addWidget(m_header, 1);
    headerRow->addWidget(m_editButton);
    auto* sourceLayout = new QVBoxLayout(sourceContent);
    sourceLayout->setContentsMargins(0, 0, 0, 0);
    sourceLayout->setSpacing(2);
    sourceLayout->addLayout(headerRow);
    sourceLayout->addWidget(m_editor, 1);

    m_diff = new SideBySideDiff(this);
    m_compare = new SideBySideDiff(this);
    m_sourcePage = stackedPage(sourceContent, this);
    m_diffPage = stackedPage(m_diff, this);
    // The Compare tab: the two kernels' figures side by side above their code.
    auto* compareContent = new QWidget(this);
    m_compareMetrics = new QLabel(compareContent);
    m_compareMetrics->setObjectName(QStringLiteral("compareMetrics"));
    m_compareMetrics->setTextFormat(Qt::RichText);
    m_compareMetrics->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_compareMetrics->setContentsMargins(4, 2, 4, 2);
    m_compareMetrics->hide();
    auto* compareLayout = new QVBoxLayout(compareContent);
    compareLayout->setContentsMargins(0, 0, 0, 0);
    compareLayout->setSpacing(2);
    compareLayout->addWidget(m_compareMetrics);
    compareLayout->addWidget(m_compare, 1);
    // What to compare sits above the page, so that it stays while a listing is being made.
    auto* compareOuter = new QWidget(this);
    m_compareWhat = new QComboBox(compareOuter);
    m_compareWhat->setObjectName(QStringLiteral("compareWhat"));
    m_compareWhat->addItem(tr("Source"));
    m_compareWhat->addItem(tr("PTX"));
    m_compareWhat->addItem(tr("SASS"));
    m_compareWhat->setToolTip(tr("Compare the kernels' sources, or what the compiler made of them"));
    m_compareWhat->setVisible(m_listings != nullptr);
    m_comparePage = stackedPage(compareContent, compareOuter);
    auto* outerLayout = new QVBoxLayout(compareOuter);
    outerLayout->setContentsMargins(0, 0, 0, 0);
    outerLayout->setSpacing(0);
    auto* whatRow = new QHBoxLayout;
    whatRow->setContentsMargins(4, 2, 4, 0);
    whatRow->addWidget(m_compareWhat);
    whatRow->addStretch(1);
    outerLayout->addLayout(whatRow);
    outerLayout->addWidget(m_comparePage, 1);
    theme::onPaletteChange(m_compareMetrics, [this] { showCompareMetrics(); });

    // Tab order follows Mode.
    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_sourcePage, tr("Source"));
    m_tabs->addTab(m_diffPage, tr("Diff vs Parent"));
    m_tabs->addTab(compareOuter, tr("Compare"));
    if (m_listings) {
        m_listingView = new ListingView(data, details, selection, listings, this);
        m_tabs->addTab(m_listingView, tr("PTX / SASS"));
        connect(m_compareWhat, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
        connect(m_listings, &ListingService::changed, this, [this](qint64 candidate) {
            if (mode() == Mode::Compare && compareWhat() != CompareWhat::Source
                && (candidate == m_selection->compareLeft() || candidate == m_selection->compareRight())) {
                m_compareShown = {};
                refresh();
            }
        });
    }
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tabs);

    connect(m_tabs, &QTabWidget::currentChanged, this, [this] {
        refresh();
        emit modeChanged(mode());
    });
    connect(m_editButton, &QToolButton::clicked, this, [this] {
        const qint64 id = shownCandidate();
        if (const CandidateDetail* detail = id ? m_details->details(id) : nullptr)
            emit editRequested(id, detail->candidate.source, m_dialect);
    });
    connect(m_selection, &CandidateSelection::currentChanged, this, [this] {
        m_pendingLine = 0;
        refresh();
    });
    connect(m_selection, &CandidateSelection::compareRequested, this, [this] {
        setMode(Mode::Compare);
        refresh(); // also when Compare was already showing
    });
    connect(m_details, &CandidateDetails::loaded, this, &CodeView::candidateLoaded);
    connect(m_data, &RunData::cleared, this, [this] {
        forgetShown();
        refresh();
    });
    connect(m_data, &RunData::runChanged, this, [this] {
        if (dialect() != m_dialect) {
            m_dialect = dialect();
            forgetShown();
        }
        refresh(); // cheap when nothing changed; fills the tab when the run has just arrived
    });
    connect(m_data, &RunData::candidatesChanged, this, &CodeView::candidatesChanged);
    connect(m_data, &RunData::candidatesAdded, this, [this] {
        // The selected candidate's row may just have arrived: its header can say more now.
        if (mode() == Mode::Source && m_selection->current() && m_sourceShown.right == m_selection->current())
            updateHeader();
    });

    // The header's secondary colour is written into its markup.
    theme::onPaletteChange(this, [this] { updateHeader(); });

    refresh();
}

void CodeView::setMode(Mode mode) {
    m_tabs->setCurrentIndex(static_cast<int>(mode));
}

CodeView::Mode CodeView::mode() const {
    return static_cast<Mode>(m_tabs->currentIndex());
}

qint64 CodeView::shownCandidate() const {
    return m_sourcePage->currentIndex() == kContentPage ? m_sourceShown.right : 0;
}

QString CodeView::placeholderText() const {
    if (mode() == Mode::Listing)
        return m_listingView->placeholderText();
    const QStackedWidget* page = mode() == Mode::Source       ? m_sourcePage
                                 : mode() == Mode::DiffParent ? m_diffPage
                                                              : m_comparePage;
    return page->currentIndex() == kPlaceholderPage ? placeholderOf(page)->text() : QString();
}

void CodeView::setCompareWhat(CompareWhat what) {
    m_compareWhat->setCurrentIndex(m_listings ? static_cast<int>(what) : 0);
}

CodeView::CompareWhat CodeView::compareWhat() const {
    return static_cast<CompareWhat>(m_compareWhat->currentIndex());
}

void CodeView::showLine(int line) {
    setMode(Mode::Source);
    m_pendingLine = line;
    refresh();
    if (m_pendingLine > 0 && shownCandidate() == m_selection->current() && shownCandidate() != 0) {
        focusLine(m_editor, m_pendingLine - 1);
        m_pendingLine = 0;
    }
}

spec::Dialect CodeView::dialect() const {
    return m_data->run().backend;
}

void CodeView::refresh() {
    if (mode() == Mode::Listing) {
        m_listingView->refresh();
        return;
    }
    if (!m_data->hasRun()) {
        forgetShown();
        const Mode shown = mode();
        setPlaceholder(shown == Mode::Source       ? m_sourcePage
                       : shown == Mode::DiffParent ? m_diffPage
                                                   : m_comparePage,
                       tr("No run is open."));
        return;
    }
    switch (mode()) {
    case Mode::Source:
        refreshSource();
        break;
    case Mode::DiffParent:
        refreshDiff();
        break;
    case Mode::Compare:
        refreshCompare();
        break;
    case Mode::Listing:
        break;
    }
}

void CodeView::refreshSource() {
    const qint64 id = m_selection->current();
    if (id == 0) {
        m_sourceShown = {};
        setPlaceholder(m_sourcePage, tr("Select a kernel to see its source."));
        return;
    }
    if (m_sourceShown.shows(0, id))
        return;
    const CandidateDetail* detail = m_details->details(id);
    if (!detail) {
        if (m_sourceShown.right != id) // a reload keeps the old text until the new one is there
            setPlaceholder(m_sourcePage, loadingText({id}));
        return;
    }
    if (!detail->error.isEmpty()) {
        m_sourceShown = {0, id, false};
        setPlaceholder(m_sourcePage, tr("Cannot read kernel %1: %2").arg(id).arg(detail->error));
        return;
    }
    fillSource(*detail);
}

void CodeView::fillSource(const CandidateDetail& detail) {
    const bool reload = m_sourceShown.right == detail.id && m_sourcePage->currentIndex() == kContentPage;
    const int firstLine = m_editor->firstVisibleLine();
    m_sourceShown = {0, detail.id, false};

    setDialect(m_editor, m_dialect);
    clearMarks(m_editor);
    setEditorText(m_editor, detail.candidate.source);

    QMap<int, LineNotes> notes; // 0-based line -> notes
    if (const store::EvaluationRecord* evaluation = detail.searchEvaluation()) {
        for (const auto& value : evaluation->findings) {
            const diagnose::Finding finding = diagnose::Finding::fromJson(value.toObject());
            if (finding.line <= 0)
                continue;
            const Marker marker = severityMarker(finding.severity);
            markLine(m_editor, finding.line - 1, marker);
            QString text = finding.severity + QStringLiteral(": ") + finding.message;
            if (!finding.direction.isEmpty())
                text += QStringLiteral(" \u2192 ") + finding.direction;
            addNote(notes, finding.line - 1, marker, text);
        }
        for (const protocol::Diagnostic& diagnostic : evaluation->result.diagnostics) {
            if (diagnostic.role != "candidate" || diagnostic.line <= 0)
                continue;
            const Marker marker = severityMarker(q(diagnostic.severity));
            markLine(m_editor, diagnostic.line - 1, marker);
            markColumn(m_editor, diagnostic.line - 1, diagnostic.column > 0 ? diagnostic.column - 1 : -1);
            addNote(notes, diagnostic.line - 1, marker,
                    q(diagnostic.kind) + QLatin1Char(' ') + q(diagnostic.severity) + QStringLiteral(": ")
                        + q(diagnostic.message));
        }
    }
    for (auto it = notes.cbegin(); it != notes.cend(); ++it)
        annotateLine(m_editor, it.key(), it->texts.join(QLatin1Char('\n')), it->worst);

    updateHeader();
    showContent(m_sourcePage);
    if (m_pendingLine > 0) {
        focusLine(m_editor, m_pendingLine - 1);
        m_pendingLine = 0;
    } else if (reload) {
        m_editor->setFirstVisibleLine(firstLine);
    }
}

void CodeView::updateHeader() {
    const qint64 id = m_sourceShown.right;
    if (id == 0)
        return;
    const CandidateRow* row = m_data->candidate(id);
    const CandidateDetail* detail = row ? nullptr : m_details->details(id);
    const QString label = row ? row->label : detail ? detail->candidate.label : QString();
    const QString params = row ? row->params : detail ? model::formatParams(detail->candidate.params) : QString();
    const model::Origin origin = row ? row->origin : detail ? detail->candidate.origin : model::Origin::Seed;
    const auto strategy = row ? row->tunerStrategy : detail ? detail->candidate.tunerStrategy : std::nullopt;
    const QList<qint64> parents = row ? row->parents : detail ? detail->candidate.parents : QList<qint64>();

    QStringList facts;
    facts << originTitle(origin, strategy);
    if (row)
        facts << tr("generation %1, island %2").arg(row->generation).arg(row->island);
    if (!params.isEmpty())
        facts << params;
    if (!parents.isEmpty()) {
        QStringList ids;
        for (qint64 parent : parents)
            ids << QStringLiteral("#%1").arg(parent);
        facts << tr("from %1").arg(ids.join(QStringLiteral(", ")));
    }
    if (row && row->evaluated() && row->correct && row->speedup > 0)
        facts << (row->confirmed() ? tr("%1, %2\u00d7, confirmed %3\u00d7")
                                         .arg(row->status)
                                         .arg(row->speedup, 0, 'f', 2)
                                         .arg(row->confirmedSpeedup, 0, 'f', 2)
                                   : tr("%1, %2\u00d7 unconfirmed").arg(row->status).arg(row->speedup, 0, 'f', 2));
    else if (row && row->evaluated())
        facts << row->status;
    else if (row)
        facts << tr("not evaluated yet");
    if (row && row->findings > 0)
        facts << (row->findings == 1 ? tr("1 finding") : tr("%1 findings").arg(row->findings));

    m_header->setFullText(QStringLiteral("<b>#%1</b> %2 &nbsp;<span style=\"color:%3\">%4</span>")
                              .arg(id)
                              .arg(label.toHtmlEscaped(), theme::ink(palette(), 0.6).name(),
                                   facts.join(QStringLiteral(" \u00b7 ")).toHtmlEscaped()),
                          Qt::RichText);
}

void CodeView::refreshDiff() {
    const qint64 id = m_selection->current();
    if (id == 0) {
        m_diffShown = {};
        setPlaceholder(m_diffPage, tr("Select a kernel to compare it with its parent."));
        return;
    }
    // The parents are in the row; a candidate RunData has not seen yet has them in its details.
    const CandidateRow* row = m_data->candidate(id);
    const CandidateDetail* own = m_details->details(id);
    if (!row && !own) {
        m_diffShown = {};
        setPlaceholder(m_diffPage, loadingText({id}));
        return;
    }
    const QList<qint64> parents = row ? row->parents : own->candidate.parents;
    if (parents.isEmpty()) {
        m_diffShown = {0, id, false};
        setPlaceholder(m_diffPage, tr("No parent: kernel %1 is a seed.").arg(id));
        return;
    }
    const qint64 parent = parents.first();
    if (m_diffShown.shows(parent, id))
        return;
    const CandidateDetail* before = m_details->details(parent);
    own = m_details->details(id);
    QList<qint64> missing;
    if (!before)
        missing << parent;
    if (!own)
        missing << id;
    if (!missing.isEmpty()) {
        if (m_diffShown.left != parent || m_diffShown.right != id)
            setPlaceholder(m_diffPage, loadingText(missing));
        return;
    }
    m_diffShown = {parent, id, false};
    for (const CandidateDetail* detail : {before, own}) {
        if (!detail->error.isEmpty()) {
            setPlaceholder(m_diffPage, tr("Cannot read kernel %1: %2").arg(detail->id).arg(detail->error));
            return;
        }
    }
    QString beforeTitle = titleOf(parent, *before);
    if (parents.size() > 1)
        beforeTitle += tr("  (first of %1 parents)").arg(parents.size());
    m_diff->setTexts(beforeTitle, before->candidate.source, titleOf(id, *own), own->candidate.source, m_dialect,
                     model::formatParamChanges(before->candidate.params, own->candidate.params));
    showContent(m_diffPage);
}

void CodeView::refreshCompare() {
    const qint64 left = m_selection->compareLeft();
    const qint64 right = m_selection->compareRight();
    if (left == 0 || right == 0) {
        m_compareShown = {};
        setPlaceholder(m_comparePage,
                       tr("Choose two kernels to compare, e.g. from the candidate table or the lineage."));
        return;
    }
    if (m_compareShown.shows(left, right) && m_compareShownWhat == compareWhat())
        return;
    const CandidateDetail* before = m_details->details(left);
    const CandidateDetail* after = m_details->details(right);
    QList<qint64> missing;
    if (!before)
        missing << left;
    if (!after && right != left)
        missing << right;
    if (!before || !after) {
        if (m_compareShown.left != left || m_compareShown.right != right)
            setPlaceholder(m_comparePage, loadingText(missing));
        return;
    }
    m_compareShown = {left, right, false};
    for (const CandidateDetail* detail : {before, after}) {
        if (!detail->error.isEmpty()) {
            setPlaceholder(m_comparePage, tr("Cannot read kernel %1: %2").arg(detail->id).arg(detail->error));
            return;
        }
    }
    m_compareShownWhat = compareWhat();
    if (m_compareShownWhat == CompareWhat::Source)
        m_compare->setTexts(titleOf(left, *before), before->candidate.source, titleOf(right, *after),
                            after->candidate.source, m_dialect,
                            model::formatParamChanges(before->candidate.params, after->candidate.params));
    else if (!compareListings(*before, *after))
        return;
    m_metricRows = ui::compareMetrics(*before, *after);
    showCompareMetrics();
    showContent(m_comparePage);
}

bool CodeView::compareListings(const CandidateDetail& before, const CandidateDetail& after) {
    const bool sass = m_compareShownWhat == CompareWhat::Sass;
    const QString what = sass ? tr("SASS") : tr("PTX");
    if (m_dialect != spec::Dialect::Cuda) {
        m_compareShown = {};
        setPlaceholder(m_comparePage, tr("%1 is shown for CUDA runs only.").arg(what));
        return false;
    }
    // Both for the target the PTX / SASS tab shows for the left kernel.
    const int target = m_listingView->target();
    QStringList texts;
    for (const CandidateDetail* detail : {&before, &after}) {
        const ListingService::Entry* entry = m_listings->entry(detail->id, target);
        if (!entry) {
            m_listings->request(detail->id, target);
            entry = m_listings->entry(detail->id, target);
        }
        if (!entry || entry->state != ListingService::Entry::State::Done) {
            m_compareShown = {};
            setPlaceholder(m_comparePage, tr("Compiling kernel %1 for %2 with the CUDA worker…")
                                              .arg(detail->id)
                                              .arg(ListingService::targetName(target)));
            return false;
        }
        const protocol::DisassembleResult& listing = entry->listing;
        const std::string& text = sass ? listing.machineCode : listing.intermediate;
        if (!listing.ok || text.empty()) {
            const std::string& why = !listing.ok ? listing.message : listing.machineCodeNote;
            setPlaceholder(m_comparePage, tr("No %1 of kernel %2: %3").arg(what).arg(detail->id).arg(q(why)));
            return false;
        }
        texts << q(text);
    }
    const QString suffix = QStringLiteral("  (%1, %2)").arg(what, ListingService::targetName(target));
    m_compare->setTexts(titleOf(before.id, before) + suffix, texts[0], titleOf(after.id, after) + suffix, texts[1],
                        spec::Dialect::Cuda);
    return true;
}

void CodeView::showCompareMetrics() {
    const QString html = metricsTable(m_metricRows, m_compareShown.left, m_compareShown.right, palette());
    m_compareMetrics->setText(html);
    m_compareMetrics->setVisible(!html.isEmpty());
}

bool CodeView::showsCandidate(qint64 id) const {
    switch (mode()) {
    case Mode::Source:
        return id == m_selection->current();
    case Mode::DiffParent: {
        if (id == m_selection->current())
            return true;
        const CandidateRow* row = m_data->candidate(m_selection->current());
        return row && !row->parents.isEmpty() && row->parents.first() == id;
    }
    case Mode::Compare:
        return id == m_selection->compareLeft() || id == m_selection->compareRight();
    case Mode::Listing:
        return id == m_selection->current();
    }
    return false;
}

void CodeView::candidateLoaded(qint64 id) {
    // A new answer for a shown candidate (after an invalidate) replaces what the tab shows.
    for (Shown* shown : {&m_sourceShown, &m_diffShown, &m_compareShown})
        if (shown->left == id || shown->right == id)
            shown->stale = true;
    if (showsCandidate(id))
        refresh();
}

void CodeView::candidatesChanged(const QList<int>& rows) {
    const qint64 id = m_selection->current();
    const int row = id ? m_data->rowOf(id) : -1;
    if (row < 0 || !rows.contains(row) || m_sourceShown.right != id)
        return;
    updateHeader();
    // Evaluated since its details were read: read them again for the findings and diagnostics.
    const CandidateDetail* detail = m_details->details(id);
    if (detail && !detail->searchEvaluation() && m_data->candidateAt(row).evaluated()) {
        m_details->invalidate(id);
        m_details->details(id); // loaded() follows and refreshes
    }
}

void CodeView::forgetShown() {
    m_sourceShown = {};
    m_diffShown = {};
    m_compareShown = {};
}

void CodeView::setPlaceholder(QStackedWidget* page, const QString& text) {
    placeholderOf(page)->setText(text);
    page->setCurrentIndex(kPlaceholderPage);
}

void CodeView::showContent(QStackedWidget* page) {
    page->setCurrentIndex(kContentPage);
}

QString CodeView::titleOf(qint64 id, const CandidateDetail& detail) const {
    const CandidateRow* row = m_data->candidate(id);
    QString title = QStringLiteral("#%1 %2").arg(id).arg(row ? row->label : detail.candidate.label);
    const QString params = row ? row->params : model::formatParams(detail.candidate.params);
    if (!params.isEmpty())
        title += QStringLiteral("  [%1]").arg(params);
    if (row && row->correct && row->speedup > 0)
        title += QStringLiteral("  %1\u00d7").arg(row->speedup, 0, 'f', 2);
    return title;
}

QString CodeView::loadingText(const QList<qint64>& missing) const {
    if (missing.size() == 1)
        return tr("Loading kernel %1\u2026").arg(missing.first());
    return tr("Loading kernels %1 and %2\u2026").arg(missing.value(0)).arg(missing.value(1));
}

} // namespace kforge::ui
