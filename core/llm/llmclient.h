#pragma once
// The LLM transport: chat requests go out over HTTP to the configured endpoints and come back as
// ChatResults. One background thread drives every transfer through a libcurl multi handle, so a
// hundred requests in flight cost one thread; each endpoint has its own concurrency limit (extra
// requests wait in a queue), timeouts, and retries with exponential backoff that honour the
// server's Retry-After. Once an endpoint has refused a request's key (HTTP 401/403) or said its
// quota is spent, the requests still queued for it and those submitted later are not sent: they
// finish at once with the same error kind. Streaming answers are read as server-sent events and
// can be shown as they arrive.
//
// submit(), cancel() and cancelAll() may be called from any thread; the signals are delivered in
// the thread this object lives in.

#include "llm/llmtypes.h"
#include "llm/modeltable.h"
#include "llm/pricetable.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>

#include <memory>
#include <utility>

namespace kforge::llm {

class LlmClient : public QObject {
    Q_OBJECT
public:
    LlmClient(QList<Endpoint> endpoints, PriceTable prices, QObject* parent = nullptr);
    // Cancels every request (no further signals) and stops the transfer thread; it does not wait
    // for servers, only for libcurl to close its connections.
    ~LlmClient() override;

    // Queues a request and returns its ticket (> 0). finished() follows exactly once per ticket,
    // also for a request that cannot start (unknown endpoint, missing key: ErrorKind::Config).
    // The endpoint's key comes from setKeys() (a KeyLookup ahead of the requests), else from its
    // environment variable; a key only the keyring holds is never looked up here (that would
    // block), and the request is refused saying so.
    qint64 submit(ChatRequest request);
    // Keys by endpoint name, and for endpoints whose required key is missing, why.
    void setKeys(const QHash<QString, QString>& keys, const QHash<QString, QString>& problems);
    // finished() with ErrorKind::Cancelled follows unless the request finished already.
    void cancel(qint64 ticket);
    // Every request submitted before this call.
    void cancelAll();

    // The most `request` can be billed for, by kind of token, given `promptTokens` (the caller's
    // upper estimate of the whole prompt) of which `systemTokens` are the system prompt: that
    // prompt written to the API's cache where the endpoint marks it for caching (a write costs more
    // than input), and as output max_tokens plus any thinking budget the model's entry gives. For
    // an unknown endpoint, the prompt uncached and max_tokens.
    Usage worstUsage(const ChatRequest& request, qint64 promptTokens, qint64 systemTokens) const;

    const QList<Endpoint>& endpoints() const { return m_endpoints; }
    const PriceTable& prices() const { return m_prices; }
    // What each model accepts (max_completion_tokens, temperature, thinking); by default the
    // built-in table with the user's llm-models.json over it, read when the client is made.
    void setModels(ModelTable models) { m_models = std::move(models); }

signals:
    void finished(qint64 ticket, const kforge::llm::ChatResult& result);
    // Text of a streamed answer as it arrives. A failed attempt that streamed text is not retried,
    // so the deltas of one ticket always add up to its final text.
    void streamed(qint64 ticket, const QString& delta);

private:
    class Worker;

    // The endpoint of that name (the last, should two share it); -1 for none.
    qsizetype endpointIndex(const QString& name) const;
    void postFinished(qint64 ticket, const ChatResult& result);
    void postStreamed(qint64 ticket, const QString& delta);

    const QList<Endpoint> m_endpoints;
    const PriceTable m_prices;
    ModelTable m_models;
    QHash<QString, QString> m_keyProblems; // endpoint -> why its required key is missing
    std::unique_ptr<Worker> m_worker;
};

} // namespace kforge::llm
