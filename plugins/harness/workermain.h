#pragma once
// The main loop every worker executable shares: prints the hello line, then answers one JSON line
// per request line on stdin until shutdown or end of input. Command line: --probe (print the probe
// as JSON and exit), --version, --help.

#include "backend.h"

namespace kforge::harness {

using protocol::ExitDeviceLost;
using protocol::ExitOk;
using protocol::ExitUsage;

int runWorker(Backend& backend, int argc, char** argv);

} // namespace kforge::harness
