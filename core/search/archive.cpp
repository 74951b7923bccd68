#include "search/archive.h"

#include <algorithm>

namespace kforge::search {

namespace {

// The cell whose elite `candidate` is (a candidate is the elite of one cell at most).
template <typename Cells> auto eliteOf(Cells& cells, qint64 candidate) {
    return std::find_if(cells.begin(), cells.end(),
                        [candidate](const auto& entry) { return entry.second.candidate == candidate; });
}

} // namespace

Archive::Insertion Archive::insert(const model::Cell& cell, qint64 candidate, const model::Fitness& fitness) {
    Insertion result;
    if (!fitness.correct)
        return result;
    auto it = m_cells.find(cell);
    if (it == m_cells.end()) {
        m_cells.emplace(cell, Elite{candidate, fitness});
        result.outcome = Outcome::NewCell;
        return result;
    }
    if (it->second.candidate == candidate || !fitness.betterThan(it->second.fitness))
        return result;
    result.evicted = it->second.candidate;
    it->second = Elite{candidate, fitness};
    result.outcome = Outcome::Improved;
    return result;
}

std::optional<model::Cell> Archive::remove(qint64 candidate) {
    const auto it = eliteOf(m_cells, candidate);
    if (it == m_cells.end())
        return std::nullopt;
    const model::Cell cell = it->first;
    m_cells.erase(it);
    return cell;
}

std::optional<model::Cell> Archive::rescore(qint64 candidate, const model::Fitness& fitness) {
    if (!fitness.correct)
        return remove(candidate);
    const auto it = eliteOf(m_cells, candidate);
    if (it == m_cells.end())
        return std::nullopt;
    it->second.fitness = fitness;
    return it->first;
}

std::optional<Elite> Archive::at(const model::Cell& cell) const {
    auto it = m_cells.find(cell);
    if (it == m_cells.end())
        return std::nullopt;
    return it->second;
}

std::optional<model::Cell> Archive::cellOf(qint64 candidate) const {
    const auto it = eliteOf(m_cells, candidate);
    if (it == m_cells.end())
        return std::nullopt;
    return it->first;
}

std::vector<Elite> Archive::ranked() const {
    std::vector<Elite> elites;
    elites.reserve(m_cells.size());
    for (const auto& [cell, elite] : m_cells)
        elites.push_back(elite);
    std::sort(elites.begin(), elites.end(), [](const Elite& a, const Elite& b) {
        if (a.fitness.betterThan(b.fitness))
            return true;
        if (b.fitness.betterThan(a.fitness))
            return false;
        return a.candidate < b.candidate;
    });
    return elites;
}

} // namespace kforge::search
