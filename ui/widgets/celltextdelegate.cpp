#include "celltextdelegate.h"

#include <QApplication>
#include <QPainter>
#include <QStyle>

namespace kforge::ui {

CellTextDelegate::CellTextDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

const QStaticText& CellTextDelegate::laidOut(const QString& text, const QFont& font, int room) const {
    if (font != m_font) {
        m_texts.clear();
        m_font = font;
    }
    // The width is part of the key only for a text that does not fit: one that does is drawn the
    // same in any column wide enough.
    if (const QStaticText* whole = m_texts.object(text); whole && whole->size().width() <= room)
        return *whole;
    const QString key = text + QChar(0x1f) + QString::number(room);
    if (const QStaticText* cut = m_texts.object(key))
        return *cut;
    auto* laid = new QStaticText(text);
    laid->setTextFormat(Qt::PlainText);
    laid->prepare(QTransform(), font);
    if (laid->size().width() <= room) {
        m_texts.insert(text, laid);
        return *laid;
    }
    laid->setText(QFontMetrics(font).elidedText(text, Qt::ElideRight, room));
    laid->prepare(QTransform(), font);
    m_texts.insert(key, laid);
    return *laid;
}

void CellTextDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    using Feature = QStyleOptionViewItem::ViewItemFeature;
    if ((opt.features & (Feature::HasCheckIndicator | Feature::HasDecoration)) || opt.text.contains(QChar::LineFeed)
        || opt.textElideMode != Qt::ElideRight || (opt.displayAlignment & Qt::AlignJustify)) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    const QWidget* widget = opt.widget;
    const QStyle* style = widget ? widget->style() : QApplication::style();
    const QString text = opt.text;
    opt.text.clear();
    // Background, selection and focus as the style draws them; then the text where it would.
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);
    if (text.isEmpty())
        return;
    const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
    const QRect area = style->subElementRect(QStyle::SE_ItemViewItemText, &opt, widget).adjusted(margin, 0, -margin, 0);
    if (area.width() <= 0)
        return;
    const QStaticText& laid = laidOut(text, opt.font, area.width());
    const QSizeF size = laid.size();
    const Qt::Alignment align = QStyle::visualAlignment(opt.direction, opt.displayAlignment);
    qreal x = area.left();
    if (align & Qt::AlignRight)
        x = area.right() + 1 - size.width();
    else if (align & Qt::AlignHCenter)
        x = area.left() + (area.width() - size.width()) / 2;
    qreal y = area.top() + (area.height() - size.height()) / 2;
    if (align & Qt::AlignTop)
        y = area.top();
    else if (align & Qt::AlignBottom)
        y = area.bottom() + 1 - size.height();

    const QPalette::ColorGroup group = !(opt.state & QStyle::State_Enabled)  ? QPalette::Disabled
                                       : !(opt.state & QStyle::State_Active) ? QPalette::Inactive
                                                                             : QPalette::Normal;
    painter->save();
    painter->setFont(opt.font);
    painter->setPen(
        opt.palette.color(group, (opt.state & QStyle::State_Selected) ? QPalette::HighlightedText : QPalette::Text));
    painter->setClipRect(area);
    painter->drawStaticText(QPointF(x, y), laid);
    painter->restore();
}

} // namespace kforge::ui
