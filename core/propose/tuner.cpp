#include "propose/tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace kforge::propose {

namespace {

// Up to this many configurations, a random restart lists every unseen one and picks among them,
// which is exactly uniform however full the space is. Larger spaces sample instead.
constexpr std::uint64_t kListLimit = Tuner::kEnumerateLimit;
// Random draws before a large space falls back to walking it in order; a draw only misses when
// most of the space is seen, which a large space practically never is.
constexpr int kSampleTries = 256;

// The score's terms, in units of the spread of the measured log times (floored, so that a few
// equal times still leave room to explore): the optimism bonus for rarely measured values, the
// penalty for crowding configurations already proposed, and the penalty per unit of failure risk.
constexpr double kOptimism = 0.5;
constexpr double kCrowding = 0.5;
constexpr double kRiskPenalty = 2.0;
constexpr double kMinSpread = 0.05;
// Above this risk a configuration is predicted to fail.
constexpr double kFailing = 0.5;
// How many of the fastest measured configurations a large space's sample adds neighbours of.
constexpr std::size_t kPoolAround = 3;
// An earlier run's configuration is worth measuring again while its time is within this much of the
// fastest known (log of 1.1: 10%).
const double kContender = std::log(1.1);

double logTime(double us) {
    return std::log(std::max(us, 1e-6));
}

std::vector<std::size_t> choiceCounts(const std::vector<spec::ParamDecl>& params) {
    std::vector<std::size_t> counts;
    counts.reserve(params.size());
    for (const auto& p : params)
        counts.push_back(p.choices.size());
    return counts;
}

// The tunable ones, choices sorted and distinct: adjacency is numeric, whatever order the
// directive listed the choices in.
std::vector<spec::ParamDecl> tunableOf(const std::vector<spec::ParamDecl>& params) {
    std::vector<spec::ParamDecl> out;
    for (auto p : params) {
        if (p.choices.empty())
            continue;
        std::sort(p.choices.begin(), p.choices.end());
        p.choices.erase(std::unique(p.choices.begin(), p.choices.end()), p.choices.end());
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace

Tuner::Tuner(std::vector<spec::ParamDecl> params, const std::vector<spec::RequireDecl>& requirements)
    : m_params(tunableOf(params)), m_model(choiceCounts(m_params)) {
    for (auto& p : params)
        if (p.choices.empty())
            m_fixed.push_back(std::move(p));
    m_product = choiceProduct();
    m_spaceSize = m_product;
    if (requirements.empty())
        return;
    std::vector<std::string> names, conditions;
    for (const auto* list : {&m_params, &m_fixed})
        for (const auto& p : *list)
            names.push_back(p.name);
    for (const auto& r : requirements)
        conditions.push_back(r.condition);
    // A parsed kernel file's requirements compile; were they not to, the tuner would rule out
    // nothing rather than everything.
    if (auto compiled = spec::Conditions::compile(conditions, names))
        m_requirements = std::move(*compiled);
    if (m_requirements.size() == 0 || m_product > spec::kMaxParamCombinations)
        return;
    m_spaceSize = 0;
    std::vector<std::size_t> digits(m_params.size(), 0);
    do {
        m_spaceSize += allowed(configAt(digits)) ? 1 : 0;
    } while (advance(digits));
}

model::ParamValues Tuner::complete(const model::ParamValues& values) const {
    model::ParamValues out;
    for (const auto* list : {&m_params, &m_fixed})
        for (const auto& p : *list) {
            const auto it = values.find(p.name);
            out[p.name] = it != values.end() ? it->second : p.value;
        }
    return out;
}

std::uint64_t Tuner::choiceProduct() const {
    std::uint64_t size = 1;
    for (const auto& p : m_params) {
        const std::uint64_t n = p.choices.size();
        if (size > std::numeric_limits<std::uint64_t>::max() / n)
            return std::numeric_limits<std::uint64_t>::max();
        size *= n;
    }
    return size;
}

bool Tuner::allowed(const model::ParamValues& complete) const {
    if (m_requirements.size() == 0)
        return true;
    spec::Variables values;
    for (const auto& [name, value] : complete)
        values.emplace(name, static_cast<double>(value));
    return m_requirements.firstFailing(values) < 0;
}

bool Tuner::inSpace(const model::ParamValues& complete) const {
    for (const auto& p : m_params)
        if (!std::binary_search(p.choices.begin(), p.choices.end(), complete.at(p.name)))
            return false;
    for (const auto& p : m_fixed)
        if (complete.at(p.name) != p.value)
            return false;
    return allowed(complete);
}

bool Tuner::retired(const model::ParamValues& complete) const {
    const auto it = m_earlier.find(complete);
    if (it == m_earlier.end() || m_seen.count(complete))
        return false;
    const Record& r = it->second;
    return r.ran == 0 || (m_bestLog && r.sumLog / r.ran > *m_bestLog + kContender);
}

bool Tuner::exhausted() const {
    std::uint64_t retiredCount = 0;
    for (const auto& entry : m_earlier)
        retiredCount += retired(entry.first) ? 1 : 0;
    return seenCount() + retiredCount >= spaceSize();
}

void Tuner::markSeen(const model::ParamValues& values) {
    auto full = complete(values);
    // Only configurations the tuner could propose count towards exhaustion; others (a hand-edited
    // value, a changed fixed parameter) are still remembered for seen().
    if (inSpace(full))
        m_seen.insert(std::move(full));
    else
        m_elsewhere.insert(std::move(full));
}

bool Tuner::seen(const model::ParamValues& values) const {
    const auto full = complete(values);
    return m_seen.count(full) > 0 || m_elsewhere.count(full) > 0;
}

void Tuner::observe(const model::ParamValues& values, std::optional<double> timeUs) {
    auto full = complete(values);
    if (!inSpace(full))
        return;
    m_pending.erase(full);
    m_seen.insert(full);
    Record& r = m_measured[full];
    if (timeUs) {
        r.sumLog += logTime(*timeUs);
        ++r.ran;
        m_bestLog = std::min(m_bestLog.value_or(r.sumLog / r.ran), r.sumLog / r.ran);
    } else {
        ++r.failed;
    }
    m_fitted = false;
}

void Tuner::recall(const std::vector<TunerMeasurement>& earlier) {
    for (const auto& m : earlier) {
        auto full = complete(m.params);
        if (!inSpace(full))
            continue; // another choice list, or another value of a fixed parameter
        Record& r = m_earlier[full];
        if (m.timeUs) {
            r.sumLog += logTime(*m.timeUs);
            ++r.ran;
        } else {
            ++r.failed;
        }
    }
    m_earlierBest.reset();
    double best = 0.0;
    for (const auto& [config, r] : m_earlier)
        if (r.ran > 0 && (!m_earlierBest || r.sumLog / r.ran < best)) {
            m_earlierBest = config;
            best = r.sumLog / r.ran;
        }
    if (m_earlierBest)
        m_bestLog = std::min(m_bestLog.value_or(best), best);
    m_earlierBestOffered = false;
    m_fitted = false;
}

std::size_t Tuner::measuredCount() const {
    std::size_t n = m_measured.size();
    for (const auto& entry : m_earlier)
        n += m_measured.count(entry.first) ? 0 : 1;
    return n;
}

const Tuner::Record* Tuner::recordOf(const model::ParamValues& complete) const {
    if (auto it = m_measured.find(complete); it != m_measured.end())
        return &it->second;
    if (auto it = m_earlier.find(complete); it != m_earlier.end())
        return &it->second;
    return nullptr;
}

std::size_t Tuner::ranCount() const {
    std::size_t n = 0;
    for (const auto& [config, r] : m_measured)
        n += r.ran > 0 ? 1 : 0;
    for (const auto& [config, r] : m_earlier)
        n += r.ran > 0 && !m_measured.count(config) ? 1 : 0;
    return n;
}

void Tuner::refit() {
    if (m_fitted)
        return;
    std::vector<TunerModel::Point> points;
    auto add = [&points, this](const model::ParamValues& config, const Record& r) {
        TunerModel::Point p;
        p.digits = digitsOf(config);
        if (r.ran > 0)
            p.logTime = r.sumLog / r.ran;
        points.push_back(std::move(p));
    };
    for (const auto& entry : m_measured)
        add(entry.first, entry.second);
    for (const auto& entry : m_earlier)
        if (!m_measured.count(entry.first))
            add(entry.first, entry.second);
    m_model.fit(points);
    m_fitted = true;
}

std::vector<model::ParamValues> Tuner::fastest(std::size_t count) const {
    std::vector<std::pair<double, model::ParamValues>> ran;
    for (const auto& [config, r] : m_measured)
        if (r.ran > 0)
            ran.emplace_back(r.sumLog / r.ran, config);
    for (const auto& [config, r] : m_earlier)
        if (r.ran > 0 && !m_measured.count(config))
            ran.emplace_back(r.sumLog / r.ran, config);
    std::sort(ran.begin(), ran.end());
    std::vector<model::ParamValues> out;
    for (std::size_t i = 0; i < ran.size() && i < count; ++i)
        out.push_back(ran[i].second);
    return out;
}

std::optional<model::ParamValues> Tuner::bestOf(const std::vector<model::ParamValues>& pool) const {
    const double scale = std::max(m_model.spread(), kMinSpread);
    std::vector<Digits> pending;
    for (const auto& config : m_pending)
        pending.push_back(digitsOf(config));
    std::optional<model::ParamValues> best;
    std::optional<model::ParamValues> bestFailing;
    double bestScore = 0.0;
    double bestFailingScore = 0.0;
    for (const auto& config : pool) {
        const Digits x = digitsOf(config);
        double score = 0.0;
        double risk = 0.0;
        if (const Record* r = recordOf(config); r && r->ran > 0) {
            // Measured by an earlier run: its own time says more than any model.
            score = r->sumLog / r->ran;
        } else if (r) {
            risk = 1.0; // an earlier run saw it fail
            score = m_model.estimate(x).logTime;
        } else {
            const auto e = m_model.estimate(x);
            risk = e.risk;
            score = e.logTime - kOptimism * scale * e.novelty;
        }
        score += kRiskPenalty * scale * risk;
        if (!pending.empty())
            score += kCrowding * scale * m_model.closeness(x, pending);
        if (risk > kFailing) {
            if (!bestFailing || score < bestFailingScore) {
                bestFailing = config;
                bestFailingScore = score;
            }
        } else if (!best || score < bestScore) {
            best = config;
            bestScore = score;
        }
    }
    return best ? best : bestFailing;
}

std::vector<model::ParamValues> Tuner::modelPool(std::mt19937_64& rng) const {
    std::vector<model::ParamValues> pool;
    std::vector<std::size_t> digits(m_params.size(), 0);
    if (m_product <= kEnumerateLimit) {
        do {
            auto config = configAt(digits);
            if (available(config))
                pool.push_back(std::move(config));
        } while (advance(digits));
        return pool;
    }
    // A large space: a uniform sample, the neighbourhoods of the fastest configurations (where the
    // best usually is), and whatever earlier runs measured.
    std::set<model::ParamValues> chosen;
    for (std::size_t i = 0; i < kSampleSize; ++i) {
        for (std::size_t p = 0; p < digits.size(); ++p)
            digits[p] = std::uniform_int_distribution<std::size_t>(0, m_params[p].choices.size() - 1)(rng);
        auto config = configAt(digits);
        if (available(config))
            chosen.insert(std::move(config));
    }
    for (const auto& base : fastest(kPoolAround))
        for (int moved = 1; moved <= 2; ++moved)
            for (auto& config : unseenNeighbours(base, moved))
                chosen.insert(std::move(config));
    for (const auto& entry : m_earlier)
        if (available(entry.first))
            chosen.insert(entry.first);
    pool.assign(chosen.begin(), chosen.end());
    return pool;
}

std::optional<TunerProposal> Tuner::take(model::ParamValues config, model::TunerStrategy strategy) {
    m_seen.insert(config);
    m_pending.insert(config);
    return TunerProposal{std::move(config), strategy};
}

std::optional<TunerProposal> Tuner::propose(const model::ParamValues& around, std::mt19937_64& rng, double restart) {
    using S = model::TunerStrategy;
    if (exhausted())
        return std::nullopt;

    // Fixed parameters always keep their declared value: they are not the tuner's to move.
    model::ParamValues base = complete(around);
    for (const auto& p : m_fixed)
        base[p.name] = p.value;

    // Always drawn, so the engine advances the same way whatever the tuner does with it.
    const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(rng);

    if (m_earlierBest && !m_earlierBestOffered) {
        m_earlierBestOffered = true;
        if (available(*m_earlierBest))
            return take(*m_earlierBest, S::Cache);
    }

    if (measuredCount() >= kModelAfter && ranCount() >= 2) {
        refit();
        if (draw < restart / 2) {
            if (auto pick = randomUnseen(rng))
                return take(std::move(*pick), S::Random);
        } else if (draw < restart) {
            for (const auto& best : fastest(1))
                for (int moved = 1; moved <= 2; ++moved)
                    if (auto pick = bestOf(unseenNeighbours(best, moved)))
                        return take(std::move(*pick), S::Neighbour);
        }
        if (auto pick = bestOf(modelPool(rng))) {
            const bool earlier = !m_measured.count(*pick) && m_earlier.count(*pick);
            return take(std::move(*pick), earlier ? S::Cache : S::Model);
        }
    }

    if (draw >= restart) {
        auto options = unseenNeighbours(base, 1);
        if (options.empty())
            options = unseenNeighbours(base, 2);
        if (!options.empty())
            return take(std::move(options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)]),
                        S::Neighbour);
    }
    if (auto pick = randomUnseen(rng))
        return take(std::move(*pick), S::Random);
    return std::nullopt;
}

std::vector<std::int64_t> Tuner::steps(const spec::ParamDecl& p, std::int64_t value) {
    // The nearest choice on each side, so that a value off the list (hand-edited) still has
    // neighbours.
    std::vector<std::int64_t> out;
    const auto above = std::upper_bound(p.choices.begin(), p.choices.end(), value);
    const auto below = std::lower_bound(p.choices.begin(), p.choices.end(), value);
    if (below != p.choices.begin())
        out.push_back(*std::prev(below));
    if (above != p.choices.end())
        out.push_back(*above);
    return out;
}

std::vector<model::ParamValues> Tuner::unseenNeighbours(const model::ParamValues& base, int moved) const {
    std::vector<model::ParamValues> out;
    const std::size_t n = m_params.size();
    for (std::size_t i = 0; i < n; ++i) {
        const auto& pi = m_params[i];
        for (const std::int64_t vi : steps(pi, base.at(pi.name))) {
            model::ParamValues one = base;
            one[pi.name] = vi;
            if (moved == 1) {
                if (inSpace(one) && available(one))
                    out.push_back(std::move(one));
                continue;
            }
            for (std::size_t j = i + 1; j < n; ++j) {
                const auto& pj = m_params[j];
                for (const std::int64_t vj : steps(pj, base.at(pj.name))) {
                    model::ParamValues two = one;
                    two[pj.name] = vj;
                    if (inSpace(two) && available(two))
                        out.push_back(std::move(two));
                }
            }
        }
    }
    return out;
}

Tuner::Digits Tuner::digitsOf(const model::ParamValues& complete) const {
    Digits digits;
    for (const auto& p : m_params) {
        const auto it = std::lower_bound(p.choices.begin(), p.choices.end(), complete.at(p.name));
        digits.push_back(static_cast<std::size_t>(it - p.choices.begin()));
    }
    return digits;
}

model::ParamValues Tuner::configAt(const std::vector<std::size_t>& digits) const {
    model::ParamValues config;
    for (const auto& p : m_fixed)
        config[p.name] = p.value;
    for (std::size_t i = 0; i < m_params.size(); ++i)
        config[m_params[i].name] = m_params[i].choices[digits[i]];
    return config;
}

bool Tuner::advance(std::vector<std::size_t>& digits) const {
    // Mixed-radix increment; false when it wraps round to all zeros.
    for (std::size_t i = digits.size(); i-- > 0;) {
        if (++digits[i] < m_params[i].choices.size())
            return true;
        digits[i] = 0;
    }
    return false;
}

std::optional<model::ParamValues> Tuner::randomUnseen(std::mt19937_64& rng) const {
    std::vector<std::size_t> digits(m_params.size(), 0);
    if (m_product <= kListLimit) {
        std::vector<model::ParamValues> unseen;
        do {
            auto config = configAt(digits);
            if (available(config))
                unseen.push_back(std::move(config));
        } while (advance(digits));
        if (unseen.empty())
            return std::nullopt;
        return std::move(unseen[std::uniform_int_distribution<std::size_t>(0, unseen.size() - 1)(rng)]);
    }

    // Rejection sampling is uniform over the unseen configurations.
    for (int attempt = 0; attempt < kSampleTries; ++attempt) {
        for (std::size_t i = 0; i < digits.size(); ++i)
            digits[i] = std::uniform_int_distribution<std::size_t>(0, m_params[i].choices.size() - 1)(rng);
        auto config = configAt(digits);
        if (available(config))
            return config;
    }
    // Walk the space in order from the last draw, wrapping round, to find any unseen one.
    const auto start = digits;
    do {
        advance(digits); // wraps round to all zeros after the last one
        auto config = configAt(digits);
        if (available(config))
            return config;
    } while (digits != start);
    return std::nullopt;
}

} // namespace kforge::propose
