#pragma once
// Arithmetic expressions over named sizes and parameters ("cdiv(N, BLOCK)", "2 * M * N * 4"),
// evaluated with muparser. Errors quote the expression and say what is wrong.

#include "expected.h"

#include <cstdint>
#include <map>
#include <string>

namespace kforge::spec {

using Variables = std::map<std::string, double>;

// Longer or deeper expressions are rejected before they are parsed.
constexpr std::size_t kMaxExpressionChars = 1024;
constexpr int kMaxExpressionDepth = 32;

class Expression {
public:
    // Evaluates `text` with the given variables. Unknown names are an error that lists the known
    // ones.
    static Expected<double> evaluate(const std::string& text, const Variables& vars);
    // As evaluate(), but the result must be a whole number (shapes, launch sizes, counts).
    static Expected<std::int64_t> evaluateInteger(const std::string& text, const Variables& vars);
    // Checks the syntax and names without needing values (all variables taken as 1).
    static Status check(const std::string& text, const Variables& vars);
};

} // namespace kforge::spec
