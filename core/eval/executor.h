#pragma once
// Where evaluations run. The local WorkerPool is one executor; a cluster executor (Slurm) can be
// another: the engine only submits requests and waits for `evaluated`.

#include "protocol.h"

#include <QObject>

#include <chrono>

Q_DECLARE_METATYPE(kforge::protocol::EvaluateResult)
Q_DECLARE_METATYPE(kforge::protocol::ProbeResult)
Q_DECLARE_METATYPE(kforge::protocol::CeilingsResult)

namespace kforge::eval {

class Executor : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // Queues one evaluation. The request's id is replaced by the returned ticket, which the
    // `evaluated` signal carries back. Exactly one `evaluated` follows every submit, whatever
    // happens to the worker.
    virtual qint64 submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) = 0;
    // Drops a queued request or kills the worker running it; `evaluated` still follows, with
    // a result whose message says it was cancelled.
    virtual void cancel(qint64 ticket) = 0;
    // How many evaluations can run at once.
    virtual int capacity() const = 0;
    virtual QString backend() const = 0;

signals:
    void evaluated(qint64 ticket, const kforge::protocol::EvaluateResult& result);
};

} // namespace kforge::eval
