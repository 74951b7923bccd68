#pragma once
// Answers a disassemble request: the kernel file's launch plan is resolved against the task (its
// parameters become the compiler's defines, exactly as an evaluation builds it) and the backend
// shows what its compiler makes of it. Nothing is launched.

#include "protocol.h"

namespace kforge::harness {

class Backend;

protocol::DisassembleResult disassemble(Backend& backend, const protocol::DisassembleRequest& request);

} // namespace kforge::harness
