#include "diffhighlighter.h"

#include <QTextCharFormat>

namespace kforge::ui {

DiffHighlighter::DiffHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {}

void DiffHighlighter::highlightBlock(const QString& text) {
    QTextCharFormat format;
    if (text.startsWith(QLatin1String("+++")) || text.startsWith(QLatin1String("---"))) {
        format.setFontWeight(QFont::Bold);
    } else if (text.startsWith(QLatin1String("@@"))) {
        format.setForeground(QColor(0x1e, 0x78, 0xc8));
    } else if (text.startsWith(u'+')) {
        format.setForeground(QColor(0x2e, 0x8b, 0x3e));
        format.setBackground(QColor(0x2e, 0x8b, 0x3e, 0x22)); // translucent: works on light and dark bases
    } else if (text.startsWith(u'-')) {
        format.setForeground(QColor(0xd3, 0x2f, 0x2f));
        format.setBackground(QColor(0xd3, 0x2f, 0x2f, 0x22));
    } else {
        return;
    }
    setFormat(0, static_cast<int>(text.size()), format);
}

} // namespace kforge::ui
