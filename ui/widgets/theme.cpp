#include "theme.h"

#include <QApplication>
#include <QEvent>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QWidget>

namespace kforge::ui::theme {

namespace {

const QString kSettingsKey = QStringLiteral("appearance/theme");
const QString kFusion = QStringLiteral("Fusion");

struct State {
    bool captured = false;
    QString platformStyle; // the style the platform chose, given back by System
    Choice applied = Choice::System;
};

State& state() {
    static State s;
    return s;
}

class PaletteFilter : public QObject {
public:
    PaletteFilter(QWidget* widget, std::function<void()> restyle)
        : QObject(widget), m_widget(widget), m_restyle(std::move(restyle)) {
        widget->installEventFilter(this);
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        // PaletteChange arrives once the widget has resolved its new palette (an application
        // palette change reaches every widget this way), so palette() already holds the new one.
        if (watched == m_widget && event->type() == QEvent::PaletteChange)
            m_restyle();
        return QObject::eventFilter(watched, event);
    }

private:
    QWidget* m_widget;
    std::function<void()> m_restyle;
};

} // namespace

QString choiceName(Choice choice) {
    switch (choice) {
    case Choice::System:
        return QStringLiteral("system");
    case Choice::Light:
        return QStringLiteral("light");
    case Choice::Dark:
        return QStringLiteral("dark");
    }
    return {};
}

std::optional<Choice> choiceFromName(const QString& name) {
    for (Choice choice : {Choice::System, Choice::Light, Choice::Dark})
        if (name.compare(choiceName(choice), Qt::CaseInsensitive) == 0)
            return choice;
    return std::nullopt;
}

Choice savedChoice() {
    return choiceFromName(QSettings().value(kSettingsKey).toString()).value_or(Choice::System);
}

void saveChoice(Choice choice) {
    QSettings().setValue(kSettingsKey, choiceName(choice));
}

void apply(Choice choice) {
    State& s = state();
    if (!s.captured) {
        s.platformStyle = QApplication::style()->name();
        s.captured = true;
    }
    s.applied = choice;
    if (choice == Choice::System) {
        if (QApplication::style()->name().compare(s.platformStyle, Qt::CaseInsensitive) != 0)
            QApplication::setStyle(s.platformStyle);
        // A palette with no roles of its own resets the application's to the platform theme's.
        QApplication::setPalette(QPalette());
        return;
    }
    if (QApplication::style()->name().compare(kFusion, Qt::CaseInsensitive) != 0)
        QApplication::setStyle(kFusion);
    QApplication::setPalette(choice == Choice::Dark ? darkPalette() : lightPalette());
}

Choice applied() {
    return state().applied;
}

QPalette darkPalette() {
    const QColor window(0x2d, 0x2f, 0x33);
    const QColor base(0x1f, 0x21, 0x24);
    const QColor text(0xe3, 0xe5, 0xe8);
    const QColor disabled(0x7d, 0x80, 0x86);
    const QColor highlight(0x3d, 0x7e, 0xd6);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
    p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x42));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8f, 0x94, 0x9b));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x38, 0x3c));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x53));
    p.setColor(QPalette::Midlight, QColor(0x3e, 0x41, 0x46));
    p.setColor(QPalette::Mid, QColor(0x26, 0x28, 0x2b));
    p.setColor(QPalette::Dark, QColor(0x1a, 0x1b, 0x1e));
    p.setColor(QPalette::Shadow, QColor(0x0b, 0x0c, 0x0d));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xa8, 0xf0));
    p.setColor(QPalette::LinkVisited, QColor(0xb0, 0x8c, 0xf0));
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4d, 0x53));
    p.setColor(QPalette::Disabled, QPalette::Base, window);
    return p;
}

QPalette lightPalette() {
    QStyle* fusion = QStyleFactory::create(kFusion);
    QPalette p = fusion ? fusion->standardPalette() : QPalette(Qt::white);
    delete fusion;
    return p;
}

bool isDark(const QPalette& palette) {
    return palette.color(QPalette::WindowText).lightnessF() > palette.color(QPalette::Window).lightnessF();
}

QColor pick(const QPalette& palette, const QColor& light, const QColor& dark) {
    return isDark(palette) ? dark : light;
}

QColor ink(const QPalette& palette, double amount) {
    const QColor from = palette.color(QPalette::Base);
    const QColor to = palette.color(QPalette::Text);
    const auto mix = [amount](float a, float b) { return a + (b - a) * static_cast<float>(amount); };
    return QColor::fromRgbF(mix(from.redF(), to.redF()), mix(from.greenF(), to.greenF()),
                            mix(from.blueF(), to.blueF()));
}

void onPaletteChange(QWidget* widget, std::function<void()> restyle) {
    new PaletteFilter(widget, std::move(restyle));
}

} // namespace kforge::ui::theme
