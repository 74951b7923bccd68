#pragma once
// The island model: each island keeps its own MAP-Elites archive, the curiosity of its cells
// (recent success of children of the cell's elite) and the expert kernels it has tried; every few
// generations the best elites migrate one step around the ring. Holds ids and fitness only, so it
// is tested on its own with plain values.

#include "search/archive.h"

#include <QString>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace kforge::search {

struct Island {
    Archive archive;
    std::map<model::Cell, double> curiosity; // recent success of children of the cell's elite
    std::set<QString> expertsTried;          // template keys of the experts seeded or proposed here
    std::set<qint64> arrived;                // migrants this island's archive took in
};

// One elite of one island's archive: what the run stores so views show the archives as they are.
struct ArchiveMember {
    int island = 0;
    model::Cell cell{};
    qint64 candidate = 0;
    model::Fitness fitness;
};

// A cell of one island's archive.
struct Place {
    int island = 0;
    model::Cell cell{};
};

struct Migration {
    int from = 0;
    int to = 0;
    qint64 candidate = 0;
    double speedup = 0.0;
    bool accepted = false;
};

class IslandModel {
public:
    explicit IslandModel(int islands = 0) { reset(islands); }
    void reset(int islands) { m_islands.assign(static_cast<size_t>(std::max(0, islands)), Island{}); }

    int count() const { return static_cast<int>(m_islands.size()); }
    Island& island(int i) { return m_islands.at(static_cast<size_t>(clamp(i))); }
    const Island& island(int i) const { return m_islands.at(static_cast<size_t>(clamp(i))); }
    int clamp(int island) const { return std::clamp(island, 0, std::max(0, count() - 1)); }

    // A correct, accepted result enters the archive of its island (of every island when
    // `everyIsland`: the task's baseline). When it has a parent whose cell the island knows, that
    // cell's curiosity grows if the child made it in and decays if it did not.
    void admit(qint64 candidate, const model::Cell& cell, const model::Fitness& fitness, int island, bool everyIsland,
               std::optional<qint64> parent);
    // Each island sends its best `migrants` elites (those `eligible` allows) to the next island of
    // the ring; everyone picks its emigrants before anyone receives, so the ring's order does not
    // matter. Returns every attempt, accepted or not, in order.
    std::vector<Migration> migrate(int migrants, const std::function<bool(qint64)>& eligible);
    // Takes a candidate out of every archive (a veto). Returns the cells it left.
    std::vector<Place> remove(qint64 candidate);
    // Gives a candidate measured again its new figure in every archive that holds it (see
    // Archive::rescore). Returns the cells it held, kept or left.
    std::vector<Place> rescore(qint64 candidate, const model::Fitness& fitness);
    // Whether `candidate` belongs to `island`'s lineage without being born there: a migrant its
    // archive once took in.
    bool arrived(int island, qint64 candidate) const;
    // Puts a kernel up for a cell of one island again, as a plain archive insertion: no curiosity
    // changes (it is no new result).
    void offer(const Place& place, qint64 candidate, const model::Fitness& fitness);

    double curiosity(int island, const model::Cell& cell) const;
    int filledCells() const;                    // cells filled in the run-wide archive (the islands' union)
    std::vector<ArchiveMember> members() const; // by island, then cell

private:
    std::vector<Island> m_islands;
};

} // namespace kforge::search
