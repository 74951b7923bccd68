#pragma once
// The LLM proposers of a run: turns the engine's requests (mutate a parent, cross two over, repair
// a failed kernel, or, at the start, let each expert persona propose a first kernel) into prompts,
// sends them to the chosen model through the LLM client, and turns the answers into candidate
// kernels. An answer that cannot be parsed gets one repair attempt with the parser's message; a
// kernel the run already has (exactly or nearly) never reaches the GPU. It also owns what the run
// learns about its prompts: the model bandit, the evolving strategy texts, and the token and money
// budgets (LlmBudget: a call is sent only while its worst case fits beside those in flight). Every
// call is stored when it is sent and completed when it ends, with its prompt, answer, tokens, cost
// and latency. An endpoint that refuses its key or whose quota is spent is not called again.
//
// Lives in the engine's thread; the LLM client does its network I/O in a thread of its own.

#include "experience/experiencelibrary.h"
#include "llm/answerparser.h"
#include "llm/llmsettings.h"
#include "llm/novelty.h"
#include "llm/pricetable.h"
#include "llm/promptbuilder.h"
#include "propose/llmbudget.h"
#include "propose/metaprompt.h"
#include "propose/modelbandit.h"
#include "store/runstore.h"
#include "taskspec.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>

namespace kforge::llm {
class LlmClient;
}

namespace kforge::propose {

struct LlmJob {
    int island = 0;
    int generation = 0;
    llm::Operator op = llm::Operator::Mutate;
    QList<llm::KernelContext> parents; // as the prompt shows them
    QList<qint64> parentIds;           // the child's lineage
    QString personaId;                 // init: which expert persona speaks
    QString bottleneck;                // of the parent, to retrieve experience for it
};

struct LlmProposal {
    LlmJob job;
    bool ok = false;
    QString source; // the kernel file, when ok
    QString label;  // for people: "llm mutate of #12 (local:model, structure)"
    qint64 callId = 0;
    QString problem; // why no kernel came of it, when not ok
};

class LlmProposer : public QObject {
    Q_OBJECT
public:
    struct Context {
        const spec::TaskBundle* task = nullptr;
        QString variant;
        spec::Sizes sizes;
        QString backend;
        int islands = 1;
        spec::Dialect dialect = spec::Dialect::OpenCL;
        store::RunStore* store = nullptr;
        qint64 runId = 0;
        experience::ExperienceLibrary* experience = nullptr; // may be null
    };

    LlmProposer(llm::LlmSettings settings, Context context, QObject* parent = nullptr);
    ~LlmProposer() override;

    // Loads prices, prompts, personas and the run's strategies (seeded on a new run) and restores
    // what earlier sessions spent. Fails with a message for people (a broken template, a price
    // file with an error).
    spec::Status open();
    // Looks up the API keys of the endpoints the run calls (its models' and the helper's) without
    // blocking (environment, then the system keyring); keysReady() follows. Submit jobs only after
    // it, and only when missingKeys() is empty.
    void lookUpKeys();
    // Why the run cannot call its models: for each endpoint it calls whose required key is
    // missing, where the key is looked for and how to provide it. Empty when every key is there.
    QString missingKeys() const;
    void setDevice(const QString& device, const QString& ceilings);

    // Sends the job to a model; false when no model can take it or the budget does not allow the
    // call now (waiting() when it may once the calls in flight settle; budgetReached() when never).
    // The answer comes back as proposed().
    bool submit(LlmJob job, std::mt19937_64& rng);
    int pending() const; // jobs without a proposal yet (meta-prompt calls not counted)
    // A call was held back for the budget while others were in flight; callSettled() follows
    // each call that ends.
    bool waiting() const { return m_held && m_budget.inFlight() > 0; }
    int callsInFlight() const { return static_cast<int>(m_inFlight.size()); } // meta-prompt calls included
    // Ends every call in flight now: each is stored as cancelled with the text it had received,
    // and no proposal follows. For the end of a run, while its store is open.
    void cancelAll();
    // Why no model of the run can be called any more (every endpoint refused), else empty.
    QString unusable() const;

    // Every kernel of the run, so answers that repeat one are caught before evaluation.
    void remember(qint64 candidate, const QString& source);
    // The candidate made from a call's answer, once stored: links them and remembers who made it.
    void adopted(qint64 callId, qint64 candidate);
    // The reward of a child (ModelBandit::rewardOf) for the model and strategy that made it.
    void credit(qint64 candidate, double reward);
    // Meta-prompt evolution: asks the helper model to rewrite each stage's weakest strategy.
    void evolveStrategies(int generation);

    bool budgetReached() const { return !m_budgetMessage.isEmpty(); }
    QString budgetMessage() const { return m_budgetMessage; }
    QList<llm::Persona> personas() const { return m_personas; }

    struct Spend {
        qint64 calls = 0;
        qint64 inputTokens = 0;
        qint64 outputTokens = 0;
        qint64 estimatedTokens = 0; // of calls whose usage never arrived
        double usd = 0.0;           // known costs only
        qint64 unknownCost = 0;     // calls without a known cost

        qint64 tokens() const { return inputTokens + outputTokens + estimatedTokens; }
        // One call: the usage the server reported, else `estimate` (never zero for a call that
        // reached a server: budgets must not treat unknown as free).
        void add(std::optional<qint64> input, std::optional<qint64> output, std::optional<double> cost,
                 qint64 estimate);
    };
    Spend spend() const { return m_spend; }

signals:
    void proposed(const kforge::propose::LlmProposal& proposal);
    void notice(const QString& message);
    void keysReady();
    void callSettled();

private:
    struct InFlight {
        LlmJob job;
        int model = -1; // in the bandit; -1 for a helper that proposes no kernels
        llm::ModelChoice choice;
        std::optional<qint64> strategy;
        QString stage;
        llm::Prompt prompt;
        QString promptText;       // the user turns as stored with the call
        qint64 inputEstimate = 0; // tokens of system text and prompt, before the server says
        int attempt = 0;          // 1: the repair of an unparsable answer
        LlmBudget::Amount worst;  // reserved while the call is in flight
        qint64 callId = 0;        // its row in the store, from the moment it is sent
        QString received;         // streamed text so far
        QElapsedTimer sent;
        bool meta = false;
        qint64 metaWeak = 0; // meta: the strategy being rewritten
    };
    struct Made {
        int model = -1;
        std::optional<qint64> strategy;
    };

    bool send(InFlight call);
    void onFinished(qint64 ticket, const llm::ChatResult& result);
    void onMetaAnswer(const InFlight& call, const llm::ChatResult& result, qint64 callId);
    qint64 record(const InFlight& call, const llm::ChatResult& result, const QString& status, const QString& message);
    void account(const InFlight& call, const llm::ChatResult& result);
    void onStreamed(qint64 ticket, const QString& delta);
    void retireEndpoint(const InFlight& call, const llm::ChatResult& result);
    QList<llm::Endpoint> calledEndpoints() const;
    LlmBudget::Amount spentAmount() const { return {m_spend.tokens(), m_spend.usd}; }
    void learnInputTokens(qint64 estimate, std::optional<qint64> reported);
    // The most `request` can spend, its whole prompt estimated at `inputEstimate` tokens: what
    // the budget reserves while it is in flight.
    LlmBudget::Amount worstCase(const llm::ChatRequest& request, qint64 inputEstimate) const;
    QStringList experienceFor(const LlmJob& job) const;
    static QString modelKey(const llm::ModelChoice& choice);
    std::optional<llm::ModelChoice> helperModel() const;

    llm::LlmSettings m_settings;
    Context m_context;
    llm::LlmClient* m_client = nullptr;
    std::optional<llm::PromptBuilder> m_prompts;
    std::unique_ptr<llm::PriceTable> m_prices;
    QList<llm::Persona> m_personas;
    StrategyPool m_strategies;
    ModelBandit m_bandit;
    llm::NoveltyFilter m_novelty;
    QString m_device;
    QString m_ceilings;

    std::map<qint64, InFlight> m_inFlight; // by client ticket
    std::map<qint64, Made> m_callMade;     // call id -> who made its answer
    std::map<qint64, Made> m_made;         // candidate -> who made it
    std::set<QString> m_metaStages;        // stages with a rewrite in flight
    int m_pendingJobs = 0;
    Spend m_spend;
    LlmBudget m_budget;
    bool m_held = false;       // a call waits for the budget until one in flight settles
    double m_inputScale = 1.0; // reported input tokens per estimated one, the largest seen (>= 1)
    QString m_budgetMessage;
    QHash<QString, QString> m_keyProblems;  // endpoint -> why its key is missing
    std::map<QString, QString> m_refusedBy; // endpoint -> the refusal after which it is not called
};

} // namespace kforge::propose

Q_DECLARE_METATYPE(kforge::propose::LlmProposal)
