#pragma once
// Kernel execution times from CUPTI's activity API: the GPU's own start and end timestamps of every
// kernel, with the stream it ran on and its name, so a run can be timed to the nanosecond and
// checked for work that is not the launch plan's. CUPTI is process-wide, so there is one collector
// per process.

#include <cuda.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace kforge::cuda {

struct KernelRecord {
    std::string name;        // the lowered (mangled) name
    std::uint64_t start = 0; // ns, CUPTI's clock (cuptiGetTimestamp)
    std::uint64_t end = 0;
    std::uint32_t streamId = 0;
    std::uint32_t contextId = 0;
    std::uint32_t correlationId = 0;
    std::array<std::int64_t, 3> grid{};
    std::array<std::int64_t, 3> block{};
    std::array<std::int64_t, 3> cluster{}; // blocks per thread block cluster; zeros where CUPTI gives none
    std::int64_t dynamicSharedBytes = 0;
    bool deviceLaunched = false;
};

class CuptiTimer {
public:
    // Never destroyed: CUPTI may hand over buffers from its own thread while the process exits.
    static CuptiTimer& instance();

    CuptiTimer(const CuptiTimer&) = delete;
    CuptiTimer& operator=(const CuptiTimer&) = delete;

    // Starts recording kernel executions; "" on success, else why CUPTI cannot be used (another
    // profiler holds it, the driver is too old, ...). Idempotent.
    std::string enable();
    void disable();
    bool enabled() const { return m_enabled; }

    // CUPTI's ids for a context and a stream, as kernel records carry them; "" on success.
    std::string contextId(CUcontext context, std::uint32_t& id) const;
    std::string streamId(CUcontext context, CUstream stream, std::uint32_t& id) const;

    // Flushes CUPTI and drops every record it held.
    void discard();
    // Flushes CUPTI and hands over the kernel records completed since the last discard/collect.
    // `dropped` counts records CUPTI lost for want of buffer space.
    std::vector<KernelRecord> collect(std::uint64_t& dropped);

    // Now, on the clock of the records' timestamps.
    static std::uint64_t timestamp();
    // CUPTI's API version (e.g. 130001); 0 when unknown.
    static std::uint32_t version();

private:
    CuptiTimer() = default;
    static void bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords);
    static void bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t* buffer, std::size_t size,
                                std::size_t validSize);

    std::mutex m_mutex;
    std::vector<KernelRecord> m_records;
    std::uint64_t m_dropped = 0;
    bool m_registered = false;
    bool m_enabled = false;
};

} // namespace kforge::cuda
