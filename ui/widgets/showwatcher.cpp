#include "showwatcher.h"

#include <QDockWidget>
#include <QEvent>
#include <QWidget>

namespace kforge::ui {

bool hiddenInShownWindow(const QWidget* widget) {
    if (!widget->window()->isVisible())
        return false;
    if (!widget->isVisible())
        return true;
    // QMainWindow moves dock tabs in the background off-screen rather than hiding them: what is
    // left of the widget once every parent has clipped it. (visibleRegion() cannot tell: it leaves
    // out what children cover, so a view filled by its plot would always count as hidden.)
    QRect shown = widget->rect();
    for (const QWidget* w = widget; !w->isWindow(); w = w->parentWidget()) {
        shown.translate(w->pos());
        shown &= w->parentWidget()->rect();
        if (shown.isEmpty())
            return true;
    }
    return false;
}

ShowWatcher::ShowWatcher(QWidget* widget, std::function<void()> shown)
    : QObject(widget), m_widget(widget), m_shown(std::move(shown)) {
    widget->installEventFilter(this);
}

void ShowWatcher::arm() {
    m_armed = true;
    if (m_dock)
        return;
    for (QWidget* w = m_widget->parentWidget(); w && !m_dock; w = w->parentWidget())
        m_dock = qobject_cast<QDockWidget*>(w);
    if (m_dock)
        connect(m_dock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
            if (visible)
                fire();
        });
}

void ShowWatcher::fire() {
    if (!m_armed)
        return;
    m_armed = false;
    m_shown();
}

bool ShowWatcher::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_widget && event->type() == QEvent::Show)
        fire();
    return QObject::eventFilter(watched, event);
}

void whenShown(QWidget* view, const std::function<void()>& update) {
    auto* watcher = view->findChild<ShowWatcher*>(QStringLiteral("whenShown"), Qt::FindDirectChildrenOnly);
    if (!hiddenInShownWindow(view)) {
        if (watcher)
            watcher->disarm();
        update();
        return;
    }
    if (!watcher) {
        watcher = new ShowWatcher(view, update);
        watcher->setObjectName(QStringLiteral("whenShown"));
    }
    watcher->arm();
}

void flushWhenShown(QWidget* root) {
    const QList<QObject*> watchers = root->findChildren<QObject*>(QStringLiteral("whenShown"));
    for (QObject* object : watchers)
        if (auto* watcher = dynamic_cast<ShowWatcher*>(object))
            watcher->flush();
}

} // namespace kforge::ui
