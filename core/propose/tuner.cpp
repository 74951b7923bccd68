#include "propose/tuner.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace kforge::propose {

namespace {

// Up to this many configurations, a random restart lists every unseen one and picks among them,
// which is exactly uniform however full the space is. Larger spaces sample instead.
constexpr std::uint64_t kListLimit = 4096;
// Random draws before a large space falls back to walking it in order; a draw only misses when
// most of the space is seen, which a large space practically never is.
constexpr int kSampleTries = 256;

} // namespace

Tuner::Tuner(std::vector<spec::ParamDecl> params) {
    for (auto& p : params) {
        if (p.choices.empty()) {
            m_fixed.push_back(std::move(p));
            continue;
        }
        // Adjacency is numeric, whatever order the directive listed the choices in.
        std::sort(p.choices.begin(), p.choices.end());
        p.choices.erase(std::unique(p.choices.begin(), p.choices.end()), p.choices.end());
        m_params.push_back(std::move(p));
    }
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

std::uint64_t Tuner::spaceSize() const {
    std::uint64_t size = 1;
    for (const auto& p : m_params) {
        const std::uint64_t n = p.choices.size();
        if (size > std::numeric_limits<std::uint64_t>::max() / n)
            return std::numeric_limits<std::uint64_t>::max();
        size *= n;
    }
    return size;
}

bool Tuner::inSpace(const model::ParamValues& complete) const {
    for (const auto& p : m_params)
        if (!std::binary_search(p.choices.begin(), p.choices.end(), complete.at(p.name)))
            return false;
    for (const auto& p : m_fixed)
        if (complete.at(p.name) != p.value)
            return false;
    return true;
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

std::optional<model::ParamValues> Tuner::propose(const model::ParamValues& around, std::mt19937_64& rng,
                                                 double restart) {
    if (exhausted())
        return std::nullopt;

    // Fixed parameters always keep their declared value: they are not the tuner's to move.
    model::ParamValues base = complete(around);
    for (const auto& p : m_fixed)
        base[p.name] = p.value;

    std::optional<model::ParamValues> pick;
    // Always drawn, so the engine advances the same way whatever `restart` is.
    const bool jump = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < restart;
    if (!jump) {
        auto options = unseenNeighbours(base, 1);
        if (options.empty())
            options = unseenNeighbours(base, 2);
        if (!options.empty())
            pick = std::move(options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)]);
    }
    if (!pick)
        pick = randomUnseen(rng);
    if (pick)
        m_seen.insert(*pick);
    return pick;
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
                if (inSpace(one) && !m_seen.count(one))
                    out.push_back(std::move(one));
                continue;
            }
            for (std::size_t j = i + 1; j < n; ++j) {
                const auto& pj = m_params[j];
                for (const std::int64_t vj : steps(pj, base.at(pj.name))) {
                    model::ParamValues two = one;
                    two[pj.name] = vj;
                    if (inSpace(two) && !m_seen.count(two))
                        out.push_back(std::move(two));
                }
            }
        }
    }
    return out;
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
    if (spaceSize() <= kListLimit) {
        std::vector<model::ParamValues> unseen;
        do {
            auto config = configAt(digits);
            if (!m_seen.count(config))
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
        if (!m_seen.count(config))
            return config;
    }
    // Walk the space in order from the last draw, wrapping round, to find any unseen one.
    const auto start = digits;
    do {
        advance(digits); // wraps round to all zeros after the last one
        auto config = configAt(digits);
        if (!m_seen.count(config))
            return config;
    } while (digits != start);
    return std::nullopt;
}

} // namespace kforge::propose
