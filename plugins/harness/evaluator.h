#pragma once
// The evaluation contract, the same for every backend: parse and bind the launch plans, compile,
// verify the candidate against the trusted reference on several seeds with poisoned outputs and
// input checks, then time it (rotating input sets, every timed run verified), paired with the
// baseline in the same call. Every failure becomes a status and diagnostics, never a crash.

#include "backend.h"
#include "devicelock.h"
#include "inputs.h"

#include <map>
#include <memory>

namespace kforge::harness {

class TorchBridge;

// One verification seed's inputs and expected outputs.
struct SeedData {
    std::uint64_t seed = 0;
    std::string stress; // the stress set its inputs were transformed into, if any
    std::vector<HostTensor> inputs;
    std::vector<HostTensor> expected;

    // "seed 123" or "stress set exp_overflow, seed 123", for messages.
    std::string label() const {
        return (stress.empty() ? "" : "stress set " + stress + ", ") + "seed " + std::to_string(seed);
    }
};

// Seeds' inputs and the reference's outputs for them, kept across the evaluations of one worker:
// a search evaluates many candidates of one task, and regenerating inputs and rerunning the
// reference for each would cost more than checking the candidate. Least recently used entries go
// first once the capacity is reached.
class SeedCache {
public:
    explicit SeedCache(std::size_t capacityBytes) : m_capacity(capacityBytes) {}
    const SeedData* find(const std::string& key);
    void insert(const std::string& key, const SeedData& data);

private:
    struct Entry {
        SeedData data;
        std::size_t bytes = 0;
        std::uint64_t lastUse = 0;
    };
    std::map<std::string, Entry> m_entries;
    std::size_t m_capacity;
    std::size_t m_bytes = 0;
    std::uint64_t m_clock = 0;
};

class Evaluator {
public:
    // `cacheBytes`: how much host memory the seed cache may hold (0 turns it off).
    explicit Evaluator(Backend& backend, std::size_t cacheBytes = std::size_t{1} << 30);
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;

    protocol::EvaluateResult evaluate(const protocol::EvaluateRequest& request);
    // The locks by which this worker takes turns with the others on the same device.
    DeviceLocks& deviceLocks() { return m_locks; }

private:
    Backend& m_backend;
    SeedCache m_seeds;
    DeviceLocks m_locks;                  // taking turns at timing with the other workers on the same device
    std::unique_ptr<TorchBridge> m_torch; // for tasks whose reference is PyTorch
    std::string m_torchDevice;
};

} // namespace kforge::harness
