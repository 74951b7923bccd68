// Kernel files on any text, as a candidate (from a language model, a person or a mutation) reaches
// the worker: the directives parse or are refused with a message, the source scanners (comments,
// logical lines, conditional regions, kernel heads, the preprocessor check, and the CUDA worker's
// static check where the CUDA toolkit is built) take it without a crash, every finding points inside
// the file, and a file that parses resolves its launch plan against a task or says why not.

#include "fuzzcheck.h"
#include "kernelfile.h"
#include "launchplan.h"
#include "sourcescan.h"
#include "taskspec.h"

#ifdef KFORGE_FUZZ_CUDA_CHECK
#include "cudastaticcheck.h"
#endif

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

using namespace kforge;

namespace {

// A task with every kind of argument a kernel binds: two inputs of two shapes, an output, a scalar.
const spec::TaskSpec& task() {
    static const spec::TaskSpec t = [] {
        const auto root = nlohmann::json::parse(R"({
            "name": "fuzz", "family": "normalization",
            "sizes": {"M": 33, "N": 1000},
            "scalars": {"eps": {"dtype": "float32", "value": 1e-5}},
            "inputs": [{"name": "x", "dtype": "float32", "shape": ["M", "N"], "init": {"kind": "normal", "mean": 0, "std": 1}},
                       {"name": "w", "dtype": "float16", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
            "outputs": [{"name": "y", "dtype": "float32", "shape": ["M", "N"], "atol": 1e-5, "rtol": 1e-4}],
            "flops": "8 * M * N", "bytes": "2 * M * N * 4 + N * 2",
            "reference": {"cuda": "reference.cu", "opencl": "reference.cl"}})");
        auto spec = spec::TaskSpec::fromJson(root, "fuzz");
        KFORGE_FUZZ_CHECK(spec.ok(), spec ? std::string() : spec.error());
        return *spec;
    }();
    return t;
}

int lineCount(const std::string& source) {
    return spec::lineAt(source, source.size());
}

void scan(const std::string& source, spec::Dialect dialect) {
    const int lines = lineCount(source);
    (void)spec::stripComments(source, dialect);
    const std::vector<spec::LogicalLine> logical = spec::logicalLines(source);
    for (const spec::LogicalLine& l : logical)
        (void)spec::directiveOf(l.text);
    (void)spec::checkedCode(source, dialect);
    (void)spec::findKernelHeads(source, dialect);
    const spec::IncludePolicy policy{[](const std::string& h) { return h == "cuda_fp16.h" || h == "mma.h"; },
                                     "Allowed: cuda_fp16.h, mma.h"};
    for (const spec::SourceFinding& f : spec::checkPreprocessor(source, dialect, policy)) {
        KFORGE_FUZZ_CHECK(!f.message.empty(), "a preprocessor finding without a message");
        KFORGE_FUZZ_CHECK(f.line >= 1 && f.line <= lines, f.message + " at line " + std::to_string(f.line));
    }

    const spec::Expected<spec::KernelFile> kf = spec::KernelFile::parse(source, dialect);
    if (!kf) {
        KFORGE_FUZZ_CHECK(!kf.error().empty(), "a kernel file refused without a message");
        return;
    }
    for (const spec::KernelSignature& k : kf->kernels)
        KFORGE_FUZZ_CHECK(k.line >= 1 && k.line <= lines, k.name + " at line " + std::to_string(k.line));
    (void)kf->checkOverrides({});
    (void)kf->paramText({});
    for (const bool hopper : {false, true}) {
        const spec::Expected<spec::LaunchPlan> plan =
            spec::LaunchPlan::resolve(*kf, task(), task().sizes, {}, spec::DeviceLimits::anyCurrentGpu(hopper));
        KFORGE_FUZZ_CHECK(plan || !plan.error().empty(), "a launch plan refused without a message");
        if (plan)
            KFORGE_FUZZ_CHECK(!plan->launches.empty(), "a plan that launches nothing");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string source(reinterpret_cast<const char*>(data), size);
    if (source.size() > spec::kMaxSourceBytes)
        return 0; // refused by size before any scan (readTextFile, the request's decoder)
    scan(source, spec::Dialect::Cuda);
    scan(source, spec::Dialect::OpenCL);
#ifdef KFORGE_FUZZ_CUDA_CHECK
    const int lines = lineCount(source);
    for (const protocol::Diagnostic& d : cuda::staticCheckCuda(source)) {
        KFORGE_FUZZ_CHECK(!d.message.empty(), "a static-check finding without a message");
        KFORGE_FUZZ_CHECK(d.line >= 0 && d.line <= lines, d.message + " at line " + std::to_string(d.line));
    }
#endif
    return 0;
}
