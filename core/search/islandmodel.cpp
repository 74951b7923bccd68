#include "search/islandmodel.h"

namespace kforge::search {

void IslandModel::admit(qint64 candidate, const model::Cell& cell, const model::Fitness& fitness, int island,
                        bool everyIsland, std::optional<qint64> parent) {
    std::vector<int> targets;
    if (everyIsland) {
        for (int i = 0; i < count(); ++i)
            targets.push_back(i);
    } else {
        targets.push_back(clamp(island));
    }
    for (int i : targets) {
        Island& isl = m_islands[static_cast<size_t>(i)];
        const auto insertion = isl.archive.insert(cell, candidate, fitness);
        // Credit the parent's cell when its child made it in: the selection favours cells that
        // improved recently, and forgets slowly those that stopped paying off.
        if (parent) {
            if (auto parentCell = isl.archive.cellOf(*parent)) {
                double& c = isl.curiosity[*parentCell];
                c = insertion.outcome == Archive::Outcome::Rejected ? c * 0.8 : c + 1.0;
            }
        }
    }
}

std::vector<Migration> IslandModel::migrate(int migrants, const std::function<bool(qint64)>& eligible) {
    struct Emigrant {
        Elite elite;
        model::Cell cell;
    };
    std::vector<std::vector<Emigrant>> emigrants(m_islands.size());
    for (size_t i = 0; i < m_islands.size(); ++i) {
        for (const Elite& e : m_islands[i].archive.ranked()) {
            if (static_cast<int>(emigrants[i].size()) >= migrants)
                break;
            if (eligible(e.candidate))
                emigrants[i].push_back({e, *m_islands[i].archive.cellOf(e.candidate)});
        }
    }
    std::vector<Migration> moves;
    if (m_islands.size() < 2)
        return moves;
    for (size_t i = 0; i < m_islands.size(); ++i) {
        const size_t to = (i + 1) % m_islands.size();
        for (const Emigrant& e : emigrants[i]) {
            const auto insertion = m_islands[to].archive.insert(e.cell, e.elite.candidate, e.elite.fitness);
            const bool accepted = insertion.outcome != Archive::Outcome::Rejected;
            if (accepted)
                m_islands[to].arrived.insert(e.elite.candidate);
            moves.push_back(
                {static_cast<int>(i), static_cast<int>(to), e.elite.candidate, e.elite.fitness.speedup, accepted});
        }
    }
    return moves;
}

std::vector<Place> IslandModel::remove(qint64 candidate) {
    return rescore(candidate, model::Fitness{}); // an incorrect figure takes it out
}

std::vector<Place> IslandModel::rescore(qint64 candidate, const model::Fitness& fitness) {
    std::vector<Place> places;
    for (size_t i = 0; i < m_islands.size(); ++i)
        if (auto cell = m_islands[i].archive.rescore(candidate, fitness))
            places.push_back({static_cast<int>(i), *cell});
    return places;
}

bool IslandModel::arrived(int island, qint64 candidate) const {
    return count() > 0 && this->island(island).arrived.contains(candidate);
}

void IslandModel::offer(const Place& place, qint64 candidate, const model::Fitness& fitness) {
    island(place.island).archive.insert(place.cell, candidate, fitness);
}

double IslandModel::curiosity(int island, const model::Cell& cell) const {
    const auto& c = m_islands.at(static_cast<size_t>(island)).curiosity;
    auto it = c.find(cell);
    return it == c.end() ? 0.0 : it->second;
}

int IslandModel::filledCells() const {
    std::set<model::Cell> cells;
    for (const Island& island : m_islands)
        for (const auto& [cell, elite] : island.archive.cells())
            cells.insert(cell);
    return static_cast<int>(cells.size());
}

std::vector<ArchiveMember> IslandModel::members() const {
    std::vector<ArchiveMember> all;
    for (size_t i = 0; i < m_islands.size(); ++i)
        for (const auto& [cell, elite] : m_islands[i].archive.cells())
            all.push_back({static_cast<int>(i), cell, elite.candidate, elite.fitness});
    return all;
}

} // namespace kforge::search
