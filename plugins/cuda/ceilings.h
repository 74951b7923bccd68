#pragma once
// The device's measured ceilings: what built-in micro-kernels reach on the open device (DRAM and L2
// bandwidth, FP32 FFMA and FP16/BF16 tensor throughput), so that a kernel's achieved figures can be
// set against what this GPU really does rather than against a datasheet. Measuring takes a second or
// two, so results are kept per device (name, UUID, driver) in a small JSON cache.

#include "cudadriver.h"
#include "nvrtccompiler.h"
#include "protocol.h"

#include <cstddef>
#include <optional>
#include <string>

namespace kforge::cuda {

// One JSON file per device key. Several workers may share the directory: a file is written under a
// private name and renamed into place, so a reader sees a whole entry or none; an entry that cannot
// be read counts as absent.
class CeilingsCache {
public:
    // $KFORGE_CACHE_DIR/ceilings (beside the CUBINs kept directly in $KFORGE_CACHE_DIR, and private
    // to whoever set it), else $XDG_CACHE_HOME/kforge/ceilings, else ~/.cache/kforge/ceilings; ""
    // when none can be formed.
    static std::string defaultDirectory();

    explicit CeilingsCache(std::string directory = defaultDirectory());

    const std::string& directory() const { return m_directory; }
    bool enabled() const { return !m_directory.empty(); }
    std::string pathFor(const std::string& key) const;

    // The stored result for `key`, with cached = true.
    std::optional<protocol::CeilingsResult> load(const std::string& key) const;
    bool store(const std::string& key, const protocol::CeilingsResult& result) const;

private:
    std::string m_directory;
};

// What the micro-kernels need of the open device. Its context must be current on this thread.
struct CeilingsDevice {
    const CudaDriver& driver;
    const NvrtcCompiler& compiler;
    CUstream stream = nullptr;
    int computeCapability = 0;
    int multiprocessors = 0;
    std::size_t l2Bytes = 0;
    std::string name;
};

struct CeilingsMeasurement {
    protocol::CeilingsResult result; // ok, message, measuredAt and ceilings
    CUresult failure = CUDA_SUCCESS; // the CUDA error that ended the measurement, if any
};

// Keys: dram_bytes_per_s (device-to-device copy, read + write bytes), l2_bytes_per_s (re-reads of
// an L2-resident buffer), fp32_flops_per_s (FFMA), fp16_tensor_flops_per_s and
// bf16_tensor_flops_per_s (mma.sync m16n8k16, FP32 accumulation). A ceiling that cannot be measured
// is left out and named in the message; ok when any was measured.
CeilingsMeasurement measureCeilings(const CeilingsDevice& device);

// Now as ISO 8601 UTC: "2026-11-30T12:34:56Z".
std::string utcNow();

} // namespace kforge::cuda
