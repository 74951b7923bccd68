#pragma once
// Turns a compiler log (clang/PoCL "<source>:12:5: error: ...", NVRTC "kernel.cu(12): error: ...")
// into line-numbered diagnostics.

#include "protocol.h"

#include <string>
#include <vector>

namespace kforge::harness {

std::vector<protocol::Diagnostic> parseCompileLog(const std::string& log, const std::string& role);

} // namespace kforge::harness
