#include "cudabackend.h"

#include "argvalue.h"

#include "ceilings.h"
#include "ceilingscache.h"
#include "cudalisting.h"
#include "cudastaticcheck.h"
#include "cuptitimer.h"
#include "digest.h"
#include "rangeprofiler.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <limits>
#include <mutex>
#include <sstream>

namespace kforge::cuda {

namespace {

// CUPTI puts GPU timestamps on the host clock; a kernel that ends this long after the synchronisation
// returned was really still running, rather than a victim of the conversion's rounding.
constexpr std::uint64_t kLateToleranceNs = 20'000;

std::string programName(const std::string& role) {
    std::string name;
    for (char c : role)
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')
            name += c;
    return (name.empty() ? "kernel" : name) + ".cu";
}

using harness::launchWhere;

CUtensorMapDataType tensorMapDataType(spec::DType t) {
    switch (t) {
    case spec::DType::Float32:
        return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case spec::DType::Float64:
        return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case spec::DType::Float16:
        return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case spec::DType::BFloat16:
        return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case spec::DType::Int32:
        return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case spec::DType::Int64:
        return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case spec::DType::UInt8:
        return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    }
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle tensorMapSwizzle(int bytes) {
    switch (bytes) {
    case 32:
        return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
        return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
        return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
        return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

template <typename T> std::string listText(const std::vector<T>& v) {
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : ", ") + std::to_string(x);
    return "(" + s + ")";
}

// cuLaunchKernelEx's configuration of launch `l` on `stream`, with its thread block cluster as the
// one attribute, held in `cluster` (which must outlive the configuration).
CUlaunchConfig clusterLaunchConfig(const spec::ResolvedLaunch& l, CUstream stream, CUlaunchAttribute& cluster) {
    cluster = CUlaunchAttribute{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = static_cast<unsigned>(l.cluster[0]);
    cluster.value.clusterDim.y = static_cast<unsigned>(l.cluster[1]);
    cluster.value.clusterDim.z = static_cast<unsigned>(l.cluster[2]);
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(l.grid[0]);
    config.gridDimY = static_cast<unsigned>(l.grid[1]);
    config.gridDimZ = static_cast<unsigned>(l.grid[2]);
    config.blockDimX = static_cast<unsigned>(l.block[0]);
    config.blockDimY = static_cast<unsigned>(l.block[1]);
    config.blockDimZ = static_cast<unsigned>(l.block[2]);
    config.sharedMemBytes = static_cast<unsigned>(l.smemBytes);
    config.hStream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
    return config;
}

std::string launchList(const spec::LaunchPlan& plan) {
    std::string s;
    for (const auto& l : plan.launches)
        s += (s.empty() ? "" : ", ") + l.kernel + " (line " + std::to_string(l.line) + ")";
    return s;
}

} // namespace

namespace detail {
void StreamTraits::destroy(CUstream s) {
    CudaDriver::instance().streamDestroy(s);
}
void EventTraits::destroy(CUevent e) {
    CudaDriver::instance().eventDestroy(e);
}
void MemoryTraits::destroy(CUdeviceptr p) {
    CudaDriver::instance().memFree(p);
}
void ModuleTraits::destroy(CUmodule m) {
    CudaDriver::instance().moduleUnload(m);
}
} // namespace detail

// ---- CudaProgram ---------------------------------------------------------------------------------

// The module-scope memory of a CUBIN (an ELF file): its .nv.global sections (.nv.global for
// zero-initialised variables, .nv.global.init for initialised ones and string literals), with the
// object symbols in each. Constant memory is left out: kernels cannot write it. Anything malformed
// yields what was read.
std::vector<GlobalSection> cubinGlobalSections(const std::string& image) {
    std::vector<GlobalSection> out;
    const auto read = [&](auto& into, std::uint64_t offset) {
        if (offset > image.size() || image.size() - offset < sizeof into)
            return false;
        std::memcpy(&into, image.data() + offset, sizeof into);
        return true;
    };
    Elf64_Ehdr eh;
    if (!read(eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64
        || eh.e_shentsize != sizeof(Elf64_Shdr))
        return out;
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    for (std::size_t i = 0; i < sections.size(); ++i)
        if (!read(sections[i], eh.e_shoff + i * sizeof(Elf64_Shdr)))
            return out;
    const auto stringAt = [&](const Elf64_Shdr& table, std::uint64_t index) -> std::string {
        if (index >= table.sh_size || table.sh_offset > image.size() || image.size() - table.sh_offset < table.sh_size)
            return {};
        const char* begin = image.data() + table.sh_offset + index;
        return std::string(begin, strnlen(begin, table.sh_size - index));
    };
    if (eh.e_shstrndx >= sections.size())
        return out;
    const Elf64_Shdr& names = sections[eh.e_shstrndx];
    std::map<std::size_t, std::size_t> slot; // section index -> position in out
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const std::string name = stringAt(names, sections[i].sh_name);
        if (name.rfind(".nv.global", 0) == 0 && sections[i].sh_size > 0) {
            slot[i] = out.size();
            out.push_back({name, static_cast<std::size_t>(sections[i].sh_size), {}});
        }
    }
    for (const Elf64_Shdr& symtab : sections) {
        if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= sections.size())
            continue;
        const Elf64_Shdr& strtab = sections[symtab.sh_link];
        for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            if (!read(sym, symtab.sh_offset + at))
                break;
            const auto it = slot.find(sym.st_shndx);
            if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || it == slot.end())
                continue;
            if (std::string name = stringAt(strtab, sym.st_name); !name.empty())
                out[it->second].symbols.push_back(
                    {std::move(name), static_cast<std::size_t>(sym.st_value), static_cast<std::size_t>(sym.st_size)});
        }
    }
    return out;
}

CudaProgram::CudaProgram(std::string role, std::string arch, std::string cubin,
                         std::map<std::string, std::string> loweredNames)
    : m_role(std::move(role)), m_arch(std::move(arch)), m_cubin(std::move(cubin)), m_lowered(std::move(loweredNames)),
      m_globalSections(cubinGlobalSections(m_cubin)) {}

CudaProgram::~CudaProgram() {
    // A module dies with its context; unloading is only needed, and only safe, while that lives on.
    if (auto state = m_loadedIn.lock(); state && !state->lost && m_module) {
        const CudaDriver& d = CudaDriver::instance();
        d.ctxSetCurrent(state->context);
        d.moduleUnload(m_module);
    }
}

std::string CudaProgram::loweredName(const std::string& kernel) const {
    auto it = m_lowered.find(kernel);
    return it == m_lowered.end() ? std::string() : it->second;
}

// ---- CudaBackend: device -------------------------------------------------------------------------

CudaBackend::CudaBackend() : m_driver(CudaDriver::instance()) {
    const char* trace = std::getenv("KFORGE_CUDA_TRACE");
    m_trace = trace && *trace && std::string(trace) != "0";
}

CudaBackend::~CudaBackend() {
    close();
}

void CudaBackend::close() {
    if (m_state && m_state->lost) {
        // Nothing may touch a lost context, not even to free it: the process exits next and the
        // driver reclaims everything.
        for (auto& [id, b] : m_buffers)
            b.memory.release();
        m_flushBuffer.release();
        m_digestSum.release();
        m_helperModule.release();
        m_start.release();
        m_stop.release();
        m_stream.release();
    } else if (m_state) {
        m_driver.ctxSetCurrent(m_state->context);
        if (m_cuptiActive)
            CuptiTimer::instance().disable();
    }
    m_buffers.clear();
    m_flushBuffer.reset();
    m_flushBytes = 0;
    m_digestSum.reset();
    m_helperModule.reset();
    m_digestFunction = nullptr;
    m_flushFunction = nullptr;
    m_flushKernelName.clear();
    m_helperProblem.clear();
    m_start.reset();
    m_stop.reset();
    m_stream.reset();
    if (m_state && !m_state->lost)
        m_driver.devicePrimaryCtxRelease(m_device);
    m_state.reset();
    m_cuptiActive = false;
    m_cuptiSeenKernel = false;
    m_deviceIndex = -1;
    m_deviceName.clear();
    m_cc = 0;
}

int CudaBackend::defaultComputeCapability() const {
    // Without an open device, compile for the first GPU; without a driver, for the H200 kforge's GPU
    // checks run on.
    static std::once_flag once;
    static int cc = 90;
    std::call_once(once, [this] {
        int count = 0;
        CUdevice dev = 0;
        int major = 0, minor = 0;
        if (m_driver.usable() && m_driver.deviceGetCount(&count) == CUDA_SUCCESS && count > 0
            && m_driver.deviceGet(&dev, 0) == CUDA_SUCCESS
            && m_driver.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS
            && m_driver.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
            cc = major * 10 + minor;
    });
    return cc;
}

protocol::ProbeResult CudaBackend::probe() {
    protocol::ProbeResult r;
    r.backend = name();
    r.details["nvrtc_version"] = m_compiler.versionText();
    r.details["nvrtc_pch"] = m_compiler.hasPch();
    r.details["nvrtc_archs"] = m_compiler.supportedArchs();
    r.details["cupti_version"] = CuptiTimer::version();
    r.details["cuda_include_dirs"] = m_compiler.includeDirs();
    r.details["cubin_cache"] = m_compiler.cache().enabled() ? m_compiler.cache().directory() : std::string("off");
    if (m_compiler.includeDirs().empty())
        r.problems.push_back(
            "the CUDA toolkit headers were not found (looked in $CUDA_HOME/include, /usr/local/cuda/include "
            "and the build's toolkit); kernels that include cuda_fp16.h, cub/... will not compile: "
            "set CUDA_HOME");

    if (!m_driver.loaded()) {
        r.problems.push_back(m_driver.problem());
        return r;
    }
    r.details["driver_cuda_version"] = m_driver.versionText();
    const std::string module = CudaDriver::kernelModuleVersion();
    if (!module.empty())
        r.details["driver_version"] = module;
    if (!m_driver.usable()) {
        r.problems.push_back(m_driver.problem());
        return r;
    }

    int count = 0;
    if (const CUresult e = m_driver.deviceGetCount(&count); e != CUDA_SUCCESS) {
        r.problems.push_back("cuDeviceGetCount failed with " + m_driver.describe(e));
        return r;
    }
    if (count == 0)
        r.problems.push_back("the NVIDIA driver sees no CUDA device (check CUDA_VISIBLE_DEVICES and nvidia-smi)");

    const int nvrtcMajor = m_compiler.versionMajor();
    if (m_driver.version() > 0 && m_driver.version() / 1000 < nvrtcMajor)
        r.problems.push_back("the driver supports CUDA " + m_driver.versionText() + " but NVRTC is "
                             + m_compiler.versionText() + ": CUBINs it builds may not load; update the NVIDIA driver");

    for (int i = 0; i < count; ++i) {
        CUdevice dev = 0;
        if (m_driver.deviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        const auto attr = [&](CUdevice_attribute a) {
            int v = 0;
            return m_driver.deviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
        };
        std::array<char, 256> nameBuf{};
        m_driver.deviceGetName(nameBuf.data(), static_cast<int>(nameBuf.size()), dev);
        std::size_t total = 0;
        m_driver.deviceTotalMem(&total, dev);
        const int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        const int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        const int cc = major * 10 + minor;

        protocol::DeviceInfo info;
        info.name = nameBuf.data();
        info.vendor = "NVIDIA";
        info.platform = "CUDA " + m_driver.versionText();
        info.driver = module.empty() ? "CUDA " + m_driver.versionText() : module;
        info.kind = "gpu";
        std::string pci;
        if (m_driver.deviceGetPCIBusId) {
            std::array<char, 64> bus{};
            if (m_driver.deviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), dev) == CUDA_SUCCESS)
                pci = bus.data();
        }
        const std::string arch = m_compiler.archFor(cc);
        info.details = {
            {"index", i},
            {"compute_capability", std::to_string(major) + "." + std::to_string(minor)},
            {"arch", arch},
            {"multiprocessors", attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)},
            {"global_memory_bytes", total},
            {"l2_cache_bytes", attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)},
            {"max_clock_mhz", attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000},
            {"memory_clock_mhz", attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000},
            {"memory_bus_bits", attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)},
            {"max_threads_per_block", attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)},
            {"max_threads_per_multiprocessor", attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)},
            {"shared_bytes_per_block_optin", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)},
            {"shared_bytes_per_multiprocessor", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)},
            {"registers_per_multiprocessor", attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)},
            {"warp_size", attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE)},
            {"ecc", attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0},
            {"pci_bus_id", pci},
        };
        if (arch.empty())
            r.problems.push_back("device " + std::to_string(i) + " (" + info.name + ", compute capability "
                                 + info.details["compute_capability"].get<std::string>()
                                 + ") is not supported by NVRTC " + m_compiler.versionText()
                                 + "; install a newer CUDA toolkit");
        if (attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) == CU_COMPUTEMODE_PROHIBITED)
            r.problems.push_back(
                "device " + std::to_string(i) + " (" + info.name
                + ") is in the Prohibited compute mode, so no process may use it (nvidia-smi -c DEFAULT)");
        r.devices.push_back(std::move(info));
    }
    r.available = !r.devices.empty();
    return r;
}

spec::Status CudaBackend::open(int device) {
    if (!m_driver.usable())
        return spec::fail(m_driver.problem());
    if (m_state && device == m_deviceIndex) {
        if (m_state->lost)
            return spec::fail("CUDA device " + std::to_string(device) + " (" + m_deviceName
                              + ") is unusable in this worker after an earlier error; a new worker is needed");
        return spec::success();
    }
    int count = 0;
    if (const CUresult e = m_driver.deviceGetCount(&count); e != CUDA_SUCCESS)
        return spec::fail("cannot open CUDA device " + std::to_string(device) + ": cuDeviceGetCount failed with "
                          + m_driver.describe(e));
    if (count == 0)
        return spec::fail("cannot open CUDA device " + std::to_string(device)
                          + ": the NVIDIA driver sees no CUDA device (check CUDA_VISIBLE_DEVICES and nvidia-smi)");
    if (device < 0 || device >= count)
        return spec::fail("CUDA device " + std::to_string(device) + " does not exist: there "
                          + (count == 1
                                 ? "is 1 device (index 0)"
                                 : "are " + std::to_string(count) + " devices (0.." + std::to_string(count - 1) + ")"));
    close();

    CUdevice dev = 0;
    if (const CUresult e = m_driver.deviceGet(&dev, device); e != CUDA_SUCCESS)
        return spec::fail("cuDeviceGet(" + std::to_string(device) + ") failed with " + m_driver.describe(e));
    std::array<char, 256> nameBuf{};
    m_driver.deviceGetName(nameBuf.data(), static_cast<int>(nameBuf.size()), dev);
    const std::string devName = nameBuf.data();
    const std::string who = "CUDA device " + std::to_string(device) + " (" + devName + ")";
    const auto attr = [&](CUdevice_attribute a, int fallback) {
        int v = 0;
        return m_driver.deviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : fallback;
    };

    // CUPTI is asked before the context exists, so that it traces the context from its start.
    if (m_timingMode == harness::TimingMode::Default && m_cuptiProblem.empty())
        CuptiTimer::instance().enable();

    CUcontext ctx = nullptr;
    if (const CUresult e = m_driver.devicePrimaryCtxRetain(&ctx, dev); e != CUDA_SUCCESS) {
        std::string hint;
        const int mode = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT);
        if (mode == CU_COMPUTEMODE_PROHIBITED)
            hint = "; the device is in the Prohibited compute mode";
        else if (mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS)
            hint = "; the device is in the Exclusive Process compute mode and another process holds it";
        return spec::fail(who + ": cuDevicePrimaryCtxRetain failed with " + m_driver.describe(e) + hint);
    }
    auto state = std::make_shared<ContextState>();
    state->context = ctx;
    m_state = state;
    m_device = dev;
    m_deviceIndex = device;
    m_deviceName = devName;
    const auto fail = [&](const std::string& what, CUresult e) {
        const std::string message = who + ": " + what + " failed with " + m_driver.describe(e);
        close();
        return spec::fail(message);
    };
    if (const CUresult e = m_driver.ctxSetCurrent(ctx); e != CUDA_SUCCESS)
        return fail("cuCtxSetCurrent", e);

    // A stream of our own that does not synchronise with the legacy default stream: nothing else in
    // the process can queue work between the plan's launches.
    CUstream stream = nullptr;
    if (const CUresult e = m_driver.streamCreate(&stream, CU_STREAM_NON_BLOCKING); e != CUDA_SUCCESS)
        return fail("cuStreamCreate", e);
    m_stream.reset(stream);
    CUevent ev = nullptr;
    if (const CUresult e = m_driver.eventCreate(&ev, CU_EVENT_DEFAULT); e != CUDA_SUCCESS)
        return fail("cuEventCreate", e);
    m_start.reset(ev);
    if (const CUresult e = m_driver.eventCreate(&ev, CU_EVENT_DEFAULT); e != CUDA_SUCCESS)
        return fail("cuEventCreate", e);
    m_stop.reset(ev);

    spec::DeviceLimits l;
    l.maxBlockThreads = static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024));
    l.maxBlockDims = {static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024)),
                      static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024)),
                      static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64))};
    l.maxGridDims = {static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647)),
                     static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535)),
                     static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535))};
    // Launches may opt in to more than the default 48 KiB (launchResources/run set the attribute).
    l.maxSharedBytes = static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                                       attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152)));
    m_cc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) * 10
           + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
    // TMA tensor maps (// kforge:tensormap): Hopper and newer, with a driver that encodes them.
    l.tensorMaps = m_cc >= 90 && m_driver.tensorMapEncodeTiled != nullptr;
    // Thread block clusters (cluster=): Hopper and newer, up to the portable size. A driver without
    // cuLaunchKernelEx still resolves them; run() says why it cannot launch them.
    l.maxClusterBlocks = m_cc >= 90 ? spec::kPortableClusterBlocks : 0;
    l.multiprocessors = static_cast<std::uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    m_limits = l;
    m_maxThreadsPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048);
    m_registersPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536);
    m_l2Bytes = static_cast<std::size_t>(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0));
    m_multiprocessors = std::max(1, attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));

    if (m_timingMode == harness::TimingMode::Default)
        startCupti();
    return spec::success();
}

void CudaBackend::startCupti() {
    if (m_cuptiActive || !m_cuptiProblem.empty() || !m_state)
        return;
    CuptiTimer& cupti = CuptiTimer::instance();
    std::string problem = cupti.enable();
    if (problem.empty())
        problem = cupti.contextId(m_state->context, m_cuptiContext);
    if (problem.empty())
        problem = cupti.streamId(m_state->context, m_stream.get(), m_cuptiStream);
    if (!problem.empty()) {
        // Runs are still timed, by events; timingMethod() says why.
        cupti.disable();
        m_cuptiProblem = problem;
        return;
    }
    m_cuptiActive = true;
}

spec::Status CudaBackend::setTimingMode(harness::TimingMode mode) {
    m_timingMode = mode;
    if (!m_state || m_state->lost)
        return spec::success();
    m_driver.ctxSetCurrent(m_state->context);
    if (mode == harness::TimingMode::KernelBench) {
        // KernelBench times without a profiler attached; tracing would add its own overhead.
        if (m_cuptiActive) {
            CuptiTimer::instance().disable();
            m_cuptiActive = false;
        }
    } else {
        startCupti();
    }
    return spec::success();
}

std::string CudaBackend::timingMethod() const {
    if (m_timingMode == harness::TimingMode::KernelBench)
        return "cuda-events";
    if (!m_cuptiProblem.empty())
        return "cuda-events (CUPTI unavailable: " + m_cuptiProblem + ")";
    return "cupti-activity";
}

spec::Status CudaBackend::ready(const char* what) {
    if (!m_state)
        return spec::fail(std::string(what) + ": no CUDA device is open");
    if (m_state->lost)
        return spec::fail(std::string(what) + ": the CUDA context of " + m_deviceName
                          + " is unusable after an earlier error; a new worker is needed");
    if (const CUresult e = m_driver.ctxSetCurrent(m_state->context); e != CUDA_SUCCESS)
        return spec::fail(std::string(what) + ": cuCtxSetCurrent failed with " + m_driver.describe(e));
    return spec::success();
}

std::string deviceFaultHint(CUresult r, std::size_t tensorMaps) {
    // Seen on the H200: a TMA tile copy whose innermost start coordinate is not on 16 bytes (a
    // float tensor's column -1) faults as an illegal instruction; column -4, or 0, does not.
    if (r == CUDA_ERROR_ILLEGAL_INSTRUCTION && tensorMaps > 0)
        return "; the plan uses TMA tensor maps, and a tile copy (cp.async.bulk.tensor) whose innermost start "
               "coordinate is not a multiple of 16 bytes (column -1 of a float tensor, say) fails this way: start "
               "boxes on 16 bytes (negative coordinates too: what lies outside the tensor reads as zeros)";
    return {};
}

std::string CudaBackend::noteError(CUresult r) {
    if (!m_state || m_state->lost)
        return {};
    bool lost = isStickyError(r);
    if (!lost) {
        // An error the table does not know may still have broken the context; the context says so.
        const CUresult check = m_driver.ctxSynchronize();
        lost = check != CUDA_SUCCESS && check != CUDA_ERROR_NOT_READY;
    }
    if (!lost)
        return {};
    m_state->lost = true;
    return "; the CUDA context cannot be used again in this process, so the worker will restart";
}

// ---- CudaBackend: source checks and compiling ------------------------------------------------------

std::vector<protocol::Diagnostic> CudaBackend::staticCheck(const std::string& source) const {
    return staticCheckCuda(source);
}

harness::CompileOutput CudaBackend::compile(const std::string& source, const std::vector<std::string>& defines,
                                            const std::string& role) {
    harness::CompileOutput out;
    int cc = m_cc.load();
    if (cc == 0)
        cc = defaultComputeCapability();
    NvrtcOutput built = m_compiler.compile(source, defines, programName(role), kernelNamesIn(source), cc);
    out.ok = built.ok;
    out.log = std::move(built.log);
    out.seconds = built.seconds;
    out.resources["cache_hit"] = built.cacheHit ? 1.0 : 0.0;
    if (!built.ok)
        return out;
    auto program =
        std::make_unique<CudaProgram>(role, built.arch, std::move(built.cubin), std::move(built.loweredNames));
    std::size_t stateBytes = 0;
    std::string names;
    for (const GlobalSection& section : program->m_globalSections) {
        stateBytes += section.bytes;
        for (const auto& symbol : section.symbols)
            if (symbol.name[0] != '$' && names.size() < 400)
                names += (names.empty() ? "" : ", ") + symbol.name + " (" + std::to_string(symbol.bytes) + " bytes)";
    }
    if (stateBytes > harness::kMaxModuleStateBytes)
        out.rejection = "its __device__ variables hold " + std::to_string(stateBytes) + " bytes (" + names
                        + "), more than the " + std::to_string(harness::kMaxModuleStateBytes)
                        + " bytes kforge resets before every run: module-scope state survives between launches, so a "
                          "kernel could replay results through it. Use __constant__ for tables and scratch buffers "
                          "(// kforge:scratch) for working memory";
    out.program = std::move(program);
    return out;
}

protocol::DisassembleResult CudaBackend::disassemble(const std::string& source, const std::vector<std::string>& defines,
                                                     int arch, bool machineCode) {
    int cc = arch;
    if (cc == 0)
        cc = m_cc.load();
    if (cc == 0)
        cc = defaultComputeCapability();
    return listKernel(m_compiler, source, defines, cc, machineCode);
}

spec::Status CudaBackend::load(CudaProgram& program) {
    if (program.m_module && program.m_loadedIn.lock() == m_state)
        return spec::success();
    // Loaded for a device since closed: that module went with its context.
    program.m_module = nullptr;
    program.m_kernels.clear();
    CUmodule module = nullptr;
    if (const CUresult e = m_driver.moduleLoadData(&module, program.m_cubin.data()); e != CUDA_SUCCESS) {
        std::string hint;
        if (e == CUDA_ERROR_NO_BINARY_FOR_GPU || e == CUDA_ERROR_INVALID_IMAGE
            || e == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
            hint = "; it was built for " + program.m_arch + " and the device is compute capability "
                   + std::to_string(m_cc / 10) + "." + std::to_string(m_cc % 10);
            if (m_driver.version() / 1000 < m_compiler.versionMajor())
                hint += ", by NVRTC " + m_compiler.versionText() + ", newer than the driver (CUDA "
                        + m_driver.versionText() + "): update the NVIDIA driver";
        }
        return spec::fail("loading the compiled " + programName(program.m_role) + " on " + m_deviceName
                          + " (cuModuleLoadData) failed with " + m_driver.describe(e) + hint + noteError(e));
    }
    // Every variable is found by its symbol (named ones and those the kernel cannot name from
    // outside alike: function-local statics, anonymous namespaces) and its load-time contents kept.
    // The driver places variables on its own, so each is restored by itself, not as a section.
    auto unloaded = [&](std::string message) {
        m_driver.moduleUnload(module);
        program.m_globals.clear();
        return spec::fail(std::move(message));
    };
    program.m_globals.clear();
    program.m_stateProblem.clear();
    for (const GlobalSection& section : program.m_globalSections) {
        for (const auto& symbol : section.symbols) {
            CudaProgram::Global g;
            g.name = symbol.name;
            std::size_t size = 0;
            if (const CUresult e = m_driver.moduleGetGlobal(&g.address, &size, module, symbol.name.c_str());
                e != CUDA_SUCCESS) {
                if (symbol.name[0] == '$')
                    continue; // a string literal the compiler named: not state a kernel keeps on purpose
                program.m_stateProblem =
                    "its module-scope variable " + symbol.name + " (" + std::to_string(symbol.bytes) + " bytes in "
                    + section.name
                    + ") cannot be found to be restored before each run (cuModuleGetGlobal: " + m_driver.describe(e)
                    + "). Declare __device__ variables at namespace scope, or use a "
                      "scratch buffer (// kforge:scratch)";
                return unloaded("loading the compiled " + programName(program.m_role) + ": " + program.m_stateProblem);
            }
            if (size == 0)
                continue;
            g.initial.resize(size);
            CUresult e = m_driver.memcpyDtoHAsync(g.initial.data(), g.address, size, m_stream.get());
            if (e == CUDA_SUCCESS)
                e = m_driver.streamSynchronize(m_stream.get());
            if (e != CUDA_SUCCESS)
                return unloaded("reading the initial value of " + symbol.name + " failed with " + m_driver.describe(e)
                                + noteError(e));
            program.m_globals.push_back(std::move(g));
        }
    }
    program.m_module = module;
    program.m_loadedIn = m_state;
    for (const auto& [kernel, lowered] : program.m_lowered)
        m_loadedKernelNames.insert(lowered);
    return spec::success();
}

spec::Expected<CudaProgram::Kernel*> CudaBackend::kernel(CudaProgram& program, const std::string& name,
                                                         std::uint64_t smemBytes) {
    auto it = program.m_kernels.find(name);
    if (it == program.m_kernels.end()) {
        const std::string lowered = program.loweredName(name);
        if (lowered.empty())
            return spec::fail("the compiled program has no kernel '" + name
                              + "' (it was not in the launch plan when compiled)");
        CudaProgram::Kernel k;
        if (const CUresult e = m_driver.moduleGetFunction(&k.function, program.m_module, lowered.c_str());
            e != CUDA_SUCCESS)
            return spec::fail("cuModuleGetFunction(" + lowered + ") failed with " + m_driver.describe(e));
        if (m_driver.funcGetParamInfo) {
            std::size_t offset = 0, size = 0;
            for (std::size_t i = 0; m_driver.funcGetParamInfo(k.function, i, &offset, &size) == CUDA_SUCCESS; ++i)
                k.paramSizes.push_back(size);
            // An empty answer may as well mean "not supported for this module" as "no parameters".
            k.paramsKnown = !k.paramSizes.empty();
        }
        // Without opting in, static and dynamic shared memory together may not pass 48 KiB.
        m_driver.funcGetAttribute(&k.staticSmemBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function);
        k.dynamicSmemLimit = std::max(0, 48 * 1024 - k.staticSmemBytes);
        it = program.m_kernels.emplace(name, std::move(k)).first;
    }
    CudaProgram::Kernel& k = it->second;
    if (smemBytes > static_cast<std::uint64_t>(k.dynamicSmemLimit)) {
        // Past 48 KiB with its static bytes, a kernel must opt in before launch (for its dynamic bytes).
        if (const CUresult e = m_driver.funcSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                         static_cast<int>(smemBytes));
            e != CUDA_SUCCESS)
            return spec::fail("smem=" + std::to_string(smemBytes) + " bytes of dynamic shared memory plus the kernel's "
                              + std::to_string(k.staticSmemBytes) + " static bytes is more than " + m_deviceName
                              + " allows per block (" + std::to_string(m_limits.maxSharedBytes)
                              + "): cuFuncSetAttribute failed with " + m_driver.describe(e));
        k.dynamicSmemLimit = static_cast<int>(smemBytes);
    }
    return &k;
}

std::map<std::string, double> CudaBackend::launchResources(harness::Program& program, const spec::LaunchPlan& plan) {
    std::map<std::string, double> out;
    auto* prog = dynamic_cast<CudaProgram*>(&program);
    if (!prog || !ready("launchResources") || !load(*prog))
        return out; // run() reports the same problem, where the evaluator expects errors
    for (const auto& launch : plan.launches) {
        const std::string key = launch.kernel + ".";
        if (out.count(key + "registers"))
            continue; // the first launch of a kernel speaks for it
        auto k = kernel(*prog, launch.kernel, launch.smemBytes);
        if (!k)
            continue;
        const auto fattr = [&](CUfunction_attribute a) {
            int v = 0;
            m_driver.funcGetAttribute(&v, a, (*k)->function);
            return v;
        };
        out[key + "registers"] = fattr(CU_FUNC_ATTRIBUTE_NUM_REGS);
        out[key + "shared_bytes"] = fattr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        out[key + "local_bytes"] = fattr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
        out[key + "max_threads_per_block"] = fattr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        const std::uint64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
        int blocks = 0;
        if (m_driver.occupancyMaxActiveBlocksPerMultiprocessor(&blocks, (*k)->function, static_cast<int>(threads),
                                                               static_cast<std::size_t>(launch.smemBytes))
                != CUDA_SUCCESS
            || m_maxThreadsPerSm <= 0)
            continue;
        double perSm = blocks;
        if (const std::uint64_t clusterBlocks = launch.clusterBlocks(); clusterBlocks > 1) {
            // The blocks of a cluster share one GPC, so fewer may be resident than each SM alone
            // could hold: the driver counts whole clusters on the device. Without that count, the
            // per-SM figure would overstate the occupancy and is left out.
            out[key + "cluster_blocks"] = static_cast<double>(clusterBlocks);
            int clusters = 0;
            CUlaunchAttribute attribute{};
            const CUlaunchConfig config = clusterLaunchConfig(launch, m_stream.get(), attribute);
            if (!m_driver.occupancyMaxActiveClusters
                || m_driver.occupancyMaxActiveClusters(&clusters, (*k)->function, &config) != CUDA_SUCCESS)
                continue;
            out[key + "active_clusters"] = clusters;
            perSm = std::min(perSm, static_cast<double>(clusters) * static_cast<double>(clusterBlocks)
                                        / static_cast<double>(m_multiprocessors));
        }
        // Counted in warps, as the hardware schedules them: a block of 48 threads occupies two.
        const double warps = std::ceil(static_cast<double>(threads) / 32.0);
        out[key + "blocks_per_sm"] = perSm;
        out[key + "occupancy"] = std::min(1.0, perSm * warps * 32.0 / m_maxThreadsPerSm);
    }
    return out;
}

// ---- CudaBackend: buffers ---------------------------------------------------------------------------

spec::Expected<harness::BufferId> CudaBackend::allocate(std::size_t bytes) {
    if (auto st = ready("cannot allocate a buffer"); !st)
        return spec::Error{st.error()};
    CUdeviceptr ptr = 0;
    // cuMemAlloc rejects zero bytes; an empty tensor still needs a handle.
    if (const CUresult e = m_driver.memAlloc(&ptr, std::max<std::size_t>(bytes, 1)); e != CUDA_SUCCESS) {
        std::string detail;
        std::size_t freeBytes = 0, totalBytes = 0;
        if (e == CUDA_ERROR_OUT_OF_MEMORY && m_driver.memGetInfo(&freeBytes, &totalBytes) == CUDA_SUCCESS)
            detail = " (" + std::to_string(freeBytes) + " of " + std::to_string(totalBytes) + " bytes free)";
        return spec::fail("cuMemAlloc of " + std::to_string(bytes) + " bytes on " + m_deviceName + " failed with "
                          + m_driver.describe(e) + detail + noteError(e));
    }
    const harness::BufferId id = m_nextBuffer++;
    m_buffers.emplace(id, Buffer{MemoryHandle(ptr), bytes});
    return id;
}

spec::Expected<harness::BufferId> CudaBackend::view(harness::BufferId parent, std::size_t offset, std::size_t bytes) {
    auto target = harness::transferTarget(m_buffers, parent, bytes, "view", 1, offset);
    if (!target)
        return spec::Error{target.error()};
    const harness::BufferId id = m_nextBuffer++;
    Buffer b;
    b.bytes = bytes;
    b.viewOf = (*target)->ptr() + offset;
    m_buffers.emplace(id, std::move(b));
    return id;
}

void CudaBackend::release(harness::BufferId id) {
    auto it = m_buffers.find(id);
    if (it == m_buffers.end())
        return;
    if (m_state && m_state->lost)
        it->second.memory.release();
    else if (m_state)
        m_driver.ctxSetCurrent(m_state->context);
    m_buffers.erase(it);
}

spec::Expected<CUdeviceptr> CudaBackend::bufferFor(harness::BufferId id) const {
    auto it = m_buffers.find(id);
    if (it == m_buffers.end())
        return spec::fail("buffer " + std::to_string(id) + " does not exist (released, or never allocated)");
    return it->second.ptr();
}

spec::Expected<std::unique_ptr<CUtensorMap>> CudaBackend::encodeTensorMap(const spec::ResolvedTensorMap& map,
                                                                          const harness::Bindings& bindings) const {
    const spec::ArgBinding buffer = harness::tensorMapBufferBinding(map);
    const std::string who = "tensormap " + map.name + " (line " + std::to_string(map.line) + ") over "
                            + harness::bufferKindName(buffer) + " " + map.bufferName;
    if (!m_driver.tensorMapEncodeTiled)
        return spec::fail(who + ": the NVIDIA driver (CUDA " + m_driver.versionText()
                          + ") lacks cuTensorMapEncodeTiled; update the NVIDIA driver");
    const std::size_t rank = map.dims.size();
    if (rank < 1 || rank > spec::kMaxTensorMapRank || map.strides.size() + 1 != rank || map.box.size() != rank)
        return spec::fail(who + ": the resolved tensor map is malformed (" + std::to_string(rank) + " dimensions, "
                          + std::to_string(map.strides.size()) + " strides, " + std::to_string(map.box.size())
                          + " box extents)");
    auto id = harness::boundBuffer(bindings, buffer);
    if (!id)
        return spec::fail(who + ": " + id.error());
    auto found = m_buffers.find(*id);
    if (found == m_buffers.end())
        return spec::fail(who + ": buffer " + std::to_string(*id) + " does not exist");
    const CUdeviceptr address = found->second.ptr();
    // TMA reads and writes only inside the tensor, which must fit the buffer.
    std::uint64_t spans = spec::dtypeSize(map.dtype);
    for (std::uint64_t d : map.dims)
        if (__builtin_mul_overflow(spans, d, &spans))
            spans = std::numeric_limits<std::uint64_t>::max();
    if (spans > found->second.bytes)
        return spec::fail(who + ": the tensor spans " + std::to_string(spans) + " bytes but its buffer holds "
                          + std::to_string(found->second.bytes));
    if (address % spec::kTensorMapAlign != 0)
        return spec::fail(who + ": the buffer's address is not " + std::to_string(spec::kTensorMapAlign)
                          + "-byte aligned");

    std::array<cuuint64_t, spec::kMaxTensorMapRank> globalDim{};
    std::array<cuuint64_t, spec::kMaxTensorMapRank> globalStrides{};
    std::array<cuuint32_t, spec::kMaxTensorMapRank> boxDim{};
    std::array<cuuint32_t, spec::kMaxTensorMapRank> elementStrides{};
    for (std::size_t d = 0; d < rank; ++d) {
        globalDim[d] = map.dims[d];
        boxDim[d] = map.box[d];
        elementStrides[d] = 1;
        if (d + 1 < rank)
            globalStrides[d] = map.strides[d];
    }
    void* globalAddress = nullptr; // the device address, as the driver takes it
    static_assert(sizeof globalAddress == sizeof address);
    std::memcpy(&globalAddress, &address, sizeof address);
    auto encoded = std::make_unique<CUtensorMap>();
    // Out-of-bounds elements of a box read as zeros (FLOAT_OOB_FILL_NONE) and are not written.
    const CUresult e = m_driver.tensorMapEncodeTiled(
        encoded.get(), tensorMapDataType(map.dtype), static_cast<cuuint32_t>(rank), globalAddress, globalDim.data(),
        globalStrides.data(), boxDim.data(), elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
        tensorMapSwizzle(map.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (e != CUDA_SUCCESS)
        return spec::fail(who + ": cuTensorMapEncodeTiled failed with " + m_driver.describe(e) + " ("
                          + std::string(spec::dtypeName(map.dtype)) + ", dimensions " + listText(map.dims)
                          + " innermost first, byte strides " + listText(map.strides) + ", box " + listText(map.box)
                          + ", swizzle " + (map.swizzle ? std::to_string(map.swizzle) : std::string("none")) + ")");
    return encoded;
}

spec::Status CudaBackend::upload(harness::BufferId id, const void* data, std::size_t bytes) {
    if (auto st = ready("upload"); !st)
        return st;
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "upload");
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    // On the worker's stream, so the copy is ordered before the plan's launches on any driver. No
    // wait: a copy from pageable memory returns once the data is staged, so the caller may reuse
    // its buffer, and whatever comes next on the stream comes after the copy.
    const CUresult e = m_driver.memcpyHtoDAsync((*buffer)->ptr(), data, bytes, m_stream.get());
    if (e != CUDA_SUCCESS)
        return spec::fail("upload of " + std::to_string(bytes) + " bytes (cuMemcpyHtoDAsync) failed with "
                          + m_driver.describe(e) + noteError(e));
    return spec::success();
}

spec::Status CudaBackend::fill(harness::BufferId id, const void* pattern, std::size_t patternSize, std::size_t bytes) {
    // 8-byte patterns (float64 poison) have no driver memset: the base class uploads them.
    if (patternSize != 1 && patternSize != 2 && patternSize != 4)
        return Backend::fill(id, pattern, patternSize, bytes);
    if (auto st = ready("fill"); !st)
        return st;
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "fill", patternSize);
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    const CUdeviceptr dst = (*buffer)->ptr();
    const std::size_t count = bytes / patternSize;
    CUresult e;
    if (patternSize == 1) {
        std::uint8_t v;
        std::memcpy(&v, pattern, 1);
        e = m_driver.memsetD8Async(dst, v, count, m_stream.get());
    } else if (patternSize == 2) {
        std::uint16_t v;
        std::memcpy(&v, pattern, 2);
        e = m_driver.memsetD16Async(dst, v, count, m_stream.get());
    } else {
        std::uint32_t v;
        std::memcpy(&v, pattern, 4);
        e = m_driver.memsetD32Async(dst, v, count, m_stream.get());
    }
    // Ordered before whatever comes next on the stream; nothing to wait for here.
    if (e != CUDA_SUCCESS)
        return spec::fail("fill of " + std::to_string(bytes) + " bytes (cuMemset) failed with " + m_driver.describe(e)
                          + noteError(e));
    return spec::success();
}

spec::Status CudaBackend::download(harness::BufferId id, void* data, std::size_t bytes, std::size_t offset) {
    if (auto st = ready("download"); !st)
        return st;
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "download", 1, offset);
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    CUresult e = m_driver.memcpyDtoHAsync(data, (*buffer)->ptr() + offset, bytes, m_stream.get());
    if (e == CUDA_SUCCESS)
        e = m_driver.streamSynchronize(m_stream.get());
    if (e != CUDA_SUCCESS)
        return spec::fail("download of " + std::to_string(bytes) + " bytes (cuMemcpyDtoHAsync) failed with "
                          + m_driver.describe(e) + noteError(e));
    return spec::success();
}

// The worker's own kernels, compiled and loaded once per context at first use:
//  - kforge_digest: harness::digest on the device (digest.h defines it; the GPU checks compare the
//    two). Each thread sums the contributions of a strided set of 8-byte words, the block adds its
//    threads' sums and one thread adds the block's to the result. The last, partial word is
//    thread 0's.
//  - kforge_flush: reads a buffer twice the L2's size, so that L2 holds only clean lines of that
//    buffer. A memset would evict as well, but leave the L2 full of dirty lines that the timed
//    kernel's own misses then write back to DRAM: a memory-bound kernel of a few tens of
//    microseconds pays for up to an L2 of write-backs that are not its own.
namespace {
const char* const kHelperSource = R"(
__device__ __forceinline__ unsigned long long kforge_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
extern "C" __global__ void kforge_digest(const unsigned char* data, unsigned long long bytes,
                                         unsigned long long key, unsigned long long* sum) {
    const unsigned long long step = 0x9e3779b97f4a7c15ull;
    const unsigned long long words = bytes / 8;
    const unsigned long long* w = reinterpret_cast<const unsigned long long*>(data);
    unsigned long long s = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride)
        s += kforge_mix(w[i] ^ (key + i * step));
    if (blockIdx.x == 0 && threadIdx.x == 0 && bytes % 8) {
        unsigned long long last = 0;
        for (unsigned long long b = 0; b < bytes % 8; ++b)
            last |= (unsigned long long)data[words * 8 + b] << (8 * b);
        s += kforge_mix(last ^ (key + words * step));
    }
    // The block's sum: each warp's in shared memory, added up by the first warp; one atomic a block.
    __shared__ unsigned long long warps[32];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0)
            atomicAdd(sum, s);
    }
}
// Every 16 bytes are loaded; the store that depends on them (never taken for a buffer of zeros)
// keeps the loads in the program.
extern "C" __global__ void kforge_flush(const uint4* data, unsigned long long count, unsigned int* sink) {
    unsigned int x = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint4 v = data[i];
        x |= v.x | v.y | v.z | v.w;
    }
    if (x != 0)
        *sink = x;
}
)";
} // namespace

const std::string& CudaBackend::loadHelpers() {
    if (m_helperModule || !m_helperProblem.empty())
        return m_helperProblem;
    const NvrtcOutput built =
        m_compiler.compile(kHelperSource, {}, "kforge_helpers.cu", {"kforge_digest", "kforge_flush"}, m_cc.load());
    CUmodule module = nullptr;
    CUdeviceptr sum = 0;
    CUresult e = CUDA_SUCCESS;
    if (!built.ok)
        m_helperProblem = "the worker's digest and flush kernels did not compile: " + built.log;
    else if ((e = m_driver.moduleLoadData(&module, built.cubin.data())) != CUDA_SUCCESS)
        m_helperProblem =
            "cuModuleLoadData of the worker's digest and flush kernels failed with " + m_driver.describe(e);
    if (module)
        m_helperModule.reset(module);
    for (auto [name, function] :
         {std::pair{"kforge_digest", &m_digestFunction}, std::pair{"kforge_flush", &m_flushFunction}})
        if (m_helperProblem.empty()
            && (e = m_driver.moduleGetFunction(function, module, built.loweredNames.at(name).c_str())) != CUDA_SUCCESS)
            m_helperProblem = std::string("cuModuleGetFunction(") + name + ") failed with " + m_driver.describe(e);
    if (m_helperProblem.empty() && (e = m_driver.memAlloc(&sum, 8)) != CUDA_SUCCESS)
        m_helperProblem = "no device memory for the digest's sum: " + m_driver.describe(e);
    if (sum)
        m_digestSum.reset(sum);
    if (!m_helperProblem.empty()) {
        m_digestFunction = m_flushFunction = nullptr;
        m_helperModule.reset();
        noteError(e);
    } else if (built.loweredNames.count("kforge_flush")) {
        m_flushKernelName = built.loweredNames.at("kforge_flush");
    }
    return m_helperProblem;
}

spec::Expected<std::uint64_t> CudaBackend::digest(harness::BufferId id, std::size_t bytes, std::uint64_t key) {
    if (auto st = ready("digest"); !st)
        return spec::Error{st.error()};
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "digest");
    if (!buffer)
        return spec::Error{buffer.error()};
    CUdeviceptr ptr = (*buffer)->ptr();
    // Words are read 8 bytes at a time; a buffer that is not so aligned is digested on the host, as
    // is every buffer when the worker's kernels cannot be had (the host can do it, only slower).
    if (ptr % 8 != 0 || !loadHelpers().empty())
        return Backend::digest(id, bytes, key);
    const CUstream stream = m_stream.get();
    CUdeviceptr sumPtr = m_digestSum.get();
    unsigned long long length = bytes;
    unsigned long long k = key;
    void* params[] = {&ptr, &length, &k, &sumPtr};
    // Two blocks of 512 threads a multiprocessor read as fast as memory gives; small buffers get
    // fewer.
    constexpr unsigned kThreads = 512;
    const std::uint64_t words = bytes / 8 + 1;
    const auto blocks = static_cast<unsigned>(std::clamp<std::uint64_t>(
        (words + kThreads - 1) / kThreads, 1, static_cast<std::uint64_t>(m_multiprocessors) * 2));
    std::uint64_t result = 0;
    CUresult e = m_driver.memsetD8Async(sumPtr, 0, 8, stream);
    if (e == CUDA_SUCCESS)
        e = m_driver.launchKernel(m_digestFunction, blocks, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr);
    if (e == CUDA_SUCCESS)
        e = m_driver.memcpyDtoHAsync(&result, sumPtr, 8, stream);
    if (e == CUDA_SUCCESS)
        e = m_driver.streamSynchronize(stream);
    if (e != CUDA_SUCCESS)
        return spec::fail("digest of " + std::to_string(bytes) + " bytes on the device failed with "
                          + m_driver.describe(e) + noteError(e));
    return harness::digestFinish(result, bytes, key);
}

CUresult CudaBackend::launchFlushKernel(unsigned blocks, unsigned threads, unsigned long long count) {
    CUdeviceptr data = m_flushBuffer ? m_flushBuffer.get() : m_digestSum.get(); // read only when count > 0
    CUdeviceptr sink = m_digestSum.get();
    void* params[] = {&data, &count, &sink};
    return m_driver.launchKernel(m_flushFunction, blocks, 1, 1, threads, 1, 1, 0, m_stream.get(), params, nullptr);
}

void CudaBackend::prepareTimedRun() {
    if (!ready("prepareTimedRun"))
        return;
    // The fills and uploads before the run end here, while the device is shared, not inside the
    // turn of another worker that times alone, nor inside this one's.
    if (const CUresult e = m_driver.streamSynchronize(m_stream.get()); e != CUDA_SUCCESS) {
        noteError(e);
        return;
    }
    // With all earlier work over, CUPTI's records of it can go now: its forced flush is host work
    // that needs no turn. run() then keeps every record but the worker's own kernels queued since.
    if (timesWithCupti()) {
        CuptiTimer::instance().discard();
        m_helpersQueued = 0;
        // The first launch after a forced flush costs CUPTI host time (a fresh record buffer): an
        // empty flush pays it here rather than inside the turn.
        if (loadHelpers().empty()) {
            CUresult e = launchFlushKernel(1, 32, 0);
            if (e == CUDA_SUCCESS) {
                ++m_helpersQueued;
                e = m_driver.streamSynchronize(m_stream.get());
            }
            if (e != CUDA_SUCCESS)
                noteError(e);
        }
        m_cuptiDiscarded = true;
    }
}

void CudaBackend::flushCaches() {
    if (!ready("flushCaches"))
        return;
    const CUstream stream = m_stream.get();
    if (!m_flushBuffer) {
        // Twice the L2, so that nothing a previous run left there survives. Zeros, so that the
        // flush kernel's store is never taken.
        const std::size_t bytes = 2 * (m_l2Bytes > 0 ? m_l2Bytes : std::size_t{64} << 20);
        CUdeviceptr ptr = 0;
        if (m_driver.memAlloc(&ptr, bytes) != CUDA_SUCCESS)
            return;
        m_flushBuffer.reset(ptr);
        m_flushBytes = bytes;
        if (const CUresult e = m_driver.memsetD8Async(ptr, 0, bytes, stream); e != CUDA_SUCCESS)
            noteError(e);
    }
    if (loadHelpers().empty()) {
        // A read, queued without waiting: the run's launches follow it on the same stream, so its
        // kernel comes before the run's in CUPTI's records on that stream, and run() leaves it out
        // by that place (a name alone could be a candidate's); the events start after it.
        const auto blocks = static_cast<unsigned>(2 * std::max(m_multiprocessors, 1));
        if (const CUresult e = launchFlushKernel(blocks, 512, m_flushBytes / 16); e != CUDA_SUCCESS)
            noteError(e);
        else
            ++m_helpersQueued;
        return;
    }
    // Without the worker's kernels, a memset evicts too (leaving dirty lines behind).
    // A memset is no kernel of the plan: CUPTI reports it as a MEMSET record, which run() never
    // counts, and run() discards whatever was recorded before its first launch anyway.
    // Not waited for: the plan's launches follow on the same stream, and both timers (CUPTI's
    // kernel records, events recorded after it) leave the memset out.
    m_flushValue ^= 1;
    if (const CUresult e = m_driver.memsetD8Async(m_flushBuffer.get(), m_flushValue, m_flushBytes, stream);
        e != CUDA_SUCCESS)
        noteError(e);
}

// ---- CudaBackend: launches --------------------------------------------------------------------------

std::string CudaBackend::launchHint(CUresult r, CudaProgram::Kernel& k, const spec::ResolvedLaunch& launch) const {
    const auto fattr = [&](CUfunction_attribute a) {
        int v = 0;
        m_driver.funcGetAttribute(&v, a, k.function);
        return v;
    };
    const std::uint64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
    std::string hint;
    if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
        const int regs = fattr(CU_FUNC_ATTRIBUTE_NUM_REGS);
        hint = ": a block of " + std::to_string(threads) + " threads at " + std::to_string(regs)
               + " registers per thread needs " + std::to_string(threads * static_cast<std::uint64_t>(regs))
               + " registers; a block may have " + std::to_string(m_registersPerBlock)
               + " (use a smaller block, or __launch_bounds__ to cap registers)";
    } else if (r == CUDA_ERROR_INVALID_VALUE) {
        const int maxThreads = fattr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        const int staticSmem = fattr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        hint = ": block=" + spec::extentsText(launch.block, launch.dims) + " is " + std::to_string(threads)
               + " threads (this kernel allows at most " + std::to_string(maxThreads) + "); shared memory is "
               + std::to_string(staticSmem) + " static + " + std::to_string(launch.smemBytes) + " dynamic bytes (the "
               + "device allows " + std::to_string(m_limits.maxSharedBytes) + " per block)";
    }
    const std::string joint = hint.empty() ? ": " : "; ";
    const std::uint64_t clusterBlocks = launch.clusterBlocks();
    if (clusterBlocks <= 1) {
        if (fattr(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) != 0)
            hint += joint
                    + "the kernel must be launched in thread block clusters (it was compiled with .explicitcluster): "
                      "give the launch a cluster=";
        return hint;
    }
    // A cluster size the kernel was not compiled for, or one whose blocks do not fit on one GPC at
    // once, fails the launch too.
    const std::array<std::uint64_t, 3> required{
        static_cast<std::uint64_t>(fattr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)),
        static_cast<std::uint64_t>(fattr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)),
        static_cast<std::uint64_t>(fattr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH))};
    hint += joint + "cluster=" + spec::extentsText(launch.cluster, launch.dims) + " is " + std::to_string(clusterBlocks)
            + " blocks of " + std::to_string(threads) + " threads per cluster (at most "
            + std::to_string(m_limits.maxClusterBlocks) + ")";
    if (required[0] > 0 && required != launch.cluster)
        hint += "; the kernel was compiled for clusters of " + spec::extentsText(required)
                + " (__cluster_dims__), which a launch must match or leave out";
    int clusters = -1;
    if (m_driver.occupancyMaxActiveClusters) {
        CUlaunchAttribute attribute{};
        const CUlaunchConfig config = clusterLaunchConfig(launch, m_stream.get(), attribute);
        if (m_driver.occupancyMaxActiveClusters(&clusters, k.function, &config) != CUDA_SUCCESS)
            clusters = -1;
    }
    if (clusters == 0)
        hint += "; not one such cluster fits on the device (its blocks, with their registers and shared memory, "
                "must be resident on one GPC at once): use smaller clusters, blocks or shared memory";
    return hint;
}

std::string CudaBackend::bindingProblem(harness::Program& program, const spec::LaunchPlan& plan) {
    auto* prog = dynamic_cast<CudaProgram*>(&program);
    if (!prog)
        return "the program was not built by the CUDA backend";
    if (!ready("bindingProblem"))
        return {}; // run() reports the same problem, where the evaluator expects errors
    if (!load(*prog))
        return prog->m_stateProblem; // a rejection; any other load failure run() reports as an error
    // The compiled kernel's parameters (cuFuncGetParamInfo): their number and sizes must be the
    // ones of the signature the arguments were bound from. CUBINs carry no parameter names.
    for (const auto& l : plan.launches) {
        auto k = kernel(*prog, l.kernel, l.smemBytes);
        if (!k || !(*k)->paramsKnown)
            continue;
        const std::string where = launchWhere(l);
        if ((*k)->paramSizes.size() != l.args.size())
            return where + "the compiled kernel takes " + std::to_string((*k)->paramSizes.size())
                   + " arguments but the signature the arguments were bound from lists " + std::to_string(l.args.size())
                   + " (is there a second, inactive definition of the kernel, or part of the signature made by a "
                     "macro?)";
        for (std::size_t i = 0; i < l.args.size(); ++i) {
            const spec::ArgBinding& a = l.args[i];
            std::size_t size = sizeof(CUdeviceptr);
            if (a.kind == spec::ArgBinding::Kind::TensorMap) {
                size = sizeof(CUtensorMap);
            } else if (!harness::isBufferBinding(a)) {
                auto value = harness::kernelArgValue(a.elementType, a.value, 8, "CUDA");
                if (!value)
                    continue; // run() names the bad value
                size = value->size;
            }
            if ((*k)->paramSizes[i] != size)
                return where + "argument '" + a.name + "': the compiled kernel's parameter " + std::to_string(i + 1)
                       + " is " + std::to_string((*k)->paramSizes[i])
                       + " bytes, but the signature the arguments were bound from " + "declares "
                       + (harness::isBufferBinding(a) ? "a pointer" : "'" + a.elementType + "'") + " of "
                       + std::to_string(size) + " bytes";
        }
    }
    return {};
}

namespace {

std::string hexOf(const void* data, std::size_t size) {
    static const char digits[] = "0123456789abcdef";
    const auto* p = static_cast<const unsigned char*>(data);
    std::string text(2 * size, '0');
    for (std::size_t i = 0; i < size; ++i) {
        text[2 * i] = digits[p[i] >> 4];
        text[2 * i + 1] = digits[p[i] & 15];
    }
    return text;
}

} // namespace

spec::Expected<nlohmann::json> CudaBackend::portableLaunches(harness::Program& program, const spec::LaunchPlan& plan) {
    auto* prog = dynamic_cast<CudaProgram*>(&program);
    if (!prog)
        return spec::fail("the program was not built by the CUDA backend");
    // What run() does besides launching, another process would not: the plan is portable only
    // without it. Tensor maps travel as the arguments of cuTensorMapEncodeTiled, to be encoded there
    // for that process's tensors, exactly as encodeTensorMap() does here.
    if (!prog->m_globalSections.empty())
        return spec::fail("the program has module-scope variables, which the worker restores before every run");
    nlohmann::json maps = nlohmann::json::array();
    for (const spec::ResolvedTensorMap& m : plan.tensorMaps) {
        const spec::ArgBinding buffer = harness::tensorMapBufferBinding(m);
        maps.push_back({{buffer.kind == spec::ArgBinding::Kind::Output ? "output" : "input", m.buffer},
                        {"name", m.name},
                        {"line", m.line},
                        {"element_bytes", spec::dtypeSize(m.dtype)},
                        {"data_type", static_cast<int>(tensorMapDataType(m.dtype))},
                        {"dims", m.dims},
                        {"strides", m.strides},
                        {"box", m.box},
                        {"swizzle", static_cast<int>(tensorMapSwizzle(m.swizzle))},
                        {"interleave", static_cast<int>(CU_TENSOR_MAP_INTERLEAVE_NONE)},
                        {"l2_promotion", static_cast<int>(CU_TENSOR_MAP_L2_PROMOTION_L2_256B)},
                        {"oob_fill", static_cast<int>(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)}});
    }
    nlohmann::json launches = nlohmann::json::array();
    for (const spec::ResolvedLaunch& l : plan.launches) {
        const std::string where = launchWhere(l);
        const std::string symbol = prog->loweredName(l.kernel);
        if (symbol.empty())
            return spec::fail(where + "the compiled program has no kernel '" + l.kernel + "'");
        nlohmann::json args = nlohmann::json::array();
        for (const spec::ArgBinding& a : l.args) {
            if (a.kind == spec::ArgBinding::Kind::TensorMap) {
                if (a.index < 0 || static_cast<std::size_t>(a.index) >= plan.tensorMaps.size())
                    return spec::fail(where + "argument '" + a.name + "': the plan has no tensor map "
                                      + std::to_string(a.index));
                args.push_back({{"tensor_map", a.index}});
                continue;
            }
            if (harness::isBufferBinding(a)) {
                const char* kind = a.kind == spec::ArgBinding::Kind::Input    ? "input"
                                   : a.kind == spec::ArgBinding::Kind::Output ? "output"
                                                                              : "scratch";
                args.push_back({{kind, a.index}});
                continue;
            }
            auto value = harness::kernelArgValue(a.elementType, a.value, 8, "CUDA");
            if (!value)
                return spec::fail(where + "argument '" + a.name + "': " + value.error());
            args.push_back({{"bytes", hexOf(value->bytes.data(), value->size)}});
        }
        nlohmann::json launch{{"function", symbol},
                              {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                              {"block", {l.block[0], l.block[1], l.block[2]}},
                              {"smem", l.smemBytes},
                              {"line", l.line},
                              {"args", args}};
        if (l.clusterBlocks() > 1)
            launch["cluster"] = {l.cluster[0], l.cluster[1], l.cluster[2]};
        launches.push_back(std::move(launch));
    }
    nlohmann::json scratch = nlohmann::json::array();
    for (const auto& s : plan.scratch)
        scratch.push_back(s.count * spec::dtypeSize(s.dtype));
    return nlohmann::json{{"image", hexOf(prog->cubin().data(), prog->cubin().size())},
                          {"launches", launches},
                          {"scratch", scratch},
                          {"tensor_maps", maps}};
}

spec::Status CudaBackend::resetGlobals(CudaProgram& program) {
    // Queued on the worker's stream ahead of the launches (and of the start event), from host
    // copies that live as long as the program.
    for (const auto& g : program.m_globals) {
        if (g.initial.empty())
            continue;
        if (const CUresult e = m_driver.memcpyHtoDAsync(g.address, g.initial.data(), g.initial.size(), m_stream.get());
            e != CUDA_SUCCESS)
            return spec::fail("resetting the module-scope variable " + g.name + " failed with " + m_driver.describe(e)
                              + noteError(e));
    }
    return spec::success();
}

spec::Expected<harness::RunResult> CudaBackend::run(harness::Program& program, const spec::LaunchPlan& plan,
                                                    const harness::Bindings& bindings,
                                                    const harness::AfterLaunch& afterLaunch) {
    // What prepareTimedRun() and flushCaches() left for this run, taken whatever the run's outcome:
    // the older records may be gone already, and the worker's kernels queued since are this run's
    // first records on the stream.
    const bool discarded = std::exchange(m_cuptiDiscarded, false);
    int helpers = std::exchange(m_helpersQueued, 0);
    if (auto st = ready("run"); !st)
        return spec::Error{st.error()};
    auto* prog = dynamic_cast<CudaProgram*>(&program);
    if (!prog)
        return spec::fail("run: the program was not built by the CUDA backend");
    if (auto st = load(*prog); !st)
        return spec::Error{st.error()};

    // Every argument is prepared before the first launch, so that a mistake in a later launch cannot
    // leave half of the plan running.
    struct Launch {
        const spec::ResolvedLaunch* plan = nullptr;
        CudaProgram::Kernel* kernel = nullptr;
        std::vector<harness::ArgValue> values;
        std::vector<std::unique_ptr<CUtensorMap>> tensorMaps; // by argument; null for other arguments
        std::vector<void*> params;
    };
    std::vector<Launch> launches(plan.launches.size());
    for (std::size_t li = 0; li < plan.launches.size(); ++li) {
        const spec::ResolvedLaunch& l = plan.launches[li];
        Launch& out = launches[li];
        out.plan = &l;
        const std::string where = launchWhere(l);
        if (l.dims < 1 || l.dims > 3)
            return spec::fail(where + std::to_string(l.dims) + " dimensions; CUDA launches have 1 to 3");
        if (l.clusterBlocks() > 1 && !m_driver.launchKernelEx)
            return spec::fail(where + "cluster=" + spec::extentsText(l.cluster, l.dims)
                              + " needs cuLaunchKernelEx, which the NVIDIA driver (CUDA " + m_driver.versionText()
                              + ") lacks: update the driver to CUDA 12.0 or newer");
        auto k = kernel(*prog, l.kernel, l.smemBytes);
        if (!k)
            return spec::fail(where + k.error());
        out.kernel = *k;
        if (out.kernel->paramsKnown && out.kernel->paramSizes.size() != l.args.size())
            return spec::fail(where + "the compiled kernel takes " + std::to_string(out.kernel->paramSizes.size())
                              + " arguments but its signature in the source lists " + std::to_string(l.args.size())
                              + " (is part of the signature produced by a macro?)");
        out.values.reserve(l.args.size());
        out.tensorMaps.resize(l.args.size());
        for (std::size_t i = 0; i < l.args.size(); ++i) {
            const spec::ArgBinding& a = l.args[i];
            const std::string argWhere = where + "argument '" + a.name + "': ";
            if (a.kind == spec::ArgBinding::Kind::TensorMap) {
                if (a.index < 0 || static_cast<std::size_t>(a.index) >= plan.tensorMaps.size())
                    return spec::fail(argWhere + "the plan has no tensor map " + std::to_string(a.index));
                auto encoded = encodeTensorMap(plan.tensorMaps[static_cast<std::size_t>(a.index)], bindings);
                if (!encoded)
                    return spec::fail(argWhere + encoded.error());
                out.tensorMaps[i] = std::move(*encoded);
                harness::ArgValue byValue; // the bytes live in tensorMaps[i]
                byValue.size = sizeof(CUtensorMap);
                out.values.push_back(byValue);
            } else if (harness::isBufferBinding(a)) {
                auto id = harness::boundBuffer(bindings, a);
                if (!id)
                    return spec::fail(argWhere + id.error());
                auto ptr = bufferFor(*id);
                if (!ptr)
                    return spec::fail(argWhere + harness::bufferKindName(a) + " " + ptr.error());
                harness::ArgValue pointer;
                std::memcpy(pointer.bytes.data(), &*ptr, sizeof(CUdeviceptr));
                pointer.size = sizeof(CUdeviceptr);
                out.values.push_back(pointer);
            } else {
                auto value = harness::kernelArgValue(a.elementType, a.value, 8, "CUDA");
                if (!value)
                    return spec::fail(argWhere + value.error());
                out.values.push_back(*value);
            }
            if (out.kernel->paramsKnown && out.kernel->paramSizes[i] != out.values.back().size)
                return spec::fail(argWhere + "the compiled kernel's parameter " + std::to_string(i + 1) + " is "
                                  + std::to_string(out.kernel->paramSizes[i]) + " bytes, but the declared type '"
                                  + a.elementType + (harness::isBufferBinding(a) ? "*'" : "'") + " is "
                                  + std::to_string(out.values.back().size));
        }
        for (std::size_t i = 0; i < out.values.size(); ++i)
            out.params.push_back(out.tensorMaps[i] ? static_cast<void*>(out.tensorMaps[i].get())
                                                   : static_cast<void*>(out.values[i].bytes.data()));
    }

    if (auto st = resetGlobals(*prog); !st)
        return spec::Error{st.error()};

    // An unwatched run (the trusted reference) skips CUPTI's two forced flushes; its records are
    // discarded with the next watched run's.
    const bool cupti = timesWithCupti();
    double cuptiSeconds = 0.0; // host time in CUPTI's flushes, reported as the run's "cupti" step
    const auto timedCupti = [&cuptiSeconds](auto&& f) {
        const auto t = std::chrono::steady_clock::now();
        f();
        cuptiSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    if (cupti && !discarded) { // else the discard's time is the evaluation's "prepare" step
        // The worker's kernels queued before go with the older records once they are over.
        if (helpers > 0)
            m_driver.streamSynchronize(m_stream.get());
        timedCupti([] { CuptiTimer::instance().discard(); });
        helpers = 0;
    }
    const CUstream stream = m_stream.get();

    // A launch that fails after others were queued must not return while those still write into
    // buffers the caller is about to reuse.
    bool queued = false;
    const auto drain = [&] {
        if (queued)
            m_driver.streamSynchronize(stream);
    };

    const std::uint64_t hostBeforeLaunch = cupti ? CuptiTimer::timestamp() : 0;
    m_driver.eventRecord(m_start.get(), stream);
    for (std::size_t li = 0; li < launches.size(); ++li) {
        const Launch& launch = launches[li];
        const spec::ResolvedLaunch& l = *launch.plan;
        if (afterLaunch && li > 0) {
            // The previous launch is finished before anyone looks at what it left.
            if (const CUresult e = m_driver.streamSynchronize(stream); e != CUDA_SUCCESS)
                return spec::fail(launchWhere(*launches[li - 1].plan) + "the kernel failed on the device with "
                                  + m_driver.describe(e) + deviceFaultHint(e, plan.tensorMaps.size()) + noteError(e));
            afterLaunch(li - 1);
        }
        const bool clustered = l.clusterBlocks() > 1;
        CUresult e = CUDA_SUCCESS;
        if (clustered) {
            // Thread block clusters are a launch attribute, which only the extensible launch takes.
            CUlaunchAttribute attribute{};
            const CUlaunchConfig config = clusterLaunchConfig(l, stream, attribute);
            e = m_driver.launchKernelEx(&config, launch.kernel->function, const_cast<void**>(launch.params.data()),
                                        nullptr);
        } else {
            e = m_driver.launchKernel(launch.kernel->function, static_cast<unsigned>(l.grid[0]),
                                      static_cast<unsigned>(l.grid[1]), static_cast<unsigned>(l.grid[2]),
                                      static_cast<unsigned>(l.block[0]), static_cast<unsigned>(l.block[1]),
                                      static_cast<unsigned>(l.block[2]), static_cast<unsigned>(l.smemBytes), stream,
                                      const_cast<void**>(launch.params.data()), nullptr);
        }
        if (e != CUDA_SUCCESS) {
            drain();
            const std::string hint = launchHint(e, *launch.kernel, l);
            return spec::fail(launchWhere(l) + (clustered ? "cuLaunchKernelEx" : "cuLaunchKernel") + " failed with "
                              + m_driver.describe(e) + hint + noteError(e));
        }
        queued = true;
    }
    m_driver.eventRecord(m_stop.get(), stream);
    const CUresult syncErr = m_driver.streamSynchronize(stream);
    const std::uint64_t hostAfterSync = cupti ? CuptiTimer::timestamp() : 0;
    deviceDone();
    if (syncErr != CUDA_SUCCESS) {
        // The error surfaces at the synchronisation; with one launch it is that kernel's.
        const std::string who = plan.launches.size() == 1 ? launchWhere(plan.launches.front()) + "the kernel"
                                                          : "one of the kernels " + launchList(plan);
        return spec::fail(who + " failed on the device with " + m_driver.describe(syncErr)
                          + deviceFaultHint(syncErr, plan.tensorMaps.size()) + noteError(syncErr));
    }

    float ms = 0.0f;
    const bool haveEvents = m_driver.eventElapsed(&ms, m_start.get(), m_stop.get()) == CUDA_SUCCESS;
    const double eventUs = haveEvents ? static_cast<double>(ms) * 1000.0 : 0.0;
    if (!cupti)
        return harness::RunResult{eventUs, {}, {}};

    std::uint64_t dropped = 0;
    std::vector<KernelRecord> records;
    std::vector<KernelRecord> collected;
    timedCupti([&] { collected = CuptiTimer::instance().collect(dropped); });
    for (auto& r : collected)
        if (r.contextId == m_cuptiContext)
            records.push_back(std::move(r));
    std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
        return a.start != b.start ? a.start < b.start : a.correlationId < b.correlationId;
    });
    // The worker's kernels (the cache flush) were queued on its stream before the run's first
    // launch, so they are the earliest records there. Only those are left out: a candidate's kernel
    // of the same name still counts.
    for (; helpers > 0; --helpers) {
        const auto first = std::find_if(records.begin(), records.end(),
                                        [&](const KernelRecord& r) { return r.streamId == m_cuptiStream; });
        if (first == records.end() || first->name != m_flushKernelName)
            break;
        records.erase(first);
    }
    if (records.empty() && !m_cuptiSeenKernel) {
        // CUPTI accepted the subscription but records nothing (seen under some profilers): events
        // time this and every later run, so that all samples are alike.
        CuptiTimer::instance().disable();
        m_cuptiActive = false;
        m_cuptiProblem = "CUPTI recorded no kernel executions";
        return harness::RunResult{eventUs, {}, {}};
    }
    m_cuptiSeenKernel = true;

    if (m_trace) {
        std::fprintf(stderr,
                     "kforge-worker-cuda: run of %zu launches: %zu kernel records, %llu dropped, events %.3f us, "
                     "worker's stream %u\n",
                     plan.launches.size(), records.size(), static_cast<unsigned long long>(dropped), eventUs,
                     m_cuptiStream);
        for (const auto& r : records) {
            const std::string clusters = r.cluster[0] * r.cluster[1] * r.cluster[2] > 1
                                             ? ", in clusters of " + spec::extentsText(r.cluster)
                                             : std::string();
            std::fprintf(
                stderr,
                "  %s stream %u: %.3f us, starts %+.3f us after the first launch, ends %+.3f us after the sync%s\n",
                r.name.c_str(), r.streamId, (static_cast<double>(r.end) - static_cast<double>(r.start)) / 1000.0,
                (static_cast<double>(r.start) - static_cast<double>(hostBeforeLaunch)) / 1000.0,
                (static_cast<double>(r.end) - static_cast<double>(hostAfterSync)) / 1000.0, clusters.c_str());
        }
    }

    // The late-kernel check needs the records' clock to agree with the host's. Kernels on the worker's
    // own stream ran between the first launch and the synchronisation, whatever else happened; if
    // their records say otherwise, the clocks disagree and the check would only accuse innocents.
    const bool clocksAgree = std::all_of(records.begin(), records.end(), [&](const auto& r) {
        return r.streamId != m_cuptiStream
               || (r.start + kLateToleranceNs >= hostBeforeLaunch && r.end <= hostAfterSync + kLateToleranceNs);
    });

    harness::RunResult result;
    std::vector<std::string> problems;
    if (dropped > 0)
        problems.push_back("CUPTI dropped " + std::to_string(dropped)
                           + " kernel records, so the run could not be checked");
    if (records.size() != plan.launches.size()) {
        std::string names;
        for (const auto& r : records)
            names += (names.empty() ? "" : ", ") + r.name + (r.deviceLaunched ? " (launched from the device)" : "");
        problems.push_back(std::to_string(records.size()) + " kernels ran for a launch plan of "
                           + std::to_string(plan.launches.size()) + " launches (" + (names.empty() ? "none" : names)
                           + ")");
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
        const KernelRecord& r = records[i];
        if (r.end < r.start || r.start == 0) {
            problems.push_back("CUPTI gave no complete timestamps for kernel " + r.name);
            continue;
        }
        result.microseconds += static_cast<double>(r.end - r.start) / 1000.0;
        if (i < plan.launches.size()) {
            const spec::ResolvedLaunch& l = plan.launches[i];
            const std::string expected = prog->loweredName(l.kernel);
            const auto asSigned = [](const std::array<std::uint64_t, 3>& v) {
                return std::array<std::int64_t, 3>{static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1]),
                                                   static_cast<std::int64_t>(v[2])};
            };
            // A cluster launch's record names its cluster (on devices that have them); an ordinary
            // launch of a kernel compiled with __cluster_dims__ runs in clusters too, so only the
            // plan's clusters are checked.
            const bool clustered = l.clusterBlocks() > 1;
            const bool sameCluster =
                !clustered || r.cluster == std::array<std::int64_t, 3>{} || r.cluster == asSigned(l.cluster);
            const bool sameShape = r.grid == asSigned(l.grid) && r.block == asSigned(l.block)
                                   && r.dynamicSharedBytes == static_cast<std::int64_t>(l.smemBytes) && sameCluster;
            // CUPTI caches kernel names by function handle, and the driver hands the handles of
            // unloaded modules out again: a record of the launched kernel can carry the name of a
            // kernel this worker unloaded earlier. Such a name, with the launch's exact shape, is ours.
            const bool nameMatches = r.name.empty() || r.name == expected || m_loadedKernelNames.count(r.name) > 0;
            if (!sameShape || !nameMatches) {
                problems.push_back("kernel " + std::to_string(i + 1) + " to run was " + r.name
                                   + " with grid=" + spec::extentsText(r.grid) + " block=" + spec::extentsText(r.block)
                                   + (clustered ? " cluster=" + spec::extentsText(r.cluster) : std::string()) + " smem="
                                   + std::to_string(r.dynamicSharedBytes) + ", but launch " + std::to_string(i + 1)
                                   + " of the plan (line " + std::to_string(l.line) + ") is " + expected
                                   + " with grid=" + spec::extentsText(l.grid) + " block=" + spec::extentsText(l.block)
                                   + (clustered ? " cluster=" + spec::extentsText(l.cluster) : std::string())
                                   + " smem=" + std::to_string(l.smemBytes));
            }
        }
        if (r.streamId != m_cuptiStream)
            problems.push_back("kernel " + r.name + " ran on stream " + std::to_string(r.streamId)
                               + ", not on the worker's stream " + std::to_string(m_cuptiStream));
        if (clocksAgree && r.end > hostAfterSync + kLateToleranceNs)
            problems.push_back("kernel " + r.name + " was still running "
                               + std::to_string((r.end - hostAfterSync) / 1000)
                               + " us after the stream synchronisation returned");
    }
    for (const auto& p : problems)
        result.integrityProblem += (result.integrityProblem.empty() ? "" : "; ") + p;
    result.stepSeconds.emplace_back("cupti", cuptiSeconds);
    return result;
}

// ---- CudaBackend: hardware metrics and ceilings -------------------------------------------------------

class CudaBackend::TracingPause {
public:
    explicit TracingPause(CudaBackend& backend) : m_backend(backend), m_resume(backend.m_cuptiActive) {
        // CUPTI's activity API and its range profiler are not meant to run at once, and the replayed
        // passes of a profiled kernel would only be records for run() to throw away.
        if (m_resume) {
            CuptiTimer::instance().disable();
            m_backend.m_cuptiActive = false;
        }
    }
    ~TracingPause() {
        if (m_resume && m_backend.m_state && !m_backend.m_state->lost
            && m_backend.m_timingMode == harness::TimingMode::Default)
            m_backend.startCupti();
    }
    TracingPause(const TracingPause&) = delete;
    TracingPause& operator=(const TracingPause&) = delete;

private:
    CudaBackend& m_backend;
    bool m_resume;
};

protocol::ProfileResult CudaBackend::profile(harness::Program& program, const spec::LaunchPlan& plan,
                                             const harness::Bindings& bindings) {
    if (!m_driver.usable())
        return {"unsupported", "the CUDA backend cannot read hardware counters: " + m_driver.problem(), {}};
    if (auto st = ready("profile"); !st)
        return {"error", st.error(), {}};
    if (!RangeProfiler::available())
        return RangeProfiler::collect(m_state->context, m_device, m_deviceIndex, plan.launches.size(), {}, {}, false);

    const bool wasTracing = m_cuptiActive;
    protocol::ProfileResult result;
    {
        TracingPause pause(*this);
        // Each pass starts from cold caches, as each timed run does, so DRAM traffic is that of a
        // real call rather than of data left in L2 by the previous pass.
        // The profiler launches on a stream of its own: the flush must be over before.
        const auto prepare = [&] {
            flushCaches();
            m_driver.streamSynchronize(m_stream.get());
        };
        // run() with tracing paused is a plain event-timed run: the same argument checks, launches,
        // synchronisation and sticky-error bookkeeping as every verified run.
        const auto launch = [&]() -> std::string {
            auto r = run(program, plan, bindings);
            return r ? std::string() : r.error();
        };
        result = RangeProfiler::collect(m_state->context, m_device, m_deviceIndex, plan.launches.size(), prepare,
                                        launch, m_trace);
    }
    if (wasTracing && !m_cuptiActive && !deviceLost())
        result.message += "; CUPTI activity tracing did not resume after profiling (" + m_cuptiProblem
                          + "), so the timed runs use CUDA events";
    return result;
}

std::string CudaBackend::ceilingsKey() const {
    std::string uuid = "no-uuid";
    CUuuid u{};
    if (m_driver.deviceGetUuid && m_driver.deviceGetUuid(&u, m_device) == CUDA_SUCCESS) {
        // nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
        uuid = "GPU-";
        static constexpr char kHex[] = "0123456789abcdef";
        for (int i = 0; i < 16; ++i) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                uuid += '-';
            const auto b = static_cast<unsigned char>(u.bytes[i]);
            uuid += kHex[b >> 4];
            uuid += kHex[b & 0xf];
        }
    }
    // A new driver can change clocks and firmware; the kernel module's release says more than the
    // CUDA version it implements.
    std::string driver = CudaDriver::kernelModuleVersion();
    if (driver.empty())
        driver = "CUDA " + m_driver.versionText();
    return m_deviceName + "|" + uuid + "|" + driver;
}

protocol::CeilingsResult CudaBackend::ceilings(bool refresh) {
    protocol::CeilingsResult r;
    if (!m_driver.usable()) {
        r.message = "cannot measure device ceilings: " + m_driver.problem();
        return r;
    }
    if (auto st = ready("ceilings"); !st) {
        r.message = st.error();
        return r;
    }
    // No file name prefix: the names this worker has always used, so that existing entries stay valid.
    const harness::CeilingsCache cache(kCeilingsFormat, "");
    return cache.loadOrMeasure(ceilingsKey(), m_deviceName, refresh, [this] {
        TracingPause pause(*this);
        int sms = 0;
        m_driver.deviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, m_device);
        CeilingsMeasurement m = measureCeilings(
            CeilingsDevice{m_driver, m_compiler, m_stream.get(), m_cc.load(), sms, m_l2Bytes, m_deviceName});
        // Before the pause ends, so that tracing is not resumed on a context that just broke.
        if (m.failure != CUDA_SUCCESS)
            m.result.message += noteError(m.failure);
        return std::move(m.result);
    });
}

} // namespace kforge::cuda
