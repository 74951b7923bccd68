#pragma once
// The application's palette for a scope: the platform's (the offscreen one, light) again after it.
// Qt posts the change to every window, which hands it down to its widgets: delivered here.

#include <QApplication>
#include <QPalette>

namespace kforgetest {

class AppliedPalette {
public:
    explicit AppliedPalette(const QPalette& palette) {
        QApplication::setPalette(palette);
        QCoreApplication::processEvents();
    }
    ~AppliedPalette() {
        QApplication::setPalette(QPalette());
        QCoreApplication::processEvents();
    }
    AppliedPalette(const AppliedPalette&) = delete;
    AppliedPalette& operator=(const AppliedPalette&) = delete;
};

} // namespace kforgetest
