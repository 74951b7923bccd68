#include "search/judgement.h"

#include "search/promotion.h"

#include "task/evalrequest.h"

namespace kforge::search {

Judgement judge(const protocol::EvaluateResult& result, const JudgementContext& context) {
    Judgement j;
    j.result = result;
    if (auto r = diagnose::computeRoofline(context.task->spec, context.sizes, result, context.ceilings,
                                           context.instructions, context.tf32))
        j.roofline = *r;
    if (result.status == protocol::Status::Ok)
        j.impossible = impossibleTiming(j.roofline, context.ceilings, *context.config);
    if (j.impossible) {
        // Faster than the device can go: the timing cannot be what the kernel really does (work
        // skipped, results cached across runs, a broken timer). Stored as rejected, with the roof
        // it broke, so it never enters an archive, a review or a lineage.
        j.result.status = protocol::Status::Rejected;
        j.result.message = "impossible timing: " + j.impossible->toStdString();
        j.result.diagnostics.push_back({"roofline", "error", j.result.message, "candidate", 0, 0});
        j.findings.append(impossibleTimingFinding(*j.impossible));
    }
    if (context.diagnosis)
        j.findings += context.diagnosis->diagnose(result, context.task->spec, context.sizes, j.roofline);
    return j;
}

spec::Expected<protocol::EvaluateRequest> candidateRequest(const spec::TaskBundle& task, const RunConfig& config,
                                                           const model::Candidate& candidate, bool withPyTorch) {
    task::EvalSettings settings;
    settings.backend = model::backendName(config.backend);
    settings.variant = config.variant;
    settings.pairWithBaseline = true;
    settings.options.device = config.device;
    settings.options.pytorch = withPyTorch && config.pytorch && task.referenceSource.count("torch") > 0;
    settings.options.pytorchRounds = config.pytorchRounds;
    const QString file = QStringLiteral("candidate-%1.%2")
                             .arg(candidate.id)
                             .arg(config.backend == model::Backend::Cuda ? QStringLiteral("cu") : QStringLiteral("cl"));
    auto request = task::makeEvalRequest(task, settings, candidate.source, file);
    if (request)
        request->candidate.params = candidate.params;
    return request;
}

protocol::EvaluateResult unrequestable(const std::string& error) {
    protocol::EvaluateResult r;
    r.status = protocol::Status::Rejected;
    r.message = error;
    r.diagnostics.push_back({"launch_plan", "error", error, "candidate", 0, 0});
    return r;
}

} // namespace kforge::search
