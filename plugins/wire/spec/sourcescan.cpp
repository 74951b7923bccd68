#include "sourcescan.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

namespace kforge::spec {

namespace {

bool isIdentStart(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_' || u == '$' || u >= 0x80;
}
bool isIdentChar(char c) {
    return isIdentStart(c) || (c >= '0' && c <= '9');
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isBlank(char c) {
    return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

// A line splice at `i`: backslash, optional CR, newline. Returns its length, 0 if none.
std::size_t spliceAt(const std::string& s, std::size_t i) {
    if (i >= s.size() || s[i] != '\\')
        return 0;
    if (i + 1 < s.size() && s[i + 1] == '\n')
        return 2;
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n')
        return 3;
    return 0;
}

// The first offset at or after `i` that is not part of a line splice.
std::size_t real(const std::string& s, std::size_t i) {
    while (std::size_t n = spliceAt(s, i))
        i += n;
    return i;
}

// Whether the newline at `i` ends a logical line (it is not the newline of a splice).
bool endsLogicalLine(const std::string& s, std::size_t i) {
    std::size_t b = i;
    if (b > 0 && s[b - 1] == '\r')
        --b;
    return !(b > 0 && s[b - 1] == '\\');
}

class Blanker {
public:
    Blanker(const std::string& s, Dialect d) : m_s(s), m_out(s), m_cpp(d == Dialect::Cuda) {}

    std::string run() {
        const std::size_t n = m_s.size();
        std::size_t i = real(m_s, 0);
        while (i < n) {
            const char c = m_s[i];
            const std::size_t j = real(m_s, i + 1);
            const char nc = j < n ? m_s[j] : '\0';
            if (c == '/' && nc == '/') {
                i = lineComment(i);
            } else if (c == '/' && nc == '*') {
                i = blockComment(i, j);
            } else if (c == '"' || c == '\'') {
                i = quoted(i, c);
            } else if (isIdentStart(c)) {
                i = identifier(i);
            } else if (isDigit(c) || (c == '.' && isDigit(nc))) {
                i = number(i);
            } else {
                i = j;
            }
        }
        return std::move(m_out);
    }

private:
    void blank(std::size_t from, std::size_t to) { // [from, to)
        for (std::size_t k = from; k < to && k < m_out.size(); ++k)
            if (m_s[k] != '\n')
                m_out[k] = ' ';
    }

    std::size_t lineComment(std::size_t i) {
        std::size_t k = i;
        while (k < m_s.size() && !(m_s[k] == '\n' && endsLogicalLine(m_s, k)))
            ++k;
        blank(i, k);
        return k;
    }

    std::size_t blockComment(std::size_t i, std::size_t star) {
        std::size_t k = real(m_s, star + 1);
        while (k < m_s.size()) {
            if (m_s[k] == '*') {
                const std::size_t m = real(m_s, k + 1);
                if (m < m_s.size() && m_s[m] == '/') {
                    blank(i, m + 1);
                    return real(m_s, m + 1);
                }
            }
            k = real(m_s, k + 1);
        }
        blank(i, m_s.size()); // unterminated: the compiler rejects it
        return m_s.size();
    }

    // An ordinary string or character literal opened at `q`. It ends at its closing quote or, not
    // closed, at the end of the logical line (compilers report and resume there).
    std::size_t quoted(std::size_t q, char quote) {
        std::size_t k = real(m_s, q + 1);
        while (k < m_s.size()) {
            const char c = m_s[k];
            if (c == '\n')
                break;
            if (c == '\\') {
                const std::size_t e = real(m_s, k + 1);
                if (e >= m_s.size() || m_s[e] == '\n') {
                    k = e;
                    continue;
                }
                k = real(m_s, e + 1);
                continue;
            }
            if (c == quote) {
                blank(q + 1, k);
                return real(m_s, k + 1);
            }
            k = real(m_s, k + 1);
        }
        blank(q + 1, k);
        return k;
    }

    // R"delim( ... )delim": line splices are not processed inside (C++ [lex.pptoken]).
    std::size_t rawString(std::size_t q) {
        std::size_t k = q + 1;
        std::string delim;
        while (k < m_s.size() && m_s[k] != '(' && delim.size() <= 16) {
            const char c = m_s[k];
            if (c == ' ' || c == ')' || c == '\\' || c == '\t' || c == '\v' || c == '\f' || c == '\n' || c == '"')
                return quoted(q, '"'); // not a raw string; the compiler rejects it
            delim += c;
            ++k;
        }
        if (k >= m_s.size() || m_s[k] != '(')
            return quoted(q, '"');
        const std::string close = ")" + delim + "\"";
        const std::size_t end = m_s.find(close, k + 1);
        if (end == std::string::npos) {
            blank(q + 1, m_s.size());
            return m_s.size();
        }
        blank(q + 1, end + close.size() - 1);
        return real(m_s, end + close.size());
    }

    std::size_t identifier(std::size_t i) {
        std::string name;
        std::size_t k = i;
        while (k < m_s.size() && isIdentChar(m_s[k])) {
            if (name.size() < 4)
                name += m_s[k];
            else
                name = "\x01"; // longer than any literal prefix
            k = real(m_s, k + 1);
        }
        if (k < m_s.size()) {
            const char c = m_s[k];
            if (c == '"' && m_cpp && (name == "R" || name == "u8R" || name == "uR" || name == "UR" || name == "LR"))
                return rawString(k);
            if ((c == '"' || c == '\'') && (name == "u8" || name == "u" || name == "U" || name == "L"))
                return quoted(k, c);
        }
        return k;
    }

    // A preprocessing number, with C++14 digit separators (1'000'000) in CUDA.
    std::size_t number(std::size_t i) {
        std::size_t k = real(m_s, i + 1);
        while (k < m_s.size()) {
            const char c = m_s[k];
            const std::size_t j = real(m_s, k + 1);
            const char nc = j < m_s.size() ? m_s[j] : '\0';
            // An exponent's sign, or a digit separator: the character after it belongs to the number.
            if (((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (nc == '+' || nc == '-'))
                || (c == '\'' && m_cpp && isIdentChar(nc))) {
                k = real(m_s, j + 1);
            } else if (isIdentChar(c) || c == '.') {
                k = j;
            } else {
                break;
            }
        }
        return k;
    }

    const std::string& m_s;
    std::string m_out;
    bool m_cpp;
};

std::string trim(const std::string& s) {
    std::size_t b = 0, e = s.size();
    while (b < e && (isBlank(s[b]) || s[b] == '\n'))
        ++b;
    while (e > b && (isBlank(s[e - 1]) || s[e - 1] == '\n'))
        --e;
    return s.substr(b, e - b);
}

// ---- #if conditions ----------------------------------------------------------------------------

enum class Tri { False, True, Unknown };

struct Macro {
    enum class State { Defined, Undefined, Maybe };
    State state = State::Maybe;
    std::optional<std::int64_t> value; // when defined as an integer literal
};

std::optional<std::int64_t> integerLiteral(const std::string& text) {
    std::string t = trim(text);
    while (!t.empty() && (t.back() == 'u' || t.back() == 'U' || t.back() == 'l' || t.back() == 'L'))
        t.pop_back();
    if (t.empty() || t.size() > 18)
        return std::nullopt;
    int base = 10;
    std::size_t i = 0;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        base = 16;
        i = 2;
    }
    std::int64_t v = 0;
    for (; i < t.size(); ++i) {
        const char c = t[i];
        int d;
        if (isDigit(c))
            d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return std::nullopt;
        v = v * base + d;
    }
    return v;
}

// Evaluates the few forms kforge can decide: integers, defined(X), !, &&, ||, comparisons,
// parentheses. Anything else, or nesting deeper than kMaxDepth, is Unknown.
class Condition {
public:
    Condition(const std::string& text, const std::map<std::string, Macro>& macros, const std::set<std::string>& sticky)
        : m_t(text), m_macros(macros), m_sticky(sticky) {}

    Tri evaluate() {
        auto v = orExpr(0);
        skipBlanks();
        if (m_failed || m_p != m_t.size() || !v.known)
            return Tri::Unknown;
        return v.value != 0 ? Tri::True : Tri::False;
    }

private:
    struct Value {
        bool known = false;
        std::int64_t value = 0;
    };
    static constexpr int kMaxDepth = 64;

    void skipBlanks() {
        while (m_p < m_t.size() && (isBlank(m_t[m_p]) || m_t[m_p] == '\n' || m_t[m_p] == '\\'))
            ++m_p;
    }
    bool take(const char* op) {
        skipBlanks();
        const std::size_t n = std::char_traits<char>::length(op);
        if (m_t.compare(m_p, n, op) != 0)
            return false;
        // "&" must not take the first half of "&&", "<" not of "<=" and so on.
        if (n == 1 && m_p + 1 < m_t.size() && (m_t[m_p + 1] == '=' || m_t[m_p + 1] == op[0]) && op[0] != '('
            && op[0] != ')')
            return false;
        m_p += n;
        return true;
    }
    std::string identifier() {
        skipBlanks();
        const std::size_t b = m_p;
        while (m_p < m_t.size() && isIdentChar(m_t[m_p]))
            ++m_p;
        return m_t.substr(b, m_p - b);
    }
    Value unknown() { return {}; }

    Value orExpr(int depth) {
        Value v = andExpr(depth);
        while (!m_failed && take("||")) {
            const Value r = andExpr(depth);
            if ((v.known && v.value) || (r.known && r.value))
                v = {true, 1};
            else if (v.known && r.known)
                v = {true, 0};
            else
                v = unknown();
        }
        return v;
    }
    Value andExpr(int depth) {
        Value v = compare(depth);
        while (!m_failed && take("&&")) {
            const Value r = compare(depth);
            if ((v.known && !v.value) || (r.known && !r.value))
                v = {true, 0};
            else if (v.known && r.known)
                v = {true, 1};
            else
                v = unknown();
        }
        return v;
    }
    Value compare(int depth) {
        Value v = unary(depth);
        for (;;) {
            int op = 0;
            if (take("=="))
                op = 1;
            else if (take("!="))
                op = 2;
            else if (take("<="))
                op = 3;
            else if (take(">="))
                op = 4;
            else if (take("<"))
                op = 5;
            else if (take(">"))
                op = 6;
            else
                return v;
            const Value r = unary(depth);
            if (!v.known || !r.known) {
                v = unknown();
                continue;
            }
            const std::int64_t a = v.value, b = r.value;
            const bool res = op == 1   ? a == b
                             : op == 2 ? a != b
                             : op == 3 ? a <= b
                             : op == 4 ? a >= b
                             : op == 5 ? a < b
                                       : a > b;
            v = {true, res ? 1 : 0};
        }
    }
    Value unary(int depth) {
        if (depth > kMaxDepth || m_failed) {
            m_failed = true;
            return unknown();
        }
        if (take("!")) {
            const Value v = unary(depth + 1);
            return v.known ? Value{true, v.value ? 0 : 1} : v;
        }
        if (take("-")) {
            const Value v = unary(depth + 1);
            return v.known ? Value{true, -v.value} : v;
        }
        if (take("+"))
            return unary(depth + 1);
        if (take("(")) {
            const Value v = orExpr(depth + 1);
            if (!take(")"))
                m_failed = true;
            return v;
        }
        skipBlanks();
        if (m_p < m_t.size() && isDigit(m_t[m_p])) {
            const std::size_t b = m_p;
            while (m_p < m_t.size() && isIdentChar(m_t[m_p]))
                ++m_p;
            if (auto v = integerLiteral(m_t.substr(b, m_p - b)))
                return {true, *v};
            return unknown();
        }
        const std::string name = identifier();
        if (name.empty()) {
            m_failed = true;
            return unknown();
        }
        if (name == "defined") {
            const bool paren = take("(");
            const std::string x = identifier();
            if (x.empty() || (paren && !take(")"))) {
                m_failed = true;
                return unknown();
            }
            const Macro m = lookup(x);
            if (m.state == Macro::State::Defined)
                return {true, 1};
            if (m.state == Macro::State::Undefined)
                return {true, 0};
            return unknown();
        }
        if (name == "true" || name == "false")
            return {true, name == "true" ? 1 : 0};
        skipBlanks();
        if (m_p < m_t.size() && m_t[m_p] == '(') // a function-like macro call
            return unknown();
        const Macro m = lookup(name);
        if (m.state == Macro::State::Defined && m.value)
            return {true, *m.value};
        if (m.state == Macro::State::Undefined)
            return {true, 0};
        return unknown();
    }
    Macro lookup(const std::string& name) const {
        if (m_sticky.count(name))
            return {};
        auto it = m_macros.find(name);
        return it == m_macros.end() ? Macro{} : it->second;
    }

    const std::string& m_t;
    const std::map<std::string, Macro>& m_macros;
    const std::set<std::string>& m_sticky;
    std::size_t m_p = 0;
    bool m_failed = false;
};

Region combine(Region parent, Tri branch) {
    if (parent == Region::Inactive || branch == Tri::False)
        return Region::Inactive;
    if (parent == Region::Undecided || branch == Tri::Unknown)
        return Region::Undecided;
    return Region::Active;
}

Tri orTri(Tri a, Tri b) {
    if (a == Tri::True || b == Tri::True)
        return Tri::True;
    if (a == Tri::False && b == Tri::False)
        return Tri::False;
    return Tri::Unknown;
}

std::string firstWord(const std::string& s) {
    std::size_t b = 0;
    while (b < s.size() && isBlank(s[b]))
        ++b;
    std::size_t e = b;
    while (e < s.size() && isIdentChar(s[e]))
        ++e;
    return s.substr(b, e - b);
}

} // namespace

std::string stripComments(const std::string& source, Dialect dialect) {
    return Blanker(source, dialect).run();
}

std::vector<LogicalLine> logicalLines(const std::string& code) {
    std::vector<LogicalLine> out;
    LogicalLine cur;
    int line = 1;
    cur.line = 1;
    std::size_t i = 0;
    while (i <= code.size()) {
        const std::size_t nl = code.find('\n', i);
        const std::size_t end = nl == std::string::npos ? code.size() : nl;
        std::size_t contentEnd = end;
        if (contentEnd > i && code[contentEnd - 1] == '\r')
            --contentEnd;
        const bool spliced = nl != std::string::npos && contentEnd > i && code[contentEnd - 1] == '\\';
        cur.text.append(code, i, (spliced ? contentEnd - 1 : contentEnd) - i);
        cur.lastLine = line;
        if (!spliced) {
            out.push_back(std::move(cur));
            cur = LogicalLine{};
            cur.line = line + 1;
        }
        if (nl == std::string::npos)
            break;
        i = nl + 1;
        ++line;
    }
    return out;
}

Directive directiveOf(const std::string& t) {
    Directive d;
    std::size_t p = 0;
    while (p < t.size() && isBlank(t[p]))
        ++p;
    if (p < t.size() && t[p] == '#') {
        d.column = p;
        ++p;
    } else if (t.compare(p, 2, "%:") == 0) {
        d.column = p;
        p += 2;
    } else {
        return d;
    }
    d.isDirective = true;
    while (p < t.size() && isBlank(t[p]))
        ++p;
    const std::size_t b = p;
    if (p < t.size() && isDigit(t[p])) {
        while (p < t.size() && isDigit(t[p]))
            ++p;
    } else {
        while (p < t.size() && isIdentChar(t[p]))
            ++p;
    }
    d.name = t.substr(b, p - b);
    while (p < t.size() && isBlank(t[p]))
        ++p;
    d.rest = t.substr(p);
    return d;
}

std::vector<Region> conditionalRegions(const std::vector<LogicalLine>& lines, int lineCount, Dialect dialect,
                                       const std::set<std::string>& sticky) {
    std::vector<Region> regions(static_cast<std::size_t>(std::max(lineCount, 0)), Region::Active);
    std::map<std::string, Macro> macros;
    // Names the compiler defines for every kernel (values vary with the device).
    if (dialect == Dialect::Cuda) {
        for (const char* n : {"__CUDACC__", "__CUDACC_RTC__", "__CUDA_ARCH__", "__NVCC__"})
            macros[n] = {Macro::State::Defined, std::nullopt};
    } else {
        for (const char* n : {"__OPENCL_VERSION__", "__OPENCL_C_VERSION__", "__kernel_exec"})
            macros[n] = {Macro::State::Defined, std::nullopt};
    }
    struct Frame {
        Region parent;
        Tri taken;
        Region current;
    };
    std::vector<Frame> stack;
    Region current = Region::Active;
    auto setLines = [&](const LogicalLine& l, Region r) {
        for (int k = l.line; k <= l.lastLine && k <= lineCount; ++k)
            if (k >= 1)
                regions[static_cast<std::size_t>(k - 1)] = r;
    };
    auto condition = [&](const std::string& text) { return Condition(text, macros, sticky).evaluate(); };
    auto definedTri = [&](const std::string& name) {
        if (sticky.count(name))
            return Tri::Unknown;
        auto it = macros.find(name);
        if (it == macros.end() || it->second.state == Macro::State::Maybe)
            return Tri::Unknown;
        return it->second.state == Macro::State::Defined ? Tri::True : Tri::False;
    };
    auto notTri = [](Tri t) { return t == Tri::True ? Tri::False : t == Tri::False ? Tri::True : Tri::Unknown; };

    for (const LogicalLine& l : lines) {
        const Directive d = directiveOf(l.text);
        if (!d.isDirective) {
            setLines(l, current);
            continue;
        }
        const std::string& n = d.name;
        if (n == "if" || n == "ifdef" || n == "ifndef") {
            setLines(l, current);
            Tri c = n == "if" ? condition(d.rest) : definedTri(firstWord(d.rest));
            if (n == "ifndef")
                c = notTri(c);
            stack.push_back({current, c, combine(current, c)});
            current = stack.back().current;
        } else if (n == "elif" || n == "elifdef" || n == "elifndef" || n == "else") {
            if (stack.empty()) {
                setLines(l, current);
                continue;
            }
            Frame& f = stack.back();
            setLines(l, f.parent);
            Tri c = Tri::True;
            if (n == "elif")
                c = condition(d.rest);
            else if (n != "else")
                c = n == "elifdef" ? definedTri(firstWord(d.rest)) : notTri(definedTri(firstWord(d.rest)));
            Tri branch;
            if (f.taken == Tri::True)
                branch = Tri::False;
            else if (f.taken == Tri::False)
                branch = c;
            else
                branch = c == Tri::False ? Tri::False : Tri::Unknown;
            f.taken = orTri(f.taken, c);
            f.current = combine(f.parent, branch);
            current = f.current;
        } else if (n == "endif") {
            if (!stack.empty()) {
                current = stack.back().parent;
                stack.pop_back();
            }
            setLines(l, current);
        } else {
            setLines(l, current);
            if ((n == "define" || n == "undef") && current != Region::Inactive) {
                const std::string name = firstWord(d.rest);
                if (name.empty())
                    continue;
                Macro m;
                if (current == Region::Undecided) {
                    m.state = Macro::State::Maybe;
                } else if (n == "undef") {
                    m.state = Macro::State::Undefined;
                } else {
                    m.state = Macro::State::Defined;
                    const std::size_t after = d.rest.find(name) + name.size();
                    if (after < d.rest.size() && d.rest[after] != '(')
                        m.value = integerLiteral(d.rest.substr(after));
                }
                macros[name] = m;
            }
        }
    }
    return regions;
}

std::string blankRegions(const std::string& code, const std::vector<Region>& regions, bool keepUndecided) {
    std::string out = code;
    std::size_t line = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] == '\n') {
            ++line;
            continue;
        }
        const Region r = line < regions.size() ? regions[line] : Region::Active;
        if (r == Region::Inactive || (r == Region::Undecided && !keepUndecided))
            out[i] = ' ';
    }
    return out;
}

std::string checkedCode(const std::string& source, Dialect dialect) {
    const std::string code = stripComments(source, dialect);
    const std::vector<LogicalLine> lines = logicalLines(code);
    const int lineCount = lines.empty() ? 0 : lines.back().lastLine;
    return blankRegions(code, conditionalRegions(lines, lineCount, dialect), true);
}

std::size_t matchingParen(const std::string& code, std::size_t open, std::size_t limit) {
    int depth = 0;
    const std::size_t end = limit >= code.size() - std::min(open, code.size()) ? code.size() : open + limit;
    for (std::size_t k = open; k < end; ++k) {
        if (code[k] == '(')
            ++depth;
        else if (code[k] == ')' && --depth == 0)
            return k;
    }
    return std::string::npos;
}

int lineAt(const std::string& text, std::size_t pos) {
    pos = std::min(pos, text.size());
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

std::size_t firstInvalidUtf8(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = byte(i);
        if (c < 0x80) {
            ++i;
            continue;
        }
        // The length of the sequence a lead byte starts, and the range its second byte must lie in
        // (which is what excludes overlong forms, surrogates and code points past U+10FFFF).
        std::size_t length = 0;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            length = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            length = 3;
            lo = c == 0xe0 ? 0xa0 : 0x80;
            hi = c == 0xed ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            length = 4;
            lo = c == 0xf0 ? 0x90 : 0x80;
            hi = c == 0xf4 ? 0x8f : 0xbf;
        } else {
            return i;
        }
        if (i + 1 >= n || byte(i + 1) < lo || byte(i + 1) > hi)
            return i;
        for (std::size_t k = 2; k < length; ++k)
            if (i + k >= n || (byte(i + k) & 0xc0) != 0x80)
                return i;
        i += length;
    }
    return std::string_view::npos;
}

std::optional<NotUtf8> findNotUtf8(const std::string& text) {
    const std::size_t at = firstInvalidUtf8(text);
    if (at == std::string_view::npos)
        return std::nullopt;
    const std::size_t lineStart = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const std::size_t column = lineStart == std::string::npos ? at + 1 : at - lineStart;
    static constexpr char hex[] = "0123456789ABCDEF";
    const auto b = static_cast<unsigned char>(text[at]);
    return NotUtf8{lineAt(text, at), static_cast<int>(column),
                   std::string("byte 0x") + hex[b >> 4] + hex[b & 0xf] + " is not UTF-8"};
}

std::vector<KernelHead> findKernelHeads(const std::string& code, Dialect dialect) {
    std::vector<KernelHead> heads;
    const std::size_t n = code.size();
    auto skipSpace = [&](std::size_t p) {
        while (p < n && (isBlank(code[p]) || code[p] == '\n' || code[p] == '\\'))
            ++p;
        return p;
    };
    auto word = [&](std::size_t p, std::size_t& end) {
        end = p;
        if (p < n && isIdentStart(code[p]))
            while (end < n && isIdentChar(code[end]))
                ++end;
        return code.substr(p, end - p);
    };
    std::size_t i = 0;
    while (i < n) {
        if (!isIdentStart(code[i]) || (i > 0 && isIdentChar(code[i - 1]))) {
            ++i;
            continue;
        }
        std::size_t end;
        const std::string w = word(i, end);
        const bool cudaHead = dialect == Dialect::Cuda && w == "__global__";
        const bool clHead = dialect == Dialect::OpenCL && (w == "__kernel" || w == "kernel");
        if (!cudaHead && !clHead) {
            i = end;
            continue;
        }
        // Attributes before and after `void`; `void` itself; the name; '('.
        std::size_t p = skipSpace(end);
        bool sawVoid = false;
        std::string name;
        bool ok = false;
        for (int guard = 0; guard < 16; ++guard) {
            std::size_t we;
            const std::string t = word(p, we);
            if (t.empty())
                break;
            if (t == "__launch_bounds__" || t == "__attribute__" || t == "__cluster_dims__") {
                std::size_t q = skipSpace(we);
                if (q >= n || code[q] != '(')
                    break;
                const std::size_t close = matchingParen(code, q, 4096);
                if (close == std::string::npos)
                    break;
                p = skipSpace(close + 1);
                continue;
            }
            if (!sawVoid) {
                if (t != "void")
                    break;
                sawVoid = true;
                p = skipSpace(we);
                continue;
            }
            const std::size_t q = skipSpace(we);
            if (q < n && code[q] == '(') {
                name = t;
                heads.push_back({name, i, q});
                ok = true;
            }
            break;
        }
        i = ok ? heads.back().open + 1 : end;
    }
    return heads;
}

bool isAllowedPragma(const std::string& text) {
    const std::string t = trim(text);
    const std::string w = firstWord(t);
    if (w == "unroll" || w == "nounroll" || w == "once" || w == "OPENCL" || w == "pack")
        return true;
    if (w.rfind("nv_diag_", 0) == 0 || w.rfind("diag_", 0) == 0)
        return true;
    if (w == "clang" || w == "GCC") {
        const std::string second = firstWord(t.substr(w.size()));
        return second == "diagnostic" || second == "loop" || second == "unroll";
    }
    return false;
}

std::vector<SourceFinding> checkPreprocessor(const std::string& source, Dialect dialect, const IncludePolicy& policy) {
    std::vector<SourceFinding> out;
    std::set<int> flagged;
    auto add = [&](int line, int column, const std::string& message) {
        if (!flagged.insert(line).second)
            return; // one finding per line is enough to act on
        out.push_back({line, column, message});
    };
    if (source.size() > kMaxSourceBytes) {
        out.push_back({0, 0,
                       "the kernel file has " + std::to_string(source.size()) + " bytes; kernel files are limited to "
                           + std::to_string(kMaxSourceBytes) + " bytes"});
        return out;
    }

    // Trigraphs and backslash-blank-newline are read differently by different compilers (and
    // language modes), so a scanner cannot know what the compiler will see after them.
    {
        int line = 1;
        std::size_t lineStart = 0;
        for (std::size_t i = 0; i < source.size(); ++i) {
            const char c = source[i];
            if (c == '\n') {
                ++line;
                lineStart = i + 1;
                continue;
            }
            const int column = static_cast<int>(i - lineStart) + 1;
            if (c == '?' && i + 2 < source.size() && source[i + 1] == '?'
                && std::string("=/'()!<>-").find(source[i + 2]) != std::string::npos)
                add(line, column,
                    "trigraph '??" + std::string(1, source[i + 2]) + "' is not allowed (compilers disagree on it)");
            if (c == '\\') {
                std::size_t k = i + 1;
                while (k < source.size()
                       && (source[k] == ' ' || source[k] == '\t' || source[k] == '\f' || source[k] == '\v'))
                    ++k;
                if (k > i + 1 && (k == source.size() || source[k] == '\n' || source[k] == '\r'))
                    add(line, column,
                        "backslash followed by blanks at the end of the line: compilers disagree on whether "
                        "it joins the next line; remove the blanks");
            }
        }
    }

    const std::string code = stripComments(source, dialect);
    const std::vector<LogicalLine> lines = logicalLines(code);
    const int lineCount = lines.empty() ? 0 : lines.back().lastLine;
    const std::vector<Region> regions = conditionalRegions(lines, lineCount, dialect);
    std::vector<std::size_t> lineStarts{0};
    for (std::size_t i = 0; i < source.size(); ++i)
        if (source[i] == '\n')
            lineStarts.push_back(i + 1);
    auto originalLogical = [&](const LogicalLine& l) {
        std::string t;
        for (int k = l.line; k <= l.lastLine && static_cast<std::size_t>(k - 1) < lineStarts.size(); ++k) {
            const std::size_t b = lineStarts[static_cast<std::size_t>(k - 1)];
            std::size_t e = source.find('\n', b);
            if (e == std::string::npos)
                e = source.size();
            std::string piece = source.substr(b, e - b);
            if (!piece.empty() && piece.back() == '\r')
                piece.pop_back();
            if (k < l.lastLine && !piece.empty() && piece.back() == '\\')
                piece.pop_back();
            t += piece;
            if (t.size() > 200)
                break;
        }
        t = trim(t);
        if (t.size() > 120)
            t = t.substr(0, 117) + "...";
        return "'" + t + "'";
    };
    const std::string allowedText = policy.allowedText.empty() ? "" : " " + policy.allowedText;

    for (const LogicalLine& l : lines) {
        const std::size_t idx = static_cast<std::size_t>(l.line - 1);
        if (idx < regions.size() && regions[idx] == Region::Inactive)
            continue;
        // Probes of host files work anywhere, also inside #if conditions.
        for (const char* probe : {"__has_include", "__has_include_next", "__has_embed"}) {
            for (std::size_t p = l.text.find(probe); p != std::string::npos; p = l.text.find(probe, p + 1)) {
                const std::size_t e = p + std::char_traits<char>::length(probe);
                if ((p > 0 && isIdentChar(l.text[p - 1])) || (e < l.text.size() && isIdentChar(l.text[e])))
                    continue;
                add(l.line, static_cast<int>(p) + 1,
                    std::string(probe)
                        + " is not allowed: a kernel may not probe for files on the machine that compiles it");
            }
        }
        // _Pragma("...") is #pragma in an expression; its text is read from the original source.
        for (std::size_t p = l.text.find("_Pragma"); p != std::string::npos; p = l.text.find("_Pragma", p + 1)) {
            if ((p > 0 && isIdentChar(l.text[p - 1])) || (p + 7 < l.text.size() && isIdentChar(l.text[p + 7])))
                continue;
            std::string text;
            bool literal = false;
            if (l.line == l.lastLine) {
                const std::size_t base = lineStarts[idx];
                std::size_t q = p + 7;
                while (q < l.text.size() && isBlank(l.text[q]))
                    ++q;
                if (q < l.text.size() && l.text[q] == '(') {
                    ++q;
                    while (q < l.text.size() && isBlank(l.text[q]))
                        ++q;
                    if (q < l.text.size() && l.text[q] == '"') {
                        const std::size_t close = l.text.find('"', q + 1);
                        if (close != std::string::npos) {
                            text = source.substr(base + q + 1, close - q - 1);
                            literal = text.find('\\') == std::string::npos;
                        }
                    }
                }
            }
            if (!literal || !isAllowedPragma(text))
                add(l.line, static_cast<int>(p) + 1,
                    originalLogical(l)
                        + ": _Pragma is allowed only as _Pragma(\"unroll\") and similar harmless pragmas "
                          "written as a plain string");
        }

        const Directive d = directiveOf(l.text);
        if (!d.isDirective)
            continue;
        const int column = static_cast<int>(d.column) + 1;
        const std::string& n = d.name;
        static const std::set<std::string> plain = {"",     "define", "undef",   "if",       "ifdef", "ifndef", "elif",
                                                    "else", "endif",  "elifdef", "elifndef", "error", "warning"};
        if (plain.count(n))
            continue;
        const std::string shown = originalLogical(l);
        if (n == "include") {
            const std::string& r = d.rest;
            if (r.empty() || (r[0] != '<' && r[0] != '"')) {
                add(l.line, column,
                    shown
                        + ": a computed #include (through a macro) is not allowed; name the header as #include <...>");
                continue;
            }
            if (r[0] == '"') {
                add(l.line, column,
                    shown
                        + ": #include \"...\" is not allowed: a kernel file must be self-contained, since the worker "
                          "compiles it alone and files beside it are not part of the candidate");
                continue;
            }
            const std::size_t close = r.find('>');
            const std::string header = close == std::string::npos ? trim(r.substr(1)) : trim(r.substr(1, close - 1));
            const std::string after = close == std::string::npos ? "" : trim(r.substr(close + 1));
            const bool safeName = !header.empty() && header[0] != '/' && header.find("..") == std::string::npos
                                  && header.find('\\') == std::string::npos;
            if (close == std::string::npos || !after.empty() || !safeName || !policy.allowed || !policy.allowed(header))
                add(l.line, column,
                    std::string(shown)
                        .append(": <")
                        .append(header)
                        .append("> is not an allowed header.")
                        .append(allowedText));
            continue;
        }
        if (n == "pragma") {
            if (!isAllowedPragma(d.rest))
                add(l.line, column,
                    shown
                        + ": this #pragma is not allowed; kernels may use #pragma unroll/nounroll, once, OPENCL ..., "
                          "pack, "
                          "nv_diag_*, and clang/GCC diagnostic or loop pragmas");
            continue;
        }
        if (n == "line" || (!n.empty() && isDigit(n[0]))) {
            add(l.line, column,
                shown + ": #line and line markers are not allowed: they would make diagnostics point into other files");
            continue;
        }
        if (n == "include_next" || n == "import" || n == "embed") {
            add(l.line, column,
                std::string(shown).append(": #").append(n).append(
                    " is not allowed; only #include <header> of an allowed header is accepted"));
            continue;
        }
        add(l.line, column,
            std::string(shown)
                .append(": the directive #")
                .append(n)
                .append(" is not allowed (allowed: #include <...> of an allowed header, #define, #undef, "
                        "#if/#ifdef/#ifndef/#elif/#else/#endif, #pragma of a harmless kind, #error, #warning)"));
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
    return out;
}

} // namespace kforge::spec
