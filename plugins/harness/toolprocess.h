#pragma once
// Runs a toolkit program (a disassembler) to completion and collects what it prints: no shell, a
// time limit, and a cap on the output kept, so that a tool that hangs or floods costs one request.

#include "expected.h"

#include <cstddef>
#include <string>
#include <vector>

namespace kforge::harness {

struct ToolOutput {
    int exitCode = -1; // -1 when it did not exit by itself (killed, signalled)
    bool timedOut = false;
    bool truncated = false; // stdout was longer than the cap; the rest was read and dropped
    std::string out;
    std::string err; // the first few KiB of stderr
};

// Runs argv[0] (a path, or a name looked up on PATH) with `argv`, stdin from /dev/null. Fails only
// when the program cannot be started.
spec::Expected<ToolOutput> runTool(const std::vector<std::string>& argv, double timeoutSeconds,
                                   std::size_t maxOutputBytes);

// The first of `candidates` that is an executable file; empty when none is.
std::string firstExecutable(const std::vector<std::string>& candidates);

} // namespace kforge::harness
