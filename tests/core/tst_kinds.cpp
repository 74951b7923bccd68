// The stored names of kforge's kinds: every value has one name that parses back to it, unknown
// names parse to nothing, and the names are the ones stores and libraries already hold.

#include "model/candidate.h"
#include "model/kinds.h"

#include <QTest>

using namespace kforge::model;

namespace {

template <typename E, typename Name, typename Parse>
void roundTrips(std::initializer_list<E> values, Name name, Parse parse) {
    QSet<QString> names;
    for (E value : values) {
        const QString n = name(value);
        QVERIFY2(!n.isEmpty(), "every value has a name");
        QVERIFY2(!names.contains(n), qPrintable(n + QStringLiteral(" names two values")));
        names.insert(n);
        QCOMPARE(parse(n), std::optional(value));
    }
    QVERIFY(!parse(QStringLiteral("no such name")));
    QVERIFY(!parse(QString()));
}

} // namespace

class TestKinds : public QObject {
    Q_OBJECT
private slots:
    void everyValueRoundTrips() {
        roundTrips({Backend::Cuda, Backend::OpenCL}, backendName, parseBackend);
        using R = RunState;
        roundTrips({R::Starting, R::Running, R::Pausing, R::Paused, R::Stopping, R::Finished, R::Stopped, R::Failed},
                   runStateName, parseRunState);
        using E = EventKind;
        roundTrips({E::RunStarted,
                    E::RunResumed,
                    E::RunEnded,
                    E::Ceilings,
                    E::Migration,
                    E::NewBest,
                    E::PromotionRejected,
                    E::ReviewRequested,
                    E::ReviewAccepted,
                    E::ReviewRejected,
                    E::Pin,
                    E::Unpin,
                    E::Veto,
                    E::Inject,
                    E::Pause,
                    E::Resume,
                    E::Stop,
                    E::Budget,
                    E::LlmBudgetReached,
                    E::StrategyRewritten,
                    E::LlmEndpointRetired},
                   eventKindName, parseEventKind);
        using I = InsightKind;
        roundTrips({I::Helped, I::Hurt, I::HumanPin, I::HumanVeto, I::HumanEdit}, insightKindName, parseInsightKind);
        using L = LlmOperator;
        roundTrips({L::Init, L::Mutate, L::Crossover, L::Repair, L::Meta}, llmOperatorName, parseLlmOperator);
        using T = TunerStrategy;
        roundTrips({T::Neighbour, T::Random, T::Model, T::Cache}, tunerStrategyName, parseTunerStrategy);
        using O = Origin;
        roundTrips({O::Seed, O::Tuner, O::Expert, O::Llm, O::Human, O::Experience}, originName, parseOrigin);
        roundTrips({EvaluationPurpose::Search, EvaluationPurpose::Confirm}, purposeName, parsePurpose);
        roundTrips({ReviewState::Pending, ReviewState::Accepted, ReviewState::Rejected}, reviewStateName,
                   parseReviewState);
    }

    void storedNamesStay() {
        // What stores and libraries written before hold: renaming any of these loses data.
        QCOMPARE(backendName(Backend::Cuda), QStringLiteral("cuda"));
        QCOMPARE(runStateName(RunState::Finished), QStringLiteral("finished"));
        QCOMPARE(eventKindName(EventKind::NewBest), QStringLiteral("new_best"));
        QCOMPARE(eventKindName(EventKind::LlmBudgetReached), QStringLiteral("llm_budget_reached"));
        QCOMPARE(insightKindName(InsightKind::HumanVeto), QStringLiteral("human_veto"));
        QCOMPARE(llmOperatorName(LlmOperator::Crossover), QStringLiteral("crossover"));
        QCOMPARE(tunerStrategyName(TunerStrategy::Neighbour), QStringLiteral("neighbour"));
        QCOMPARE(tunerStrategyName(TunerStrategy::Cache), QStringLiteral("cache"));
        // Runs created by earlier versions and never started said "created".
        QCOMPARE(parseRunState(QStringLiteral("created")), std::optional(RunState::Starting));
        QCOMPARE(backendTitle(Backend::OpenCL), QStringLiteral("OpenCL"));
    }

    void unknownEventKindHasNoName() { QVERIFY(eventKindName(EventKind::Unknown).isEmpty()); }
};

QTEST_GUILESS_MAIN(TestKinds)
#include "tst_kinds.moc"
