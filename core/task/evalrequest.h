#pragma once
// Builds the evaluate request for a candidate kernel against a loaded task on one backend.

#include "protocol.h"
#include "taskspec.h"

#include <QString>

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

} // namespace kforge::task
