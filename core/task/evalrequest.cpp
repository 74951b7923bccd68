#include "task/evalrequest.h"

namespace kforge::task {

spec::Expected<protocol::EvaluateRequest> makeEvalRequest(const spec::TaskBundle& task, const EvalSettings& settings,
                                                          const QString& candidateSource,
                                                          const QString& candidateFile) {
    auto request = protocol::makeEvaluateRequest(task, settings.backend.toStdString(), settings.variant.toStdString(),
                                                 settings.options, candidateSource.toStdString(),
                                                 candidateFile.toStdString(), settings.pairWithBaseline);
    if (request && settings.torchReference)
        if (auto torch = protocol::useTorchReference(*request, task); !torch)
            return spec::Error{torch.error()};
    return request;
}

} // namespace kforge::task
