#pragma once
// The template tuner: a search over a kernel file's declared `// kforge:param` choices. Local
// search around the parent's configuration (one or two parameters moved to a neighbouring choice),
// with random restarts, and a memory of every configuration ever proposed for the template so that
// none is evaluated twice. Deterministic for a given random engine state.

#include "kernelfile.h"
#include "model/candidate.h"

#include <QString>

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace kforge::propose {

class Tuner {
public:
    // `params` are the declarations of one kernel file (the template); fixed parameters (no
    // choices) are left alone.
    explicit Tuner(std::vector<spec::ParamDecl> params);

    // Every declared parameter with its value: the default unless `values` sets it.
    model::ParamValues complete(const model::ParamValues& values) const;

    // How many distinct configurations the template has (product of choice counts, saturating).
    std::uint64_t spaceSize() const;
    std::uint64_t seenCount() const { return m_seen.size(); }
    bool exhausted() const { return seenCount() >= spaceSize(); }

    // Marks a configuration as taken (evaluated, queued, or already in the run when resuming).
    void markSeen(const model::ParamValues& values);
    bool seen(const model::ParamValues& values) const;

    // The next configuration to evaluate near `around` (a complete or partial configuration):
    // a neighbour first, a random unseen configuration with probability `restart` or when no
    // neighbour is left, nothing when the space is exhausted. The result is marked seen.
    std::optional<model::ParamValues> propose(const model::ParamValues& around, std::mt19937_64& rng,
                                              double restart = 0.2);

private:
    // Whether a complete configuration is one the tuner can propose: every tunable value among
    // its choices, every fixed parameter at its declared value.
    bool inSpace(const model::ParamValues& complete) const;
    // The nearest choices below and above `value`.
    static std::vector<std::int64_t> steps(const spec::ParamDecl& p, std::int64_t value);
    // Unseen configurations with `moved` (1 or 2) parameters one step away from `base`.
    std::vector<model::ParamValues> unseenNeighbours(const model::ParamValues& base, int moved) const;
    std::optional<model::ParamValues> randomUnseen(std::mt19937_64& rng) const;
    // Configurations by index: one choice index per tunable parameter, in m_params' order.
    model::ParamValues configAt(const std::vector<std::size_t>& digits) const;
    bool advance(std::vector<std::size_t>& digits) const;

    std::vector<spec::ParamDecl> m_params; // only the tunable ones, choices sorted and distinct
    std::vector<spec::ParamDecl> m_fixed;
    std::set<model::ParamValues> m_seen;      // complete configurations inside the space
    std::set<model::ParamValues> m_elsewhere; // marked seen but outside it (off-list values)
};

} // namespace kforge::propose
