#pragma once
// Drives an executor in a test: submits requests and waits for every answer. Header-only, for the
// suites that test executors (worker pools, groups of places, Slurm pilots).

#include "eval/executor.h"

#include <QSignalSpy>
#include <QTest>

#include <chrono>
#include <map>
#include <vector>

namespace kforgetest {

// The answers by ticket (tickets grow, so in the order submitted). Waits up to `waitMs` for them;
// fewer results than requests fail the caller's comparisons, which say how many came.
inline std::map<qint64, kforge::protocol::EvaluateResult>
evaluateAll(kforge::eval::Executor& e, const std::vector<kforge::protocol::EvaluateRequest>& requests,
            std::chrono::milliseconds timeout, int waitMs) {
    QSignalSpy spy(&e, &kforge::eval::Executor::evaluated);
    for (const auto& r : requests)
        e.submit(r, timeout);
    std::map<qint64, kforge::protocol::EvaluateResult> results;
    (void)QTest::qWaitFor(
        [&] {
            for (const auto& args : spy)
                results[args.at(0).toLongLong()] = args.at(1).value<kforge::protocol::EvaluateResult>();
            return results.size() >= requests.size();
        },
        waitMs);
    return results;
}

} // namespace kforgetest
