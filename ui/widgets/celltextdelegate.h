#pragma once
// An item delegate for tables of records: one line of plain text per cell, drawn from a cache of
// laid-out text (QStaticText) instead of shaped anew on every paint. Qt's own delegate shapes each
// cell's text three times a paint (to size it, to elide it, to draw it); a table of a hundred
// thousand candidates that scrolls to each selection repaints hundreds of cells, and most of what
// they show (statuses, origins, islands, generations, units) repeats. Cells with an icon, a check
// box or more than one line are drawn by QStyledItemDelegate as before.

#include <QCache>
#include <QFont>
#include <QStaticText>
#include <QStyledItemDelegate>

namespace kforge::ui {

class CellTextDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit CellTextDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    // How many laid-out texts are kept (each a text at one width; the least recently drawn go first).
    static constexpr int kCachedTexts = 4096;

private:
    // The text as drawn in `room` pixels: whole where it fits, else cut with "…".
    const QStaticText& laidOut(const QString& text, const QFont& font, int room) const;

    mutable QCache<QString, QStaticText> m_texts{kCachedTexts};
    mutable QFont m_font; // the font the cached texts were laid out in
};

} // namespace kforge::ui
