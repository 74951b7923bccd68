#pragma once
// The run's language-model children: which job to send for an island (a repair, mutation or
// crossover, planned by propose::planLlmJob), the expert personas' first kernels in generation 0,
// how a kernel is shown in a prompt, which answers are still awaited, and the bandit's reward for
// each child against its better parent. Wraps the run's LlmProposer; absent when the run uses no
// language model.

#include "search/enginetypes.h"
#include "search/population.h"
#include "search/runconfig.h"

#include "propose/llmproposer.h"

#include <QJsonObject>

#include <functional>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace kforge::search {

class LlmChildren {
public:
    using ParentSelection = std::function<std::optional<qint64>(std::mt19937_64&)>;

    // Opens the run's proposer when `config` names a model (otherwise stays empty); what the
    // context says of the run's variant, backend and islands comes from `config`. `parent` owns it.
    spec::Status open(const RunConfig& config, propose::LlmProposer::Context context, QObject* parent);
    propose::LlmProposer* proposer() const { return m_llm; }
    explicit operator bool() const { return m_llm != nullptr; }

    int pending() const { return m_pending; } // children sent whose answers have not come back
    void answered() { --m_pending; }

    // Sends a job for `island`: false when none could be planned or sent.
    bool propose(int island, int generation, std::mt19937_64& rng, const Population& population,
                 const ParentSelection& selectParent);
    // Generation 0: each persona's first kernel from the task's baseline, while `budgetLeft()`
    // exceeds `seeds`; `rngFor(k)` draws for the k-th persona.
    void proposePersonas(qint64 baseline, int islands, int seeds, const std::function<int()>& budgetLeft,
                         const std::function<std::mt19937_64(int)>& rngFor);
    // The candidate an answer makes, on generation `generation` of a run of `islands` islands.
    static model::Candidate candidateOf(const propose::LlmProposal& proposal, int generation, int islands);
    // What the proposers learn from a candidate joining the run (proposed now or replayed).
    void adopt(const Entry& entry);
    // The bandit's rewards for the LLM children of `batch`.
    void credit(const std::vector<qint64>& batch, const Population& population);
    // What the language models cost so far, into the run's progress (nothing without them).
    void report(RunProgress& progress) const;
    // The event recorded when the LLM budget stops the run.
    QJsonObject budgetStop() const;

    // How a kernel is shown to a language model: its code, status, findings, compile log, roofline.
    static llm::KernelContext contextOf(const Entry& entry);

private:
    propose::LlmProposer* m_llm = nullptr;
    llm::LlmSettings m_settings;
    int m_pending = 0;
    std::set<qint64> m_repaired; // failed kernels an LLM was already asked to repair
};

} // namespace kforge::search
