#include "timeformat.h"

#include <cmath>

namespace kforge::ui {

namespace {

// Four significant figures of a value in [1, 1000): the decimals, with rounding's carry counted
// (9.9996 is "10.00", not "10.000").
QString fourFigures(double value, const char* unit) {
    const int decimals = value < 9.9995 ? 3 : value < 99.995 ? 2 : 1;
    return QStringLiteral("%1 %2").arg(value, 0, 'f', decimals).arg(QString::fromUtf8(unit));
}

} // namespace

QString formatKernelTime(double microseconds) {
    if (!(microseconds > 0.0) || !std::isfinite(microseconds))
        return {};
    // Each unit up to where its rounded figure would read 1000: 999.96 µs is "1.000 ms".
    if (microseconds < 0.9995)
        return QStringLiteral("%1 ns").arg(std::lround(microseconds * 1e3)); // a timer resolves no finer
    if (microseconds < 999.95)
        return fourFigures(microseconds, "µs");
    if (microseconds < 999.95e3)
        return fourFigures(microseconds / 1e3, "ms");
    return fourFigures(microseconds / 1e6, "s");
}

} // namespace kforge::ui
