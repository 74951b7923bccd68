#pragma once
// What NVRTC makes of a kernel file, for people to read: its PTX, and its SASS where the toolkit's
// disassembler (nvdisasm, else cuobjdump) is installed. Both keep the source lines they came from:
// PTX through its .loc directives, SASS through nvdisasm's "//## File ..., line N" comments.
// Needs no GPU and no driver.

#include "nvrtccompiler.h"
#include "protocol.h"

#include <string>
#include <vector>

namespace kforge::cuda {

// Compiles `source` with `defines` for compute capability `cc` and lists it; `machineCode` also
// disassembles the CUBIN. The program is named "candidate.cu" in the annotations.
protocol::DisassembleResult listKernel(const NvrtcCompiler& compiler, const std::string& source,
                                       const std::vector<std::string>& defines, int cc, bool machineCode);

// The folders that may hold nvdisasm and cuobjdump, in order: $KFORGE_NVDISASM's, $CUDA_HOME/bin,
// $CUDA_PATH/bin, /usr/local/cuda/bin, the folder beside the include dirs NVRTC uses, $PATH, and
// the source tree's .venv (PyPI's nvidia-cuda-nvdisasm) where the build found one.
std::vector<std::string> toolkitBinDirs(const NvrtcCompiler& compiler);

} // namespace kforge::cuda
