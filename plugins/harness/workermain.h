#pragma once
// The main loop every worker executable shares: prints the hello line, then answers one JSON line
// per request line on stdin until shutdown or end of input. Command line: --probe (print the probe
// as JSON and exit), --version, --help.

#include "backend.h"

namespace kforge::harness {

// Exit codes, mapped to messages by the worker pool.
enum WorkerExit : int {
    ExitOk = 0,
    ExitUsage = 2,
    ExitDeviceLost = 3, // a request left the device unusable; start a new worker
};

int runWorker(Backend& backend, int argc, char** argv);

} // namespace kforge::harness
