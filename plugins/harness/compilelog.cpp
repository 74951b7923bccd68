#include "compilelog.h"

namespace kforge::harness {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

// Digits at `p` (at most 9, so the number fits an int); returns the end or npos.
std::size_t digits(const std::string& s, std::size_t p, int& value) {
    std::size_t e = p;
    value = 0;
    while (e < s.size() && isDigit(s[e])) {
        if (e - p >= 9)
            return std::string::npos;
        value = value * 10 + (s[e] - '0');
        ++e;
    }
    return e == p ? std::string::npos : e;
}

std::size_t skipSpaces(const std::string& s, std::size_t p) {
    while (p < s.size() && isSpace(s[p]))
        ++p;
    return p;
}

// One of `words` at `p`, followed by ':'; returns the offset after ':' or npos.
std::size_t severityAt(const std::string& s, std::size_t p, std::initializer_list<const char*> words,
                       std::string& which) {
    for (const char* w : words) {
        const std::size_t n = std::char_traits<char>::length(w);
        if (s.compare(p, n, w) == 0) {
            std::size_t q = skipSpaces(s, p + n);
            if (q < s.size() && s[q] == ':') {
                which = w;
                return q + 1;
            }
        }
    }
    return std::string::npos;
}

// "FILE:LINE:COL:" at the start of `s + from`, FILE without blanks: the shortest such FILE.
bool clangPlace(const std::string& s, std::size_t from, LogLocation& loc, std::size_t& after) {
    for (std::size_t p = from; p < s.size() && !isSpace(s[p]); ++p) {
        if (s[p] != ':')
            continue;
        int line = 0, column = 0;
        const std::size_t e1 = digits(s, p + 1, line);
        if (e1 == std::string::npos || e1 >= s.size() || s[e1] != ':')
            continue;
        const std::size_t e2 = digits(s, e1 + 1, column);
        if (e2 == std::string::npos || e2 >= s.size() || s[e2] != ':')
            continue;
        loc.file = s.substr(from, p - from);
        loc.line = line;
        loc.column = column;
        after = e2 + 1;
        return true;
    }
    return false;
}

} // namespace

std::optional<LogLocation> locateLogLine(const std::string& text) {
    std::string line = text;
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    LogLocation loc;
    std::size_t after = 0;
    // PoCL:  error: /root/.cache/pocl/kcache/tempfile_x.cl:14:23: extraneous ')' before ';'
    {
        std::string sev;
        const std::size_t p = severityAt(line, 0, {"fatal error", "error", "warning", "note"}, sev);
        if (p != std::string::npos && clangPlace(line, skipSpaces(line, p), loc, after)) {
            loc.severity = sev;
            loc.message = line.substr(skipSpaces(line, after));
            return loc;
        }
    }
    // clang:  <source>:12:5: error: use of undeclared identifier 'q'
    if (clangPlace(line, 0, loc, after)) {
        std::string sev;
        const std::size_t p =
            severityAt(line, skipSpaces(line, after), {"fatal error", "error", "warning", "note"}, sev);
        if (p != std::string::npos) {
            loc.severity = sev;
            loc.message = line.substr(skipSpaces(line, p));
            return loc;
        }
    }
    // NVRTC:  candidate.cu(12): error: identifier "q" is undefined   (or "warning #20-D:")
    for (std::size_t p = 0; p < line.size() && !isSpace(line[p]); ++p) {
        if (line[p] != '(')
            continue;
        int n = 0;
        const std::size_t e = digits(line, p + 1, n);
        if (e == std::string::npos || e + 1 >= line.size() || line[e] != ')' || line[e + 1] != ':')
            continue;
        std::size_t q = skipSpaces(line, e + 2);
        std::string sev;
        for (const char* w : {"error", "warning", "remark"}) {
            const std::size_t len = std::char_traits<char>::length(w);
            if (line.compare(q, len, w) == 0) {
                sev = w;
                q += len;
                break;
            }
        }
        if (sev.empty())
            return std::nullopt;
        std::size_t r = skipSpaces(line, q);
        if (r < line.size() && line[r] == '#') { // "#20-D"
            while (r < line.size() && !isSpace(line[r]) && line[r] != ':')
                ++r;
            r = skipSpaces(line, r);
        }
        if (r >= line.size() || line[r] != ':')
            return std::nullopt;
        loc.file = line.substr(0, p);
        loc.line = n;
        loc.severity = sev;
        loc.message = line.substr(skipSpaces(line, r + 1));
        return loc;
    }
    return std::nullopt;
}

std::vector<protocol::Diagnostic> parseCompileLog(const std::string& log, const std::string& role) {
    std::vector<protocol::Diagnostic> out;
    std::size_t begin = 0;
    while (begin < log.size()) {
        std::size_t end = log.find('\n', begin);
        if (end == std::string::npos)
            end = log.size();
        const auto loc = locateLogLine(log.substr(begin, end - begin));
        begin = end + 1;
        if (!loc)
            continue;
        protocol::Diagnostic d;
        d.kind = "compile";
        d.role = role;
        d.line = loc->line;
        d.column = loc->column;
        if (loc->severity == "warning")
            d.severity = "warning";
        else if (loc->severity == "note" || loc->severity == "remark")
            d.severity = "info";
        else
            d.severity = "error";
        d.message = loc->message;
        out.push_back(std::move(d));
    }
    return out;
}

std::string filterCompileLog(const std::string& log, const std::function<bool(const std::string& file)>& ownFile) {
    std::string out;
    bool dropping = false;
    int dropped = 0;
    std::size_t begin = 0;
    while (begin < log.size()) {
        std::size_t end = log.find('\n', begin);
        if (end == std::string::npos)
            end = log.size();
        const std::string line = log.substr(begin, end - begin);
        begin = end + 1;
        if (const auto loc = locateLogLine(line)) {
            dropping = !ownFile(loc->file);
            if (dropping) {
                ++dropped;
                continue;
            }
        } else if (dropping) {
            // Lines after a located line quote or explain it (source excerpts, carets, "detected
            // during..."), up to the next located line or a blank line.
            if (line.find_first_not_of(" \t\r") == std::string::npos)
                dropping = false;
            else
                continue;
        }
        out += line;
        out += '\n';
    }
    if (!out.empty() && (log.empty() || log.back() != '\n'))
        out.pop_back();
    if (dropped > 0)
        out += std::string(out.empty() ? "" : "\n") + "(" + std::to_string(dropped)
               + (dropped == 1 ? " message" : " messages") + " about files other than the kernel's own left out)";
    return out;
}

} // namespace kforge::harness
