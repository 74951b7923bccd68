#pragma once
// An evaluate request for the fake worker (tests/fakes/fakeworker.cpp): a small vector task and a
// candidate whose `// fake:` lines tell the worker how to answer. Header-only, for the tests and
// benchmarks that drive executors without a device.

#include "protocol.h"

#include <QString>

#include <vector>

#include <nlohmann/json.hpp>

namespace kforgetest {

inline kforge::protocol::EvaluateRequest fakeRequest(const QString& candidate) {
    static const kforge::spec::TaskSpec task = [] {
        auto parsed = kforge::spec::TaskSpec::fromJson(nlohmann::json::parse(R"({
            "name": "vector_add", "family": "elementwise", "sizes": {"N": 1024},
            "inputs": [{"name": "x", "dtype": "float32", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
            "outputs": [{"name": "z", "dtype": "float32", "shape": ["N"], "atol": 1e-6, "rtol": 1e-6}],
            "flops": "N", "bytes": "2 * N * 4", "reference": {"opencl": "reference.cl"}})"),
                                                       "fakeRequest");
        if (!parsed)
            qFatal("the fake task does not parse: %s", parsed.error().c_str());
        return *parsed;
    }();
    kforge::protocol::EvaluateRequest r;
    r.task = task;
    r.reference = {"reference", "reference.cl", "// the reference", {}};
    r.candidate = {"candidate", "candidate.cl", candidate.toStdString(), {}};
    return r;
}

// `n` requests whose candidates are `source` and a line that makes each one different.
inline std::vector<kforge::protocol::EvaluateRequest> fakeRequests(int n, const QString& source) {
    std::vector<kforge::protocol::EvaluateRequest> requests;
    for (int i = 0; i < n; ++i)
        requests.push_back(fakeRequest(source + QStringLiteral("\n// %1").arg(i)));
    return requests;
}

} // namespace kforgetest
