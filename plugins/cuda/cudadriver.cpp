#include "cudadriver.h"

#include <dlfcn.h>

#include <fstream>
#include <regex>

namespace kforge::cuda {

const CudaDriver& CudaDriver::instance() {
    static const CudaDriver driver;
    return driver;
}

CudaDriver::CudaDriver() {
    load();
}

void CudaDriver::load() {
    dlerror();
    // RTLD_LOCAL keeps the driver's symbols out of the global namespace; CUPTI opens the same
    // library by name and gets this very handle.
    m_handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m_handle) {
        const char* why = dlerror();
        m_problem = std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") + (why ? why : "unknown reason")
                    + "); install the NVIDIA driver";
        return;
    }

    std::string missing;
    const auto lookup = [&](const char* symbol, bool optional) -> void* {
        void* p = ::dlsym(m_handle, symbol);
        if (!p && !optional)
            missing += (missing.empty() ? "" : ", ") + std::string(symbol);
        return p;
    };
#define KFORGE_CUDA_DRIVER_LOOKUP(member, symbol, optional)                                                            \
    member = reinterpret_cast<decltype(member)>(lookup(#symbol, optional));
    KFORGE_CUDA_DRIVER_FUNCTIONS(KFORGE_CUDA_DRIVER_LOOKUP)
#undef KFORGE_CUDA_DRIVER_LOOKUP

    eventElapsed = eventElapsedTime;
    if (!eventElapsed)
        eventElapsed = reinterpret_cast<decltype(eventElapsed)>(lookup("cuEventElapsedTime", false));

    if (driverGetVersion)
        driverGetVersion(&m_version);
    if (!missing.empty()) {
        m_problem = "the NVIDIA driver is too old for this worker: libcuda.so.1 (CUDA " + versionText() + ") lacks "
                    + missing + "; update the NVIDIA driver";
        return;
    }
    if (const CUresult r = init(0); r != CUDA_SUCCESS) {
        m_problem = "the NVIDIA driver is installed but cuInit failed with " + describe(r);
        if (r == CUDA_ERROR_NO_DEVICE)
            m_problem += "; no NVIDIA GPU is visible to this process (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
        else if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
            m_problem += "; the user-space driver does not match the kernel module (reboot, or reinstall the driver)";
    }
}

std::string CudaDriver::versionText() const {
    if (m_version <= 0)
        return "unknown";
    return std::to_string(m_version / 1000) + "." + std::to_string((m_version % 1000) / 10);
}

std::string CudaDriver::kernelModuleVersion() {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."
    std::ifstream in("/proc/driver/nvidia/version");
    std::string line;
    if (!std::getline(in, line))
        return {};
    static const std::regex version(R"(Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+))");
    std::smatch m;
    return std::regex_search(line, m, version) ? m[1].str() : std::string();
}

std::string CudaDriver::errorName(CUresult r) const {
    const char* name = nullptr;
    if (getErrorName && getErrorName(r, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA error " + std::to_string(static_cast<int>(r));
}

std::string CudaDriver::describe(CUresult r) const {
    const char* text = nullptr;
    std::string s = errorName(r);
    if (getErrorString && getErrorString(r, &text) == CUDA_SUCCESS && text)
        s += std::string(" (") + text + ")";
    return s;
}

bool isStickyError(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_UNKNOWN:
        return true;
    default:
        return false;
    }
}

} // namespace kforge::cuda
