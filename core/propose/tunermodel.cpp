#include "propose/tunermodel.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace kforge::propose {

namespace {

// Each effect is shrunk towards zero as if it had this many more measurements at zero: enough to
// keep a value measured once from dominating, little enough to follow a clear trend. Pair terms
// are shrunk harder, so that they explain only what single parameters cannot, and stay out until
// there are at least as many successful measurements as parameter values: before that they would
// only soak up what belongs to the parameters' own effects.
constexpr double kRidge = 1.0;
constexpr double kPairRidge = 3.0;
// Beyond the measured range, a level keeps this share of the nearest measured effect: the trend
// is not extrapolated, and the unknown drifts towards the average.
constexpr double kBeyondRange = 0.5;
constexpr int kSweeps = 200;
constexpr int kLogisticSweeps = 60;
constexpr double kConverged = 1e-10;
constexpr double kLogisticConverged = 1e-6;
constexpr double kMaxStep = 2.0; // of a Newton step, in logits
// Logits are kept within this bound, so that a separable set of failures cannot run away.
constexpr double kMaxLogit = 12.0;
// Kernel width in normalised choice positions: one step of a six-choice parameter weighs 0.85, two
// steps 0.52, flipping a two-choice parameter 0.02.
constexpr double kBandwidth = 0.35;
// Shrinkage of the kernel estimates: with a single neighbour of weight 1 the residual correction is
// 2/3 of its residual, and both estimates fade out where the neighbours are far.
constexpr double kResidualShrink = 0.5;
constexpr double kFailureShrink = 0.25;
// The kernel estimates look at no more measurements than this (the fastest successes, the first
// failures), so that scoring thousands of candidates stays cheap however large a cache grows.
constexpr std::size_t kKernelPoints = 1024;
// Kernel weights below exp(-kNegligible) count as zero.
constexpr double kNegligible = 12.0;

double sigmoid(double z) {
    return 1.0 / (1.0 + std::exp(-std::clamp(z, -kMaxLogit, kMaxLogit)));
}

} // namespace

TunerModel::TunerModel(std::vector<std::size_t> choices) : m_choices(std::move(choices)) {
    using K = Term::Kind;
    for (std::size_t p = 0; p < m_choices.size(); ++p)
        m_terms.push_back({K::Value, p, p, m_choices[p], kRidge});
    for (std::size_t p = 0; p < m_choices.size(); ++p)
        for (std::size_t q = p + 1; q < m_choices.size(); ++q) {
            if (m_choices[p] < 2 || m_choices[q] < 2)
                continue;
            const std::size_t levels = m_choices[p] + m_choices[q] - 1;
            m_terms.push_back({K::Sum, p, q, levels, kPairRidge});
            m_terms.push_back({K::Difference, p, q, levels, kPairRidge});
        }
    m_time.effects.resize(m_terms.size());
    for (std::size_t t = 0; t < m_terms.size(); ++t)
        m_time.effects[t].assign(m_terms[t].levels, 0.0);
}

std::size_t TunerModel::levelOf(const Term& t, const Digits& x) const {
    switch (t.kind) {
    case Term::Kind::Value:
        return x[t.p];
    case Term::Kind::Sum:
        return x[t.p] + x[t.q];
    case Term::Kind::Difference:
        return x[t.p] + (m_choices[t.q] - 1) - x[t.q];
    }
    return 0;
}

double TunerModel::value(const Fit& f, const Digits& x) const {
    double y = f.constant;
    for (std::size_t t = 0; t < m_terms.size(); ++t)
        y += f.effects[t][levelOf(m_terms[t], x)];
    return y;
}

std::vector<std::vector<int>> TunerModel::countsOf(const std::vector<const Digits*>& xs) const {
    std::vector<std::vector<int>> counts;
    for (const Term& t : m_terms)
        counts.emplace_back(t.levels, 0);
    for (const Digits* x : xs)
        for (std::size_t t = 0; t < m_terms.size(); ++t)
            ++counts[t][levelOf(m_terms[t], *x)];
    return counts;
}

std::vector<std::vector<std::size_t>> TunerModel::levelsOf(const std::vector<const Digits*>& xs) const {
    std::vector<std::vector<std::size_t>> level(m_terms.size(), std::vector<std::size_t>(xs.size()));
    for (std::size_t t = 0; t < m_terms.size(); ++t)
        for (std::size_t i = 0; i < xs.size(); ++i)
            level[t][i] = levelOf(m_terms[t], *xs[i]);
    return level;
}

TunerModel::Fit TunerModel::leastSquares(const std::vector<const Digits*>& xs, const std::vector<double>& y,
                                         bool pairs) const {
    Fit f;
    for (const double v : y)
        f.constant += v;
    f.constant /= static_cast<double>(std::max<std::size_t>(1, y.size()));
    for (const Term& t : m_terms)
        f.effects.emplace_back(t.levels, 0.0);
    const auto counts = countsOf(xs);

    // Block coordinate descent (backfitting): each term's effects in closed form given the rest.
    // It converges to the unique ridge minimum.
    const auto level = levelsOf(xs);
    std::vector<double> fitted(y.size(), f.constant);
    std::vector<double> step;
    const std::size_t terms = pairs ? m_terms.size() : m_choices.size();
    for (int sweep = 0; sweep < kSweeps; ++sweep) {
        double change = 0.0;
        for (std::size_t t = 0; t < terms; ++t) {
            std::vector<double>& effect = f.effects[t];
            step.assign(effect.size(), 0.0);
            for (std::size_t i = 0; i < xs.size(); ++i)
                step[level[t][i]] += y[i] - fitted[i];
            for (std::size_t v = 0; v < effect.size(); ++v) {
                // The closed form is (residuals + count * effect) / (count + ridge).
                const double next = (step[v] + counts[t][v] * effect[v]) / (counts[t][v] + m_terms[t].ridge);
                step[v] = next - effect[v];
                effect[v] = next;
                change = std::max(change, std::abs(step[v]));
            }
            for (std::size_t i = 0; i < xs.size(); ++i)
                fitted[i] += step[level[t][i]];
        }
        if (change < kConverged)
            break;
    }
    interpolate(f, counts);
    return f;
}

TunerModel::Fit TunerModel::logistic(const std::vector<const Digits*>& xs, const std::vector<double>& failed,
                                     bool pairs) const {
    Fit f;
    double rate = 0.0;
    for (const double v : failed)
        rate += v;
    rate = std::clamp(rate / static_cast<double>(std::max<std::size_t>(1, failed.size())), 0.02, 0.98);
    f.constant = std::log(rate / (1.0 - rate));
    for (const Term& t : m_terms)
        f.effects.emplace_back(t.levels, 0.0);
    const auto counts = countsOf(xs);

    const auto level = levelsOf(xs);
    std::vector<double> logit(xs.size(), f.constant);
    std::vector<double> g;
    std::vector<double> h;
    for (int sweep = 0; sweep < kLogisticSweeps; ++sweep) {
        double change = 0.0;
        // The constant, unpenalised.
        double gc = 0.0;
        double hc = 1e-9;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double p = sigmoid(logit[i]);
            gc += p - failed[i];
            hc += p * (1.0 - p);
        }
        const double stepC = std::clamp(-gc / hc, -kMaxStep, kMaxStep);
        f.constant += stepC;
        for (double& l : logit)
            l += stepC;
        change = std::max(change, std::abs(stepC));
        // Each term's levels are disjoint, so each level takes its own Newton step.
        for (std::size_t t = 0; t < (pairs ? m_terms.size() : m_choices.size()); ++t) {
            std::vector<double>& effect = f.effects[t];
            g.assign(effect.size(), 0.0);
            h.assign(effect.size(), 0.0);
            for (std::size_t i = 0; i < xs.size(); ++i) {
                const double p = sigmoid(logit[i]);
                g[level[t][i]] += p - failed[i];
                h[level[t][i]] += p * (1.0 - p);
            }
            const double ridge = m_terms[t].ridge;
            for (std::size_t v = 0; v < effect.size(); ++v) {
                g[v] = std::clamp(-(g[v] + ridge * effect[v]) / (h[v] + ridge), -kMaxStep, kMaxStep); // the step
                effect[v] += g[v];
                change = std::max(change, std::abs(g[v]));
            }
            for (std::size_t i = 0; i < xs.size(); ++i)
                logit[i] += g[level[t][i]];
        }
        if (change < kLogisticConverged)
            break;
    }
    interpolate(f, counts);
    return f;
}

void TunerModel::interpolate(Fit& f, const std::vector<std::vector<int>>& counts) const {
    // Between the nearest measured levels; beyond them, towards the average.
    for (std::size_t t = 0; t < m_terms.size(); ++t) {
        std::vector<double>& effect = f.effects[t];
        const std::vector<int>& count = counts[t];
        const std::vector<double> measured = effect;
        for (std::size_t v = 0; v < effect.size(); ++v) {
            if (count[v] > 0)
                continue;
            std::optional<std::size_t> below;
            std::optional<std::size_t> above;
            for (std::size_t b = v; b-- > 0;)
                if (count[b] > 0) {
                    below = b;
                    break;
                }
            for (std::size_t a = v + 1; a < effect.size(); ++a)
                if (count[a] > 0) {
                    above = a;
                    break;
                }
            if (below && above) {
                const double share = static_cast<double>(v - *below) / static_cast<double>(*above - *below);
                effect[v] = measured[*below] + share * (measured[*above] - measured[*below]);
            } else if (below) {
                effect[v] = kBeyondRange * measured[*below];
            } else if (above) {
                effect[v] = kBeyondRange * measured[*above];
            }
        }
    }
}

void TunerModel::fit(const std::vector<Point>& points) {
    std::vector<const Digits*> ok;
    std::vector<double> logTimes;
    std::vector<const Digits*> all;
    std::vector<double> failed;
    m_failures.clear();
    for (const Point& p : points) {
        all.push_back(&p.digits);
        failed.push_back(p.logTime ? 0.0 : 1.0);
        if (p.logTime) {
            ok.push_back(&p.digits);
            logTimes.push_back(*p.logTime);
        } else if (m_failures.size() < kKernelPoints) {
            m_failures.push_back(p.digits);
        }
    }
    m_counts = countsOf(ok);
    std::size_t values = 0;
    for (const std::size_t n : m_choices)
        values += n;
    const bool pairs = ok.size() >= values;
    m_time = leastSquares(ok, logTimes, pairs);
    m_failure.reset();
    if (!m_failures.empty())
        m_failure = logistic(all, failed, pairs);

    m_spread = 0.0;
    if (!logTimes.empty()) {
        double mean = 0.0;
        for (const double y : logTimes)
            mean += y;
        mean /= static_cast<double>(logTimes.size());
        for (const double y : logTimes)
            m_spread += (y - mean) * (y - mean);
        m_spread = std::sqrt(m_spread / static_cast<double>(logTimes.size()));
    }

    std::vector<std::size_t> order(ok.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    if (order.size() > kKernelPoints) {
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kKernelPoints), order.end(),
                          [&logTimes](std::size_t a, std::size_t b) { return logTimes[a] < logTimes[b]; });
        order.resize(kKernelPoints);
    }
    m_successes.clear();
    for (const std::size_t i : order)
        m_successes.push_back({*ok[i], logTimes[i] - value(m_time, *ok[i])});
}

double TunerModel::kernel(const Digits& a, const Digits& b) const {
    double d2 = 0.0;
    for (std::size_t q = 0; q < m_choices.size(); ++q) {
        if (a[q] == b[q])
            continue;
        const double d = (static_cast<double>(a[q]) - static_cast<double>(b[q]))
                         / static_cast<double>(std::max<std::size_t>(1, m_choices[q] - 1));
        d2 += d * d;
    }
    const double exponent = d2 / (2.0 * kBandwidth * kBandwidth);
    return exponent > kNegligible ? 0.0 : std::exp(-exponent);
}

TunerModel::Estimate TunerModel::estimate(const Digits& x) const {
    Estimate e;
    double weighted = 0.0;
    double passed = 0.0;
    for (const Residual& r : m_successes) {
        const double k = kernel(x, r.digits);
        weighted += k * r.value;
        passed += k;
    }
    e.logTime = value(m_time, x) + weighted / (passed + kResidualShrink);
    if (m_failure) {
        double failed = 0.0;
        for (const Digits& f : m_failures)
            failed += kernel(x, f);
        const double near = failed / (failed + passed + kFailureShrink);
        e.risk = std::max(near, sigmoid(value(*m_failure, x)));
    }
    if (!m_choices.empty()) {
        double sum = 0.0;
        for (std::size_t p = 0; p < m_choices.size(); ++p)
            sum += 1.0 / (1.0 + m_counts[p][x[p]]); // the parameters' own terms come first
        e.novelty = std::sqrt(sum / static_cast<double>(m_choices.size()));
    }
    return e;
}

double TunerModel::closeness(const Digits& x, const std::vector<Digits>& others) const {
    double most = 0.0;
    for (const Digits& o : others)
        most = std::max(most, kernel(x, o));
    return most;
}

} // namespace kforge::propose
