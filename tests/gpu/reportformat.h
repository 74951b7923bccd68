#pragma once
// How the GPU checks and benchmarks write their reports: fixed-point figures and the UTC time that
// dates every absolute GPU figure.

#include <ctime>
#include <ios>
#include <sstream>
#include <string>

namespace kforge::gputest {

inline std::string fixed(double v, int digits = 2) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(digits);
    s << v;
    return s.str();
}

inline std::string utcNow() {
    const std::time_t t = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
    return buf;
}

} // namespace kforge::gputest
