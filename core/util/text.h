#pragma once
// The one place text from the Qt-free layers (the wire layer's error messages, names, logs) turns
// into QString: it is UTF-8 everywhere below Qt.

#include <QString>

#include <string>
#include <string_view>

namespace kforge::util {

inline QString q(const std::string& text) {
    return QString::fromStdString(text);
}

inline QString q(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

} // namespace kforge::util
