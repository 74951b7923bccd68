#pragma once
// A kernel file's launch plan resolved against a task and its sizes: every expression evaluated,
// every kernel argument bound by name to a buffer or a value, every launch checked against the
// device's limits. Nothing runs until this succeeds.

#include "kernelfile.h"
#include "taskspec.h"

#include <array>
#include <cstdint>

namespace kforge::spec {

struct DeviceLimits {
    std::uint64_t maxBlockThreads = 1024; // work-group size
    std::array<std::uint64_t, 3> maxBlockDims{1024, 1024, 64};
    std::array<std::uint64_t, 3> maxGridDims{2147483647ull, 65535, 65535};
    std::uint64_t maxSharedBytes = 48 * 1024; // dynamic shared memory per block
};

// Bounds no device limit gives: scratch memory per plan, and work items (grid * block threads) per
// launch, which also keeps every product far from overflowing 64 bits.
constexpr std::uint64_t kMaxScratchBytes = 4ull << 30;
constexpr std::uint64_t kMaxWorkItems = 1ull << 40;

struct ArgBinding {
    enum class Kind { Input, Output, Scratch, Size, Scalar };
    Kind kind = Kind::Size;
    std::string name;
    int index = 0;           // into task inputs/outputs or plan scratch, by kind
    std::string elementType; // as declared by the kernel
    double value = 0.0;      // for Size and Scalar
};

struct ResolvedLaunch {
    std::string kernel;
    std::array<std::uint64_t, 3> grid{1, 1, 1};
    std::array<std::uint64_t, 3> block{1, 1, 1};
    int dims = 1;
    std::uint64_t smemBytes = 0;
    std::vector<ArgBinding> args;
    int line = 0;
};

struct ResolvedScratch {
    std::string name;
    DType dtype = DType::Float32;
    std::uint64_t count = 0;
};

struct LaunchPlan {
    std::map<std::string, std::int64_t> params; // final values (defaults overridden)
    std::vector<ResolvedScratch> scratch;
    std::vector<ResolvedLaunch> launches;

    // Compiler defines for the parameters: "-D NAME=value" pieces, in declaration order.
    std::vector<std::string> defines;

    // Resolves `kf` for `task` at `sizes`. `overrides` replaces parameter defaults; a value outside
    // a parameter's declared choices is an error.
    static Expected<LaunchPlan> resolve(const KernelFile& kf, const TaskSpec& task, const Sizes& sizes,
                                        const std::map<std::string, std::int64_t>& overrides,
                                        const DeviceLimits& limits);
};

} // namespace kforge::spec
