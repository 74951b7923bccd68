#include "disassembly.h"

#include "backend.h"
#include "kernelfile.h"

#include <chrono>

namespace kforge::harness {

protocol::DisassembleResult disassemble(Backend& backend, const protocol::DisassembleRequest& request) {
    const auto start = std::chrono::steady_clock::now();
    protocol::DisassembleResult result;
    const auto fail = [&](std::string message) {
        result.ok = false;
        result.message = std::move(message);
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return result;
    };
    const std::string& file = request.kernel.file.empty() ? std::string("the kernel") : request.kernel.file;

    auto kf = spec::KernelFile::parse(request.kernel.source, backend.dialect());
    if (!kf)
        return fail(file + ": " + kf.error());
    auto sizes = request.task.sizesFor(request.variant);
    if (!sizes)
        return fail("variant " + request.variant + ": " + sizes.error());

    spec::DeviceLimits limits;
    if (request.arch == 0) {
        // The worker's own device decides the target.
        if (auto opened = backend.open(request.device); !opened)
            return fail("no device to compile for (" + opened.error()
                        + "); name the target instead, e.g. compute capability 90 for sm_90");
        limits = backend.limits();
    } else if (!backend.deviceName().empty()) {
        limits = backend.limits();
    } else {
        // No device: the most any current GPU allows, so that a plan that fits some GPU resolves.
        limits = spec::DeviceLimits::anyCurrentGpu(request.arch >= 90);
    }
    auto plan = spec::LaunchPlan::resolve(*kf, request.task, *sizes, request.kernel.params, limits);
    if (!plan)
        return fail(file + ": " + plan.error());

    result = backend.disassemble(request.kernel.source, plan->defines, request.arch, request.machineCode);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace kforge::harness
