#include "openclbackend.h"

#include "argvalue.h"
#include "ceilingscache.h"
#include "compilelog.h"
#include "openclceilings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

namespace kforge::opencl {

namespace {

constexpr cl_int kPlatformNotFoundKhr = -1001; // from cl_ext.h, which older header sets lack

const char* const kInstallHint =
    "install an OpenCL driver, e.g. `apt install pocl-opencl-icd` for the CPU, or your GPU vendor's OpenCL ICD";

std::string trim(std::string s) {
    const auto notSpace = [](unsigned char c) { return !std::isspace(c) && c != '\0'; };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
    s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
    return s;
}

// clGet*Info string queries: the size first, then the text, without the terminating NUL (drivers
// also pad some names with spaces).
template <typename Object, typename Query> std::string infoString(Object object, cl_uint param, Query query) {
    std::size_t size = 0;
    if (query(object, param, 0, nullptr, &size) != CL_SUCCESS || size == 0)
        return {};
    std::string s(size, '\0');
    if (query(object, param, size, s.data(), nullptr) != CL_SUCCESS)
        return {};
    return trim(s);
}

std::string deviceString(cl_device_id d, cl_device_info param) {
    return infoString(d, param, [](cl_device_id o, cl_uint p, std::size_t n, void* v, std::size_t* r) {
        return clGetDeviceInfo(o, p, n, v, r);
    });
}

std::string platformString(cl_platform_id pl, cl_platform_info param) {
    return infoString(pl, param, [](cl_platform_id o, cl_uint p, std::size_t n, void* v, std::size_t* r) {
        return clGetPlatformInfo(o, p, n, v, r);
    });
}

template <typename T> T deviceValue(cl_device_id d, cl_device_info param, T fallback = T{}) {
    T v{};
    return clGetDeviceInfo(d, param, sizeof v, &v, nullptr) == CL_SUCCESS ? v : fallback;
}

std::vector<std::size_t> workItemSizes(cl_device_id d) {
    const cl_uint dims = deviceValue<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, 3);
    std::vector<std::size_t> sizes(std::max<cl_uint>(dims, 1), 0);
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizes.size() * sizeof(std::size_t), sizes.data(), nullptr)
        != CL_SUCCESS)
        sizes.assign(3, 1);
    return sizes;
}

std::string programBuildLog(cl_program p, cl_device_id d) {
    std::size_t size = 0;
    if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS || size == 0)
        return {};
    std::string s(size, '\0');
    if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, size, s.data(), nullptr) != CL_SUCCESS)
        return {};
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    return s;
}

// Whether a file a build log names is the kernel's own source: clang calls an in-memory source
// "<source>", PoCL compiles a copy in its kernel cache ("<cache>/kcache/tempfile_XYZ.cl"). A log
// block about any other file (a header a kernel should not have reached) is left out of the log.
bool isOwnSourceFile(const std::string& file) {
    if (file == "<source>" || file == "<stdin>")
        return true;
    const std::size_t slash = file.rfind('/');
    const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
    return base.rfind("tempfile_", 0) == 0 && base.size() > 3 && base.compare(base.size() - 3, 3, ".cl") == 0;
}

// NVIDIA's compiler logs "(): Warning: Function K is a kernel, so overriding noinline attribute..." for
// every kernel of every build; it says nothing about the source and would bury real warnings.
std::string withoutDriverNoise(const std::string& log) {
    std::istringstream in(log);
    std::string out;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("(): Warning: Function ", 0) == 0
            && line.find("overriding noinline attribute") != std::string::npos)
            continue;
        out += line + "\n";
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

// "OpenCL 3.0 ..." / "OpenCL C 1.2 ..." -> major * 10 + minor; 0 when unreadable.
int parseVersion(const std::string& text, const std::string& prefix) {
    if (text.rfind(prefix, 0) != 0)
        return 0;
    int major = 0, minor = 0;
    if (std::sscanf(text.c_str() + prefix.size(), "%d.%d", &major, &minor) != 2)
        return 0;
    return major * 10 + minor;
}

// The OpenCL C versions a device compiles, as major*10+minor. 3.0 devices list them all
// (CL_DEVICE_OPENCL_C_ALL_VERSIONS, and report only a compatible 1.x in CL_DEVICE_OPENCL_C_VERSION);
// older devices name their single highest version.
std::vector<int> openClCVersions(cl_device_id d) {
    std::vector<int> versions;
#ifdef CL_DEVICE_OPENCL_C_ALL_VERSIONS
    if (parseVersion(deviceString(d, CL_DEVICE_VERSION), "OpenCL ") >= 30) {
        std::size_t size = 0;
        if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, nullptr, &size) == CL_SUCCESS && size > 0) {
            std::vector<cl_name_version> all(size / sizeof(cl_name_version));
            if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, all.size() * sizeof(cl_name_version), all.data(),
                                nullptr)
                == CL_SUCCESS)
                for (const auto& v : all)
                    versions.push_back(
                        static_cast<int>(CL_VERSION_MAJOR(v.version) * 10 + CL_VERSION_MINOR(v.version)));
        }
    }
#endif
    if (const int v = parseVersion(deviceString(d, CL_DEVICE_OPENCL_C_VERSION), "OpenCL C "); v > 0)
        versions.push_back(v);
    std::sort(versions.begin(), versions.end());
    versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
    return versions;
}

// Without -cl-std a compiler accepts OpenCL C 1.2 only, which lacks program-scope globals and the
// 2.0 atomics; the newest standard the device declares is asked for instead. -cl-std takes only
// CL1.x, CL2.0 and CL3.0, so 2.1/2.2 devices get CL2.0.
std::string chooseClStd(const std::vector<int>& versions) {
    if (std::find(versions.begin(), versions.end(), 30) != versions.end())
        return "-cl-std=CL3.0";
    if (!versions.empty() && versions.back() >= 20)
        return "-cl-std=CL2.0";
    return {};
}

// Compilers and their declarations disagree. PoCL 3.1 lists OpenCL C 3.0 but builds program-scope
// variables only under -cl-std=CL2.0, and under CL2.0 it lacks vload/vstore on global pointers,
// which vectorised kernels use all the time. So each standard is tried on two probes; the richest
// that passes both wins, else the richest with the vector loads (program-scope variables are rare
// in honest kernels), else what the device declares.
std::string probeClStd(cl_context context, cl_device_id device, const std::string& declared) {
    static const char* globals = "global int kforge_probe_counter = 0;\n"
                                 "kernel void kforge_probe(global int* out) { out[0] = kforge_probe_counter++; }\n";
    static const char* vectors = "kernel void kforge_probe(global const float* in, global float* out) {\n"
                                 "    vstore4(vload4(0, in), 0, out);\n"
                                 "}\n";
    const auto builds = [&](const char* source, const std::string& option) {
        cl_int err = CL_SUCCESS;
        cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
        if (err != CL_SUCCESS || !program)
            return false;
        const bool built = clBuildProgram(program, 1, &device, option.c_str(), nullptr, nullptr) == CL_SUCCESS;
        clReleaseProgram(program);
        return built;
    };
    std::string vectorsOnly;
    for (std::string option : {"-cl-std=CL3.0", "-cl-std=CL2.0"}) {
        if (!builds(vectors, option))
            continue;
        if (builds(globals, option))
            return option;
        if (vectorsOnly.empty())
            vectorsOnly = option;
    }
    return vectorsOnly.empty() ? declared : vectorsOnly;
}

std::string versionText(int v) {
    return std::to_string(v / 10) + "." + std::to_string(v % 10);
}

std::string deviceKind(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (t & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

struct DeviceEntry {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
};

// All devices of all platforms, flattened in platform order: the index open() takes. Problems with
// single platforms are collected rather than fatal, so one broken ICD does not hide the others.
struct Enumeration {
    std::vector<cl_platform_id> platforms;
    std::vector<DeviceEntry> devices;
    std::vector<std::string> problems;
};

Enumeration enumerate() {
    Enumeration e;
    cl_uint count = 0;
    const cl_int err = clGetPlatformIDs(0, nullptr, &count);
    if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && count == 0)) {
        e.problems.push_back(std::string("no OpenCL platform found: ") + kInstallHint);
        return e;
    }
    if (err != CL_SUCCESS) {
        e.problems.push_back("clGetPlatformIDs failed with " + clErrorName(err) + ": " + kInstallHint);
        return e;
    }
    e.platforms.resize(count);
    if (const cl_int err2 = clGetPlatformIDs(count, e.platforms.data(), nullptr); err2 != CL_SUCCESS) {
        e.problems.push_back("clGetPlatformIDs failed with " + clErrorName(err2));
        e.platforms.clear();
        return e;
    }
    for (cl_platform_id pl : e.platforms) {
        cl_uint n = 0;
        const cl_int derr = clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
        if (derr == CL_DEVICE_NOT_FOUND || (derr == CL_SUCCESS && n == 0))
            continue;
        if (derr != CL_SUCCESS) {
            e.problems.push_back("platform '" + platformString(pl, CL_PLATFORM_NAME) + "': clGetDeviceIDs failed with "
                                 + clErrorName(derr));
            continue;
        }
        std::vector<cl_device_id> ids(n);
        if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr) != CL_SUCCESS)
            continue;
        for (cl_device_id d : ids)
            e.devices.push_back({pl, d});
    }
    if (e.devices.empty())
        e.problems.push_back("OpenCL platforms exist but none has a device: " + std::string(kInstallHint));
    return e;
}

bool hasExtension(cl_device_id d, const std::string& ext) {
    std::istringstream in(deviceString(d, CL_DEVICE_EXTENSIONS));
    for (std::string tok; in >> tok;)
        if (tok == ext)
            return true;
    return false;
}

// Errors a finished or failed command reports when the context itself is broken (e.g. NVIDIA after
// an out-of-bounds access): nothing run in it afterwards can be trusted.
bool isStickyError(cl_int err) {
    return err == CL_OUT_OF_RESOURCES || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST || err == -9999
           || err == CL_INVALID_COMMAND_QUEUE || err == CL_INVALID_CONTEXT;
}

void CL_CALLBACK contextNotify(const char* errinfo, const void*, std::size_t, void*) {
    // stdout carries the worker protocol; asynchronous driver reports go to stderr.
    std::fprintf(stderr, "kforge-worker-opencl: OpenCL context reports: %s\n", errinfo ? errinfo : "(nothing)");
}

std::vector<std::string> splitNames(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s + ";") {
        if (c == ';') {
            if (!trim(cur).empty())
                out.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    return out;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : ", ") + x;
    return s;
}

} // namespace

// ---- error names -----------------------------------------------------------------------------

std::string clErrorName(cl_int code) {
    switch (code) {
    case 0:
        return "CL_SUCCESS";
    case -1:
        return "CL_DEVICE_NOT_FOUND";
    case -2:
        return "CL_DEVICE_NOT_AVAILABLE";
    case -3:
        return "CL_COMPILER_NOT_AVAILABLE";
    case -4:
        return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5:
        return "CL_OUT_OF_RESOURCES";
    case -6:
        return "CL_OUT_OF_HOST_MEMORY";
    case -7:
        return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case -8:
        return "CL_MEM_COPY_OVERLAP";
    case -9:
        return "CL_IMAGE_FORMAT_MISMATCH";
    case -10:
        return "CL_IMAGE_FORMAT_NOT_SUPPORTED";
    case -11:
        return "CL_BUILD_PROGRAM_FAILURE";
    case -12:
        return "CL_MAP_FAILURE";
    case -13:
        return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case -14:
        return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -15:
        return "CL_COMPILE_PROGRAM_FAILURE";
    case -16:
        return "CL_LINKER_NOT_AVAILABLE";
    case -17:
        return "CL_LINK_PROGRAM_FAILURE";
    case -18:
        return "CL_DEVICE_PARTITION_FAILED";
    case -19:
        return "CL_KERNEL_ARG_INFO_NOT_AVAILABLE";
    case -30:
        return "CL_INVALID_VALUE";
    case -31:
        return "CL_INVALID_DEVICE_TYPE";
    case -32:
        return "CL_INVALID_PLATFORM";
    case -33:
        return "CL_INVALID_DEVICE";
    case -34:
        return "CL_INVALID_CONTEXT";
    case -35:
        return "CL_INVALID_QUEUE_PROPERTIES";
    case -36:
        return "CL_INVALID_COMMAND_QUEUE";
    case -37:
        return "CL_INVALID_HOST_PTR";
    case -38:
        return "CL_INVALID_MEM_OBJECT";
    case -39:
        return "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR";
    case -40:
        return "CL_INVALID_IMAGE_SIZE";
    case -41:
        return "CL_INVALID_SAMPLER";
    case -42:
        return "CL_INVALID_BINARY";
    case -43:
        return "CL_INVALID_BUILD_OPTIONS";
    case -44:
        return "CL_INVALID_PROGRAM";
    case -45:
        return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46:
        return "CL_INVALID_KERNEL_NAME";
    case -47:
        return "CL_INVALID_KERNEL_DEFINITION";
    case -48:
        return "CL_INVALID_KERNEL";
    case -49:
        return "CL_INVALID_ARG_INDEX";
    case -50:
        return "CL_INVALID_ARG_VALUE";
    case -51:
        return "CL_INVALID_ARG_SIZE";
    case -52:
        return "CL_INVALID_KERNEL_ARGS";
    case -53:
        return "CL_INVALID_WORK_DIMENSION";
    case -54:
        return "CL_INVALID_WORK_GROUP_SIZE";
    case -55:
        return "CL_INVALID_WORK_ITEM_SIZE";
    case -56:
        return "CL_INVALID_GLOBAL_OFFSET";
    case -57:
        return "CL_INVALID_EVENT_WAIT_LIST";
    case -58:
        return "CL_INVALID_EVENT";
    case -59:
        return "CL_INVALID_OPERATION";
    case -60:
        return "CL_INVALID_GL_OBJECT";
    case -61:
        return "CL_INVALID_BUFFER_SIZE";
    case -62:
        return "CL_INVALID_MIP_LEVEL";
    case -63:
        return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -64:
        return "CL_INVALID_PROPERTY";
    case -65:
        return "CL_INVALID_IMAGE_DESCRIPTOR";
    case -66:
        return "CL_INVALID_COMPILER_OPTIONS";
    case -67:
        return "CL_INVALID_LINKER_OPTIONS";
    case -68:
        return "CL_INVALID_DEVICE_PARTITION_COUNT";
    case -69:
        return "CL_INVALID_PIPE_SIZE";
    case -70:
        return "CL_INVALID_DEVICE_QUEUE";
    case -71:
        return "CL_INVALID_SPEC_ID";
    case -72:
        return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
    case -1000:
        return "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR";
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    case -1057:
        return "CL_DEVICE_PARTITION_FAILED_EXT";
    case -1058:
        return "CL_INVALID_PARTITION_COUNT_EXT";
    case -1059:
        return "CL_INVALID_PARTITION_NAME_EXT";
    case -1092:
        return "CL_INVALID_SEMAPHORE_KHR";
    case -1138:
        return "CL_INVALID_COMMAND_BUFFER_KHR";
    case -1139:
        return "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR";
    case -1140:
        return "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR";
    // Not in any header: what NVIDIA's driver returns after an illegal memory access in a kernel.
    case -9999:
        return "NVIDIA error -9999 (illegal memory access in a kernel)";
    default:
        return "CL error " + std::to_string(code);
    }
}

std::optional<double> profiledSeconds(cl_event event) {
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr) != CL_SUCCESS
        || clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr) != CL_SUCCESS || t1 < t0)
        return std::nullopt;
    return static_cast<double>(t1 - t0) * 1e-9;
}

// ---- OpenClProgram ---------------------------------------------------------------------------

OpenClProgram::OpenClProgram(ProgramHandle program, cl_context context, cl_device_id device)
    : m_program(std::move(program)), m_context(context), m_device(device) {
    clRetainContext(m_context);
}

OpenClProgram::~OpenClProgram() {
    m_kernels.clear(); // kernels before their program
    m_program.reset();
    clReleaseContext(m_context);
}

spec::Expected<cl_kernel> OpenClProgram::kernel(const std::string& name) {
    if (auto it = m_kernels.find(name); it != m_kernels.end())
        return it->second.get();
    cl_int err = CL_SUCCESS;
    KernelHandle k(clCreateKernel(m_program.get(), name.c_str(), &err));
    if (err != CL_SUCCESS || !k) {
        if (err == CL_INVALID_KERNEL_NAME)
            return spec::fail("the program has no kernel named '" + name + "' (kernels: " + joined(kernelNames())
                              + ")");
        return spec::fail("clCreateKernel(" + name + ") failed with " + clErrorName(err));
    }
    cl_kernel raw = k.get();
    m_kernels.emplace(name, std::move(k));
    return raw;
}

std::string OpenClProgram::bindingProblem(const spec::ResolvedLaunch& launch) {
    auto kernel = this->kernel(launch.kernel);
    if (!kernel)
        return kernel.error();
    cl_uint numArgs = 0;
    if (clGetKernelInfo(*kernel, CL_KERNEL_NUM_ARGS, sizeof numArgs, &numArgs, nullptr) != CL_SUCCESS)
        return {};
    if (numArgs != launch.args.size())
        return "the compiled kernel " + launch.kernel + " takes " + std::to_string(numArgs)
               + " arguments but the signature the " + "arguments were bound from lists "
               + std::to_string(launch.args.size());
    for (std::size_t i = 0; i < launch.args.size(); ++i) {
        const spec::ArgBinding& a = launch.args[i];
        const auto index = static_cast<cl_uint>(i);
        std::size_t size = 0;
        if (clGetKernelArgInfo(*kernel, index, CL_KERNEL_ARG_NAME, 0, nullptr, &size) != CL_SUCCESS)
            return {}; // built without argument information: the count and sizes are all there is
        std::string name(size, '\0');
        clGetKernelArgInfo(*kernel, index, CL_KERNEL_ARG_NAME, size, name.data(), nullptr);
        name.resize(std::strlen(name.c_str()));
        cl_kernel_arg_address_qualifier space = CL_KERNEL_ARG_ADDRESS_PRIVATE;
        clGetKernelArgInfo(*kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof space, &space, nullptr);
        const bool buffer = space == CL_KERNEL_ARG_ADDRESS_GLOBAL || space == CL_KERNEL_ARG_ADDRESS_CONSTANT;
        const std::string where = "argument " + std::to_string(i + 1) + " of the compiled kernel " + launch.kernel;
        if (name != a.name)
            return "argument " + std::to_string(i + 1) + " of the compiled kernel " + launch.kernel + " is '" + name
                   + "', but the signature the arguments were bound from names it '" + a.name
                   + "' (is there a second, inactive definition of the kernel?)";
        if (buffer != harness::isBufferBinding(a))
            return where + " ('" + a.name + "') is " + (buffer ? "a global buffer" : "not a global buffer")
                   + ", but it was bound as "
                   + (harness::isBufferBinding(a) ? std::string(harness::bufferKindName(a)) : "a value");
    }
    return {};
}

std::vector<std::string> OpenClProgram::kernelNames() const {
    return splitNames(infoString(m_program.get(), CL_PROGRAM_KERNEL_NAMES,
                                 [](cl_program o, cl_uint p, std::size_t n, void* v, std::size_t* r) {
                                     return clGetProgramInfo(o, p, n, v, r);
                                 }));
}

// ---- OpenClBackend ---------------------------------------------------------------------------

OpenClBackend::OpenClBackend() {
    // Until a device is open the limits describe nothing that can run.
    m_limits.maxSharedBytes = 0;
}

OpenClBackend::~OpenClBackend() {
    close();
}

void OpenClBackend::close() {
    m_digestKernel.reset();
    m_digestProgram.reset();
    m_digestPartials.reset();
    m_digestProblem.clear();
    m_buffers.clear();
    m_queue.reset();
    m_context.reset();
    m_device = nullptr;
    m_platform = nullptr;
    m_deviceIndex = -1;
    m_deviceName.clear();
    m_clStd.clear();
}

protocol::ProbeResult OpenClBackend::probe() {
    protocol::ProbeResult r;
    r.backend = name();
    Enumeration e = enumerate();
    r.problems = e.problems;

    nlohmann::json platforms = nlohmann::json::array();
    for (cl_platform_id pl : e.platforms) {
        int devices = 0;
        for (const auto& d : e.devices)
            devices += d.platform == pl;
        platforms.push_back({{"name", platformString(pl, CL_PLATFORM_NAME)},
                             {"vendor", platformString(pl, CL_PLATFORM_VENDOR)},
                             {"version", platformString(pl, CL_PLATFORM_VERSION)},
                             {"devices", devices}});
    }
    r.details["platforms"] = platforms;

    int index = 0;
    for (const auto& [pl, d] : e.devices) {
        protocol::DeviceInfo info;
        info.name = deviceString(d, CL_DEVICE_NAME);
        info.vendor = deviceString(d, CL_DEVICE_VENDOR);
        info.platform = platformString(pl, CL_PLATFORM_NAME) + " (" + platformString(pl, CL_PLATFORM_VERSION) + ")";
        info.driver = deviceString(d, CL_DRIVER_VERSION);
        info.kind = deviceKind(deviceValue<cl_device_type>(d, CL_DEVICE_TYPE));

        const std::vector<int> cVersions = openClCVersions(d);
        nlohmann::json cList = nlohmann::json::array();
        for (int v : cVersions)
            cList.push_back(versionText(v));
        const bool fp64 =
            deviceValue<cl_device_fp_config>(d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0 || hasExtension(d, "cl_khr_fp64");
        const bool available = deviceValue<cl_bool>(d, CL_DEVICE_AVAILABLE) != CL_FALSE;
        const bool compiler = deviceValue<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE) != CL_FALSE;

        info.details = {
            {"index", index},
            {"device_version", deviceString(d, CL_DEVICE_VERSION)},
            {"platform_name", platformString(pl, CL_PLATFORM_NAME)},
            {"platform_version", platformString(pl, CL_PLATFORM_VERSION)},
            {"compute_units", deviceValue<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS)},
            {"max_clock_mhz", deviceValue<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY)},
            {"global_memory_bytes", deviceValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE)},
            {"max_alloc_bytes", deviceValue<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE)},
            {"local_memory_bytes", deviceValue<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE)},
            {"max_work_group_size", deviceValue<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE)},
            {"max_work_item_sizes", workItemSizes(d)},
            {"opencl_c_version", deviceString(d, CL_DEVICE_OPENCL_C_VERSION)},
            {"opencl_c_versions", cList},
            {"build_std", chooseClStd(cVersions)},
            {"fp64", fp64},
            {"fp16", hasExtension(d, "cl_khr_fp16")},
            {"address_bits", deviceValue<cl_uint>(d, CL_DEVICE_ADDRESS_BITS)},
            {"profiling_timer_resolution_ns", deviceValue<std::size_t>(d, CL_DEVICE_PROFILING_TIMER_RESOLUTION)},
            {"available", available},
            {"compiler_available", compiler},
        };
        if (!available)
            r.problems.push_back("device " + std::to_string(index) + " (" + info.name + ") reports itself unavailable");
        if (!compiler)
            r.problems.push_back("device " + std::to_string(index) + " (" + info.name
                                 + ") has no OpenCL C compiler, so it cannot build kernels");
        r.devices.push_back(std::move(info));
        ++index;
    }
    r.available = !r.devices.empty();
    return r;
}

spec::Status OpenClBackend::open(int device) {
    if (m_context && device == m_deviceIndex)
        return spec::success();
    Enumeration e = enumerate();
    const int count = static_cast<int>(e.devices.size());
    if (count == 0)
        return spec::fail("cannot open OpenCL device " + std::to_string(device) + ": there are no OpenCL devices ("
                          + (e.problems.empty() ? std::string(kInstallHint) : e.problems.front()) + ")");
    if (device < 0 || device >= count)
        return spec::fail("OpenCL device " + std::to_string(device) + " does not exist: there "
                          + (count == 1
                                 ? "is 1 device (index 0)"
                                 : "are " + std::to_string(count) + " devices (0.." + std::to_string(count - 1) + ")"));
    close();

    const DeviceEntry entry = e.devices[static_cast<std::size_t>(device)];
    const std::string devName = deviceString(entry.device, CL_DEVICE_NAME);
    const std::string who = "OpenCL device " + std::to_string(device) + " (" + devName + ")";
    if (deviceValue<cl_bool>(entry.device, CL_DEVICE_AVAILABLE) == CL_FALSE)
        return spec::fail(who + " reports itself unavailable");

    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(entry.platform),
                                           0};
    cl_int err = CL_SUCCESS;
    ContextHandle ctx(clCreateContext(props, 1, &entry.device, contextNotify, nullptr, &err));
    if (err != CL_SUCCESS || !ctx)
        return spec::fail(who + ": clCreateContext failed with " + clErrorName(err));

    // Profiling gives the device's own kernel times; a queue that cannot profile still runs, timed
    // by the host clock.
    bool profiling = true;
    QueueHandle queue(clCreateCommandQueue(ctx.get(), entry.device, CL_QUEUE_PROFILING_ENABLE, &err));
    if (err != CL_SUCCESS || !queue) {
        profiling = false;
        queue.reset(clCreateCommandQueue(ctx.get(), entry.device, 0, &err));
        if (err != CL_SUCCESS || !queue)
            return spec::fail(who + ": clCreateCommandQueue failed with " + clErrorName(err));
    }

    m_context = std::move(ctx);
    m_queue = std::move(queue);
    m_platform = entry.platform;
    m_device = entry.device;
    m_deviceIndex = device;
    m_deviceName = devName;
    m_profiling = profiling;
    m_deviceLost = false;
    m_clStd = probeClStd(m_context.get(), m_device, chooseClStd(openClCVersions(m_device)));
    m_addressBits = deviceValue<cl_uint>(m_device, CL_DEVICE_ADDRESS_BITS, 64);
    m_maxAlloc = deviceValue<cl_ulong>(m_device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    // A CPU device's memory is the host's: reading a buffer back is a copy, cheaper than a kernel.
    m_digestsOnDevice =
        harness::deviceDigestsWanted(!(deviceValue<cl_device_type>(m_device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU));

    spec::DeviceLimits l;
    l.maxBlockThreads = deviceValue<std::size_t>(m_device, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1);
    const std::vector<std::size_t> items = workItemSizes(m_device);
    for (std::size_t d = 0; d < 3; ++d)
        l.maxBlockDims[d] = d < items.size() ? items[d] : 1;
    // OpenCL has no grid limit of its own beyond size_t global sizes; this bound keeps grid * block
    // far from overflowing.
    l.maxGridDims = {2147483647ull, 2147483647ull, 2147483647ull};
    // Dynamic shared memory (smem=) is CUDA-only; OpenCL kernels declare __local arrays instead.
    l.maxSharedBytes = 0;
    // So are thread block clusters (cluster=).
    l.maxClusterBlocks = 0;
    l.multiprocessors = deviceValue<cl_uint>(m_device, CL_DEVICE_MAX_COMPUTE_UNITS, 0);
    m_limits = l;
    return spec::success();
}

std::vector<protocol::Diagnostic> OpenClBackend::staticCheck(const std::string& source) const {
    std::vector<protocol::Diagnostic> out;
    // The preprocessor checks shared with CUDA (spec/sourcescan.h): splices joined, comments and
    // literals blanked, #if 0 regions left out. OpenCL kernels may include nothing at all.
    spec::IncludePolicy policy;
    policy.allowedText = "A kernel file must be self-contained: the worker compiles it alone and files outside it are "
                         "not part of the candidate, so #include is not allowed";
    for (const auto& f : spec::checkPreprocessor(source, spec::Dialect::OpenCL, policy))
        out.push_back({"integrity", "error", f.message, "", f.line, f.column});
    if (source.size() > spec::kMaxSourceBytes)
        return out;
    const std::string code = spec::checkedCode(source, spec::Dialect::OpenCL);
    int lastLine = 0;
    int line = 1;
    std::size_t counted = 0; // lines are counted up to here, once over the whole file
    spec::forEachIdentifier(code, [&](std::size_t pos, std::string_view word) {
        if (word != "printf")
            return;
        line += static_cast<int>(std::count(code.begin() + static_cast<std::ptrdiff_t>(counted),
                                            code.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
        counted = pos;
        if (line == lastLine)
            return; // one per line is enough
        lastLine = line;
        const std::size_t lineStart = code.rfind('\n', pos);
        const int column = static_cast<int>(pos - (lineStart == std::string::npos ? 0 : lineStart + 1)) + 1;
        out.push_back({"integrity", "warning",
                       "printf in a kernel serialises output and distorts timing; remove it before measuring", "", line,
                       column});
    });
    return out;
}

harness::CompileOutput OpenClBackend::compile(const std::string& source, const std::vector<std::string>& defines,
                                              const std::string& /*role*/) {
    harness::CompileOutput out;
    if (!m_context) {
        out.log = "no OpenCL device is open";
        return out;
    }
    std::string options;
    for (const auto& d : defines) {
        // Plans give "-DNAME=value"; a bare "NAME=value" is taken as a define too.
        options += (options.empty() ? "" : " ") + (d.rfind('-', 0) == 0 ? d : "-D" + d);
    }
    if (!m_clStd.empty())
        options += " " + m_clStd;
    options += " -cl-kernel-arg-info";

    const auto start = std::chrono::steady_clock::now();
    const auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };

    cl_int err = CL_SUCCESS;
    const char* text = source.c_str();
    const std::size_t length = source.size();
    ProgramHandle program(clCreateProgramWithSource(m_context.get(), 1, &text, &length, &err));
    if (err != CL_SUCCESS || !program) {
        out.log = "clCreateProgramWithSource failed with " + clErrorName(err);
        out.seconds = seconds();
        return out;
    }
    err = clBuildProgram(program.get(), 1, &m_device, options.c_str(), nullptr, nullptr);
    out.seconds = seconds();
    out.log = harness::filterCompileLog(withoutDriverNoise(programBuildLog(program.get(), m_device)), isOwnSourceFile);
    if (err != CL_SUCCESS) {
        // The log of a failed build carries the compiler's "<file>:line:col: error" messages; when a
        // driver gives none, or the failure is not the source's fault, the CL error has to speak.
        if (out.log.empty() || err != CL_BUILD_PROGRAM_FAILURE)
            out.log += std::string(out.log.empty() ? "" : "\n") + "clBuildProgram failed with " + clErrorName(err)
                       + (out.log.empty() ? " and the driver gave no build log" : "") + " (options: " + options + ")";
        return out;
    }

    // Program-scope variables keep their values from one launch to the next, and OpenCL has no call
    // that resets them; a kernel could replay earlier results through them.
    std::size_t globalBytes = 0;
    if (clGetProgramBuildInfo(program.get(), m_device, CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE, sizeof globalBytes,
                              &globalBytes, nullptr)
            == CL_SUCCESS
        && globalBytes > 0)
        out.rejection = "its program-scope global variables hold " + std::to_string(globalBytes)
                        + " bytes, which survive between launches and cannot be reset in OpenCL, so a kernel could "
                          "replay results through them: use __constant for tables and scratch buffers "
                          "(// kforge:scratch) for working memory";

    auto built = std::make_unique<OpenClProgram>(std::move(program), m_context.get(), m_device);
    // Creating every kernel now reports what each needs; the evaluator sees it with the compile.
    // CL_KERNEL_WORK_GROUP_SIZE is left out: NVIDIA reports 256 for every kernel yet runs 1024.
    double localBytes = 0, privateBytes = 0;
    bool any = false;
    for (const auto& k : built->kernelNames()) {
        auto kernel = built->kernel(k);
        if (!kernel)
            continue;
        cl_ulong local = 0, priv = 0;
        if (clGetKernelWorkGroupInfo(*kernel, m_device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr)
            == CL_SUCCESS)
            localBytes = std::max(localBytes, static_cast<double>(local));
        if (clGetKernelWorkGroupInfo(*kernel, m_device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, nullptr)
            == CL_SUCCESS)
            privateBytes = std::max(privateBytes, static_cast<double>(priv));
        any = true;
    }
    if (any) {
        out.resources["shared_bytes"] = localBytes;    // largest over the program's kernels
        out.resources["private_bytes"] = privateBytes; // largest
    }
    out.ok = true;
    out.program = std::move(built);
    return out;
}

spec::Expected<harness::BufferId> OpenClBackend::allocate(std::size_t bytes) {
    if (!m_context)
        return spec::fail("cannot allocate a buffer: no OpenCL device is open");
    // OpenCL rejects zero-sized buffers (CL_INVALID_BUFFER_SIZE); an empty tensor still needs a handle.
    const std::size_t size = std::max<std::size_t>(bytes, 1);
    if (m_maxAlloc > 0 && size > m_maxAlloc)
        return spec::fail("cannot allocate " + std::to_string(bytes) + " bytes on " + m_deviceName
                          + ": the device allows at most " + std::to_string(m_maxAlloc)
                          + " bytes per buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE, CL_INVALID_BUFFER_SIZE)");
    cl_int err = CL_SUCCESS;
    MemHandle mem(clCreateBuffer(m_context.get(), CL_MEM_READ_WRITE, size, nullptr, &err));
    if (err != CL_SUCCESS || !mem)
        return spec::fail("clCreateBuffer of " + std::to_string(bytes) + " bytes failed with " + clErrorName(err));
    const harness::BufferId id = m_nextBuffer++;
    m_buffers.emplace(id, Buffer{std::move(mem), bytes});
    return id;
}

spec::Expected<harness::BufferId> OpenClBackend::view(harness::BufferId parent, std::size_t offset, std::size_t bytes) {
    auto target = harness::transferTarget(m_buffers, parent, bytes, "view", 1, offset);
    if (!target)
        return spec::Error{target.error()};
    // Like allocate(): an empty region still needs a handle.
    cl_buffer_region region{offset, std::max<std::size_t>(bytes, 1)};
    cl_int err = CL_SUCCESS;
    MemHandle mem(
        clCreateSubBuffer((*target)->mem.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err));
    if (err != CL_SUCCESS || !mem)
        return spec::fail("clCreateSubBuffer of " + std::to_string(bytes) + " bytes at " + std::to_string(offset)
                          + " failed with " + clErrorName(err));
    const harness::BufferId id = m_nextBuffer++;
    m_buffers.emplace(id, Buffer{std::move(mem), bytes});
    return id;
}

std::string OpenClBackend::bindingProblem(harness::Program& program, const spec::LaunchPlan& plan) {
    auto* prog = dynamic_cast<OpenClProgram*>(&program);
    if (!prog)
        return "the program was not built by the OpenCL backend";
    for (const auto& launch : plan.launches)
        if (auto problem = prog->bindingProblem(launch); !problem.empty())
            return harness::launchWhere(launch) + problem;
    return {};
}

void OpenClBackend::release(harness::BufferId id) {
    m_buffers.erase(id);
}

spec::Expected<cl_mem> OpenClBackend::bufferFor(harness::BufferId id, const char* what) const {
    auto it = m_buffers.find(id);
    if (it == m_buffers.end())
        return spec::fail(std::string(what) + ": buffer " + std::to_string(id)
                          + " does not exist (released, or never allocated)");
    return it->second.mem.get();
}

spec::Status OpenClBackend::upload(harness::BufferId id, const void* data, std::size_t bytes) {
    if (!m_queue)
        return spec::fail("upload: no OpenCL device is open");
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "upload");
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    const cl_int err =
        clEnqueueWriteBuffer(m_queue.get(), (*buffer)->mem.get(), CL_TRUE, 0, bytes, data, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
        m_deviceLost = m_deviceLost || isStickyError(err);
        return spec::fail("upload of " + std::to_string(bytes) + " bytes (clEnqueueWriteBuffer) failed with "
                          + clErrorName(err));
    }
    return spec::success();
}

spec::Status OpenClBackend::fill(harness::BufferId id, const void* pattern, std::size_t patternSize,
                                 std::size_t bytes) {
    if (!m_queue)
        return spec::fail("fill: no OpenCL device is open");
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "fill", patternSize);
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    cl_int err =
        clEnqueueFillBuffer(m_queue.get(), (*buffer)->mem.get(), pattern, patternSize, 0, bytes, 0, nullptr, nullptr);
    if (err == CL_SUCCESS)
        err = clFinish(m_queue.get());
    if (err != CL_SUCCESS) {
        m_deviceLost = m_deviceLost || isStickyError(err);
        return spec::fail("fill of " + std::to_string(bytes) + " bytes (clEnqueueFillBuffer) failed with "
                          + clErrorName(err));
    }
    return spec::success();
}

spec::Status OpenClBackend::download(harness::BufferId id, void* data, std::size_t bytes, std::size_t offset) {
    if (!m_queue)
        return spec::fail("download: no OpenCL device is open");
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "download", 1, offset);
    if (!buffer)
        return spec::Error{buffer.error()};
    if (bytes == 0)
        return spec::success();
    const cl_int err =
        clEnqueueReadBuffer(m_queue.get(), (*buffer)->mem.get(), CL_TRUE, offset, bytes, data, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
        m_deviceLost = m_deviceLost || isStickyError(err);
        return spec::fail("download of " + std::to_string(bytes) + " bytes (clEnqueueReadBuffer) failed with "
                          + clErrorName(err));
    }
    return spec::success();
}

namespace {

// harness::digest (digest.h) in OpenCL C: work-item i of the launch sums words i, i + size, ...;
// the group adds its items' sums in local memory and writes one partial sum. The last, partial
// word is item 0's.
constexpr std::size_t kDigestGroup = 64;
constexpr std::size_t kDigestGroups = 256;
const char* const kDigestSource = R"(
ulong kforge_mix(ulong z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    return z ^ (z >> 31);
}
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void kforge_digest(__global const uchar* data, ulong bytes, ulong key, __global ulong* partial) {
    __local ulong sums[64];
    const ulong step = 0x9e3779b97f4a7c15UL;
    const ulong words = bytes / 8;
    __global const ulong* w = (__global const ulong*)data;
    ulong s = 0;
    for (ulong i = get_global_id(0); i < words; i += get_global_size(0))
        s += kforge_mix(w[i] ^ (key + i * step));
    if (get_global_id(0) == 0 && bytes % 8) {
        ulong last = 0;
        for (ulong b = 0; b < bytes % 8; ++b)
            last |= (ulong)data[words * 8 + b] << (8 * b);
        s += kforge_mix(last ^ (key + words * step));
    }
    const size_t l = get_local_id(0);
    sums[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t half = 32; half > 0; half >>= 1) {
        if (l < half)
            sums[l] += sums[l + half];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        partial[get_group_id(0)] = sums[0];
}
)";

} // namespace

spec::Expected<std::uint64_t> OpenClBackend::digest(harness::BufferId id, std::size_t bytes, std::uint64_t key) {
    if (!m_queue)
        return spec::fail("digest: no OpenCL device is open");
    auto buffer = harness::transferTarget(m_buffers, id, bytes, "digest");
    if (!buffer)
        return spec::Error{buffer.error()};
    if (!m_digestProblem.empty())
        return Backend::digest(id, bytes, key); // the host can do it, only slower
    cl_int err = CL_SUCCESS;
    if (!m_digestKernel) {
        const char* text = kDigestSource;
        ProgramHandle program(clCreateProgramWithSource(m_context.get(), 1, &text, nullptr, &err));
        if (err == CL_SUCCESS)
            err = clBuildProgram(program.get(), 1, &m_device, "", nullptr, nullptr);
        if (err == CL_SUCCESS)
            m_digestKernel.reset(clCreateKernel(program.get(), "kforge_digest", &err));
        if (err == CL_SUCCESS)
            m_digestPartials.reset(
                clCreateBuffer(m_context.get(), CL_MEM_READ_WRITE, kDigestGroups * 8, nullptr, &err));
        if (err != CL_SUCCESS) {
            m_digestProblem = "the digest kernel could not be built or set up: " + clErrorName(err);
            m_digestKernel.reset();
            return Backend::digest(id, bytes, key);
        }
        m_digestProgram = std::move(program);
    }
    cl_mem data = (*buffer)->mem.get();
    cl_mem partials = m_digestPartials.get();
    const cl_ulong length = bytes;
    const cl_ulong k = key;
    cl_kernel kernel = m_digestKernel.get();
    err = clSetKernelArg(kernel, 0, sizeof(cl_mem), &data);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 1, sizeof(cl_ulong), &length);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 2, sizeof(cl_ulong), &k);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 3, sizeof(cl_mem), &partials);
    // Fewer groups for small buffers: no group is left without a word to sum.
    const std::size_t groups = std::clamp<std::size_t>((bytes / 8 + kDigestGroup) / kDigestGroup, 1, kDigestGroups);
    const std::size_t global = groups * kDigestGroup;
    const std::size_t local = kDigestGroup;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(m_queue.get(), kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    std::vector<cl_ulong> sums(groups);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(m_queue.get(), partials, CL_TRUE, 0, groups * 8, sums.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
        m_deviceLost = m_deviceLost || isStickyError(err);
        return spec::fail("digest of " + std::to_string(bytes) + " bytes on the device failed with "
                          + clErrorName(err));
    }
    std::uint64_t sum = 0;
    for (const cl_ulong v : sums)
        sum += v;
    return harness::digestFinish(sum, bytes, key);
}

spec::Expected<harness::RunResult> OpenClBackend::run(harness::Program& program, const spec::LaunchPlan& plan,
                                                      const harness::Bindings& bindings,
                                                      const harness::AfterLaunch& afterLaunch) {
    if (!m_queue)
        return spec::fail("run: no OpenCL device is open");
    auto* prog = dynamic_cast<OpenClProgram*>(&program);
    if (!prog)
        return spec::fail("run: the program was not built by the OpenCL backend");
    if (prog->context() != m_context.get())
        return spec::fail("run: the program was built for another OpenCL device; compile it again after open()");

    std::vector<EventHandle> events;
    events.reserve(plan.launches.size());
    // A launch that fails after others were enqueued must not return while those still write into
    // buffers the caller is about to reuse or release.
    struct Drain {
        cl_command_queue queue;
        const std::vector<EventHandle>& pending;
        ~Drain() {
            if (!pending.empty())
                clFinish(queue);
        }
    } drain{m_queue.get(), events};
    const auto wallStart = std::chrono::steady_clock::now();

    for (std::size_t li = 0; li < plan.launches.size(); ++li) {
        const auto& launch = plan.launches[li];
        const std::string where = harness::launchWhere(launch);
        if (afterLaunch && li > 0) {
            // The previous launch is finished before anyone looks at what it left.
            if (const cl_int err = clFinish(m_queue.get()); err != CL_SUCCESS) {
                m_deviceLost = m_deviceLost || isStickyError(err);
                return spec::fail(harness::launchWhere(plan.launches[li - 1]) + "clFinish failed with "
                                  + clErrorName(err));
            }
            afterLaunch(li - 1);
        }
        if (launch.smemBytes > 0)
            return spec::fail(where + "smem= is CUDA-only; declare __local arrays in OpenCL kernels");
        if (launch.dims < 1 || launch.dims > 3)
            return spec::fail(where + std::to_string(launch.dims) + " dimensions; OpenCL launches have 1 to 3");
        auto kernel = prog->kernel(launch.kernel);
        if (!kernel)
            return spec::fail(where + kernel.error());

        cl_uint numArgs = 0;
        if (clGetKernelInfo(*kernel, CL_KERNEL_NUM_ARGS, sizeof numArgs, &numArgs, nullptr) == CL_SUCCESS
            && numArgs != launch.args.size())
            return spec::fail(where + "the compiled kernel takes " + std::to_string(numArgs)
                              + " arguments but its signature in the source lists " + std::to_string(launch.args.size())
                              + " (is part of the signature produced by a macro?)");

        for (std::size_t i = 0; i < launch.args.size(); ++i) {
            const spec::ArgBinding& a = launch.args[i];
            const std::string argWhere = where + "argument '" + a.name + "': ";
            cl_int err = CL_SUCCESS;
            if (a.kind == spec::ArgBinding::Kind::TensorMap)
                return spec::fail(argWhere
                                  + "a // kforge:tensormap needs the tensor memory accelerator of a CUDA GPU; "
                                    "OpenCL kernels cannot take tensor maps");
            if (harness::isBufferBinding(a)) {
                auto id = harness::boundBuffer(bindings, a);
                if (!id)
                    return spec::fail(argWhere + id.error());
                auto mem = bufferFor(*id, harness::bufferKindName(a));
                if (!mem)
                    return spec::fail(argWhere + mem.error());
                cl_mem m = *mem;
                err = clSetKernelArg(*kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &m);
            } else {
                auto value = harness::kernelArgValue(a.elementType, a.value, m_addressBits == 32 ? 4 : 8, "OpenCL");
                if (!value)
                    return spec::fail(argWhere + value.error());
                err = clSetKernelArg(*kernel, static_cast<cl_uint>(i), value->size, value->bytes.data());
            }
            if (err != CL_SUCCESS)
                return spec::fail(argWhere + "clSetKernelArg failed with " + clErrorName(err)
                                  + (err == CL_INVALID_ARG_SIZE ? " (the declared type '" + a.elementType
                                                                      + "' does not match the compiled kernel's)"
                                                                : ""));
        }

        std::array<std::size_t, 3> global{1, 1, 1}, local{1, 1, 1};
        for (std::size_t d = 0; d < static_cast<std::size_t>(launch.dims); ++d) {
            global[d] = static_cast<std::size_t>(launch.grid[d] * launch.block[d]);
            local[d] = static_cast<std::size_t>(launch.block[d]);
        }
        cl_event ev = nullptr;
        const cl_int err = clEnqueueNDRangeKernel(m_queue.get(), *kernel, static_cast<cl_uint>(launch.dims), nullptr,
                                                  global.data(), local.data(), 0, nullptr, &ev);
        if (err != CL_SUCCESS) {
            std::string hint;
            std::uint64_t groupItems = 1;
            for (int d = 0; d < launch.dims; ++d)
                groupItems *= launch.block[static_cast<std::size_t>(d)];
            if (err == CL_INVALID_WORK_GROUP_SIZE || err == CL_INVALID_WORK_ITEM_SIZE || err == CL_OUT_OF_RESOURCES) {
                std::size_t kernelMax = 0;
                cl_ulong localMem = 0;
                std::array<std::size_t, 3> required{0, 0, 0};
                clGetKernelWorkGroupInfo(*kernel, m_device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernelMax, &kernelMax,
                                         nullptr);
                clGetKernelWorkGroupInfo(*kernel, m_device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof localMem, &localMem,
                                         nullptr);
                clGetKernelWorkGroupInfo(*kernel, m_device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof required,
                                         required.data(), nullptr);
                if (required[0] != 0 && required != local) {
                    hint = ": the kernel declares reqd_work_group_size(" + std::to_string(required[0]) + ", "
                           + std::to_string(required[1]) + ", " + std::to_string(required[2])
                           + ") but the launch has block=" + spec::extentsText(launch.block, launch.dims);
                } else {
                    hint = ": block=" + spec::extentsText(launch.block, launch.dims) + " is "
                           + std::to_string(groupItems) + " work-items per group; on " + m_deviceName
                           + " the driver reports a limit of " + std::to_string(kernelMax)
                           + " for this kernel (device: " + std::to_string(m_limits.maxBlockThreads)
                           + ", per dimension " + spec::extentsText(m_limits.maxBlockDims) + "), and uses "
                           + std::to_string(localMem) + " bytes of local memory";
                }
            } else if (err == CL_INVALID_GLOBAL_WORK_SIZE) {
                hint = ": grid * block = " + std::to_string(global[0]) + " x " + std::to_string(global[1]) + " x "
                       + std::to_string(global[2]) + " work-items is more than the device can address";
            }
            m_deviceLost = m_deviceLost || err == -9999;
            return spec::fail(where + "clEnqueueNDRangeKernel failed with " + clErrorName(err) + std::move(hint));
        }
        events.emplace_back(ev);
    }

    const cl_int finishErr = clFinish(m_queue.get());
    const auto wallEnd = std::chrono::steady_clock::now();
    deviceDone();
    // Name the launch that failed, if the driver says which.
    for (std::size_t i = 0; i < events.size(); ++i) {
        cl_int status = CL_COMPLETE;
        if (clGetEventInfo(events[i].get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr)
                == CL_SUCCESS
            && status < 0) {
            m_deviceLost = true;
            const auto& l = plan.launches[i];
            return spec::fail(harness::launchWhere(l) + "the kernel failed on the device with " + clErrorName(status));
        }
    }
    if (finishErr != CL_SUCCESS) {
        m_deviceLost = m_deviceLost || isStickyError(finishErr);
        std::string names;
        for (const auto& l : plan.launches)
            names += (names.empty() ? "" : ", ") + l.kernel + " (line " + std::to_string(l.line) + ")";
        return spec::fail("clFinish after launching " + names + " failed with " + clErrorName(finishErr));
    }

    if (m_profiling) {
        double totalUs = 0.0;
        bool ok = true;
        for (const auto& ev : events) {
            const auto seconds = profiledSeconds(ev.get());
            if (!seconds) {
                ok = false;
                break;
            }
            totalUs += *seconds * 1e6;
        }
        if (ok)
            return harness::RunResult{totalUs, {}, {}};
        // From now on every run is timed the same way, so medians stay comparable.
        m_profiling = false;
    }
    return harness::RunResult{std::chrono::duration<double, std::micro>(wallEnd - wallStart).count(), {}, {}};
}

// ---- OpenClBackend: ceilings ------------------------------------------------------------------

std::string OpenClBackend::ceilingsKey() const {
    // The same device under another platform or driver release is another entry: drivers change
    // code generation, and CPU drivers their threading.
    return m_deviceName + "|" + platformString(m_platform, CL_PLATFORM_NAME) + " "
           + platformString(m_platform, CL_PLATFORM_VERSION) + "|" + deviceString(m_device, CL_DRIVER_VERSION);
}

protocol::CeilingsResult OpenClBackend::ceilings(bool refresh) {
    protocol::CeilingsResult r;
    if (!m_queue) {
        r.message = "cannot measure device ceilings: no OpenCL device is open";
        return r;
    }
    if (m_deviceLost) {
        r.message = "cannot measure device ceilings: " + m_deviceName + " is unusable after an earlier error";
        return r;
    }
    const harness::CeilingsCache cache(kCeilingsFormat, kCeilingsFilePrefix);
    return cache.loadOrMeasure(ceilingsKey(), m_deviceName, refresh, [this] {
        CeilingsMeasurement m =
            measureCeilings(CeilingsDevice{m_context.get(), m_queue.get(), m_device, m_deviceName, m_profiling});
        m_deviceLost = m_deviceLost || isStickyError(m.failure);
        return std::move(m.result);
    });
}

} // namespace kforge::opencl
