#pragma once
// A MAP-Elites archive: the best correct kernel found in each cell of behaviour space. Holds
// candidate ids and fitness only; the candidates live in the engine. Every island keeps one, so
// islands can hold different elites for the same cell; the run-wide archive is their union.

#include "model/candidate.h"

#include <map>
#include <optional>
#include <vector>

namespace kforge::search {

struct Elite {
    qint64 candidate = 0;
    model::Fitness fitness;
};

class Archive {
public:
    enum class Outcome { NewCell, Improved, Rejected };
    struct Insertion {
        Outcome outcome = Outcome::Rejected;
        std::optional<qint64> evicted; // the elite it replaced
    };

    // A correct candidate enters an empty cell, or replaces an elite it strictly beats. Ties keep
    // the incumbent, so the order of equal results cannot churn the archive.
    Insertion insert(const model::Cell& cell, qint64 candidate, const model::Fitness& fitness);
    // Takes a candidate out wherever it is (a veto); the cell it left, if it was an elite.
    std::optional<model::Cell> remove(qint64 candidate);
    // A candidate measured again keeps its cell with the new figure, so that later kernels compete
    // with it as re-measured; one that was not correct the second time leaves the archive. The cell
    // it held, if it was an elite.
    std::optional<model::Cell> rescore(qint64 candidate, const model::Fitness& fitness);

    std::optional<Elite> at(const model::Cell& cell) const;
    std::optional<model::Cell> cellOf(qint64 candidate) const;
    bool contains(qint64 candidate) const { return cellOf(candidate).has_value(); }
    int size() const { return static_cast<int>(m_cells.size()); }
    const std::map<model::Cell, Elite>& cells() const { return m_cells; }
    // Elites sorted best first (ties by lower id, so the order is stable).
    std::vector<Elite> ranked() const;

private:
    std::map<model::Cell, Elite> m_cells;
};

} // namespace kforge::search
