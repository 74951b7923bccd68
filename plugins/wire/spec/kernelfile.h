#pragma once
// A kernel file in the candidate format: device code plus `// kforge:` directives that declare
// tunable parameters, scratch buffers, TMA tensor maps and the launch plan. Parsing checks the directives' syntax and
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
constexpr std::size_t kMaxTensorMaps = 16;
constexpr std::size_t kMaxTensorMapRank = 5; // what the tensor memory accelerator takes
constexpr std::size_t kMaxRequirements = 16;

struct ParamDecl {
    std::string name;
    std::vector<std::int64_t> choices; // empty for a fixed parameter
    std::int64_t value = 0;            // default
    int line = 0;
};

// `// kforge:require CONDITION`: a condition over the file's parameters that every configuration
// must meet (non-zero), e.g. "TPR <= BLOCK" where larger values would only repeat smaller ones, or
// where the kernel does not compile. The tuner proposes only configurations that meet them all,
// and a launch plan resolved with parameter values that break one is an error.
struct RequireDecl {
    std::string condition;
    int line = 0;
};

struct ScratchDecl {
    std::string name;
    DType dtype = DType::Float32;
    std::string count; // element count expression
    int line = 0;
};

// `// kforge:tensormap NAME BUFFER box=(d0, ...) [swizzle=none|32|64|128]`: a TMA descriptor over
// one of the task's inputs or outputs, encoded on the host (cuTensorMapEncodeTiled) and passed to
// the kernel parameter NAME, declared `const __grid_constant__ CUtensorMap NAME`.
struct TensorMapDecl {
    std::string name;
    std::string buffer;
    std::vector<std::string> box; // extent expressions in the buffer's shape order (outermost first)
    int swizzle = 0;              // bytes: 0 (none), 32, 64 or 128
    int line = 0;
};

struct LaunchDecl {
    std::string kernel;
    std::vector<std::string> grid;  // 1-3 expressions
    std::vector<std::string> block; // 1-3 expressions
    // Thread block cluster (CUDA, compute capability 9.0+): 1-3 expressions, blocks per cluster in
    // each dimension; empty: no cluster (as cluster=(1)).
    std::vector<std::string> cluster;
    std::string smem; // dynamic shared memory bytes, may be empty
    std::string when; // the launch runs only where this is non-zero; empty: always
    int line = 0;
};

struct KernelArg {
    std::string name;
    std::string elementType; // without qualifiers and '*', e.g. "float", "unsigned int"
    bool pointer = false;
    bool isConst = false;
    bool gridConstant = false; // CUDA's __grid_constant__ (not part of elementType)
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
    std::vector<RequireDecl> requirements;
    std::vector<ScratchDecl> scratch;
    std::vector<TensorMapDecl> tensorMaps;
    std::vector<LaunchDecl> launches;
    std::vector<KernelSignature> kernels;

    // Errors read "line 3: ..." so that editors and diagnostics can point at the directive.
    // Kernel signatures are read from active code only: a kernel inside #if 0, or inside a
    // conditional kforge cannot decide, is not bound; two active definitions of one kernel are an
    // error, and so is a macro that renames a word of a bound signature.
    static Expected<KernelFile> parse(const std::string& source, Dialect dialect);

    const KernelSignature* findKernel(const std::string& name) const;
    const ParamDecl* findParam(const std::string& name) const;
    // The first requirement that these parameter values break (a parameter not given takes its
    // default), or null when they meet every one.
    const RequireDecl* brokenRequirement(const std::map<std::string, std::int64_t>& values) const;
    // "BLOCK=256, TPR=512": the values a requirement's message quotes, defaults filled in.
    std::string paramText(const std::map<std::string, std::int64_t>& values) const;
    // Whether `overrides` (parameter values replacing the defaults) keep to the file's own
    // declarations: every name a declared parameter, every value one of its choices, every
    // requirement met. The error names the parameters the file declares, or the line broken and
    // the choices it offers. Where a kernel is resolved, and wherever a configuration is named
    // before that (kforge eval --param).
    Status checkOverrides(const std::map<std::string, std::int64_t>& overrides) const;
    const TensorMapDecl* findTensorMap(const std::string& name) const;
};

} // namespace kforge::spec
