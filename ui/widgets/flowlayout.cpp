#include "flowlayout.h"

#include <algorithm>

namespace kforge::ui {

FlowLayout::FlowLayout(QWidget* parent) : QLayout(parent) {}

FlowLayout::~FlowLayout() {
    while (QLayoutItem* item = takeAt(0))
        delete item;
}

void FlowLayout::addItem(QLayoutItem* item) {
    m_items.append(item);
    invalidate();
}

int FlowLayout::count() const {
    return static_cast<int>(m_items.size());
}

QLayoutItem* FlowLayout::itemAt(int index) const {
    return index >= 0 && index < m_items.size() ? m_items.at(index) : nullptr;
}

QLayoutItem* FlowLayout::takeAt(int index) {
    if (index < 0 || index >= m_items.size())
        return nullptr;
    QLayoutItem* item = m_items.takeAt(index);
    invalidate();
    return item;
}

Qt::Orientations FlowLayout::expandingDirections() const {
    return {};
}

bool FlowLayout::hasHeightForWidth() const {
    return true;
}

int FlowLayout::heightForWidth(int width) const {
    return arrange(QRect(0, 0, width, 0), false, nullptr);
}

QSize FlowLayout::minimumSize() const {
    // One item a line: as wide as the widest item can shrink to.
    QSize size;
    for (const QLayoutItem* item : m_items)
        if (!item->isEmpty())
            size = size.expandedTo(item->minimumSize());
    const QMargins m = contentsMargins();
    return size + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize FlowLayout::sizeHint() const {
    // Everything on one line.
    int width = 0, height = 0, visible = 0;
    for (const QLayoutItem* item : m_items) {
        if (item->isEmpty())
            continue;
        const QSize hint = item->sizeHint();
        width += hint.width();
        height = std::max(height, hint.height());
        ++visible;
    }
    const QMargins m = contentsMargins();
    return {width + std::max(0, visible - 1) * std::max(0, spacing()) + m.left() + m.right(),
            height + m.top() + m.bottom()};
}

void FlowLayout::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    arrange(rect, true, &m_lines);
}

int FlowLayout::arrange(const QRect& rect, bool apply, int* lines) const {
    const QRect area = rect.marginsRemoved(contentsMargins());
    const int gap = std::max(0, spacing());
    const int available = std::max(1, area.width());
    int y = area.top(), lineCount = 0;
    // One line at a time: which items fit, then each placed at the line's height, centred on it.
    for (qsizetype first = 0; first < m_items.size();) {
        int used = 0, height = 0;
        qsizetype end = first;
        for (; end < m_items.size(); ++end) {
            const QLayoutItem* item = m_items.at(end);
            if (item->isEmpty())
                continue;
            const int width = std::min(item->sizeHint().width(), available);
            const int needed = used == 0 ? width : used + gap + width;
            if (used > 0 && needed > available)
                break;
            used = needed;
            height = std::max(height, item->sizeHint().height());
        }
        if (used > 0) {
            if (apply) {
                int x = area.left();
                for (qsizetype i = first; i < end; ++i) {
                    QLayoutItem* item = m_items.at(i);
                    if (item->isEmpty())
                        continue;
                    const QSize hint = item->sizeHint();
                    const int width = std::min(hint.width(), available);
                    const int itemHeight = std::min(hint.height(), height);
                    item->setGeometry(QRect(x, y + (height - itemHeight) / 2, width, itemHeight));
                    x += width + gap;
                }
            }
            y += height + gap;
            ++lineCount;
        }
        first = end;
    }
    if (lines)
        *lines = lineCount;
    const int contentHeight = lineCount > 0 ? y - gap - area.top() : 0;
    const QMargins m = contentsMargins();
    return contentHeight + m.top() + m.bottom();
}

} // namespace kforge::ui
