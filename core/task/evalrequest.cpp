#include "task/evalrequest.h"

#include <algorithm>

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

std::chrono::milliseconds evaluationTimeout(const protocol::EvaluateRequest& request, double seconds) {
    double bytes = 0.0;
    if (auto sizes = request.task.sizesFor(request.variant))
        for (const auto* tensors : {&request.task.inputs, &request.task.outputs})
            for (const auto& t : *tensors)
                if (auto n = request.task.elementCount(t, *sizes))
                    bytes += static_cast<double>(*n) * static_cast<double>(spec::dtypeSize(t.dtype));
    const double total = seconds + 30.0 * std::max(0.0, bytes / (1024.0 * 1024.0 * 1024.0) - 1.0);
    return std::chrono::milliseconds(static_cast<qint64>(total * 1000.0));
}

} // namespace kforge::task
