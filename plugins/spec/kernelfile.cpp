#include "kernelfile.h"

#include "taskspec.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

namespace kforge::spec {

namespace {

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

Error lineError(int line, const std::string& what) { return Error{"line " + std::to_string(line) + ": " + what}; }

// Splits on commas that are not inside parentheses or braces.
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
    if (t.empty())
        return false;
    std::size_t pos = 0;
    try {
        out = std::stoll(t, &pos);
    } catch (...) {
        return false;
    }
    return pos == t.size();
}

// "name=(a, b)" or "name=expr" at the start of `rest`; consumes it.
bool takeKeyValue(std::string& rest, std::string& key, std::string& value) {
    rest = trim(rest);
    const auto eq = rest.find('=');
    if (eq == std::string::npos)
        return false;
    key = trim(rest.substr(0, eq));
    std::string tail = trim(rest.substr(eq + 1));
    if (!tail.empty() && tail[0] == '(') {
        int depth = 0;
        std::size_t i = 0;
        for (; i < tail.size(); ++i) {
            if (tail[i] == '(')
                ++depth;
            else if (tail[i] == ')' && --depth == 0)
                break;
        }
        if (i == tail.size())
            return false;
        value = tail.substr(0, i + 1);
        rest = tail.substr(i + 1);
        return true;
    }
    // An unparenthesised value runs to the next " key=" or the end.
    static const std::regex nextKey(R"(\s+[A-Za-z_]\w*\s*=)");
    std::smatch m;
    if (std::regex_search(tail, m, nextKey)) {
        value = trim(tail.substr(0, m.position(0)));
        rest = tail.substr(m.position(0));
    } else {
        value = trim(tail);
        rest.clear();
    }
    return true;
}

Expected<std::vector<std::string>> dims(const std::string& value, int line, const std::string& key) {
    std::string v = trim(value);
    if (v.size() >= 2 && v.front() == '(' && v.back() == ')')
        v = v.substr(1, v.size() - 2);
    auto parts = splitTopLevel(v);
    if (parts.empty() || parts.size() > 3)
        return lineError(line, key + " needs 1 to 3 dimensions, e.g. " + key + "=(cdiv(N, 256))");
    for (const auto& p : parts)
        if (p.empty())
            return lineError(line, key + " has an empty dimension");
    return parts;
}

Status parseDirective(KernelFile& kf, const std::string& verb, const std::string& rest, int line) {
    if (verb == "param") {
        // NAME in {a, b, c} = default   |   NAME = value
        static const std::regex choice(R"(^([A-Za-z_]\w*)\s+in\s+\{([^}]*)\}\s*=\s*(\S+)\s*$)");
        static const std::regex fixed(R"(^([A-Za-z_]\w*)\s*=\s*(\S+)\s*$)");
        std::smatch m;
        ParamDecl p;
        p.line = line;
        if (std::regex_match(rest, m, choice)) {
            p.name = m[1];
            for (const auto& c : splitTopLevel(m[2])) {
                std::int64_t v;
                if (!parseInt(c, v))
                    return lineError(line, "param " + p.name + ": choice '" + c + "' is not an integer");
                p.choices.push_back(v);
            }
            if (p.choices.empty())
                return lineError(line, "param " + p.name + ": no choices");
            if (!parseInt(m[3], p.value))
                return lineError(line, "param " + p.name + ": default '" + std::string(m[3]) + "' is not an integer");
            if (std::find(p.choices.begin(), p.choices.end(), p.value) == p.choices.end())
                return lineError(line, "param " + p.name + ": default " + std::to_string(p.value) + " is not one of its choices");
        } else if (std::regex_match(rest, m, fixed)) {
            p.name = m[1];
            if (!parseInt(m[2], p.value))
                return lineError(line, "param " + p.name + ": value '" + std::string(m[2]) + "' is not an integer");
        } else {
            return lineError(line, "param: expected 'NAME in {v1, v2, ...} = DEFAULT' or 'NAME = VALUE'");
        }
        if (kf.findParam(p.name))
            return lineError(line, "param " + p.name + " is declared twice");
        kf.params.push_back(std::move(p));
        return success();
    }
    if (verb == "scratch") {
        static const std::regex re(R"(^([A-Za-z_]\w*)\s+([A-Za-z0-9_]+)\s*\[(.+)\]\s*$)");
        std::smatch m;
        if (!std::regex_match(rest, m, re))
            return lineError(line, "scratch: expected 'NAME DTYPE [COUNT EXPRESSION]'");
        auto dt = parseDType(m[2].str());
        if (!dt)
            return lineError(line, "scratch " + std::string(m[1]) + ": unknown dtype '" + std::string(m[2]) + "' (known: " + dtypeNames() + ")");
        for (const auto& s : kf.scratch)
            if (s.name == m[1])
                return lineError(line, "scratch " + s.name + " is declared twice");
        kf.scratch.push_back({m[1], *dt, trim(m[3]), line});
        return success();
    }
    if (verb == "launch") {
        static const std::regex head(R"(^([A-Za-z_]\w*)\s*(.*)$)");
        std::smatch m;
        if (!std::regex_match(rest, m, head))
            return lineError(line, "launch: expected 'KERNEL grid=(...) block=(...) [smem=BYTES]'");
        LaunchDecl l;
        l.kernel = m[1];
        l.line = line;
        std::string tail = m[2];
        while (!trim(tail).empty()) {
            std::string key, value;
            if (!takeKeyValue(tail, key, value))
                return lineError(line, "launch " + l.kernel + ": cannot read '" + trim(tail) + "' (expected key=value)");
            if (key == "grid" || key == "block") {
                auto d = dims(value, line, key);
                if (!d)
                    return Error{d.error()};
                (key == "grid" ? l.grid : l.block) = *d;
            } else if (key == "smem") {
                l.smem = trim(value);
            } else {
                return lineError(line, "launch " + l.kernel + ": unknown key '" + key + "' (known: grid, block, smem)");
            }
        }
        if (l.grid.empty() || l.block.empty())
            return lineError(line, "launch " + l.kernel + ": needs both grid=(...) and block=(...)");
        kf.launches.push_back(std::move(l));
        return success();
    }
    return lineError(line, "unknown directive 'kforge:" + verb + "' (known: param, scratch, launch)");
}

int lineOf(const std::string& s, std::size_t pos) {
    return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

Expected<KernelArg> parseArg(const std::string& text, int line, const std::string& kernel) {
    std::string t = text;
    // Drop attributes and array brackets; keep '*' as a token.
    t = std::regex_replace(t, std::regex(R"(__attribute__\s*\(\(.*?\)\))"), " ");
    t = std::regex_replace(t, std::regex(R"(\*)"), " * ");
    std::istringstream in(t);
    std::vector<std::string> tokens;
    for (std::string tok; in >> tok;)
        tokens.push_back(tok);
    if (tokens.size() < 2)
        return lineError(line, "kernel " + kernel + ": cannot read parameter '" + trim(text) + "'");
    KernelArg a;
    a.name = tokens.back();
    if (!isIdentifier(a.name))
        return lineError(line, "kernel " + kernel + ": cannot read the name of parameter '" + trim(text) + "'");
    tokens.pop_back();
    static const std::vector<std::string> qualifiers = {"__global", "global", "__constant", "constant", "restrict",
                                                        "__restrict", "__restrict__", "volatile", "__local", "local",
                                                        "__private", "private", "__read_only", "__write_only"};
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

} // namespace

std::string stripComments(const std::string& s) {
    std::string out = s;
    enum { Code, Line, Block, Str, Chr } state = Code;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const char c = s[i];
        const char n = i + 1 < s.size() ? s[i + 1] : '\0';
        switch (state) {
        case Code:
            if (c == '/' && n == '/') {
                state = Line;
                out[i] = out[i + 1] = ' ';
                ++i;
            } else if (c == '/' && n == '*') {
                state = Block;
                out[i] = out[i + 1] = ' ';
                ++i;
            } else if (c == '"') {
                state = Str;
            } else if (c == '\'') {
                state = Chr;
            }
            break;
        case Line:
            if (c == '\n')
                state = Code;
            else
                out[i] = ' ';
            break;
        case Block:
            if (c == '*' && n == '/') {
                out[i] = out[i + 1] = ' ';
                ++i;
                state = Code;
            } else if (c != '\n') {
                out[i] = ' ';
            }
            break;
        case Str:
        case Chr:
            if (c == '\\') {
                out[i] = ' ';
                if (i + 1 < out.size() && s[i + 1] != '\n')
                    out[++i] = ' ';
            } else if ((state == Str && c == '"') || (state == Chr && c == '\'')) {
                state = Code;
            } else if (c != '\n') {
                out[i] = ' ';
            }
            break;
        }
    }
    return out;
}

Expected<KernelFile> KernelFile::parse(const std::string& source, Dialect dialect) {
    KernelFile kf;
    kf.source = source;
    kf.dialect = dialect;

    // Directives live in line comments: "// kforge:verb rest".
    static const std::regex directive(R"(^\s*//\s*kforge:([A-Za-z_]+)\s*(.*?)\s*$)");
    std::istringstream in(source);
    int line = 0;
    for (std::string text; std::getline(in, text);) {
        ++line;
        std::smatch m;
        if (std::regex_match(text, m, directive)) {
            auto st = parseDirective(kf, m[1], m[2], line);
            if (!st)
                return Error{st.error()};
        } else if (text.find("kforge:") != std::string::npos && text.find("//") != std::string::npos
                   && std::regex_search(text, std::regex(R"(//\s*kforge:)"))) {
            return lineError(line, "a kforge: directive must be alone on its line, starting with //");
        }
    }

    // Kernel signatures.
    const std::string code = stripComments(source);
    static const std::regex openclHead(
        R"((?:__kernel|\bkernel)\s+(?:__attribute__\s*\(\(.*?\)\)\s*)*void\s+([A-Za-z_]\w*)\s*\()");
    static const std::regex cudaHead(
        R"(__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\()");
    const std::regex& head = dialect == Dialect::OpenCL ? openclHead : cudaHead;
    for (auto it = std::sregex_iterator(code.begin(), code.end(), head); it != std::sregex_iterator(); ++it) {
        const std::size_t open = static_cast<std::size_t>(it->position(0) + it->length(0)) - 1;
        int depth = 0;
        std::size_t close = open;
        for (; close < code.size(); ++close) {
            if (code[close] == '(')
                ++depth;
            else if (code[close] == ')' && --depth == 0)
                break;
        }
        KernelSignature sig;
        sig.name = (*it)[1];
        sig.line = lineOf(code, static_cast<std::size_t>(it->position(0)));
        if (close >= code.size())
            return lineError(sig.line, "kernel " + sig.name + ": parameter list is not closed");
        const std::string params = trim(code.substr(open + 1, close - open - 1));
        if (!params.empty() && params != "void") {
            for (const auto& p : splitTopLevel(params)) {
                auto arg = parseArg(p, sig.line, sig.name);
                if (!arg)
                    return Error{arg.error()};
                sig.args.push_back(*arg);
            }
        }
        if (kf.findKernel(sig.name))
            continue; // a declaration followed by the definition
        kf.kernels.push_back(std::move(sig));
    }

    if (kf.launches.empty())
        return Error{"no launch plan: add at least one '// kforge:launch KERNEL grid=(...) block=(...)' line"};
    for (const auto& l : kf.launches)
        if (!kf.findKernel(l.kernel)) {
            std::string known;
            for (const auto& k : kf.kernels)
                known += (known.empty() ? "" : ", ") + k.name;
            return lineError(l.line, "launch names kernel '" + l.kernel + "', which is not defined in this file (kernels found: "
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

} // namespace kforge::spec
