#include "evalrequest.h"

namespace kforge::task {

spec::Expected<protocol::EvaluateRequest> makeEvalRequest(const spec::TaskBundle& task, const EvalSettings& settings,
                                                          const QString& candidateSource, const QString& candidateFile) {
    const std::string backend = settings.backend.toStdString();
    const auto& spec = task.spec;
    auto ref = task.referenceSource.find(backend);
    auto base = task.baselineSource.find(backend);
    if (ref == task.referenceSource.end() || base == task.baselineSource.end())
        return spec::fail("task '" + spec.name + "' has no " + backend + " " + (ref == task.referenceSource.end() ? "reference" : "baseline")
                          + " (add it to \"" + (ref == task.referenceSource.end() ? "reference" : "baseline") + "\" in task.json)");
    if (auto sizes = spec.sizesFor(settings.variant.toStdString()); !sizes)
        return spec::Error{sizes.error()};

    protocol::EvaluateRequest r;
    r.task = spec;
    r.variant = settings.variant.toStdString();
    r.options = settings.options;
    r.reference = {"reference", task.referenceFile.at(backend), ref->second, {}};
    protocol::KernelInput baseline{"baseline", task.baselineFile.at(backend), base->second, {}};
    if (candidateSource.isEmpty()) {
        r.candidate = baseline;
        r.candidate.role = "candidate";
    } else {
        r.candidate = {"candidate", candidateFile.toStdString(), candidateSource.toStdString(), {}};
        if (settings.pairWithBaseline)
            r.baseline = baseline;
    }
    return r;
}

} // namespace kforge::task
