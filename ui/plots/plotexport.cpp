#include "plotexport.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QStandardPaths>
#include <QSvgGenerator>
#include <qcustomplot.h>

#include <utility>

namespace kforge::ui {

namespace {

enum class Format { Png, Svg, Unknown };

Format formatOf(const QString& file) {
    const QString suffix = QFileInfo(file).suffix().toLower();
    if (suffix == QLatin1String("png"))
        return Format::Png;
    if (suffix == QLatin1String("svg"))
        return Format::Svg;
    return Format::Unknown;
}

spec::Error unknownFormat(const QString& file) {
    const QString suffix = QFileInfo(file).suffix();
    const QString what =
        suffix.isEmpty() ? QObject::tr("a file without suffix") : QStringLiteral("\".%1\"").arg(suffix);
    return spec::fail(QObject::tr("cannot export %1: %2 is not a known image format (use .png or .svg)")
                          .arg(QFileInfo(file).fileName(), what)
                          .toStdString());
}

spec::Status written(const QString& file) {
    const QFileInfo info(file);
    if (!info.exists() || info.size() == 0)
        return spec::fail(QObject::tr("could not write %1").arg(QDir::toNativeSeparators(file)).toStdString());
    return spec::success();
}

void exportFromMenu(QCustomPlot* plot, const QString& baseName, Format format) {
    const bool png = format == Format::Png;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    const QString proposed = QDir(dir).filePath(baseName + (png ? QStringLiteral(".png") : QStringLiteral(".svg")));
    const QString file =
        QFileDialog::getSaveFileName(plot, png ? QObject::tr("Export as PNG") : QObject::tr("Export as SVG"), proposed,
                                     png ? QObject::tr("PNG image (*.png)") : QObject::tr("SVG image (*.svg)"));
    if (file.isEmpty())
        return;
    if (auto done = exportPlot(plot, file); !done)
        QMessageBox::warning(plot, QObject::tr("Export failed"), QString::fromStdString(done.error()));
}

} // namespace

spec::Status exportPlot(QCustomPlot* plot, const QString& file, int width, int height) {
    switch (formatOf(file)) {
    case Format::Png:
        if (!plot->savePng(file, width, height))
            return spec::fail(QObject::tr("could not write %1").arg(QDir::toNativeSeparators(file)).toStdString());
        return written(file);
    case Format::Svg: {
        const int w = width > 0 ? width : plot->width();
        const int h = height > 0 ? height : plot->height();
        QSvgGenerator svg;
        svg.setFileName(file);
        svg.setSize(QSize(w, h));
        svg.setViewBox(QRect(0, 0, w, h));
        svg.setTitle(QFileInfo(file).completeBaseName());
        QCPPainter painter;
        if (!painter.begin(&svg))
            return spec::fail(QObject::tr("could not write %1").arg(QDir::toNativeSeparators(file)).toStdString());
        // As QCustomPlot's own savePdf: no pixmap caches and no pixel snapping in vector output.
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        plot->toPainter(&painter, w, h);
        painter.end();
        return written(file);
    }
    case Format::Unknown:
        break;
    }
    return unknownFormat(file);
}

spec::Status exportWidget(QWidget* widget, const QString& file) {
    switch (formatOf(file)) {
    case Format::Png:
        if (!widget->grab().save(file, "PNG"))
            return spec::fail(QObject::tr("could not write %1").arg(QDir::toNativeSeparators(file)).toStdString());
        return written(file);
    case Format::Svg: {
        QSvgGenerator svg;
        svg.setFileName(file);
        svg.setSize(widget->size());
        svg.setViewBox(widget->rect());
        svg.setTitle(QFileInfo(file).completeBaseName());
        QPainter painter;
        if (!painter.begin(&svg))
            return spec::fail(QObject::tr("could not write %1").arg(QDir::toNativeSeparators(file)).toStdString());
        widget->render(&painter);
        painter.end();
        return written(file);
    }
    case Format::Unknown:
        break;
    }
    return unknownFormat(file);
}

void addExportMenu(QCustomPlot* plot, const QString& baseName, std::function<void(QMenu*)> viewActions) {
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(plot, &QWidget::customContextMenuRequested, plot,
                     [plot, baseName, viewActions = std::move(viewActions)](const QPoint& pos) {
                         auto* menu = new QMenu(plot);
                         menu->setAttribute(Qt::WA_DeleteOnClose);
                         if (viewActions) {
                             viewActions(menu);
                             menu->addSeparator();
                         }
                         menu->addAction(QObject::tr("Export as PNG…"), plot,
                                         [plot, baseName] { exportFromMenu(plot, baseName, Format::Png); });
                         menu->addAction(QObject::tr("Export as SVG…"), plot,
                                         [plot, baseName] { exportFromMenu(plot, baseName, Format::Svg); });
                         menu->popup(plot->mapToGlobal(pos));
                     });
}

} // namespace kforge::ui
