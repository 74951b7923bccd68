#pragma once
// The rules a CUDA candidate is held to before it is compiled. A candidate is device code and a
// launch plan, nothing more: it may not pull in vendor libraries (cuBLAS, CUTLASS, Thrust...), files
// from outside the kernel file, host code, or runtime calls that allocate, copy or launch on its own.
// Headers that are part of writing a kernel by hand (fp16/bf16/fp8 types, mma.h, cooperative groups,
// block- and warp-level CUB, libcu++) are allowed, and so is inline PTX.

#include "protocol.h"

#include <string>
#include <vector>

namespace kforge::cuda {

// Errors (kind "integrity") reject the candidate; warnings (printf) are reported with it. Lines and
// columns are those of `source`; comments and string literals are ignored.
std::vector<protocol::Diagnostic> staticCheckCuda(const std::string& source);

// Whether `#include <header>` is on the allow-list.
bool isAllowedInclude(const std::string& header);

} // namespace kforge::cuda
