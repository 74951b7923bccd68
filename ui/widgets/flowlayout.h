#pragma once
// A layout that places its items left to right at their preferred widths and starts a new line
// when the next one does not fit, like words in a paragraph: a tool bar of choosers and a summary
// sits on one line in a wide view and wraps, item by item, in a narrow dock instead of cutting
// the items' texts. Items keep their preferred width; one wider than the whole line gets the
// line. It reports its height for a width, so a box layout above it gives it the lines it needs.

#include <QLayout>
#include <QList>

namespace kforge::ui {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget* parent = nullptr);
    ~FlowLayout() override;

    void addItem(QLayoutItem* item) override;
    int count() const override;
    QLayoutItem* itemAt(int index) const override;
    QLayoutItem* takeAt(int index) override;

    Qt::Orientations expandingDirections() const override;
    bool hasHeightForWidth() const override;
    int heightForWidth(int width) const override;
    QSize minimumSize() const override;
    QSize sizeHint() const override;
    void setGeometry(const QRect& rect) override;

    // Lines the items took at the last setGeometry(): 1 when they all fit on one.
    int lineCount() const { return m_lines; }

private:
    // Lays the visible items out in `rect` (or only measures, with apply false); returns the
    // height used, margins included, and the number of lines through `lines`.
    int arrange(const QRect& rect, bool apply, int* lines) const;

    QList<QLayoutItem*> m_items;
    int m_lines = 0;
};

} // namespace kforge::ui
