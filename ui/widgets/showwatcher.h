#pragma once
// Work a view need not do while nobody can see it: a view in a dock tab in the background, or in a
// tab widget's hidden page, catches up when it comes to the front.

#include <QObject>

#include <functional>

class QDockWidget;
class QWidget;

namespace kforge::ui {

// Whether `widget` sits hidden in a shown window (a dock tab in the background, a hidden page):
// such a view need not redraw until it is shown. A window that is not shown counts as not hidden,
// so views that are built or grabbed off screen stay current.
bool hiddenInShownWindow(const QWidget* widget);

// Calls back, once per arm(), when a widget becomes visible: it is shown, or the dock tab holding it
// comes to the front.
class ShowWatcher : public QObject {
public:
    ShowWatcher(QWidget* widget, std::function<void()> shown);
    void arm();
    void disarm() { m_armed = false; }
    bool armed() const { return m_armed; }
    // Calls back now if armed (a view about to be exported or grabbed), then disarms.
    void flush() { fire(); }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void fire();

    QWidget* m_widget;
    std::function<void()> m_shown;
    QDockWidget* m_dock = nullptr;
    bool m_armed = false;
};

// Runs `update` now where `view` can be seen, else once when it is next shown; asked again while
// it waits, it still runs once. For a view that follows the selection from a background tab.
// `update` is kept from the first call: pass the same work each time.
void whenShown(QWidget* view, const std::function<void()>& update);
// Runs every update whenShown() keeps waiting under `root` (root included), shown or not: a view
// about to be exported or grabbed shows what it would show in front.
void flushWhenShown(QWidget* root);

} // namespace kforge::ui
