#include "panelstyle.h"

#include "recordtableview.h"
#include "theme.h"

#include <QApplication>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace kforge::ui {

int severityRank(const QString& severity) {
    if (severity == QLatin1String("error"))
        return 2;
    if (severity == QLatin1String("warning"))
        return 1;
    if (severity == QLatin1String("info"))
        return 0;
    return -1;
}

QIcon severityIcon(const QString& severity) {
    QStyle* style = QApplication::style();
    switch (severityRank(severity)) {
    case 2:
        return style->standardIcon(QStyle::SP_MessageBoxCritical);
    case 1:
        return style->standardIcon(QStyle::SP_MessageBoxWarning);
    case 0:
        return style->standardIcon(QStyle::SP_MessageBoxInformation);
    default:
        return {};
    }
}

QColor severityColor(const QString& severity) {
    return severityColor(severity, QGuiApplication::palette());
}

QColor severityColor(const QString& severity, const QPalette& palette) {
    // Mid-saturation tones on a light base, lighter ones on a dark base.
    switch (severityRank(severity)) {
    case 2:
        return theme::pick(palette, QColor(0xd3, 0x2f, 0x2f), QColor(0xff, 0x7b, 0x72));
    case 1:
        return theme::pick(palette, QColor(0xc7, 0x7c, 0x02), QColor(0xe3, 0xb3, 0x41));
    case 0:
        return theme::pick(palette, QColor(0x1e, 0x78, 0xc8), QColor(0x6c, 0xb6, 0xff));
    default:
        return {};
    }
}

QColor statusColor(const QString& status) {
    return statusColor(status, QGuiApplication::palette());
}

QColor statusColor(const QString& status, const QPalette& palette) {
    if (status == QLatin1String("ok"))
        return theme::pick(palette, QColor(0x2e, 0x8b, 0x3e), QColor(0x56, 0xd3, 0x64));
    if (status == QLatin1String("timeout") || status == QLatin1String("rejected")
        || status == QLatin1String("duplicate") || status == QLatin1String("unparsable"))
        return severityColor(QStringLiteral("warning"), palette);
    if (status.isEmpty())
        return {};
    return severityColor(QStringLiteral("error"), palette);
}

QString statusTitle(const QString& status) {
    QString title = status;
    return title.replace(u'_', u' ');
}

QString formatSpeedup(double speedup) {
    if (speedup <= 0.0)
        return {};
    return QStringLiteral("%1×").arg(speedup, 0, 'f', speedup < 10.0 ? 2 : 1);
}

QIcon passIcon() {
    return QApplication::style()->standardIcon(QStyle::SP_DialogApplyButton);
}

void setColumnWidths(QTableView* view, const QList<int>& chars) {
    const QFontMetrics metrics = view->fontMetrics();
    const int padding = metrics.averageCharWidth() * 2;
    QHeaderView* header = view->horizontalHeader();
    for (int column = 0; column < chars.size(); ++column) {
        if (chars[column] <= 0)
            continue;
        const int wanted = chars[column] * metrics.averageCharWidth() + padding;
        view->setColumnWidth(column, std::max(wanted, header->sectionSizeHint(column)));
    }
}

QFont codeFont() {
    return QFontDatabase::systemFont(QFontDatabase::FixedFont);
}

QPlainTextEdit* makeCodePane(const QString& placeholder) {
    auto* pane = new QPlainTextEdit;
    pane->setReadOnly(true);
    pane->setFont(codeFont());
    pane->setLineWrapMode(QPlainTextEdit::NoWrap);
    pane->setPlaceholderText(placeholder);
    // Read-only text still takes the keyboard so that it can be selected and copied.
    pane->setTextInteractionFlags(Qt::TextSelectableByKeyboard | Qt::TextSelectableByMouse);
    return pane;
}

QTableView* makeRecordTable(QAbstractItemModel* model, const QString& objectName) {
    auto* view = new RecordTableView;
    view->setObjectName(objectName);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setSortingEnabled(true);
    view->setWordWrap(false);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    view->horizontalHeader()->setStretchLastSection(true);
    return view;
}

QLabel* makeDetailTitle() {
    auto* title = new QLabel;
    title->setTextFormat(Qt::PlainText);
    title->setWordWrap(true);
    title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return title;
}

QSplitter* makeMasterDetail(QWidget* master, QWidget* title, QWidget* body) {
    auto* detail = new QWidget;
    auto* detailLayout = new QVBoxLayout(detail);
    detailLayout->setContentsMargins(0, 0, 0, 0);
    detailLayout->addWidget(title);
    detailLayout->addWidget(body, 1);

    // A few lines each at least: a short screen shrinks the halves (they scroll) rather than the
    // window growing taller than the screen.
    const int lines = master->fontMetrics().height();
    master->setMinimumHeight(3 * lines);
    body->setMinimumHeight(2 * lines);

    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(master);
    splitter->addWidget(detail);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);
    return splitter;
}

} // namespace kforge::ui
