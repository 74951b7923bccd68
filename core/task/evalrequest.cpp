#include "task/evalrequest.h"

namespace kforge::task {

spec::Expected<protocol::EvaluateRequest> makeEvalRequest(const spec::TaskBundle& task, const EvalSettings& settings,
                                                          const QString& candidateSource,
                                                          const QString& candidateFile) {
    return protocol::makeEvaluateRequest(task, settings.backend.toStdString(), settings.variant.toStdString(),
                                         settings.options, candidateSource.toStdString(), candidateFile.toStdString(),
                                         settings.pairWithBaseline);
}

} // namespace kforge::task
