#pragma once
// The values the LLM side exchanges: where a model is served (an endpoint), what is asked of it (a
// chat request) and what came back (a chat result with usage and cost). Plain values, copied
// across threads through queued signals.

#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>

#include <optional>

namespace kforge::llm {

// The two wire formats: OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama, llama.cpp
// server, any base URL) and the Anthropic Messages API.
enum class Api { OpenAI, Anthropic };
QString apiName(Api api); // "openai", "anthropic"
std::optional<Api> parseApi(const QString& name);

// Where models are served and how to talk to it. Never holds a key: keys come from the
// environment variable `keyEnv` or the system keyring (service "kforge", account `name`).
struct Endpoint {
    QString name; // "openai", "anthropic", "ollama", "local" ...
    Api api = Api::OpenAI;
    QString baseUrl;         // "https://api.openai.com/v1"; the API path is appended
    QString keyEnv;          // e.g. "OPENAI_API_KEY"; empty: no key is needed (local servers)
    bool keyring = true;     // look in the system keyring when the variable is not set
    bool keyRequired = true; // false: no key found means none is sent (a local server whose key is optional)
    int maxConcurrent = 4;   // requests in flight at once on this endpoint
    double connectTimeoutSeconds = 10.0;
    double totalTimeoutSeconds = 300.0; // per attempt, streaming included
    int maxRetries = 4;                 // on 429, 5xx, 529, network errors and timeouts
    double backoffSeconds = 1.0;        // first wait; doubles per retry (capped at 60 s), with jitter
    bool stream = true;                 // server-sent events
    // Anthropic: mark the system prompt (the same for every call of a run) for the API's prompt
    // cache, so later calls read it at a tenth of the input price. OpenAI caches long prompts by
    // itself. Off for an Anthropic-compatible server that refuses cache_control.
    bool cachePrompts = true;
    // Read back from a stored run whose base URL held a user, a password or a key-like query
    // parameter: those were left out (see toJson), and are taken again from the configuration.
    bool credentialsLeftOut = false;

    // Without `withCredentials`, a user, password or key-like query parameter in the base URL is
    // left out ("***"), and "credentialsLeftOut" says so: what is stored with a run or printed.
    QJsonObject toJson(bool withCredentials = false) const;
    // Errors name the key and what is wrong with it.
    static std::optional<Endpoint> fromJson(const QJsonObject& json, QString* error);
};

struct Message {
    QString role; // "user" or "assistant"
    QString content;
};

struct ChatRequest {
    QString endpoint; // an Endpoint::name known to the client
    QString model;
    QString system;
    QList<Message> messages;
    int maxTokens = 4096;
    double temperature = 0.7;
};

enum class ErrorKind {
    None,
    Config,      // unknown endpoint, no key, bad URL: fix the settings
    Auth,        // 401/403: the key is wrong; never retried
    Quota,       // out of credit or over a hard quota; never retried
    RateLimited, // 429 still after every retry
    Server,      // 5xx/529 still after every retry
    Request,     // 400/404/422: the request itself is wrong (e.g. unknown model); never retried
    Network,     // could not connect, connection reset
    Timeout,     // connect or total timeout
    Malformed,   // the body was not the JSON the API promises
    Truncated,   // the stream ended before the API's end marker
    Cancelled,
};
QString errorKindName(ErrorKind kind);

// Tokens as the server reported them; unknown (not zero) when usage never arrived. inputTokens
// counts the whole prompt; of it, cachedInputTokens were read from the API's prompt cache and
// cacheWriteTokens written to it (Anthropic), each priced apart.
struct Usage {
    std::optional<qint64> inputTokens;
    std::optional<qint64> outputTokens;
    std::optional<qint64> cachedInputTokens;
    std::optional<qint64> cacheWriteTokens;
    bool known() const { return inputTokens.has_value() && outputTokens.has_value(); }
};

struct ChatResult {
    bool ok = false;
    QString text;       // the answer (also the partial text of a truncated stream)
    QString stopReason; // "stop", "end_turn", "length", "max_tokens" ...
    ErrorKind error = ErrorKind::None;
    QString message;    // for people: what went wrong, naming the endpoint and the HTTP status
    int httpStatus = 0; // of the last attempt; 0 when no response came
    QString model;      // as the server named it; the requested one when it did not
    Usage usage;
    std::optional<double> costUsd; // unknown when usage or the model's price is unknown
    double latencySeconds = 0.0;   // first attempt's start to the last byte, retries included
    int attempts = 0;
};

} // namespace kforge::llm

Q_DECLARE_METATYPE(kforge::llm::ChatResult)
