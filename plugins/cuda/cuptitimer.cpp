#include "cuptitimer.h"

#include <cupti.h>

#include <cstdlib>
#include <new>

namespace kforge::cuda {

namespace {

// Large enough for thousands of kernel records; a run of a launch plan needs a handful.
constexpr std::size_t kBufferBytes = 1 << 20;
constexpr std::size_t kBufferAlign = 8;

#if CUPTI_API_VERSION >= 130000
using CuptiKernel = CUpti_ActivityKernel10;
#else
using CuptiKernel = CUpti_ActivityKernel9;
#endif

std::string cuptiError(CUptiResult r) {
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "CUPTI error " + std::to_string(static_cast<int>(r));
}

} // namespace

CuptiTimer& CuptiTimer::instance() {
    static CuptiTimer* timer = new CuptiTimer;
    return *timer;
}

void CuptiTimer::bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *maxRecords = 0; // as many as fit
}

void CuptiTimer::bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t* buffer, std::size_t /*size*/,
                                 std::size_t validSize) {
    CuptiTimer& self = instance();
    std::vector<KernelRecord> records;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
        // Only kernels count: memsets (the cache flush), copies and the like are not the plan's work.
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const auto* k = reinterpret_cast<const CuptiKernel*>(record);
        KernelRecord r;
        r.name = k->name ? k->name : "";
        r.start = k->start;
        r.end = k->end;
        r.streamId = k->streamId;
        r.contextId = k->contextId;
        r.correlationId = k->correlationId;
        r.grid = {k->gridX, k->gridY, k->gridZ};
        r.block = {k->blockX, k->blockY, k->blockZ};
        r.cluster = {k->clusterX, k->clusterY, k->clusterZ};
        r.dynamicSharedBytes = k->dynamicSharedMemory;
#if CUPTI_API_VERSION >= 130000
        r.deviceLaunched = k->isDeviceLaunched != 0;
#endif
        records.push_back(std::move(r));
    }
    std::size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(context, streamId, &dropped);
    std::free(buffer);

    std::lock_guard lock(self.m_mutex);
    self.m_dropped += dropped;
    for (auto& r : records)
        self.m_records.push_back(std::move(r));
}

std::string CuptiTimer::enable() {
    std::lock_guard lock(m_mutex);
    if (m_enabled)
        return {};
    if (!m_registered) {
        if (const CUptiResult r = cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted); r != CUPTI_SUCCESS)
            return "cuptiActivityRegisterCallbacks failed with " + cuptiError(r);
        m_registered = true;
    }
    // CONCURRENT_KERNEL, unlike KERNEL, leaves kernels free to overlap as they would untraced.
    if (const CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
        std::string why = "cuptiActivityEnable(CONCURRENT_KERNEL) failed with " + cuptiError(r);
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            why += "; another profiler (Nsight, a sanitizer) is attached";
        else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            why += "; this user may not trace the GPU";
        return why;
    }
    m_enabled = true;
    return {};
}

void CuptiTimer::disable() {
    {
        std::lock_guard lock(m_mutex);
        if (!m_enabled)
            return;
        m_enabled = false;
    }
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

std::string CuptiTimer::contextId(CUcontext context, std::uint32_t& id) const {
    if (const CUptiResult r = cuptiGetContextId(context, &id); r != CUPTI_SUCCESS)
        return "cuptiGetContextId failed with " + cuptiError(r);
    return {};
}

std::string CuptiTimer::streamId(CUcontext context, CUstream stream, std::uint32_t& id) const {
    if (const CUptiResult r = cuptiGetStreamIdEx(context, stream, 0, &id); r != CUPTI_SUCCESS)
        return "cuptiGetStreamIdEx failed with " + cuptiError(r);
    return {};
}

void CuptiTimer::discard() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lock(m_mutex);
    m_records.clear();
    m_dropped = 0;
}

std::vector<KernelRecord> CuptiTimer::collect(std::uint64_t& dropped) {
    // A forced flush hands over partly filled buffers too; it returns once the callbacks have run.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lock(m_mutex);
    std::vector<KernelRecord> out;
    out.swap(m_records);
    dropped = m_dropped;
    m_dropped = 0;
    return out;
}

std::uint64_t CuptiTimer::timestamp() {
    std::uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

std::uint32_t CuptiTimer::version() {
    std::uint32_t v = 0;
    return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

} // namespace kforge::cuda
