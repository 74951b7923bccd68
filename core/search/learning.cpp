#include "search/learning.h"

#include "util/logging.h"

namespace kforge::search {

void RunLearning::attach(experience::ExperienceLibrary* library, experience::HarvestContext context) {
    m_library = library;
    m_context = std::move(context);
}

experience::KernelOutcome RunLearning::outcomeOf(const Entry& e) {
    experience::KernelOutcome k;
    k.id = e.candidate.id;
    k.label = e.candidate.label;
    k.origin = e.candidate.origin;
    k.source = e.bakedSource();
    k.evaluated = e.result.has_value();
    k.fitness = e.fitness;
    k.bottleneck = e.roofline ? e.roofline->bound : QString();
    if (e.result) {
        k.device = QString::fromStdString(e.result->device);
        k.message = QString::fromStdString(e.result->message);
    }
    return k;
}

void RunLearning::harvest(const std::vector<qint64>& batch, const Population& population) {
    if (!m_library)
        return;
    // What a change did, measured against its parent (a seed or expert against the baseline).
    const Entry* baseline = population.baseline();
    for (qint64 id : batch) {
        const Entry& child = population.at(id);
        const Entry* parent = baseline;
        if (!child.candidate.parents.isEmpty())
            if (const Entry* p = population.find(child.candidate.parents.front()))
                parent = p;
        if (!parent)
            continue;
        if (const auto insight = experience::changeInsight(outcomeOf(*parent), outcomeOf(child), m_context))
            add(*insight);
    }
}

void RunLearning::learnHumanAction(experience::HumanAction action, const EngineCommand& c,
                                   const Population& population) {
    if (!m_library)
        return;
    experience::KernelOutcome kernel;
    QString before;
    if (action == experience::HumanAction::Edit) {
        kernel.id = c.candidate;
        kernel.label = c.injected.label;
        kernel.source = c.injected.source;
        if (!c.injected.parents.isEmpty())
            if (const Entry* parent = population.find(c.injected.parents.front()))
                before = parent->bakedSource();
    } else {
        const Entry* e = population.find(c.candidate);
        if (!e)
            return;
        kernel = outcomeOf(*e);
    }
    add(experience::humanInsight(action, kernel, before, c.reason, m_context));
}

void RunLearning::add(const experience::Insight& insight) {
    if (auto added = m_library->add(insight); !added)
        qCWarning(lcSearch) << "experience library:" << QString::fromStdString(added.error());
}

} // namespace kforge::search
