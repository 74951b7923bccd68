#pragma once
// Saving plots and views as images for reports: PNG or SVG, chosen by the file's suffix, and a
// context menu that offers it on any plot.

#include "expected.h"

#include <QString>

#include <functional>

class QCustomPlot;
class QMenu;
class QWidget;

namespace kforge::ui {

// Writes `plot` to `file` (.png or .svg); width and height 0 keep the plot's on-screen size.
spec::Status exportPlot(QCustomPlot* plot, const QString& file, int width = 0, int height = 0);
// Writes any widget as it looks now (.png through grab(), .svg through render()).
spec::Status exportWidget(QWidget* widget, const QString& file);
// Adds "Export as PNG…" and "Export as SVG…" to the plot's context menu; `baseName` is the file
// name the dialog proposes, without suffix. `viewActions` adds the view's own actions above them
// each time the menu opens (Reset Zoom, say).
void addExportMenu(QCustomPlot* plot, const QString& baseName, std::function<void(QMenu*)> viewActions = {});

} // namespace kforge::ui
