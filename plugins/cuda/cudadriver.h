#pragma once
// The CUDA driver API, loaded at run time. The worker never links libcuda: a machine without the
// NVIDIA driver must still start the worker, compile with NVRTC and answer every request with a
// clear message rather than a loader error. cuda.h is used for its types only; every entry point is
// looked up with dlsym under the versioned name that cuda.h maps the plain name to.

#include <cuda.h>

#include <string>

namespace kforge::cuda {

// X(member, symbol, optional): the member is a pointer of the symbol's type. A missing required
// symbol means the driver is too old for this worker; optional ones are checked before use.
#define KFORGE_CUDA_DRIVER_FUNCTIONS(X)                                                                                \
    X(init, cuInit, false)                                                                                             \
    X(driverGetVersion, cuDriverGetVersion, false)                                                                     \
    X(getErrorName, cuGetErrorName, false)                                                                             \
    X(getErrorString, cuGetErrorString, false)                                                                         \
    X(deviceGetCount, cuDeviceGetCount, false)                                                                         \
    X(deviceGet, cuDeviceGet, false)                                                                                   \
    X(deviceGetName, cuDeviceGetName, false)                                                                           \
    X(deviceGetAttribute, cuDeviceGetAttribute, false)                                                                 \
    X(deviceTotalMem, cuDeviceTotalMem_v2, false)                                                                      \
    X(memGetInfo, cuMemGetInfo_v2, false)                                                                              \
    X(deviceGetPCIBusId, cuDeviceGetPCIBusId, true)                                                                    \
    X(deviceGetUuid, cuDeviceGetUuid_v2, true)                                                                         \
    X(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, false)                                                         \
    X(devicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, false)                                                    \
    X(ctxSetCurrent, cuCtxSetCurrent, false)                                                                           \
    X(ctxSynchronize, cuCtxSynchronize, false)                                                                         \
    X(streamCreate, cuStreamCreate, false)                                                                             \
    X(streamDestroy, cuStreamDestroy_v2, false)                                                                        \
    X(streamSynchronize, cuStreamSynchronize, false)                                                                   \
    X(eventCreate, cuEventCreate, false)                                                                               \
    X(eventDestroy, cuEventDestroy_v2, false)                                                                          \
    X(eventRecord, cuEventRecord, false)                                                                               \
    X(eventSynchronize, cuEventSynchronize, false)                                                                     \
    X(eventElapsedTime, cuEventElapsedTime_v2, true)                                                                   \
    X(memAlloc, cuMemAlloc_v2, false)                                                                                  \
    X(memFree, cuMemFree_v2, false)                                                                                    \
    X(memcpyHtoDAsync, cuMemcpyHtoDAsync_v2, false)                                                                    \
    X(memcpyDtoHAsync, cuMemcpyDtoHAsync_v2, false)                                                                    \
    X(memsetD8Async, cuMemsetD8Async, false)                                                                           \
    X(memsetD16Async, cuMemsetD16Async, false)                                                                         \
    X(memsetD32Async, cuMemsetD32Async, false)                                                                         \
    X(moduleLoadData, cuModuleLoadData, false)                                                                         \
    X(moduleUnload, cuModuleUnload, false)                                                                             \
    X(moduleGetFunction, cuModuleGetFunction, false)                                                                   \
    X(moduleGetGlobal, cuModuleGetGlobal_v2, false)                                                                    \
    X(funcGetAttribute, cuFuncGetAttribute, false)                                                                     \
    X(funcSetAttribute, cuFuncSetAttribute, false)                                                                     \
    X(funcGetParamInfo, cuFuncGetParamInfo, true)                                                                      \
    X(occupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, false)                   \
    X(occupancyMaxActiveClusters, cuOccupancyMaxActiveClusters, true)                                                  \
    X(launchKernel, cuLaunchKernel, false)                                                                             \
    X(launchKernelEx, cuLaunchKernelEx, true)                                                                          \
    X(tensorMapEncodeTiled, cuTensorMapEncodeTiled, true)

// The process's one handle on libcuda.so.1, opened on first use and never closed (CUPTI and the
// driver's own threads may still call into it while the process exits).
class CudaDriver {
public:
    static const CudaDriver& instance();

    CudaDriver(const CudaDriver&) = delete;
    CudaDriver& operator=(const CudaDriver&) = delete;

    // True when libcuda loaded with every required entry point and cuInit succeeded.
    bool usable() const { return m_problem.empty(); }
    // Why the driver cannot be used, ready for users: "no NVIDIA driver: libcuda.so.1 could not be
    // loaded (...); install the NVIDIA driver", a missing symbol, or cuInit's error.
    const std::string& problem() const { return m_problem; }
    bool loaded() const { return m_handle != nullptr; }

    // Driver API version as cuDriverGetVersion reports it (13000 for CUDA 13.0); 0 when unknown.
    int version() const { return m_version; }
    // "13.0"
    std::string versionText() const;
    // The kernel module's release ("580.159.04") from /proc, or "" when it cannot be read.
    static std::string kernelModuleVersion();

    // "CUDA_ERROR_ILLEGAL_ADDRESS", or "CUDA error <n>" when the driver cannot name it.
    std::string errorName(CUresult r) const;
    // "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"
    std::string describe(CUresult r) const;

// NOLINTNEXTLINE(bugprone-macro-parentheses): `member` is a declarator, which takes no parentheses
#define KFORGE_CUDA_DRIVER_MEMBER(member, symbol, optional) decltype(&::symbol) member = nullptr;
    KFORGE_CUDA_DRIVER_FUNCTIONS(KFORGE_CUDA_DRIVER_MEMBER)
#undef KFORGE_CUDA_DRIVER_MEMBER

    // Older drivers lack cuEventElapsedTime_v2; the first version has the same signature.
    decltype(&::cuEventElapsedTime_v2) eventElapsed = nullptr;

private:
    CudaDriver();
    void load();

    void* m_handle = nullptr;
    std::string m_problem;
    int m_version = 0;
};

// Errors after which the context cannot be used again in this process (the "sticky" errors).
bool isStickyError(CUresult r);

} // namespace kforge::cuda
