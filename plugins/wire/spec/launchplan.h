#pragma once
// A kernel file's launch plan resolved against a task and its sizes: every expression evaluated,
// every kernel argument bound by name to a buffer or a value, every launch checked against the
// device's limits. Nothing runs until this succeeds.

#include "kernelfile.h"
#include "taskspec.h"

#include <array>
#include <cstdint>
#include <string>

namespace kforge::spec {

struct DeviceLimits {
    std::uint64_t maxBlockThreads = 1024; // work-group size
    std::array<std::uint64_t, 3> maxBlockDims{1024, 1024, 64};
    std::array<std::uint64_t, 3> maxGridDims{2147483647ull, 65535, 65535};
    std::uint64_t maxSharedBytes = 48 * 1024; // dynamic shared memory per block
    // Multiprocessors (CUDA SMs, OpenCL compute units): the variable SMS in launch expressions, so
    // that a persistent kernel can size its grid to the device; 0 where the device is not known.
    std::uint64_t multiprocessors = 0;
    // Whether launches may take TMA tensor maps (// kforge:tensormap): a CUDA GPU of compute
    // capability 9.0 or newer whose driver can encode them.
    bool tensorMaps = false;
    // The most blocks a thread block cluster (cluster=) may have; 0 where the backend has no
    // clusters. CUDA GPUs of compute capability 9.0 and newer: kPortableClusterBlocks.
    std::uint64_t maxClusterBlocks = 0;

    // The most any current GPU allows (227 KiB of shared memory per block, an H100's or H200's 132
    // multiprocessors), with tensor maps and clusters where `hopper`: for resolving a plan where no
    // device is at hand, so that a plan that fits some GPU resolves.
    static DeviceLimits anyCurrentGpu(bool hopper);
};

// "(a, b, c)": the first `dims` extents of a grid, block or cluster, as a launch directive writes
// them, for launch messages.
template <typename T> std::string extentsText(const std::array<T, 3>& v, int dims = 3) {
    std::string s = "(";
    for (int d = 0; d < dims; ++d)
        s += (d ? ", " : "") + std::to_string(v[static_cast<std::size_t>(d)]);
    return s + ")";
}

// The cluster size every GPU with clusters runs (larger ones need a per-kernel opt-in that kforge
// does not make).
constexpr std::uint64_t kPortableClusterBlocks = 8;

// Bounds no device limit gives: scratch memory per plan, and work items (grid * block threads) per
// launch, which also keeps every product far from overflowing 64 bits.
constexpr std::uint64_t kMaxScratchBytes = 4ull << 30;
constexpr std::uint64_t kMaxWorkItems = 1ull << 40;

struct ArgBinding {
    enum class Kind { Input, Output, Scratch, Size, Scalar, TensorMap };
    Kind kind = Kind::Size;
    std::string name;
    int index = 0;           // into task inputs/outputs, plan scratch or plan tensorMaps, by kind
    std::string elementType; // as declared by the kernel
    double value = 0.0;      // for Size and Scalar
};

// A TMA descriptor to encode for a launch (cuTensorMapEncodeTiled), over a dense row-major
// input or output of the task at the plan's sizes. Dimensions are innermost first, as the driver
// takes them; every bound is checked at resolution.
struct ResolvedTensorMap {
    std::string name;
    ArgBinding::Kind bufferKind = ArgBinding::Kind::Input; // Input or Output
    int buffer = 0;                                        // index into the task's inputs or outputs
    std::string bufferName;                                // for messages
    DType dtype = DType::Float32;
    std::vector<std::uint64_t> dims;    // elements per dimension, innermost first
    std::vector<std::uint64_t> strides; // bytes between consecutive indices of dims 1..rank-1
    std::vector<std::uint32_t> box;     // box extent per dimension, innermost first
    int swizzle = 0;                    // bytes: 0 (none), 32, 64 or 128
    int line = 0;                       // of the // kforge:tensormap directive
};

// TMA's bounds on a tensor map's global layout (cuTensorMapEncodeTiled).
constexpr std::uint64_t kMaxTensorMapDim = 1ull << 32;
constexpr std::uint64_t kMaxTensorMapStride = 1ull << 40; // exclusive
constexpr std::uint32_t kMaxTensorMapBox = 256;
constexpr std::uint64_t kTensorMapAlign = 16; // strides and the inner box row, in bytes

struct ResolvedLaunch {
    std::string kernel;
    std::array<std::uint64_t, 3> grid{1, 1, 1};
    std::array<std::uint64_t, 3> block{1, 1, 1};
    // Blocks per thread block cluster in each dimension; {1, 1, 1}: no cluster (an ordinary launch).
    // Every grid extent is a multiple of the cluster's.
    std::array<std::uint64_t, 3> cluster{1, 1, 1};
    int dims = 1;
    std::uint64_t smemBytes = 0;
    std::vector<ArgBinding> args;
    int line = 0;

    std::uint64_t clusterBlocks() const { return cluster[0] * cluster[1] * cluster[2]; }
};

struct ResolvedScratch {
    std::string name;
    DType dtype = DType::Float32;
    std::uint64_t count = 0;
};

struct LaunchPlan {
    std::map<std::string, std::int64_t> params; // final values (defaults overridden)
    std::vector<ResolvedScratch> scratch;
    std::vector<ResolvedTensorMap> tensorMaps; // those bound by the launches below
    std::vector<ResolvedLaunch> launches;      // those whose when= holds, in file order

    // Compiler defines for the parameters: "-D NAME=value" pieces, in declaration order.
    std::vector<std::string> defines;

    // Resolves `kf` for `task` at `sizes`. `overrides` replaces parameter defaults; a value outside
    // a parameter's declared choices is an error. A launch whose when= is zero at these sizes is
    // left out (its expressions only syntax-checked); no launch left is an error.
    static Expected<LaunchPlan> resolve(const KernelFile& kf, const TaskSpec& task, const Sizes& sizes,
                                        const std::map<std::string, std::int64_t>& overrides,
                                        const DeviceLimits& limits);
};

} // namespace kforge::spec
