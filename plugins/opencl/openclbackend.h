#pragma once
// The OpenCL backend of the evaluation worker: one device, one context and one in-order profiling
// queue, programs built from kernel-file sources, buffers, and timed launches of a resolved launch
// plan. Written against the OpenCL 1.2 API so that it runs on 1.2 drivers too; newer queries
// (OpenCL C versions of 3.0 devices) are used only where the device reports them.

#include "clapi.h"

#include "backend.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace kforge::opencl {

// The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL error <n>" for unknown codes.
std::string clErrorName(cl_int code);

// The device time of a finished command from its profiling event, in seconds; nullopt when the
// driver gives no times for it.
std::optional<double> profiledSeconds(cl_event event);

namespace detail {
struct ReleaseContext {
    void operator()(cl_context c) const { clReleaseContext(c); }
};
struct ReleaseQueue {
    void operator()(cl_command_queue q) const { clReleaseCommandQueue(q); }
};
struct ReleaseProgram {
    void operator()(cl_program p) const { clReleaseProgram(p); }
};
struct ReleaseKernel {
    void operator()(cl_kernel k) const { clReleaseKernel(k); }
};
struct ReleaseMem {
    void operator()(cl_mem m) const { clReleaseMemObject(m); }
};
struct ReleaseEvent {
    void operator()(cl_event e) const { clReleaseEvent(e); }
};
} // namespace detail

// Owning handles: every OpenCL object is released exactly once, on every path.
using ContextHandle = std::unique_ptr<std::remove_pointer_t<cl_context>, detail::ReleaseContext>;
using QueueHandle = std::unique_ptr<std::remove_pointer_t<cl_command_queue>, detail::ReleaseQueue>;
using ProgramHandle = std::unique_ptr<std::remove_pointer_t<cl_program>, detail::ReleaseProgram>;
using KernelHandle = std::unique_ptr<std::remove_pointer_t<cl_kernel>, detail::ReleaseKernel>;
using MemHandle = std::unique_ptr<std::remove_pointer_t<cl_mem>, detail::ReleaseMem>;
using EventHandle = std::unique_ptr<std::remove_pointer_t<cl_event>, detail::ReleaseEvent>;

// A built cl_program and the kernels created from it on first use. It retains its context, so it
// stays valid even if the backend moves to another device; run() refuses it there.
class OpenClProgram final : public harness::Program {
public:
    OpenClProgram(ProgramHandle program, cl_context context, cl_device_id device);
    ~OpenClProgram() override;
    OpenClProgram(const OpenClProgram&) = delete;
    OpenClProgram& operator=(const OpenClProgram&) = delete;

    cl_program handle() const { return m_program.get(); }
    cl_context context() const { return m_context; }

    // The kernel called `name`, created once and reused; kernel arguments are set anew by every run.
    spec::Expected<cl_kernel> kernel(const std::string& name);
    // Names of the kernels the program defines, as the driver reports them.
    std::vector<std::string> kernelNames() const;
    // What is wrong with binding `launch`'s arguments to the compiled kernel, by the names and
    // address spaces the compiler reports (-cl-kernel-arg-info); empty when they agree.
    std::string bindingProblem(const spec::ResolvedLaunch& launch);

private:
    ProgramHandle m_program;
    cl_context m_context = nullptr; // retained
    cl_device_id m_device = nullptr;
    std::map<std::string, KernelHandle> m_kernels;
};

class OpenClBackend final : public harness::Backend {
public:
    OpenClBackend();
    ~OpenClBackend() override;
    OpenClBackend(const OpenClBackend&) = delete;
    OpenClBackend& operator=(const OpenClBackend&) = delete;

    std::string name() const override { return "opencl"; }
    spec::Dialect dialect() const override { return spec::Dialect::OpenCL; }
    protocol::ProbeResult probe() override;

    spec::Status open(int device) override;

    std::vector<protocol::Diagnostic> staticCheck(const std::string& source) const override;

    harness::CompileOutput compile(const std::string& source, const std::vector<std::string>& defines,
                                   const std::string& role) override;

    spec::Expected<harness::BufferId> allocate(std::size_t bytes) override;
    void release(harness::BufferId id) override;
    spec::Status upload(harness::BufferId id, const void* data, std::size_t bytes) override;
    spec::Expected<harness::BufferId> view(harness::BufferId parent, std::size_t offset, std::size_t bytes) override;
    spec::Status download(harness::BufferId id, void* data, std::size_t bytes, std::size_t offset = 0) override;
    std::string bindingProblem(harness::Program& program, const spec::LaunchPlan& plan) override;
    spec::Status fill(harness::BufferId id, const void* pattern, std::size_t patternSize, std::size_t bytes) override;
    // harness::digest on the device: each work-group sums its words, and the groups' partial sums
    // (a few hundred bytes) are added up here.
    spec::Expected<std::uint64_t> digest(harness::BufferId id, std::size_t bytes, std::uint64_t key) override;
    bool digestsOnDevice() const override { return m_digestsOnDevice; }

    spec::Expected<harness::RunResult> run(harness::Program& program, const spec::LaunchPlan& plan,
                                           const harness::Bindings& bindings,
                                           const harness::AfterLaunch& afterLaunch = {}) override;
    std::string timingMethod() const override { return m_profiling ? "opencl-profiling" : "wall-clock"; }

    // FP32 FMA and global-memory copy ceilings (openclceilings.h), cached per device, platform and
    // driver version.
    protocol::CeilingsResult ceilings(bool refresh) override;

    std::string deviceKey() const override { return m_deviceName.empty() ? std::string() : ceilingsKey(); }
    bool deviceLost() const override { return m_deviceLost; }

    // The -cl-std option compile() passes for the open device ("" means OpenCL C 1.2, no option).
    const std::string& languageOption() const { return m_clStd; }

private:
    struct Buffer {
        MemHandle mem;         // a sub-buffer for a view
        std::size_t bytes = 0; // as requested, for bounds checks on upload/download
    };

    void close();
    std::string ceilingsKey() const;
    spec::Expected<cl_mem> bufferFor(harness::BufferId id, const char* what) const;

    int m_deviceIndex = -1;
    cl_platform_id m_platform = nullptr;
    cl_device_id m_device = nullptr;
    ContextHandle m_context;
    QueueHandle m_queue;
    std::string m_clStd;
    cl_uint m_addressBits = 64;
    cl_ulong m_maxAlloc = 0;
    bool m_profiling = true;
    bool m_deviceLost = false;

    std::map<harness::BufferId, Buffer> m_buffers;
    harness::BufferId m_nextBuffer = 1;
    // The digest kernel, built at the first digest() on a device, and the groups' partial sums.
    ProgramHandle m_digestProgram;
    KernelHandle m_digestKernel;
    MemHandle m_digestPartials;
    std::string m_digestProblem;
    bool m_digestsOnDevice = false; // the evaluator's checks use digest() (not on CPU devices)
};

} // namespace kforge::opencl
