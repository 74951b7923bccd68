#pragma once
// The template tuner: a search over a kernel file's declared `// kforge:param` choices that learns
// from the times measured. It remembers every configuration ever proposed for the template, so that
// none is evaluated twice, and every outcome it is told of (a time, or a failure).
//
// Its space is every combination of the declared choices that meets the file's `// kforge:require`
// conditions; nothing outside it is proposed or counted.
//
// How it proposes, deterministically for a given random engine state:
// - First, the fastest configuration an earlier run measured on the same task, sizes and device
//   (recall(): the tuning cache), unless this run has it already. Other configurations earlier
//   runs measured are proposed again only while they are within 10% of the fastest time known.
// - While fewer than kModelAfter configurations are measured (or fewer than two of them ran):
//   local search around the parent's configuration (one or two parameters moved to a neighbouring
//   choice), with random restarts at the `restart` rate.
// - Then it fits a TunerModel (tunermodel.h) over every measurement of the template, this run's and
//   earlier runs', and proposes the unseen configuration with the best score: the predicted log
//   time, less an optimism bonus for values measured rarely or never, plus a penalty for being close
//   to configurations proposed but not measured yet (so that one generation's proposals spread
//   out). Configurations predicted to fail are proposed only when nothing else is left. Exploration
//   stays: at half the `restart` rate a random configuration, at the other half the best-scoring
//   neighbour of the fastest measured configuration. Spaces of up to kEnumerateLimit configurations
//   are scored whole; larger ones score a sample of kSampleSize configurations plus the
//   neighbourhoods of the fastest measured ones and every configuration an earlier run measured.

#include "expression.h"
#include "kernelfile.h"
#include "model/candidate.h"
#include "propose/tunermodel.h"

#include <QString>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace kforge::propose {

// One evaluation's outcome for a configuration: its median time, or none when it failed (did not
// compile, gave wrong results, its launch plan did not resolve, ...).
struct TunerMeasurement {
    model::ParamValues params;
    std::optional<double> timeUs;
};

struct TunerProposal {
    model::ParamValues params; // complete
    model::TunerStrategy strategy = model::TunerStrategy::Neighbour;
};

class Tuner {
public:
    static constexpr std::size_t kModelAfter = 4;
    static constexpr std::uint64_t kEnumerateLimit = 4096;
    static constexpr std::size_t kSampleSize = 2048;

    // `params` are the declarations of one kernel file (the template); fixed parameters (no
    // choices) are left alone. Only configurations that meet every one of `requirements` (the
    // file's `// kforge:require` conditions) are proposed or counted in the space.
    explicit Tuner(std::vector<spec::ParamDecl> params, const std::vector<spec::RequireDecl>& requirements = {});

    // Every declared parameter with its value: the default unless `values` sets it.
    model::ParamValues complete(const model::ParamValues& values) const;

    // Whether there is anything to tune (at least one parameter with choices).
    bool tunable() const { return !m_params.empty(); }
    // How many distinct configurations the template has: the product of the choice counts
    // (saturating), less those its requirements rule out.
    std::uint64_t spaceSize() const { return m_spaceSize; }
    std::uint64_t seenCount() const { return m_seen.size(); }
    // Nothing left worth proposing: every configuration seen, or known from an earlier run not to
    // be worth measuring again.
    bool exhausted() const;

    // Marks a configuration as taken (evaluated, queued, or already in the run when resuming).
    void markSeen(const model::ParamValues& values);
    bool seen(const model::ParamValues& values) const;

    // An evaluated configuration's outcome in this run (it is marked seen). A configuration
    // measured again is averaged (geometric mean of its times); one that failed and never ran
    // counts as failing. Configurations outside the template's choices are ignored.
    void observe(const model::ParamValues& values, std::optional<double> timeUs);
    // What earlier runs measured: the model learns from it, but nothing is marked seen, and the
    // fastest is proposed first. Others are measured again only while they are within 10% of the
    // fastest time known; slower ones, and those that failed, count as tried. This run's own
    // measurements of a configuration take the place of earlier ones.
    void recall(const std::vector<TunerMeasurement>& earlier);
    // Configurations with a measurement, this run's or earlier ones.
    std::size_t measuredCount() const;

    // The next configuration to evaluate, near `around` (a complete or partial configuration)
    // while the model has too little to go on; nothing when the space is exhausted. The result is
    // marked seen.
    std::optional<TunerProposal> propose(const model::ParamValues& around, std::mt19937_64& rng, double restart = 0.2);

private:
    using Digits = TunerModel::Digits;
    struct Record {
        double sumLog = 0.0;
        int ran = 0;
        int failed = 0;
    };
    // Whether a complete configuration is one the tuner can propose: every tunable value among
    // its choices, every fixed parameter at its declared value, every requirement met.
    bool inSpace(const model::ParamValues& complete) const;
    bool allowed(const model::ParamValues& complete) const;
    std::uint64_t choiceProduct() const;
    // The nearest choices below and above `value`.
    static std::vector<std::int64_t> steps(const spec::ParamDecl& p, std::int64_t value);
    // Unseen configurations with `moved` (1 or 2) parameters one step away from `base`.
    std::vector<model::ParamValues> unseenNeighbours(const model::ParamValues& base, int moved) const;
    std::optional<model::ParamValues> randomUnseen(std::mt19937_64& rng) const;
    // An earlier run's configuration not worth measuring again (see recall()).
    bool retired(const model::ParamValues& complete) const;
    // Neither seen nor retired: one to propose.
    bool available(const model::ParamValues& complete) const {
        return !m_seen.count(complete) && !retired(complete) && allowed(complete);
    }
    // Configurations by index: one choice index per tunable parameter, in m_params' order.
    model::ParamValues configAt(const std::vector<std::size_t>& digits) const;
    Digits digitsOf(const model::ParamValues& complete) const;
    bool advance(std::vector<std::size_t>& digits) const;

    // This run's record of a configuration, or else an earlier run's.
    const Record* recordOf(const model::ParamValues& complete) const;
    std::size_t ranCount() const;
    void refit();
    // The model's choice among `pool` (unseen configurations): the best score, avoiding predicted
    // failures while anything else is left.
    std::optional<model::ParamValues> bestOf(const std::vector<model::ParamValues>& pool) const;
    std::vector<model::ParamValues> modelPool(std::mt19937_64& rng) const;
    // The fastest measured configurations, fastest first.
    std::vector<model::ParamValues> fastest(std::size_t count) const;
    std::optional<TunerProposal> take(model::ParamValues config, model::TunerStrategy strategy);

    std::vector<spec::ParamDecl> m_params; // only the tunable ones, choices sorted and distinct
    std::vector<spec::ParamDecl> m_fixed;
    spec::Conditions m_requirements;
    std::uint64_t m_product = 1;              // configurations by their choices alone
    std::uint64_t m_spaceSize = 1;            // those of them the requirements allow
    std::set<model::ParamValues> m_seen;      // complete configurations inside the space
    std::set<model::ParamValues> m_elsewhere; // marked seen but outside it (off-list values)
    std::set<model::ParamValues> m_pending;   // proposed, no outcome yet

    std::map<model::ParamValues, Record> m_measured; // this run's, inside the space
    std::map<model::ParamValues, Record> m_earlier;  // earlier runs', inside the space
    std::optional<model::ParamValues> m_earlierBest;
    std::optional<double> m_bestLog; // the fastest log time known, this run's or earlier
    bool m_earlierBestOffered = false;
    TunerModel m_model;
    bool m_fitted = false; // m_model reflects every measurement
};

} // namespace kforge::propose
