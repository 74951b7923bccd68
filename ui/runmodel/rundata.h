#pragma once
// What the views of a run know about it, in the GUI thread: the run record, one light row per
// candidate (lineage, result summary, behaviour cell, roofline point), the events, the LLM calls
// and the strategies. Kernel sources and whole results are not kept here; CandidateDetails loads
// them on demand. RunData grows by deltas that a RunReader reads in its own thread (a stored run
// arrives in chunks, a live run a few times a second), and says what changed with fine-grained
// signals so the models update incrementally.

#include "diagnose/roofline.h"
#include "model/candidate.h"
#include "search/descriptors.h"
#include "search/enginetypes.h"
#include "store/runstore.h"
#include "store/yardstick.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <array>
#include <optional>

namespace kforge::ui {

// One candidate as lists, plots and the heatmap show it.
struct CandidateRow {
    qint64 id = 0;
    QList<qint64> parents;
    int island = 0;
    int generation = 0;
    model::Origin origin = model::Origin::Seed;
    std::optional<model::TunerStrategy> tunerStrategy; // how the tuner found it, for the tuner's kernels
    QString label;
    QString params; // "BX=16 BY=8"
    bool pinned = false;
    bool vetoed = false;

    // Of the search evaluation; `status` is empty until it has one.
    QString status;  // ok, compile_error, runtime_error, timeout, incorrect, rejected
    QString message; // one line
    bool correct = false;
    double speedup = 0.0;     // over the baseline paired in the same evaluation; 0 when not timed
    double candidateUs = 0.0; // median; 0 when not timed
    QString device;           // the GPU model it was evaluated on
    double baselineUs = 0.0;
    double confirmedSpeedup = 0.0;   // of a re-measurement before promotion; 0 when none
    std::optional<model::Cell> cell; // behaviour cell, once compiled
    bool hasRoofline = false;
    double intensity = 0.0;         // FLOP per byte
    double achievedFlops = 0.0;     // per second
    double achievedBytes = 0.0;     // per second
    QString bound;                  // memory, compute, latency
    QString peakName;               // the compute roof it is held to: "fp32", "tf32_wgmma"... (diagnose::peakTitle)
    double splitTf32Fraction = 0.0; // float32 on TF32 tensor cores: of the third of that roof a 3xTF32
                                    // kernel can reach (diagnose::Roofline::splitTf32Fraction); 0 otherwise
    int findings = 0;
    QString topFinding;                       // the most severe finding's message
    std::optional<model::ReviewState> review; // none when it never needed one

    bool evaluated() const { return !status.isEmpty(); }
    // Re-measured before promotion. A run's best is judged by such confirmed speedups only (the
    // status bar's best); a first measurement alone is unconfirmed, and views say so.
    bool confirmed() const { return confirmedSpeedup > 0.0; }
    // The speedup the run judges it by: the confirmed one when there is one, else the first
    // measurement (0 when not timed or not correct).
    double judgedSpeedup() const { return confirmed() ? confirmedSpeedup : correct ? speedup : 0.0; }
};

// For people: "seed", "tuner", "LLM", ...; with how the tuner found it: "tuner (model)".
QString originTitle(model::Origin origin, std::optional<model::TunerStrategy> strategy = std::nullopt);
inline QString originTitle(const CandidateRow& row) {
    return originTitle(row.origin, row.tunerStrategy);
}

// A change a RunReader read from the store.
struct RunDelta {
    qint64 token = 0;   // the reader's open() counter: deltas of an earlier run are dropped
    bool fresh = false; // the first delta of a run: RunData starts over
    store::RunRecord run;
    int islands = 0;
    std::array<search::Dimension, model::kDimensions> dimensions;
    std::optional<diagnose::Ceilings> ceilings;
    QList<CandidateRow> added;               // new candidates, in id order
    QList<CandidateRow> changed;             // candidates already sent whose flags, result or review changed
    QList<store::EventRecord> events;        // new ones
    QList<store::LlmCallRecord> llmCalls;    // new ones
    QList<QPair<qint64, qint64>> llmLinks;   // (call, candidate) for calls sent before they had one
    QList<store::StrategyRecord> strategies; // all of them, when any changed
    bool strategiesChanged = false;
    // The islands' archives as the engine stored them; none for runs recorded before they were.
    std::optional<QList<store::ArchiveMemberRecord>> archives;
    bool archivesChanged = false;
    std::optional<store::YardstickFigures> pytorch; // with the last chunk
    qint64 loaded = 0;                              // candidates sent so far
    qint64 total = 0;                               // candidates in the store
    bool complete = true;                           // false while a large run is still arriving in chunks
};

class RunData : public QObject {
    Q_OBJECT
public:
    explicit RunData(QObject* parent = nullptr);

    bool hasRun() const { return m_run.id != 0; }
    const store::RunRecord& run() const { return m_run; }
    int islands() const { return m_islands; }
    const std::array<search::Dimension, model::kDimensions>& dimensions() const { return m_dimensions; }
    const diagnose::Ceilings& ceilings() const { return m_ceilings; }
    bool loading() const { return !m_complete; }
    bool complete() const { return m_complete; }
    qint64 loaded() const { return m_loaded; }
    qint64 total() const { return m_total; }

    // Candidates in id order; rows are stable (candidates are only ever added at the end).
    int candidateCount() const { return static_cast<int>(m_rows.size()); }
    const CandidateRow& candidateAt(int row) const { return m_rows[row]; }
    // The device models the candidates were evaluated on; more than one when a run mixes GPU
    // models (workers on several hosts), whose times then say which model they are from.
    const QStringList& deviceModels() const { return m_deviceModels; }
    int rowOf(qint64 candidate) const; // -1 when unknown
    const CandidateRow* candidate(qint64 id) const;
    QList<qint64> childrenOf(qint64 candidate) const;

    const QList<store::EventRecord>& events() const { return m_events; }
    const QList<store::LlmCallRecord>& llmCalls() const { return m_llmCalls; }
    const QList<store::StrategyRecord>& strategies() const { return m_strategies; }
    // The islands' archives as the engine holds them (migrants included); nothing for a run
    // recorded before they were stored, whose views derive elites from the candidates instead.
    const std::optional<QList<store::ArchiveMemberRecord>>& archives() const { return m_archives; }
    // PyTorch eager and torch.compile as the run measured them, and what its speedups are over.
    const store::YardstickFigures& pytorch() const { return m_pytorch; }
    // The language models the run was set up with, as their specs ("endpoint/model"), from its
    // stored configuration; none for a run without language models.
    QStringList llmModels() const;

    // The live engine's last progress; state Finished when the run is only being viewed.
    const search::RunProgress& progress() const { return m_progress; }
    void setProgress(const search::RunProgress& progress);

    void clear();
    void apply(const RunDelta& delta);

signals:
    void cleared();                            // no run, or a different one is coming
    void runChanged();                         // record, islands, dimensions, ceilings, loading state
    void candidatesAdded(int first, int last); // rows, inclusive
    void candidatesChanged(const QList<int>& rows);
    void eventsAdded(int first, int last);
    void llmCallsAdded(int first, int last);
    void llmCallsChanged(const QList<int>& rows); // a call got its candidate
    void strategiesChanged();
    void archivesChanged();
    void progressChanged();

private:
    store::RunRecord m_run;
    int m_islands = 0;
    std::array<search::Dimension, model::kDimensions> m_dimensions;
    diagnose::Ceilings m_ceilings;
    bool m_complete = true;
    qint64 m_loaded = 0;
    qint64 m_total = 0;
    QList<CandidateRow> m_rows;
    QStringList m_deviceModels; // in the order first seen
    QHash<qint64, int> m_rowOf;
    QHash<qint64, QList<qint64>> m_children;
    QList<store::EventRecord> m_events;
    QList<store::LlmCallRecord> m_llmCalls;
    QHash<qint64, int> m_llmRowOf;
    QList<store::StrategyRecord> m_strategies;
    std::optional<QList<store::ArchiveMemberRecord>> m_archives;
    store::YardstickFigures m_pytorch;
    search::RunProgress m_progress;
};

} // namespace kforge::ui

Q_DECLARE_METATYPE(kforge::ui::RunDelta)
