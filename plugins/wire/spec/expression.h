#pragma once
// Arithmetic expressions over named sizes and parameters ("cdiv(N, BLOCK)", "2 * M * N * 4"),
// evaluated with muparser. Errors quote the expression and say what is wrong.

#include "expected.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

// Conditions over one fixed set of names, parsed once and then evaluated many times: the tuner
// checks a kernel file's requirements on every configuration it considers. Not for use from two
// threads at once.
class Conditions {
public:
    Conditions();
    ~Conditions();
    Conditions(Conditions&&) noexcept;
    Conditions& operator=(Conditions&&) noexcept;

    // Fails, quoting the condition, when one does not parse or uses a name not in `names`.
    static Expected<Conditions> compile(const std::vector<std::string>& texts, const std::vector<std::string>& names);

    // The index of the first condition that is zero or not finite with these values (names not
    // given count as 0), or -1 when every one holds.
    int firstFailing(const Variables& values) const;
    std::size_t size() const;

private:
    struct Parsed;
    std::unique_ptr<Parsed> m_parsed;
};

} // namespace kforge::spec
