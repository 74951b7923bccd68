#pragma once
// Turns a compiler log (clang/PoCL "<source>:12:5: error: ...", NVRTC "kernel.cu(12): error: ...")
// into line-numbered diagnostics, and keeps logs from quoting files other than the kernel's own.

#include "protocol.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kforge::harness {

std::vector<protocol::Diagnostic> parseCompileLog(const std::string& log, const std::string& role);

// A log line that names a place in a file.
struct LogLocation {
    std::string file;
    int line = 0;
    int column = 0;       // 0 where the format has none (NVRTC)
    std::string severity; // as written: "error", "fatal error", "warning", "note", "remark"
    std::string message;
};
// Reads one log line in any of the three formats; linear, with no regular expression.
std::optional<LogLocation> locateLogLine(const std::string& line);

// The log without the messages about files other than the kernel's own (`ownFile` says which
// names are its own): a message block (a located line and the lines that quote or explain it)
// about another file is replaced by one line saying so. A candidate cannot make the compiler open
// another file (the static checks refuse it); this is the second line of defence, so that a log
// never shows what a host file contains.
std::string filterCompileLog(const std::string& log, const std::function<bool(const std::string& file)>& ownFile);

} // namespace kforge::harness
