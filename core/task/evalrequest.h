#pragma once
// Builds the evaluate request for a candidate kernel against a loaded task on one backend.

#include "protocol.h"
#include "taskspec.h"

#include <QString>

#include <chrono>

namespace kforge::task {

struct EvalSettings {
    QString backend = QStringLiteral("opencl");
    QString variant = QStringLiteral("default");
    bool pairWithBaseline = true; // time the task's baseline in the same call
    bool torchReference = false;  // verify against the task's PyTorch form, not its reference kernel
    protocol::EvalOptions options;
};

// `candidateSource` empty means: evaluate the task's own baseline (then nothing is paired).
spec::Expected<protocol::EvaluateRequest> makeEvalRequest(const spec::TaskBundle& task, const EvalSettings& settings,
                                                          const QString& candidateSource = {},
                                                          const QString& candidateFile = {});

// How long a worker may take over `request`: `seconds`, plus 30 s for every GiB beyond the first that
// one input set holds (its inputs and outputs at the request's sizes). KernelBench's level-1 shapes reach gigabytes a
// tensor, and making such sets, handing them to PyTorch, checking and timing them takes minutes.
std::chrono::milliseconds evaluationTimeout(const protocol::EvaluateRequest& request, double seconds);

} // namespace kforge::task
