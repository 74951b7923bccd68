#include "elidedlabel.h"

#include <QResizeEvent>
#include <QTextDocumentFragment>

namespace kforge::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ElidedLabel::setFullText(const QString& text, Qt::TextFormat format) {
    if (text == m_text && format == m_format && !m_natural.isEmpty())
        return;
    m_text = text;
    m_format = format;
    const bool rich = format == Qt::RichText || (format == Qt::AutoText && Qt::mightBeRichText(text));
    m_plain = rich ? QTextDocumentFragment::fromHtml(text).toPlainText() : text;
    setTextFormat(format);
    QLabel::setText(text);
    m_natural = QLabel::sizeHint();
    m_elided = false;
    fit();
    updateGeometry();
}

void ElidedLabel::setHint(const QString& hint) {
    m_hint = hint;
    fit();
}

QSize ElidedLabel::sizeHint() const {
    return m_natural.isEmpty() ? QLabel::sizeHint() : m_natural;
}

QSize ElidedLabel::minimumSizeHint() const {
    // Room for a few letters and the ellipsis; the height of one line.
    const QMargins m = contentsMargins();
    const int width = m_text.isEmpty() ? 0 : fontMetrics().horizontalAdvance(QStringLiteral("Mmmm…"));
    return QSize(width + m.left() + m.right() + 2 * margin(), sizeHint().height());
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    fit();
}

void ElidedLabel::changeEvent(QEvent* event) {
    QLabel::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
        const QString text = m_text;
        m_natural = {};
        setFullText(text, m_format); // measured again in the new font
    }
}

void ElidedLabel::fit() {
    const bool cut = !m_text.isEmpty() && width() < m_natural.width();
    if (cut) {
        const int room = contentsRect().width() - 2 * margin();
        setTextFormat(Qt::PlainText);
        QLabel::setText(fontMetrics().elidedText(m_plain, Qt::ElideRight, std::max(room, 0)));
    } else if (m_elided) {
        setTextFormat(m_format);
        QLabel::setText(m_text);
    }
    m_elided = cut;
    setToolTip(cut ? (m_hint.isEmpty() ? m_plain : m_plain + QStringLiteral("\n\n") + m_hint) : m_hint);
}

} // namespace kforge::ui
