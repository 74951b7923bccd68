#pragma once
// A kernel file in the candidate format: device code plus `// kforge:` directives that declare
// tunable parameters, scratch buffers and the launch plan. Parsing checks the directives' syntax and
// finds every kernel's signature; LaunchPlan (launchplan.h) then binds them to a task.

#include "dtype.h"
#include "expected.h"
#include "sourcescan.h"

#include <map>
#include <string>
#include <vector>

namespace kforge::spec {

// Bounds on what a kernel file may declare. A file over them is rejected with a "line N: ..." error
// that names the limit, never parsed further.
constexpr std::size_t kMaxDirectiveChars = 4096; // one "// kforge:" line
constexpr std::size_t kMaxDirectives = 256;
constexpr std::size_t kMaxParams = 32;
constexpr std::size_t kMaxChoicesPerParam = 64;
constexpr std::uint64_t kMaxParamCombinations = 65536; // product of the choice counts
constexpr std::size_t kMaxScratch = 16;
constexpr std::size_t kMaxLaunches = 64;
constexpr std::size_t kMaxKernels = 64;
constexpr std::size_t kMaxKernelArgs = 128;

struct ParamDecl {
    std::string name;
    std::vector<std::int64_t> choices; // empty for a fixed parameter
    std::int64_t value = 0;            // default
    int line = 0;
};

struct ScratchDecl {
    std::string name;
    DType dtype = DType::Float32;
    std::string count; // element count expression
    int line = 0;
};

struct LaunchDecl {
    std::string kernel;
    std::vector<std::string> grid;  // 1-3 expressions
    std::vector<std::string> block; // 1-3 expressions
    std::string smem;               // dynamic shared memory bytes, may be empty
    int line = 0;
};

struct KernelArg {
    std::string name;
    std::string elementType; // without qualifiers and '*', e.g. "float", "unsigned int"
    bool pointer = false;
    bool isConst = false;
};

struct KernelSignature {
    std::string name;
    std::vector<KernelArg> args;
    int line = 0;
};

struct KernelFile {
    std::string source;
    Dialect dialect = Dialect::OpenCL;
    std::vector<ParamDecl> params;
    std::vector<ScratchDecl> scratch;
    std::vector<LaunchDecl> launches;
    std::vector<KernelSignature> kernels;

    // Errors read "line 3: ..." so that editors and diagnostics can point at the directive.
    // Kernel signatures are read from active code only: a kernel inside #if 0, or inside a
    // conditional kforge cannot decide, is not bound; two active definitions of one kernel are an
    // error, and so is a macro that renames a word of a bound signature.
    static Expected<KernelFile> parse(const std::string& source, Dialect dialect);

    const KernelSignature* findKernel(const std::string& name) const;
    const ParamDecl* findParam(const std::string& name) const;
};

} // namespace kforge::spec
