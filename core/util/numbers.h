#pragma once
// Numbers read from JSON (settings, server answers, stored runs) are doubles; an integer setting
// takes one only when it is whole and fits. Casting 1e300, or 2.5e9 into an int, is undefined
// behaviour in C++, not a large number, so every such conversion goes through here.

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

namespace kforge::util {

// `d` as a T when it is a whole number T can hold; nothing otherwise (fractions, NaN, infinities
// and values out of T's range).
template <typename T> std::optional<T> wholeNumber(double d) {
    static_assert(std::is_integral_v<T>);
    if (!std::isfinite(d) || d != std::trunc(d))
        return std::nullopt;
    // T's limits as doubles: the lowest is a power of two (or 0) and exact; so is max + 1 (2^digits),
    // where max itself may round up (2^63 - 1 becomes 2^63).
    const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    const double pastMax = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (d < lowest || d >= pastMax)
        return std::nullopt;
    return static_cast<T>(d);
}

// `d` as a setting of type T: as it is for a floating-point T; for an integer T only when whole and
// in range (wholeNumber).
template <typename T> std::optional<T> numberAs(double d) {
    if constexpr (std::is_integral_v<T>)
        return wholeNumber<T>(d);
    else
        return static_cast<T>(d);
}

} // namespace kforge::util
