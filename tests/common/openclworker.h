#pragma once
// The OpenCL worker (PoCL on the CPU in CI) behind a pool of one, for the suites that evaluate
// kernels end to end, with a blocking evaluate.

#include "eval/workerlocator.h"
#include "eval/workerpool.h"

#include <QSignalSpy>
#include <QString>

#include <chrono>
#include <memory>
#include <optional>

namespace kforgetest {

class OpenClWorker {
public:
    // Empty once started; otherwise why it cannot start (the suite skips).
    QString start() {
        auto worker = kforge::eval::WorkerLocator::find(QStringLiteral("opencl"));
        if (!worker)
            return QStringLiteral("no OpenCL worker in this build: ") + QString::fromStdString(worker.error());
        m_pool = std::make_unique<kforge::eval::WorkerPool>(QStringLiteral("opencl"), *worker);
        return {};
    }
    void stop() { m_pool.reset(); }
    // For tests that submit without waiting for the answer.
    kforge::eval::WorkerPool* pool() const { return m_pool.get(); }

    // The worker's answer to `request`, or nullopt with `problem` set when none came.
    std::optional<kforge::protocol::EvaluateResult> evaluate(kforge::protocol::EvaluateRequest request,
                                                             QString& problem) {
        QSignalSpy spy(m_pool.get(), &kforge::eval::WorkerPool::evaluated);
        const qint64 ticket = m_pool->submit(std::move(request), std::chrono::minutes(3));
        if (!spy.wait(200000)) {
            problem = QStringLiteral("no result within 200 s");
            return std::nullopt;
        }
        if (spy.at(0).at(0).toLongLong() != ticket) {
            problem = QStringLiteral("a result for ticket %1, not %2").arg(spy.at(0).at(0).toLongLong()).arg(ticket);
            return std::nullopt;
        }
        return spy.at(0).at(1).value<kforge::protocol::EvaluateResult>();
    }

private:
    std::unique_ptr<kforge::eval::WorkerPool> m_pool;
};

} // namespace kforgetest
