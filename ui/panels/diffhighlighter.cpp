#include "diffhighlighter.h"

#include "theme.h"

#include <QGuiApplication>
#include <QTextCharFormat>
#include <QWidget>

namespace kforge::ui {

DiffHighlighter::DiffHighlighter(QTextDocument* document, QWidget* view) : QSyntaxHighlighter(document), m_view(view) {
    if (view)
        theme::onPaletteChange(view, [this] { rehighlight(); });
}

QPalette DiffHighlighter::palette() const {
    return m_view ? m_view->palette() : QGuiApplication::palette();
}

void DiffHighlighter::highlightBlock(const QString& text) {
    const QPalette palette = this->palette();
    QTextCharFormat format;
    if (text.startsWith(QLatin1String("+++")) || text.startsWith(QLatin1String("---"))) {
        format.setFontWeight(QFont::Bold);
    } else if (text.startsWith(QLatin1String("@@"))) {
        format.setForeground(theme::pick(palette, QColor(0x1e, 0x78, 0xc8), QColor(0x6c, 0xb6, 0xff)));
    } else if (text.startsWith(u'+')) {
        format.setForeground(theme::pick(palette, QColor(0x2e, 0x8b, 0x3e), QColor(0x7e, 0xe7, 0x87)));
        format.setBackground(QColor(0x2e, 0x8b, 0x3e, 0x22)); // translucent: works on light and dark bases
    } else if (text.startsWith(u'-')) {
        format.setForeground(theme::pick(palette, QColor(0xd3, 0x2f, 0x2f), QColor(0xff, 0x7b, 0x72)));
        format.setBackground(QColor(0xd3, 0x2f, 0x2f, 0x22));
    } else {
        return;
    }
    setFormat(0, static_cast<int>(text.size()), format);
}

} // namespace kforge::ui
