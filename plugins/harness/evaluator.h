#pragma once
// The evaluation contract, the same for every backend: parse and bind the launch plans, compile,
// verify the candidate against the trusted reference on several seeds with poisoned outputs and
// input checks, then time it (rotating input sets, every timed run verified), paired with the
// baseline in the same call. Every failure becomes a status and diagnostics, never a crash.

#include "backend.h"

namespace kforge::harness {

class Evaluator {
public:
    explicit Evaluator(Backend& backend) : m_backend(backend) {}

    protocol::EvaluateResult evaluate(const protocol::EvaluateRequest& request);

private:
    Backend& m_backend;
};

} // namespace kforge::harness
