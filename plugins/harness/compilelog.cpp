#include "compilelog.h"

#include <regex>
#include <sstream>

namespace kforge::harness {

std::vector<protocol::Diagnostic> parseCompileLog(const std::string& log, const std::string& role) {
    // clang style:  <source>:12:5: error: use of undeclared identifier 'q'
    static const std::regex clang(R"(^(?:\S*?):(\d+):(\d+):\s*(fatal error|error|warning|note):\s*(.*)$)");
    // NVRTC style:  candidate.cu(12): error: identifier "q" is undefined
    static const std::regex nvrtc(R"(^(?:\S*?)\((\d+)\):\s*(error|warning|remark)(?:\s*#\S+-\w)?:\s*(.*)$)");
    // PoCL style:  error: /root/.cache/pocl/kcache/tempfile_x.cl:14:23: extraneous ')' before ';'
    static const std::regex pocl(R"(^(fatal error|error|warning|note):\s*(?:\S*?):(\d+):(\d+):\s*(.*)$)");
    std::vector<protocol::Diagnostic> out;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        std::smatch m;
        protocol::Diagnostic d;
        d.kind = "compile";
        d.role = role;
        if (std::regex_match(line, m, clang)) {
            d.line = std::stoi(m[1]);
            d.column = std::stoi(m[2]);
            d.severity = m[3] == "warning" ? "warning" : m[3] == "note" ? "info" : "error";
            d.message = m[4];
        } else if (std::regex_match(line, m, pocl)) {
            d.line = std::stoi(m[2]);
            d.column = std::stoi(m[3]);
            d.severity = m[1] == "warning" ? "warning" : m[1] == "note" ? "info" : "error";
            d.message = m[4];
        } else if (std::regex_match(line, m, nvrtc)) {
            d.line = std::stoi(m[1]);
            d.severity = m[2] == "error" ? "error" : m[2] == "warning" ? "warning" : "info";
            d.message = m[3];
        } else {
            continue;
        }
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace kforge::harness
