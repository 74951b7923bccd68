#pragma once
// `kforge export --torch`: a CUDA kernel of a run as a drop-in PyTorch module. Writes, beside the
// exported kernel file, model_new.py (ModelNew, KernelBench's convention: the kernel compiled by
// NVRTC through CuPy or cuda-python and launched with the task's launch plan, resolved here for
// every size variant of the task), the task's PyTorch form as reference.py, and check.py, which
// compares ModelNew with the PyTorch form on fresh inputs and times it beside PyTorch eager and
// torch.compile.

#include "expected.h"
#include "launchplan.h"
#include "model/candidate.h"
#include "taskspec.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <utility>
#include <vector>

namespace kforge::store {

// The limits a plan is resolved with when exported: the largest a supported GPU allows (227 KiB of
// dynamic shared memory on Hopper, TMA tensor maps). The kernel was checked against its own
// device's limits when it was evaluated; ModelNew opts in to more than 48 KiB where the plan asks
// for it, and refuses launches that take tensor maps.
spec::DeviceLimits exportLimits();

// A plan resolved for export, with exportLimits(); where its launch expressions need the device's
// multiprocessor count (SMS), which a run does not record, with an H100's or H200's 132, and
// `assumedSms` says so (0 when nothing was assumed).
struct ExportPlan {
    spec::LaunchPlan plan;
    std::uint64_t assumedSms = 0;
};
spec::Expected<ExportPlan> resolveForExport(const spec::KernelFile& kf, const spec::TaskSpec& task,
                                            const spec::Sizes& sizes, const model::ParamValues& params);

// The plan model_new.py runs: per variant the sizes, tensors, scratch, defines and launches.
spec::Expected<QJsonObject> torchPlan(const spec::TaskBundle& task, const model::Candidate& candidate,
                                      const QString& kernelFile);

// model_new.py, check.py and reference.py, by file name, to be written beside the kernel file
// `kernelFile`. Fails naming why for an OpenCL kernel or a task without a PyTorch form.
spec::Expected<std::vector<std::pair<QString, QByteArray>>> torchModuleFiles(const spec::TaskBundle& task,
                                                                             const model::Candidate& candidate,
                                                                             model::Backend backend,
                                                                             const QString& kernelFile);

} // namespace kforge::store
