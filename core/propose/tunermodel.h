#pragma once
// The template tuner's model of a kernel template's times: from every configuration measured so
// far, it predicts the log of an unmeasured configuration's time, how likely it is to fail, and how
// little the measurements say about it.
//
// Why this model: a tuning space is a grid of a few parameters with a handful of ordered choices
// each, and a few dozen measurements at most, some of them failures. Log time is modelled as a sum
// of effects, fitted by ridge least squares: one effect per value of each parameter (exact when
// each parameter scales the time by a factor of its own), and for each pair of parameters one
// effect per sum and one per difference of their choice indices. Choices are usually geometric (16,
// 32, 64...), so the sum of two indices stands for the product of the values (threads per block,
// bytes of a tile: what occupancy and resource limits depend on) and the difference for their ratio
// (the tile's shape). Every term is a one-hot partition of the configurations, so the fit is block
// coordinate descent with a closed form per block, and a level never measured takes the effect
// interpolated between its nearest measured levels (beyond them, half the nearest: the unknown
// drifts towards the average): nothing extrapolates wildly, and the ridge keeps every fit defined
// with few measurements and damps noise (pair terms are shrunk harder and wait until there are as
// many measurements as parameter values, so they only explain what single parameters cannot). What
// the terms still leave unexplained is added from the residuals of nearby measured configurations,
// weighted by a Gaussian kernel on the distance between choice positions normalised to [0, 1] per
// parameter, fading to nothing far from every measurement. Failures (compile errors, wrong results,
// plans that do not resolve) are predicted by the same terms fitted as a ridge logistic regression
// over every measurement (a resource limit is a threshold on such a sum), or by the kernel where
// failures lie nearer than successes, whichever says more. No random numbers; both fits are convex.

#include <cstddef>
#include <optional>
#include <vector>

namespace kforge::propose {

class TunerModel {
public:
    // One choice index per tunable parameter.
    using Digits = std::vector<std::size_t>;
    struct Point {
        Digits digits;
        std::optional<double> logTime; // none: it failed
    };

    // `choices[p]`: how many choices tunable parameter p has.
    explicit TunerModel(std::vector<std::size_t> choices);

    void fit(const std::vector<Point>& points);

    struct Estimate {
        double logTime = 0.0; // predicted
        double risk = 0.0;    // of failing: 0 (no failure measured near it or like it) .. 1
        double novelty = 0.0; // 0 .. 1: how little is known of its values (measured rarely or never)
    };
    Estimate estimate(const Digits& x) const;
    // How much nearby configurations in `others` resemble x: the largest kernel weight, 0 .. 1.
    double closeness(const Digits& x, const std::vector<Digits>& others) const;
    // The spread (standard deviation) of the measured log times; a scale for bonuses.
    double spread() const { return m_spread; }

private:
    // One term of the model: a partition of the configurations into ordered levels.
    struct Term {
        enum class Kind { Value, Sum, Difference } kind = Kind::Value;
        std::size_t p = 0;
        std::size_t q = 0; // the second parameter of a pair
        std::size_t levels = 0;
        double ridge = 0.0;
    };
    struct Fit {
        double constant = 0.0;
        std::vector<std::vector<double>> effects; // per term and level
    };
    struct Residual {
        Digits digits;
        double value;
    };
    std::size_t levelOf(const Term& t, const Digits& x) const;
    double value(const Fit& f, const Digits& x) const;
    double kernel(const Digits& a, const Digits& b) const;
    std::vector<std::vector<int>> countsOf(const std::vector<const Digits*>& xs) const;
    // levelsOf(xs)[t][i]: the level of term t that configuration xs[i] falls in.
    std::vector<std::vector<std::size_t>> levelsOf(const std::vector<const Digits*>& xs) const;
    // `pairs`: with the pair terms (otherwise they stay zero).
    Fit leastSquares(const std::vector<const Digits*>& xs, const std::vector<double>& y, bool pairs) const;
    // Of `failed` (1 or 0): Newton steps per term on the penalised log-likelihood.
    Fit logistic(const std::vector<const Digits*>& xs, const std::vector<double>& failed, bool pairs) const;
    // Levels never measured take the effect interpolated between their measured neighbours.
    void interpolate(Fit& f, const std::vector<std::vector<int>>& counts) const;

    std::vector<std::size_t> m_choices;
    std::vector<Term> m_terms; // the parameters' own first
    double m_spread = 0.0;
    Fit m_time;                             // of log time, over the successes
    std::optional<Fit> m_failure;           // logit of failing, over every measurement; none: no failure
    std::vector<std::vector<int>> m_counts; // successful measurements per term and level
    std::vector<Residual> m_successes;      // what the terms leave unexplained
    std::vector<Digits> m_failures;
};

} // namespace kforge::propose
