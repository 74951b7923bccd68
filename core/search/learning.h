#pragma once
// What a run adds to the experience library as it goes: after each generation, the children
// that clearly beat or lost to their parent; at once, every pin, veto and hand edit a person
// makes. The prose and thresholds are experience::changeInsight and humanInsight; this feeds them
// the run's kernels. Does nothing when the run has no library.

#include "search/enginetypes.h"
#include "search/population.h"

#include "experience/harvester.h"

#include <vector>

namespace kforge::search {

class RunLearning {
public:
    void attach(experience::ExperienceLibrary* library, experience::HarvestContext context);

    // The insights from a completed generation's children.
    void harvest(const std::vector<qint64>& batch, const Population& population);
    // The insight from a person's pin, veto or edit (an injection).
    void learnHumanAction(experience::HumanAction action, const EngineCommand& command, const Population& population);

    static experience::KernelOutcome outcomeOf(const Entry& entry);

private:
    void add(const experience::Insight& insight);

    experience::ExperienceLibrary* m_library = nullptr;
    experience::HarvestContext m_context;
};

} // namespace kforge::search
