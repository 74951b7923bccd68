#pragma once
// The workbench's colours follow the application palette, whatever the platform theme gives:
// views derive their colours from palette roles (Base, Text, Window, Highlight...) or take one of a
// light/dark pair by the palette's lightness, and restyle when the palette changes at run time.
// For platforms whose theme offers no dark palette, the user can choose Light or Dark (Fusion with
// a palette of its own) instead of System; the choice is kept in the application's settings.

#include <QColor>
#include <QPalette>
#include <QString>

#include <functional>
#include <optional>

class QWidget;

namespace kforge::ui::theme {

enum class Choice { System, Light, Dark };

QString choiceName(Choice choice); // "system", "light", "dark": settings and the command line
std::optional<Choice> choiceFromName(const QString& name);

// The saved choice (System when none was saved, or an unknown one was).
Choice savedChoice();
void saveChoice(Choice choice);
// Applies a choice to the running QApplication: System gives the platform's own style and palette
// back; Light and Dark use the Fusion style with its light palette or darkPalette(). Qt posts the
// change to the open windows: they restyle once the event loop delivers it.
void apply(Choice choice);
// The choice apply() was last given (System before any call).
Choice applied();

QPalette darkPalette();
QPalette lightPalette();

// Whether `palette` shows light text on a dark window.
bool isDark(const QPalette& palette);
// `light` under a light palette, `dark` under a dark one.
QColor pick(const QPalette& palette, const QColor& light, const QColor& dark);
// The palette's Base blended toward its Text: 0 gives the background, 1 the text colour. Greys for
// grids, separators and secondary text that keep their contrast on either palette.
QColor ink(const QPalette& palette, double amount);

// Calls `restyle` whenever `widget`'s palette changes (the application's palette or the theme
// changed, or the widget was given its own), after the widget has taken the new palette.
void onPaletteChange(QWidget* widget, std::function<void()> restyle);

} // namespace kforge::ui::theme
