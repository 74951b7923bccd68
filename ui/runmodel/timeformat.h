#pragma once
// Kernel times for reading, not for parsing: four significant figures in the unit that suits the
// time (ns, µs, ms, s), so a column of them neither overflows nor hides a difference the timing can
// resolve. The exact figure goes in tooltips and exports (microseconds, as the store keeps it).

#include <QString>

namespace kforge::ui {

// "850 ns", "21.60 µs", "451.5 µs", "11.27 ms", "103.9 ms", "1.234 s"; empty for a time that is
// not positive (never measured).
QString formatKernelTime(double microseconds);

} // namespace kforge::ui
