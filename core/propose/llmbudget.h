#pragma once
// A run's token and money budgets for its language-model calls, spent rather than guarded: a call
// is sent only while what the run has spent, plus a reservation for the worst case of every call
// in flight, plus this call's worst case, fits. A call that settles gives its reservation back and
// is charged what it really used, so the calls still to come may use what it did not.

#include <QString>

#include <optional>

namespace kforge::propose {

class LlmBudget {
public:
    struct Amount {
        qint64 tokens = 0;
        double usd = 0.0; // known costs only
    };
    enum class Admission {
        Send,  // fits beside the calls in flight
        Wait,  // does not fit now, but may once the calls in flight have settled
        Spent, // does not fit even with nothing in flight: the budget is spent
    };

    LlmBudget() = default;
    LlmBudget(qint64 tokens, double usd); // 0: no limit

    bool limited() const { return m_tokens > 0 || m_usd > 0.0; }
    Admission admit(const Amount& spent, const Amount& worst) const;
    void reserve(const Amount& worst);
    void release(const Amount& worst);
    int inFlight() const { return m_calls; }
    const Amount& reserved() const { return m_reserved; }

    // Why no call of worst case `next` fits (for people: the real figures, spent of budget and the
    // percentage), or nothing when it does fit with nothing in flight.
    std::optional<QString> stopMessage(const Amount& spent, const Amount& next) const;

private:
    bool fits(const Amount& spent, const Amount& reserved, const Amount& worst) const;

    qint64 m_tokens = 0;
    double m_usd = 0.0;
    Amount m_reserved;
    int m_calls = 0;
};

} // namespace kforge::propose
