#pragma once
// What people decide about a run's candidates, and what each decision changes. Pins and vetoes are
// stored as the candidate's flags; a veto also takes the kernel out of every archive and may move
// the confirmed best. A cell an elite leaves (vetoed, or failing its re-measurement) or holds at a
// lower figure goes to the best of the island's other kernels of that behaviour (its own, the
// baseline and the migrants it took in), so the heatmap keeps showing what the run found there.
// A correct result that looks suspicious (judged by reviewReason) waits in the review queue
// instead of entering an archive; accepting it admits it and puts it up for promotion, rejecting
// it vetoes it. Every decision is stored before it counts: a failed write stops the run through
// the recorder.

#include "search/enginetypes.h"
#include "search/islandmodel.h"
#include "search/learning.h"
#include "search/population.h"
#include "search/promotion.h"
#include "search/runrecorder.h"
#include "search/steering.h"

#include <map>

namespace kforge::search {

class Curation {
public:
    // What curating changes; every pointer outlives the curation.
    struct Context {
        store::RunStore* store = nullptr;
        qint64 runId = 0;
        RunRecorder* record = nullptr;
        Population* population = nullptr;
        IslandModel* islands = nullptr;
        Promotions* promotions = nullptr;
        RunLearning* learning = nullptr; // what people decide also teaches the experience library
    };
    // `storedReviews`: a resumed run's review decisions (and requests still pending), so a
    // replayed result is neither queued twice nor decided again.
    void attach(Context context, std::map<qint64, model::ReviewState> storedReviews = {});

    // A search result, judged: a correct kernel that is not vetoed enters its island's archives
    // (every island for the task's baseline), unless it must wait for a person. Returns the
    // notice of a review requested now, or empty.
    QString place(Entry& entry, const diagnose::Ceilings& ceilings, const RunConfig& config);

    // A person's pin, unpin, veto or review decision, at `generation` (applicable: see
    // Steering::refusal). True when the confirmed best changed.
    bool apply(const EngineCommand& command, int generation);
    // A resumed run's stored pins and vetoes, once their generation has replayed.
    bool replay(const std::vector<Steering::FlagChange>& changes);
    // The candidate's fitness is now its re-measurement: its archives judge it by that figure.
    void remeasured(qint64 candidate);

private:
    void admit(const Entry& entry);
    // Offers each place the island's placed, correct, unvetoed kernels of that cell that are not
    // waiting for review (the task's baseline belongs to every island).
    void refill(const std::vector<Place>& places);
    void setPinned(qint64 candidate, bool pinned);
    bool veto(qint64 candidate); // true when the confirmed best changed

    Context m_c;
    std::map<qint64, model::ReviewState> m_reviews; // decided or requested, by candidate
};

} // namespace kforge::search
