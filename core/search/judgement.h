#pragma once
// What the engine makes of a fresh result before it is stored: the roofline point, the findings,
// and the verdict of the measured roofs (a result above a roof is rejected for impossible timing,
// with the roof it broke). Also the request a candidate is evaluated with. Plain values in and
// out, so the verdict is tested without workers.

#include "search/runconfig.h"

#include "diagnose/diagnosis.h"
#include "diagnose/roofline.h"
#include "model/candidate.h"

#include "kernelfile.h"

#include <optional>

namespace kforge::search {

struct Judgement {
    protocol::EvaluateResult result;            // as stored: Rejected when the timing is impossible
    diagnose::Findings findings;                // the verdict first, then the diagnosis, most severe first
    std::optional<diagnose::Roofline> roofline; // none when not timed
    std::optional<QString> impossible;          // why the timing is impossible, when it is
};

struct JudgementContext {
    const spec::TaskBundle* task = nullptr;
    spec::Sizes sizes;
    diagnose::Ceilings ceilings;
    const diagnose::Diagnosis* diagnosis = nullptr; // null: no findings
    const RunConfig* config = nullptr;
    // The candidate's tensor instructions, which pick its compute roof (diagnose::tensorInstructionsOf).
    diagnose::TensorInstructions instructions = diagnose::TensorInstructions::Unknown;
    bool tf32 = false; // its tensor instructions take float32 data as TF32 (diagnose::usesTf32TensorCores)
};

Judgement judge(const protocol::EvaluateResult& result, const JudgementContext& context);

// The request for a candidate of the run: paired with the baseline, on the run's device, with no
// seeds (the worker draws fresh ones from a secure source each time, so no kernel can know, or
// have been tuned on, the inputs it is verified and timed with; the seeds it used come back in
// the result). `withPyTorch`: also time the task's PyTorch form, eager and under torch.compile,
// where it has one (a task without a baseline kernel always has eager timed: it is the yardstick).
spec::Expected<protocol::EvaluateRequest> candidateRequest(const spec::TaskBundle& task, const RunConfig& config,
                                                           const model::Candidate& candidate, bool withPyTorch = false);
// The result stored for a candidate whose request could not be made (a broken launch plan).
protocol::EvaluateResult unrequestable(const std::string& error);

} // namespace kforge::search
