#pragma once
// Where evaluations run. The local WorkerPool is one executor; remote (SSH) and cluster (Slurm)
// executors can be others. This interface is the whole contract between the engine and them: the
// engine never needs to know which one it has.

#include "protocol.h"

#include <QObject>

#include <chrono>

Q_DECLARE_METATYPE(kforge::protocol::EvaluateResult)
Q_DECLARE_METATYPE(kforge::protocol::ProbeResult)
Q_DECLARE_METATYPE(kforge::protocol::CeilingsResult)
Q_DECLARE_METATYPE(kforge::protocol::DisassembleResult)

namespace kforge::eval {

class Executor : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // Queues one evaluation. The request's id is replaced by the returned ticket, which the
    // `evaluated` signal carries back. Exactly one `evaluated` follows every submit, whatever
    // happens to the worker; its result names where the evaluation ran (`host`, `device_index`,
    // and the worker's `device`).
    virtual qint64 submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) = 0;
    // Drops a queued request or kills the worker running it; `evaluated` still follows, with
    // a result whose message says it was cancelled.
    virtual void cancel(qint64 ticket) = 0;
    // How many evaluations can run at once.
    virtual int capacity() const = 0;
    virtual QString backend() const = 0;

    // Asks for the devices the executor's workers can use; answered by `probed` or `probeFailed`.
    virtual void probe() = 0;
    // Asks for the measured ceilings of `device` in every place the executor's workers run (each
    // place may hold another device model); answered by one `ceilingsMeasured` or `ceilingsFailed`
    // per place, as they come. Returns how many answers follow. `refresh` measures again instead
    // of using a cached measurement.
    virtual int requestCeilings(int device, bool refresh = false) = 0;
    // Fails everything pending as cancelled and stops the workers politely (killing what does not
    // stop in time). Later submits fail at once. `shutDown` follows once every worker has exited.
    virtual void shutdown() = 0;

signals:
    void evaluated(qint64 ticket, const kforge::protocol::EvaluateResult& result);
    // A worker took the request (it had been queued until now). Emitted again if the request has
    // to move to another worker because the first one exited before reading it.
    void evaluationStarted(qint64 ticket);
    void probed(const kforge::protocol::ProbeResult& result);
    void probeFailed(const QString& message);
    void ceilingsMeasured(const kforge::protocol::CeilingsResult& result);
    void ceilingsFailed(const QString& message);
    // Workers could not be started (after the executor's own retries); the queued requests fail
    // right after (their `evaluated` signals follow this one). A set-up problem, not a result.
    void workersFailedToStart(const QString& message);
    // Some workers are gone for good (a host that cannot be reached, a worker program missing
    // there) while others go on; the message says which and why. workersFailedToStart follows
    // only when none is left.
    void degraded(const QString& message);
    // After shutdown(): every worker has exited. Emitted once, never from inside shutdown().
    void shutDown();
};

// The local executor for `backend` (a WorkerPool of `workers` processes of the worker program
// WorkerLocator finds), owned by `parent`. Fails, saying where it looked, when there is none.
spec::Expected<Executor*> localExecutor(const QString& backend, int workers, QObject* parent);

} // namespace kforge::eval
