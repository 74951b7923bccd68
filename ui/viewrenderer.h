#pragma once
// Renders every view of a stored run to PNG files, so a run can be reviewed without opening the
// workbench (and on machines without a display, under the offscreen platform): the whole window,
// each docked view at a readable size, and the code view as source, diff with the parent and a
// side-by-side comparison with the baseline. `kforge render-views` is its command line.

#include "expected.h"

#include <QSize>
#include <QString>
#include <QStringList>

namespace kforge::ui {

struct RenderOptions {
    QString storePath;
    qint64 run = 0;       // 0: the newest run in the store
    qint64 candidate = 0; // the candidate the views show; 0: the run's best (or its first)
    QString outDir;
    QSize windowSize{1700, 1050};
    QSize viewSize{1200, 800};
    QString experiencePath; // the experience library to show; empty: the user's
    int timeoutSeconds = 300;
};

// Needs a QApplication. Returns the files written.
spec::Expected<QStringList> renderViews(const RenderOptions& options);

} // namespace kforge::ui
