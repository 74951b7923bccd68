#include "kernelfile.h"

#include "expression.h"
#include "taskspec.h"

#include <algorithm>
#include <set>

namespace kforge::spec {

namespace {

bool isBlankChar(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
bool isWordStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isWordChar(char c) {
    return isWordStart(c) || (c >= '0' && c <= '9');
}

std::string trim(const std::string& s) {
    std::size_t b = 0, e = s.size();
    while (b < e && isBlankChar(s[b]))
        ++b;
    while (e > b && isBlankChar(s[e - 1]))
        --e;
    return s.substr(b, e - b);
}

Error lineError(int line, const std::string& what) {
    return Error{"line " + std::to_string(line) + ": " + what};
}

// Quotes a piece of a directive in a message without repeating a whole runaway line.
std::string shorten(const std::string& s) {
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// Splits on commas that are not inside parentheses, braces or brackets.
std::vector<std::string> splitTopLevel(const std::string& s) {
    std::vector<std::string> parts;
    int depth = 0;
    std::string cur;
    for (char c : s) {
        if (c == '(' || c == '{' || c == '[')
            ++depth;
        else if (c == ')' || c == '}' || c == ']')
            --depth;
        if (c == ',' && depth == 0) {
            parts.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!trim(cur).empty() || !parts.empty())
        parts.push_back(trim(cur));
    return parts;
}

bool parseInt(const std::string& s, std::int64_t& out) {
    const std::string t = trim(s);
    if (t.empty() || t.size() > 20)
        return false;
    std::size_t pos = 0;
    try {
        out = std::stoll(t, &pos);
    } catch (...) {
        return false;
    }
    return pos == t.size();
}

// A cursor over one directive's text; every step moves forward, so reading is linear.
class Cursor {
public:
    explicit Cursor(const std::string& s) : m_s(s) {}
    void blanks() {
        while (m_p < m_s.size() && isBlankChar(m_s[m_p]))
            ++m_p;
    }
    bool blanksRequired() {
        const std::size_t b = m_p;
        blanks();
        return m_p > b;
    }
    std::string word() {
        const std::size_t b = m_p;
        if (m_p < m_s.size() && isWordStart(m_s[m_p]))
            while (m_p < m_s.size() && isWordChar(m_s[m_p]))
                ++m_p;
        return m_s.substr(b, m_p - b);
    }
    bool take(char c) {
        if (m_p < m_s.size() && m_s[m_p] == c) {
            ++m_p;
            return true;
        }
        return false;
    }
    bool peekWord(const char* w) const {
        const std::size_t n = std::char_traits<char>::length(w);
        return m_s.compare(m_p, n, w) == 0 && (m_p + n >= m_s.size() || !isWordChar(m_s[m_p + n]));
    }
    std::size_t pos() const { return m_p; }
    void seek(std::size_t p) { m_p = std::min(p, m_s.size()); }
    std::string rest() const { return m_s.substr(m_p); }
    bool atEnd() const { return m_p >= m_s.size(); }

private:
    const std::string& m_s;
    std::size_t m_p = 0;
};

// One token with no blanks inside (a default or fixed value).
bool singleToken(const std::string& s) {
    return !s.empty() && std::none_of(s.begin(), s.end(), isBlankChar);
}

// "name=(a, b)" or "name=expr" at the start of `rest`; consumes it.
bool takeKeyValue(std::string& rest, std::string& key, std::string& value) {
    rest = trim(rest);
    const auto eq = rest.find('=');
    if (eq == std::string::npos)
        return false;
    key = trim(rest.substr(0, eq));
    std::string tail = trim(rest.substr(eq + 1));
    // A parenthesised value ends at its closing parenthesis unless an operator follows it
    // ("when=(M > 4) && (N > 4)").
    const auto startsKey = [](const std::string& t, std::size_t k) {
        if (k >= t.size() || !isWordStart(t[k]))
            return false;
        while (k < t.size() && isWordChar(t[k]))
            ++k;
        while (k < t.size() && isBlankChar(t[k]))
            ++k;
        // "==" compares; only a lone '=' starts a value.
        return k < t.size() && t[k] == '=' && (k + 1 >= t.size() || t[k + 1] != '=');
    };
    if (!tail.empty() && tail[0] == '(') {
        const std::size_t close = matchingParen(tail, 0);
        if (close == std::string::npos)
            return false;
        std::size_t next = close + 1;
        while (next < tail.size() && isBlankChar(tail[next]))
            ++next;
        if (next >= tail.size() || isWordStart(tail[next])) {
            value = tail.substr(0, close + 1);
            rest = tail.substr(close + 1);
            return true;
        }
    }
    // An unparenthesised value runs to the next " key=" or the end.
    std::size_t i = 0;
    while (i < tail.size()) {
        if (!isBlankChar(tail[i])) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < tail.size() && isBlankChar(tail[j]))
            ++j;
        if (j >= tail.size() || !isWordStart(tail[j])) {
            i = j;
            continue;
        }
        if (startsKey(tail, j)) {
            value = trim(tail.substr(0, i));
            rest = tail.substr(i);
            return true;
        }
        while (j < tail.size() && isWordChar(tail[j]))
            ++j;
        i = j;
    }
    value = trim(tail);
    rest.clear();
    return true;
}

Expected<std::vector<std::string>> dims(const std::string& value, int line, const std::string& key) {
    std::string v = trim(value);
    if (v.size() >= 2 && v.front() == '(' && v.back() == ')')
        v = v.substr(1, v.size() - 2);
    auto parts = splitTopLevel(v);
    if (parts.empty() || parts.size() > 3)
        return lineError(line, key + " needs 1 to 3 dimensions, e.g. " + key
                                   + (key == "cluster" ? "=(2)" : "=(cdiv(N, 256))"));
    for (const auto& p : parts)
        if (p.empty())
            return lineError(line, key + " has an empty dimension");
    return parts;
}

Status parseParam(KernelFile& kf, const std::string& rest, int line) {
    // NAME in {a, b, c} = default   |   NAME = value
    const Error usage = lineError(line, "param: expected 'NAME in {v1, v2, ...} = DEFAULT' or 'NAME = VALUE'");
    Cursor c(rest);
    ParamDecl p;
    p.line = line;
    p.name = c.word();
    if (p.name.empty())
        return usage;
    const std::size_t afterName = c.pos();
    if (c.blanksRequired() && c.peekWord("in")) {
        c.word();
        c.blanks();
        if (!c.take('{'))
            return usage;
        const std::string tail = c.rest();
        const std::size_t close = tail.find('}');
        if (close == std::string::npos)
            return usage;
        const std::string list = tail.substr(0, close);
        c.seek(c.pos() + close + 1);
        c.blanks();
        if (!c.take('='))
            return usage;
        const std::string def = trim(c.rest());
        if (!singleToken(def))
            return usage;
        for (const auto& choice : splitTopLevel(list)) {
            std::int64_t v;
            if (!parseInt(choice, v))
                return lineError(line, "param " + p.name + ": choice '" + shorten(choice) + "' is not an integer");
            if (p.choices.size() >= kMaxChoicesPerParam)
                return lineError(line, "param " + p.name + ": more than " + std::to_string(kMaxChoicesPerParam)
                                           + " choices (the limit per parameter)");
            p.choices.push_back(v);
        }
        if (p.choices.empty())
            return lineError(line, "param " + p.name + ": no choices");
        if (!parseInt(def, p.value))
            return lineError(line, "param " + p.name + ": default '" + shorten(def) + "' is not an integer");
        if (std::find(p.choices.begin(), p.choices.end(), p.value) == p.choices.end())
            return lineError(line,
                             "param " + p.name + ": default " + std::to_string(p.value) + " is not one of its choices");
    } else {
        c.seek(afterName);
        c.blanks();
        if (!c.take('='))
            return usage;
        const std::string value = trim(c.rest());
        if (!singleToken(value))
            return usage;
        if (!parseInt(value, p.value))
            return lineError(line, "param " + p.name + ": value '" + shorten(value) + "' is not an integer");
    }
    if (kf.findParam(p.name))
        return lineError(line, "param " + p.name + " is declared twice");
    if (kf.params.size() >= kMaxParams)
        return lineError(line, "param " + p.name + ": more than " + std::to_string(kMaxParams)
                                   + " parameters (the limit per kernel file)");
    std::uint64_t combinations = 1;
    for (const auto& q : kf.params)
        combinations *= std::max<std::uint64_t>(1, q.choices.size());
    const std::uint64_t mine = std::max<std::uint64_t>(1, p.choices.size());
    if (combinations * mine > kMaxParamCombinations)
        return lineError(line, "param " + p.name + ": the parameters' choices make "
                                   + std::to_string(combinations * mine) + " combinations; at most "
                                   + std::to_string(kMaxParamCombinations) + " are allowed");
    kf.params.push_back(std::move(p));
    return success();
}

Status parseScratch(KernelFile& kf, const std::string& rest, int line) {
    // NAME DTYPE [COUNT EXPRESSION]
    const Error usage = lineError(line, "scratch: expected 'NAME DTYPE [COUNT EXPRESSION]'");
    Cursor c(rest);
    const std::string name = c.word();
    if (name.empty() || !c.blanksRequired())
        return usage;
    const std::size_t typeStart = c.pos();
    std::string dtype;
    while (!c.atEnd() && isWordChar(rest[c.pos()])) {
        dtype += rest[c.pos()];
        c.seek(c.pos() + 1);
    }
    if (dtype.empty() || typeStart == c.pos())
        return usage;
    c.blanks();
    if (!c.take('['))
        return usage;
    const std::string tail = trim(c.rest());
    if (tail.size() < 2 || tail.back() != ']')
        return usage;
    const std::string count = trim(tail.substr(0, tail.size() - 1));
    if (count.empty())
        return usage;
    auto dt = parseDType(dtype);
    if (!dt)
        return lineError(line,
                         "scratch " + name + ": unknown dtype '" + shorten(dtype) + "' (known: " + dtypeNames() + ")");
    for (const auto& s : kf.scratch)
        if (s.name == name)
            return lineError(line, "scratch " + s.name + " is declared twice");
    if (kf.scratch.size() >= kMaxScratch)
        return lineError(line, "scratch " + name + ": more than " + std::to_string(kMaxScratch)
                                   + " scratch buffers (the limit per kernel file)");
    kf.scratch.push_back({name, *dt, count, line});
    return success();
}

Status parseLaunch(KernelFile& kf, const std::string& rest, int line) {
    Cursor c(rest);
    LaunchDecl l;
    l.kernel = c.word();
    if (l.kernel.empty())
        return lineError(line, "launch: expected 'KERNEL grid=(...) block=(...) [cluster=(...)] [smem=BYTES] "
                               "[when=CONDITION]'");
    l.line = line;
    if (kf.launches.size() >= kMaxLaunches)
        return lineError(line, "launch " + l.kernel + ": more than " + std::to_string(kMaxLaunches)
                                   + " launches (the limit per plan)");
    std::string tail = c.rest();
    std::set<std::string> seen;
    while (!trim(tail).empty()) {
        std::string key, value;
        if (!takeKeyValue(tail, key, value))
            return lineError(line,
                             "launch " + l.kernel + ": cannot read '" + shorten(trim(tail)) + "' (expected key=value)");
        const bool known = key == "grid" || key == "block" || key == "cluster" || key == "smem" || key == "when";
        if (known && !seen.insert(key).second)
            return lineError(line, "launch " + l.kernel + ": " + key + "= is given twice");
        if (key == "grid" || key == "block" || key == "cluster") {
            auto d = dims(value, line, key);
            if (!d)
                return Error{d.error()};
            (key == "grid" ? l.grid : key == "block" ? l.block : l.cluster) = *d;
        } else if (key == "smem" || key == "when") {
            const std::string v = trim(value);
            if (v.empty())
                return lineError(line, "launch " + l.kernel + ": " + key + "= has no value");
            (key == "smem" ? l.smem : l.when) = v;
        } else {
            return lineError(line, "launch " + l.kernel + ": unknown key '" + shorten(key)
                                       + "' (known: grid, block, cluster, smem, when)");
        }
    }
    if (l.grid.empty() || l.block.empty())
        return lineError(line, "launch " + l.kernel + ": needs both grid=(...) and block=(...)");
    kf.launches.push_back(std::move(l));
    return success();
}

Status parseTensorMap(KernelFile& kf, const std::string& rest, int line) {
    // NAME BUFFER box=(d0, d1, ...) [swizzle=none|32|64|128]
    const Error usage = lineError(line, "tensormap: expected 'NAME BUFFER box=(d0, d1, ...) [swizzle=none|32|64|128]'");
    Cursor c(rest);
    TensorMapDecl t;
    t.line = line;
    t.name = c.word();
    if (t.name.empty() || !c.blanksRequired())
        return usage;
    t.buffer = c.word();
    if (t.buffer.empty())
        return usage;
    const std::string who = "tensormap " + t.name;
    if (!c.atEnd() && !isBlankChar(rest[c.pos()]))
        return lineError(line, who + ": the buffer must be the name of one of the task's inputs or outputs");
    std::string tail = c.rest();
    std::set<std::string> seen;
    bool haveBox = false;
    while (!trim(tail).empty()) {
        std::string key, value;
        if (!takeKeyValue(tail, key, value))
            return lineError(line, who + ": cannot read '" + shorten(trim(tail)) + "' (expected key=value)");
        if (key != "box" && key != "swizzle")
            return lineError(line, who + ": unknown key '" + shorten(key) + "' (known: box, swizzle)");
        if (!seen.insert(key).second)
            return lineError(line, "tensormap " + t.name + ": " + key + "= is given twice");
        value = trim(value);
        if (key == "box") {
            if (value.size() < 2 || value.front() != '(' || value.back() != ')')
                return lineError(line, who + ": box needs a parenthesised list of extents, e.g. box=(BM, BK)");
            const auto parts = splitTopLevel(value.substr(1, value.size() - 2));
            if (parts.empty() || parts.size() > kMaxTensorMapRank)
                return lineError(line, who + ": box has " + std::to_string(parts.size())
                                           + " dimensions; TMA takes 1 to " + std::to_string(kMaxTensorMapRank));
            for (const auto& p : parts)
                if (p.empty())
                    return lineError(line, who + ": box has an empty dimension");
            t.box = parts;
            haveBox = true;
        } else if (value == "none" || value == "0") {
            t.swizzle = 0;
        } else if (value == "32" || value == "64" || value == "128") {
            t.swizzle = std::stoi(value);
        } else {
            return lineError(line, who + ": swizzle '" + shorten(value) + "' is not one of none, 32, 64, 128 (bytes)");
        }
    }
    if (!haveBox)
        return lineError(line, who + ": needs box=(...), the extent of the tile per dimension of " + t.buffer
                                   + " (outermost first)");
    if (kf.findTensorMap(t.name))
        return lineError(line, who + " is declared twice");
    if (kf.tensorMaps.size() >= kMaxTensorMaps)
        return lineError(line, who + ": more than " + std::to_string(kMaxTensorMaps)
                                   + " tensor maps (the limit per kernel file)");
    kf.tensorMaps.push_back(std::move(t));
    return success();
}

Status parseRequire(KernelFile& kf, const std::string& rest, int line) {
    // CONDITION (checked once every parameter is known)
    if (rest.empty())
        return lineError(line, "require: expected a condition over the parameters, e.g. 'TPR <= BLOCK'");
    if (kf.requirements.size() >= kMaxRequirements)
        return lineError(line, "require: more than " + std::to_string(kMaxRequirements)
                                   + " requirements (the limit per kernel file)");
    kf.requirements.push_back({rest, line});
    return success();
}

// Every requirement names only parameters, and the defaults meet them all.
Status checkRequirements(const KernelFile& kf) {
    if (kf.requirements.empty())
        return success();
    Variables names;
    for (const auto& p : kf.params)
        names[p.name] = 0.0;
    for (const auto& r : kf.requirements)
        if (auto st = Expression::check(r.condition, names); !st)
            return lineError(r.line, "require: " + st.error());
    if (const RequireDecl* broken = kf.brokenRequirement({}))
        return lineError(broken->line, "require '" + shorten(broken->condition)
                                           + "' does not hold for the parameters' defaults (" + kf.paramText({}) + ")");
    return success();
}

Status parseDirective(KernelFile& kf, const std::string& verb, const std::string& rest, int line) {
    if (verb == "param")
        return parseParam(kf, rest, line);
    if (verb == "require")
        return parseRequire(kf, rest, line);
    if (verb == "scratch")
        return parseScratch(kf, rest, line);
    if (verb == "launch")
        return parseLaunch(kf, rest, line);
    if (verb == "tensormap")
        return parseTensorMap(kf, rest, line);
    return lineError(line, "unknown directive 'kforge:" + shorten(verb)
                               + "' (known: param, require, scratch, tensormap, launch)");
}

// Whether `text` has "//", blanks, "kforge:" anywhere.
bool mentionsDirective(const std::string& text) {
    for (std::size_t p = text.find("//"); p != std::string::npos; p = text.find("//", p + 2)) {
        std::size_t q = p + 2;
        while (q < text.size() && isBlankChar(text[q]))
            ++q;
        if (text.compare(q, 7, "kforge:") == 0)
            return true;
    }
    return false;
}

// "// kforge:verb rest" alone on a line: the verb and the rest, trimmed.
bool directiveLine(const std::string& text, std::string& verb, std::string& rest) {
    std::size_t p = 0;
    while (p < text.size() && isBlankChar(text[p]))
        ++p;
    if (text.compare(p, 2, "//") != 0)
        return false;
    p += 2;
    while (p < text.size() && isBlankChar(text[p]))
        ++p;
    if (text.compare(p, 7, "kforge:") != 0)
        return false;
    p += 7;
    const std::size_t b = p;
    while (p < text.size()
           && ((text[p] >= 'a' && text[p] <= 'z') || (text[p] >= 'A' && text[p] <= 'Z') || text[p] == '_'))
        ++p;
    if (p == b)
        return false;
    verb = text.substr(b, p - b);
    rest = trim(text.substr(p));
    return true;
}

// A kernel parameter: its words, with attributes dropped and '*' kept as a token.
Expected<KernelArg> parseArg(const std::string& text, int line, const std::string& kernel) {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (isBlankChar(c)) {
            ++i;
        } else if (c == '*') {
            tokens.emplace_back("*");
            ++i;
        } else if (isWordChar(c) || static_cast<unsigned char>(c) >= 0x80) {
            std::size_t e = i;
            while (e < text.size() && (isWordChar(text[e]) || static_cast<unsigned char>(text[e]) >= 0x80))
                ++e;
            std::string w = text.substr(i, e - i);
            i = e;
            if (w == "__attribute__") {
                while (i < text.size() && isBlankChar(text[i]))
                    ++i;
                if (i < text.size() && text[i] == '(') {
                    const std::size_t close = matchingParen(text, i);
                    if (close == std::string::npos)
                        return lineError(line,
                                         "kernel " + kernel + ": cannot read parameter '" + shorten(trim(text)) + "'");
                    i = close + 1;
                }
                continue;
            }
            tokens.push_back(std::move(w));
        } else {
            tokens.emplace_back(1, c);
            ++i;
        }
    }
    if (tokens.size() < 2)
        return lineError(line, "kernel " + kernel + ": cannot read parameter '" + shorten(trim(text)) + "'");
    KernelArg a;
    a.name = tokens.back();
    if (!isIdentifier(a.name))
        return lineError(line,
                         "kernel " + kernel + ": cannot read the name of parameter '" + shorten(trim(text)) + "'");
    tokens.pop_back();
    static const std::vector<std::string> qualifiers = {
        "__global", "global",  "__constant", "constant",  "restrict", "__restrict",  "__restrict__",
        "volatile", "__local", "local",      "__private", "private",  "__read_only", "__write_only"};
    std::string type;
    bool seenStar = false;
    for (const auto& tok : tokens) {
        if (tok == "*") {
            if (seenStar)
                return lineError(line, "kernel " + kernel + ": parameter '" + a.name + "' is a pointer to a pointer");
            seenStar = true;
        } else if (tok == "const") {
            if (!seenStar)
                a.isConst = true;
        } else if (tok == "__grid_constant__") {
            a.gridConstant = true;
        } else if (std::find(qualifiers.begin(), qualifiers.end(), tok) == qualifiers.end()) {
            type += (type.empty() ? "" : " ") + tok;
        }
    }
    a.pointer = seenStar;
    a.elementType = type;
    if (type.empty())
        return lineError(line, "kernel " + kernel + ": parameter '" + a.name + "' has no type");
    return a;
}

// Words of `text` (identifiers).
std::set<std::string> wordsIn(const std::string& text) {
    std::set<std::string> words;
    for (std::size_t i = 0; i < text.size();) {
        if (!isWordStart(text[i])) {
            ++i;
            continue;
        }
        std::size_t e = i;
        while (e < text.size() && isWordChar(text[e]))
            ++e;
        words.insert(text.substr(i, e - i));
        i = e;
    }
    return words;
}

struct FoundKernel {
    KernelSignature sig;
    bool definition = false;
    std::size_t start = 0, end = 0; // the head and parameter list in the code
};

} // namespace

Expected<KernelFile> KernelFile::parse(const std::string& source, Dialect dialect) {
    if (source.size() > kMaxSourceBytes)
        return fail("the kernel file has " + std::to_string(source.size()) + " bytes; kernel files are limited to "
                    + std::to_string(kMaxSourceBytes) + " bytes");
    KernelFile kf;
    kf.source = source;
    kf.dialect = dialect;

    // Directives live in line comments: "// kforge:verb rest".
    std::size_t directives = 0;
    int line = 0;
    for (std::size_t begin = 0; begin <= source.size();) {
        std::size_t end = source.find('\n', begin);
        if (end == std::string::npos)
            end = source.size();
        ++line;
        const std::string text = source.substr(begin, end - begin);
        std::string verb, rest;
        if (directiveLine(text, verb, rest)) {
            if (text.size() > kMaxDirectiveChars)
                return lineError(line, "the kforge: directive is " + std::to_string(text.size())
                                           + " characters long; at most " + std::to_string(kMaxDirectiveChars)
                                           + " are allowed");
            if (++directives > kMaxDirectives)
                return lineError(line, "more than " + std::to_string(kMaxDirectives)
                                           + " kforge: directives (the limit per kernel file)");
            auto st = parseDirective(kf, verb, rest, line);
            if (!st)
                return Error{st.error()};
        } else if (mentionsDirective(text)) {
            return lineError(line, "a kforge: directive must be alone on its line, starting with //");
        }
        if (end == source.size())
            break;
        begin = end + 1;
    }
    if (auto st = checkRequirements(kf); !st)
        return Error{st.error()};

    // Kernel signatures, from what the compiler compiles: comments and literals blanked, inactive
    // preprocessor regions and directive lines (a macro body defines no kernel kforge can bind)
    // left out. Regions kforge cannot decide are read separately, only to explain an error.
    const std::string code = stripComments(source, dialect);
    const std::vector<LogicalLine> lines = logicalLines(code);
    const int lineCount = lines.empty() ? 0 : lines.back().lastLine;
    std::set<std::string> sticky;
    for (const auto& p : kf.params)
        sticky.insert(p.name);
    std::vector<Region> regions = conditionalRegions(lines, lineCount, dialect, sticky);
    std::vector<const LogicalLine*> macroLines;
    for (const LogicalLine& l : lines) {
        const Directive d = directiveOf(l.text);
        if (!d.isDirective)
            continue;
        if ((d.name == "define" || d.name == "undef")
            && regions[static_cast<std::size_t>(l.line - 1)] != Region::Inactive)
            macroLines.push_back(&l);
        for (int k = l.line; k <= l.lastLine; ++k)
            regions[static_cast<std::size_t>(k - 1)] = Region::Inactive;
    }
    const std::string active = blankRegions(code, regions, false);

    std::vector<FoundKernel> found;
    for (const KernelHead& h : findKernelHeads(active, dialect)) {
        FoundKernel f;
        f.sig.name = h.name;
        f.sig.line = lineAt(active, h.start);
        if (found.size() >= kMaxKernels)
            return lineError(f.sig.line, "more than " + std::to_string(kMaxKernels) + " kernels in one file");
        const std::size_t close = matchingParen(active, h.open, 16384);
        if (close == std::string::npos)
            return lineError(f.sig.line, "kernel " + f.sig.name + ": parameter list is not closed");
        const std::string params = trim(active.substr(h.open + 1, close - h.open - 1));
        if (!params.empty() && params != "void") {
            const auto parts = splitTopLevel(params);
            if (parts.size() > kMaxKernelArgs)
                return lineError(f.sig.line, "kernel " + f.sig.name + ": more than " + std::to_string(kMaxKernelArgs)
                                                 + " parameters");
            for (const auto& p : parts) {
                auto arg = parseArg(p, f.sig.line, f.sig.name);
                if (!arg)
                    return Error{arg.error()};
                f.sig.args.push_back(*arg);
            }
        }
        std::size_t after = close + 1;
        while (after < active.size() && isBlankChar(active[after]))
            ++after;
        f.definition = after < active.size() && active[after] == '{';
        f.start = h.start;
        f.end = close + 1;
        found.push_back(std::move(f));
    }
    // A declaration followed by the definition is one kernel, with the definition's names; two
    // definitions would leave kforge guessing which one the compiler keeps.
    std::vector<const FoundKernel*> chosen;
    for (const FoundKernel& f : found) {
        auto it =
            std::find_if(chosen.begin(), chosen.end(), [&](const FoundKernel* c) { return c->sig.name == f.sig.name; });
        if (it == chosen.end()) {
            chosen.push_back(&f);
        } else if (f.definition && (*it)->definition) {
            return lineError(f.sig.line, "kernel " + f.sig.name + " is defined twice (also on line "
                                             + std::to_string((*it)->sig.line)
                                             + "); keep one definition of each kernel");
        } else if (f.definition) {
            *it = &f;
        }
    }
    for (const FoundKernel* f : chosen)
        kf.kernels.push_back(f->sig);

    // A macro or a parameter (a compile-time define) named like a word of a bound signature would
    // make the compiler read another signature than the one arguments are bound from.
    std::set<std::string> signatureWords = {"__global__",        "__kernel",      "kernel",          "void",
                                            "__launch_bounds__", "__attribute__", "__cluster_dims__"};
    for (const FoundKernel* f : chosen) {
        signatureWords.insert(f->sig.name);
        for (const auto& w : wordsIn(active.substr(f->start, f->end - f->start)))
            if (w != "__launch_bounds__" && w != "__attribute__" && w != "__cluster_dims__")
                signatureWords.insert(w);
    }
    // Argument names are bound by position; a macro over one changes nothing kforge relies on, and
    // a parameter with an argument's name gets its own message from LaunchPlan.
    for (const FoundKernel* f : chosen)
        for (const auto& a : f->sig.args)
            if (a.name != f->sig.name)
                signatureWords.erase(a.name);
    std::set<std::string> attributeWords; // __launch_bounds__(BLOCK) may use parameters
    for (const FoundKernel* f : chosen) {
        const std::string head = active.substr(f->start, f->end - f->start);
        for (const char* attr : {"__launch_bounds__", "__attribute__", "__cluster_dims__"})
            for (std::size_t p = head.find(attr); p != std::string::npos; p = head.find(attr, p + 1)) {
                const std::size_t open = head.find('(', p);
                const std::size_t close = open == std::string::npos ? open : matchingParen(head, open);
                if (close != std::string::npos)
                    for (const auto& w : wordsIn(head.substr(open, close - open)))
                        attributeWords.insert(w);
            }
    }
    for (const LogicalLine* l : macroLines) {
        const Directive d = directiveOf(l->text);
        Cursor c(d.rest);
        const std::string name = c.word();
        if (signatureWords.count(name) && !attributeWords.count(name))
            return lineError(l->line, "#" + d.name + " " + name
                                          + " changes a kernel signature that kforge binds launch arguments "
                                            "from; rename the macro");
    }
    for (const auto& p : kf.params)
        if (signatureWords.count(p.name) && !attributeWords.count(p.name))
            return lineError(p.line, "param " + p.name
                                         + " is a compile-time define with the name of a word of a kernel "
                                           "signature; rename the parameter");

    // A tensor map is a kernel argument, so its name must not be another declaration's.
    for (const auto& t : kf.tensorMaps) {
        if (kf.findParam(t.name))
            return lineError(t.line, "tensormap " + t.name + " has the name of a kforge:param");
        for (const auto& sc : kf.scratch)
            if (sc.name == t.name)
                return lineError(t.line, "tensormap " + t.name + " has the name of a kforge:scratch buffer");
    }

    if (kf.launches.empty())
        return Error{"no launch plan: add at least one '// kforge:launch KERNEL grid=(...) block=(...)' line"};
    for (const auto& l : kf.launches)
        if (!kf.findKernel(l.kernel)) {
            // Found when undecidable regions are read too: say so rather than "not defined".
            const std::string maybe = blankRegions(code, regions, true);
            bool conditional = false;
            for (const KernelHead& h : findKernelHeads(maybe, dialect))
                conditional |= h.name == l.kernel;
            if (conditional)
                return lineError(
                    l.line,
                    "launch names kernel '" + l.kernel
                        + "', which is defined only inside an #if/#ifdef "
                          "region whose condition kforge cannot decide; define launched kernels unconditionally");
            std::string known;
            for (const auto& k : kf.kernels)
                known += (known.empty() ? "" : ", ") + k.name;
            return lineError(l.line, "launch names kernel '" + l.kernel
                                         + "', which is not defined in this file (kernels found: "
                                         + (known.empty() ? "none" : known) + ")");
        }
    return kf;
}

const KernelSignature* KernelFile::findKernel(const std::string& name) const {
    for (const auto& k : kernels)
        if (k.name == name)
            return &k;
    return nullptr;
}

const ParamDecl* KernelFile::findParam(const std::string& name) const {
    for (const auto& p : params)
        if (p.name == name)
            return &p;
    return nullptr;
}

const RequireDecl* KernelFile::brokenRequirement(const std::map<std::string, std::int64_t>& values) const {
    Variables vars;
    for (const auto& p : params) {
        const auto it = values.find(p.name);
        vars[p.name] = static_cast<double>(it != values.end() ? it->second : p.value);
    }
    for (const auto& r : requirements) {
        const auto v = Expression::evaluate(r.condition, vars);
        if (!v || *v == 0.0)
            return &r;
    }
    return nullptr;
}

std::string KernelFile::paramText(const std::map<std::string, std::int64_t>& values) const {
    std::map<std::string, std::int64_t> all;
    for (const auto& p : params) {
        const auto it = values.find(p.name);
        all[p.name] = it != values.end() ? it->second : p.value;
    }
    std::string s;
    for (const auto& [name, value] : all)
        s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    return s.empty() ? "no parameters" : s;
}

Status KernelFile::checkOverrides(const std::map<std::string, std::int64_t>& overrides) const {
    for (const auto& [name, value] : overrides) {
        const ParamDecl* p = findParam(name);
        if (!p) {
            std::string declared;
            for (const auto& d : params)
                declared.append(declared.empty() ? "" : ", ").append(d.name);
            return fail("parameter '" + name + "' is not declared by the kernel (it declares "
                        + (declared.empty() ? std::string("none") : declared) + "; declare it with '// kforge:param')");
        }
        if (!p->choices.empty() && std::find(p->choices.begin(), p->choices.end(), value) == p->choices.end()) {
            std::string choices;
            for (std::int64_t c : p->choices)
                choices.append(choices.empty() ? "" : ", ").append(std::to_string(c));
            std::string what = "param " + name + " = " + std::to_string(value);
            what.append(" is not one of its declared choices {").append(choices).append("}");
            return lineError(p->line, what);
        }
    }
    if (const RequireDecl* broken = brokenRequirement(overrides))
        return lineError(broken->line, "require '" + broken->condition + "' does not hold for " + paramText(overrides));
    return success();
}

const TensorMapDecl* KernelFile::findTensorMap(const std::string& name) const {
    for (const auto& t : tensorMaps)
        if (t.name == name)
            return &t;
    return nullptr;
}

} // namespace kforge::spec
