#include "sidebysidediff.h"

#include "editorfactory.h"
#include "elidedlabel.h"
#include "util/textdiff.h"

#include <Qsci/qsciscintilla.h>

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

QWidget* pane(ElidedLabel* title, QsciScintilla* editor, QWidget* parent) {
    auto* widget = new QWidget(parent);
    auto* layout = new QVBoxLayout(widget);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    title->setContentsMargins(4, 2, 4, 2);
    QFont font = title->font();
    font.setBold(true);
    title->setFont(font);
    layout->addWidget(title);
    layout->addWidget(editor, 1);
    return widget;
}

} // namespace

SideBySideDiff::SideBySideDiff(QWidget* parent) : QWidget(parent) {
    m_left = makeEditor(this, spec::Dialect::Cuda, true);
    m_right = makeEditor(this, spec::Dialect::Cuda, true);
    m_leftTitle = new ElidedLabel(this);
    m_rightTitle = new ElidedLabel(this);
    m_summary = new QLabel(this);

    m_nextAction = new QAction(tr("Next Change"), this);
    m_nextAction->setShortcut(QKeySequence(Qt::Key_F8));
    m_nextAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_nextAction->setToolTip(tr("Next change (F8)"));
    connect(m_nextAction, &QAction::triggered, this, &SideBySideDiff::nextChange);
    m_previousAction = new QAction(tr("Previous Change"), this);
    m_previousAction->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F8));
    m_previousAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_previousAction->setToolTip(tr("Previous change (Shift+F8)"));
    connect(m_previousAction, &QAction::triggered, this, &SideBySideDiff::previousChange);
    addAction(m_nextAction);
    addAction(m_previousAction);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(4, 0, 4, 0);
    bar->addWidget(m_summary, 1);
    for (QAction* action : {m_previousAction, m_nextAction}) {
        auto* button = new QToolButton(this);
        button->setDefaultAction(action);
        button->setToolButtonStyle(Qt::ToolButtonTextOnly);
        button->setAutoRaise(true);
        bar->addWidget(button);
    }

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(pane(m_leftTitle, m_left, splitter));
    splitter->addWidget(pane(m_rightTitle, m_right, splitter));
    splitter->setChildrenCollapsible(false);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(bar);
    layout->addWidget(splitter, 1);

    // Scintilla moves its scroll bars with their signals blocked, so wheel, keyboard and
    // programmatic scrolling show only in its update notification.
    connect(m_left, &QsciScintillaBase::SCN_UPDATEUI, this, [this](int updated) { scrolled(m_left, updated); });
    connect(m_right, &QsciScintillaBase::SCN_UPDATEUI, this, [this](int updated) { scrolled(m_right, updated); });
    updateSummary();
}

void SideBySideDiff::setTexts(const QString& leftTitle, const QString& left, const QString& rightTitle,
                              const QString& right, spec::Dialect dialect, const QString& paramChanges) {
    m_paramChanges = paramChanges;
    m_leftTitle->setFullText(leftTitle, Qt::PlainText);
    m_rightTitle->setFullText(rightTitle, Qt::PlainText);
    setDialect(m_left, dialect);
    setDialect(m_right, dialect);
    clearMarks(m_left);
    clearMarks(m_right);
    setEditorText(m_left, left);
    setEditorText(m_right, right);

    m_leftToRight.clear();
    m_rightToLeft.clear();
    m_changes.clear();
    m_change = -1;
    m_added = 0;
    m_removed = 0;
    int leftLine = 0; // the next line on either side, 0-based
    int rightLine = 0;
    bool inChange = false;
    for (const util::LineChange& change : util::diffLines(left, right)) {
        const bool same = change.kind == util::LineChange::Kind::Same;
        if (!same && !inChange)
            m_changes.append(Change{leftLine, rightLine, false});
        inChange = !same;
        switch (change.kind) {
        case util::LineChange::Kind::Same:
            m_leftToRight.append(rightLine++);
            m_rightToLeft.append(leftLine++);
            break;
        case util::LineChange::Kind::Removed:
            markLine(m_left, change.beforeLine - 1, Marker::Removed);
            m_changes.last().removes = true;
            m_leftToRight.append(rightLine); // level with where the right side goes on
            ++leftLine;
            ++m_removed;
            break;
        case util::LineChange::Kind::Added:
            markLine(m_right, change.afterLine - 1, Marker::Added);
            m_rightToLeft.append(leftLine);
            ++rightLine;
            ++m_added;
            break;
        }
    }
    // Scintilla counts an empty line after a final newline; it sits beside the other's last.
    m_leftToRight.append(rightLine);
    m_rightToLeft.append(leftLine);
    m_leftExpected = m_rightExpected = -1;
    updateSummary();
}

void SideBySideDiff::clear() {
    setTexts(QString(), QString(), QString(), QString(), spec::Dialect::Cuda);
}

void SideBySideDiff::nextChange() {
    if (m_changes.isEmpty())
        return;
    goToChange((m_change + 1) % static_cast<int>(m_changes.size()));
}

void SideBySideDiff::previousChange() {
    if (m_changes.isEmpty())
        return;
    const int count = static_cast<int>(m_changes.size());
    goToChange(m_change <= 0 ? count - 1 : m_change - 1);
}

void SideBySideDiff::scrolled(QsciScintilla* from, int updated) {
    if (updated & QsciScintillaBase::SC_UPDATE_V_SCROLL) {
        int& expected = from == m_left ? m_leftExpected : m_rightExpected;
        const bool followed = from->firstVisibleLine() == expected;
        expected = -1;
        if (!followed)
            follow(from);
    }
    if (updated & QsciScintillaBase::SC_UPDATE_H_SCROLL) {
        QsciScintilla* to = from == m_left ? m_right : m_left;
        const long offset = from->SendScintilla(QsciScintillaBase::SCI_GETXOFFSET);
        if (to->SendScintilla(QsciScintillaBase::SCI_GETXOFFSET) != offset)
            to->SendScintilla(QsciScintillaBase::SCI_SETXOFFSET, offset);
    }
}

void SideBySideDiff::follow(QsciScintilla* from) {
    const bool left = from == m_left;
    const QList<int>& lineMap = left ? m_leftToRight : m_rightToLeft;
    if (lineMap.isEmpty())
        return;
    QsciScintilla* to = left ? m_right : m_left;
    const int line = lineMap.value(qBound(0, from->firstVisibleLine(), static_cast<int>(lineMap.size()) - 1));
    if (to->firstVisibleLine() == line)
        return;
    (left ? m_rightExpected : m_leftExpected) = line;
    to->setFirstVisibleLine(line);
}

void SideBySideDiff::goToChange(int index) {
    m_change = index;
    const Change& change = m_changes[index];
    m_left->setCursorPosition(change.left, 0);
    m_right->setCursorPosition(change.right, 0);
    // Scroll the side that has lines in the change, a few lines of context above it; the other follows.
    QsciScintilla* lead = change.removes ? m_left : m_right;
    const int line = change.removes ? change.left : change.right;
    const int context = static_cast<int>(lead->SendScintilla(QsciScintillaBase::SCI_LINESONSCREEN)) / 4;
    lead->setFirstVisibleLine(qMax(0, line - context));
    follow(lead);
    lead->setFocus();
    updateSummary();
}

QString SideBySideDiff::summary() const {
    return m_summary->text();
}

void SideBySideDiff::updateSummary() {
    const int count = static_cast<int>(m_changes.size());
    QString text;
    if (m_left->text().isEmpty() && m_right->text().isEmpty())
        text = QString();
    else if (count == 0 && !m_paramChanges.isEmpty())
        text = tr("the same source; parameters %1").arg(m_paramChanges);
    else if (count == 0)
        text = tr("identical");
    else
        text = tr("+%1 \u2212%2 lines").arg(m_added).arg(m_removed);
    if (count > 0)
        text += QStringLiteral("   ")
                + (m_change >= 0 ? tr("change %1 of %2").arg(m_change + 1).arg(count)
                   : count == 1  ? tr("1 change")
                                 : tr("%1 changes").arg(count));
    m_summary->setText(text);
    m_nextAction->setEnabled(count > 0);
    m_previousAction->setEnabled(count > 0);
}

} // namespace kforge::ui
