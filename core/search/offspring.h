#pragma once
// Where a generation's children come from. Generation 0: the task's baseline (where it has one),
// the user's own seed kernels, each expert kernel
// on its own island (so the islands begin in different places), the kernels that helped on this
// task in earlier runs, and each LLM persona's first kernel. Later generations: kernels people
// injected, then per island, from its own random stream, an LLM child (at the LLM rate), an
// untried expert kernel (at the expert rate), or the tuner's next configuration of a selected
// parent. Children are registered one by one through `add`, so the tuner never proposes a
// configuration twice within a generation.

#include "search/islandmodel.h"
#include "search/llmchildren.h"
#include "search/population.h"
#include "search/runconfig.h"
#include "search/tuningmemory.h"

#include "experience/experiencelibrary.h"
#include "propose/expertlibrary.h"

#include <functional>
#include <optional>
#include <random>
#include <vector>

namespace kforge::search {

// Every random choice of the search draws from a stream seeded by (run seed, generation,
// island), so the same seed and the same results give the same run.
std::mt19937_64 searchRng(std::uint64_t seed, int generation, int island);

class Offspring {
public:
    struct Sources {
        const RunConfig* config = nullptr;
        const spec::TaskBundle* task = nullptr;
        Population* population = nullptr;
        IslandModel* islands = nullptr;
        LlmChildren* llm = nullptr;
        QList<propose::Expert> experts;
        std::vector<model::Candidate> seedKernels;           // a user's own kernels to start from
        experience::ExperienceLibrary* experience = nullptr; // null: none
        TuningMemory* tuning = nullptr;                      // null: the tuners start from nothing
        std::function<qint64(model::Candidate)> add;         // registers a child; returns its id
        std::function<int()> budgetLeft;                     // evaluations that may still start
        std::function<bool()> stopped;                       // the run stopped while proposing
    };
    void setSources(Sources sources) { m_s = std::move(sources); }

    // Generation 0: the seeds, then (once they are stored) each persona's first kernel.
    std::vector<qint64> seeds();
    void personas(const std::vector<qint64>& seeds);
    // A later generation, starting with the injected kernels.
    std::vector<qint64> children(int generation, std::vector<model::Candidate> injected);
    // A parent from the island's elites and the pinned kernels; `tunable`: only those whose
    // template still has untried configurations.
    std::optional<qint64> selectParent(int island, std::mt19937_64& rng, bool tunable);

private:
    std::vector<model::Candidate> experienceSeeds(int firstIsland) const;
    std::optional<model::Candidate> expertChild(int island, int generation);
    std::optional<model::Candidate> tunerChild(int island, int generation, std::mt19937_64& rng);

    Sources m_s;
};

} // namespace kforge::search
