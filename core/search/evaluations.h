#pragma once
// The evaluations of a run in flight. A candidate's request goes to the executor (or, while a
// resumed run replays, its stored result comes back as it was); an answer is judged against the
// device's roofs, stored with its findings, and counted against the budget, and only then handed
// on. Stopping cancels what is in flight: answers that arrive after that are not results (a
// resumed run evaluates those candidates again). The device's ceilings, which judging needs, are
// measured here before the first evaluation: in every place the workers run, since a run may mix
// GPU models, and each result is judged against the ceilings of the model it ran on. A roof is a
// measurement too (on a busy machine, a low one): the first result that breaks a model's roof is
// held while that model's ceilings are measured again (the workers keep the highest of each roof),
// and judged against those; later ones are judged at once.

#include "search/descriptors.h"
#include "search/population.h"
#include "search/runbudget.h"
#include "search/runconfig.h"
#include "search/runloader.h"
#include "search/runrecorder.h"

#include "diagnose/diagnosis.h"
#include "diagnose/roofline.h"
#include "eval/executor.h"

#include <QObject>

#include <map>
#include <optional>
#include <set>

namespace kforge::search {

class Evaluations : public QObject {
    Q_OBJECT
public:
    // What evaluating needs; every pointer outlives the evaluations.
    struct Context {
        const spec::TaskBundle* task = nullptr;
        const RunConfig* config = nullptr; // its backend is the kernels' dialect
        spec::Sizes sizes;
        const diagnose::Diagnosis* diagnosis = nullptr; // null: no findings
        const DescriptorSpace* space = nullptr;
        store::RunStore* store = nullptr;
        qint64 runId = 0;
        RunRecorder* record = nullptr;
        Population* population = nullptr;
        const StoredRun* stored = nullptr; // results replayed instead of evaluated
        RunBudget* budget = nullptr;
    };

    explicit Evaluations(QObject* parent = nullptr);
    void attach(Context context, eval::Executor* executor);

    // Measures the device's ceilings (again, with the device idle: the workers keep the highest
    // measurement of each roof, so one disturbed measurement cannot make honest kernels look
    // impossible for good) and stores them; ceilingsReady() follows, also when they could not be
    // measured (the roofline then holds achieved throughput only, with a notice saying so).
    // With several places, ceilingsReady() follows the first answer; the other models' ceilings
    // are added as they come, and a result from a model whose ceilings are still being measured
    // waits for them (unless a place could not measure its own: then such a result is judged
    // without roofs, since the model that place has cannot be known).
    void measureCeilings();
    bool measuringCeilings() const { return m_measuringCeilings; }
    // The run's ceilings: those of the first device model measured.
    const diagnose::Ceilings& ceilings() const { return m_ceilings; }
    // The ceilings of a device model; empty ones for a model that was not measured (a result
    // without a device gets the run's).
    diagnose::Ceilings ceilingsFor(const std::string& device) const;

    // `withPyTorch`: time the task's PyTorch form beside it (always for a Yardstick evaluation).
    void evaluate(qint64 candidate, model::EvaluationPurpose purpose, bool withPyTorch = false);
    // Requests out, and results waiting for their model's ceilings.
    int inFlight() const { return static_cast<int>(m_tickets.size() + m_held.size() + m_heldForRoofs.size()); }
    // Cancels every evaluation in flight; drained() follows once the last has answered.
    void stop();
    // The end of the run: cancels what is in flight and hands nothing on from here.
    void close();

    // The behaviour cell of a candidate, from its code and what its compilation reported.
    model::Cell cellOf(const model::Candidate& candidate, const protocol::EvaluateResult& result) const;

signals:
    // A result, stored and counted (or replayed). Search results carry the candidate's roofline
    // point, findings and cell in its population entry by then.
    void result(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result);
    void drained();
    void ceilingsReady();
    void notice(const QString& message);
    void failed(const QString& message); // the executor's workers cannot start

private:
    struct Pending {
        qint64 candidate = 0;
        model::EvaluationPurpose purpose = model::EvaluationPurpose::Search;
    };
    struct Held {
        Pending pending;
        protocol::EvaluateResult result;
    };
    void onEvaluated(qint64 ticket, const protocol::EvaluateResult& result);
    void judgeAndSettle(const Pending& pending, const protocol::EvaluateResult& result);
    void onCeilings(const diagnose::Ceilings& ceilings, const QString& problem);
    // Stores measured ceilings as a run event; false when the store refused them (the run fails).
    bool recordCeilings(const QJsonObject& data);
    // Judges the held results whose model's ceilings are known now (all of them with `all`).
    void releaseHeld(bool all);
    // The first result that breaks its model's roof: held, and that model's ceilings measured
    // again. False when the model was measured again already (or cannot be): judge it now.
    bool remeasureFor(const Pending& pending, const protocol::EvaluateResult& result);
    void onRemeasured(const diagnose::Ceilings& ceilings, const QString& problem);
    void releaseHeldForRoofs();
    void handOn(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result);
    // Stores a result and counts it against the budget, then hands it on; nothing when the store
    // refuses it (the run fails through the recorder).
    void settle(qint64 candidate, model::EvaluationPurpose purpose, const protocol::EvaluateResult& result,
                const QJsonArray& findings = {}, const QJsonObject& roofline = {},
                std::optional<model::Cell> cell = std::nullopt);

    Context m_c;
    eval::Executor* m_executor = nullptr;
    std::map<qint64, Pending> m_tickets;
    bool m_stopping = false;
    bool m_closed = false;
    diagnose::Ceilings m_ceilings;
    std::map<QString, diagnose::Ceilings> m_ceilingsByModel;
    int m_ceilingsAnswers = 0;     // still to come from the places asked
    bool m_ceilingsFailed = false; // a place could not measure them: its model is unknown
    bool m_measuringCeilings = false;
    std::vector<Held> m_held; // results waiting for their model's ceilings
    // Measuring a model's ceilings again (remeasureFor): the model, and the results that wait for it.
    std::optional<QString> m_remeasuring;
    std::set<QString> m_remeasured; // models measured again this session
    std::vector<Held> m_heldForRoofs;
};

} // namespace kforge::search
