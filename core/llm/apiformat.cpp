#include "llm/apiformat.h"

#include "util/numbers.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QJsonValue>
#include <QUrl>

#include <algorithm>

namespace kforge::llm {

namespace {

QString where(const Endpoint& endpoint) {
    return QStringLiteral("%1 (%2)").arg(endpoint.name, chatUrl(endpoint));
}

// A count as the server reported it: a whole number of tokens, or unknown. A negative, fractional or
// absurd one (no answer holds a trillion tokens; 1e300 would not even fit the integer) is unknown
// rather than a made-up cost.
std::optional<qint64> tokenCount(const QJsonObject& usage, const QString& key) {
    constexpr qint64 kMaxTokens = 1'000'000'000'000;
    const QJsonValue v = usage.value(key);
    const std::optional<qint64> n = v.isDouble() ? util::wholeNumber<qint64>(v.toDouble()) : std::nullopt;
    if (!n || *n < 0 || *n > kMaxTokens)
        return std::nullopt;
    return n;
}

// The prompt's tokens of an OpenAI usage object: all of them, and the part read from the prompt cache.
void readOpenAiInput(const QJsonObject& usage, Usage* u) {
    u->inputTokens = tokenCount(usage, QStringLiteral("prompt_tokens"));
    u->cachedInputTokens =
        tokenCount(usage.value(QStringLiteral("prompt_tokens_details")).toObject(), QStringLiteral("cached_tokens"));
}

// Anthropic counts the prompt in three parts: input_tokens (not cached), those written to the cache
// and those read from it. Nothing changes when the object holds no input_tokens (a message_delta
// that only counts the output).
void readAnthropicInput(const QJsonObject& usage, Usage* u) {
    const std::optional<qint64> fresh = tokenCount(usage, QStringLiteral("input_tokens"));
    if (!fresh)
        return;
    const std::optional<qint64> written = tokenCount(usage, QStringLiteral("cache_creation_input_tokens"));
    const std::optional<qint64> read = tokenCount(usage, QStringLiteral("cache_read_input_tokens"));
    u->inputTokens = *fresh + written.value_or(0) + read.value_or(0);
    u->cacheWriteTokens = written;
    u->cachedInputTokens = read;
}

// A body quoted in a message: short, on one line.
QString excerpt(const QByteArray& body) {
    QString s = QString::fromUtf8(body.left(300)).simplified();
    if (body.size() > 300)
        s += QStringLiteral("...");
    return s.isEmpty() ? QStringLiteral("(empty body)") : s;
}

struct ServerError {
    QString type;
    QString code;
    QString message;
};

// The error object of either API and of the OpenAI-compatible local servers, which vary:
// {"error":{"message","type","code"}} (OpenAI), {"type":"error","error":{"type","message"}}
// (Anthropic), {"error":"text"} (Ollama), {"object":"error","message","type"} (vLLM),
// {"detail":"text"} (some proxies).
ServerError serverError(const QJsonObject& o) {
    ServerError e;
    const QJsonValue error = o.value(QStringLiteral("error"));
    if (error.isObject()) {
        const QJsonObject eo = error.toObject();
        e.type = eo.value(QStringLiteral("type")).toString();
        const QJsonValue code = eo.value(QStringLiteral("code"));
        e.code = code.isDouble() ? QString::number(code.toInt()) : code.toString();
        e.message = eo.value(QStringLiteral("message")).toString();
    } else if (error.isString()) {
        e.message = error.toString();
    }
    if (e.message.isEmpty())
        e.message = o.value(QStringLiteral("message")).toString();
    if (e.message.isEmpty())
        e.message = o.value(QStringLiteral("detail")).toString();
    if (e.type.isEmpty() && o.value(QStringLiteral("object")).toString() == QLatin1String("error"))
        e.type = o.value(QStringLiteral("type")).toString();
    return e;
}

bool isQuota(const ServerError& e) {
    return e.code == QLatin1String("insufficient_quota") || e.type == QLatin1String("insufficient_quota")
           || e.type == QLatin1String("billing_error")
           || e.message.contains(QLatin1String("credit balance is too low"), Qt::CaseInsensitive);
}

// The kind an error named in a stream (where there is no HTTP status) stands for.
ErrorKind kindOfErrorType(const ServerError& e) {
    if (isQuota(e))
        return ErrorKind::Quota;
    const QString t = e.type.isEmpty() ? e.code : e.type;
    if (t.contains(QLatin1String("rate_limit")))
        return ErrorKind::RateLimited;
    if (t == QLatin1String("authentication_error") || t == QLatin1String("permission_error")
        || t == QLatin1String("invalid_api_key"))
        return ErrorKind::Auth;
    if (t == QLatin1String("invalid_request_error") || t == QLatin1String("not_found_error")
        || t == QLatin1String("request_too_large"))
        return ErrorKind::Request;
    return ErrorKind::Server;
}

QString keyHint(const Endpoint& endpoint) {
    if (!endpoint.keyEnv.isEmpty())
        return QStringLiteral("; check the key in %1 or `kforge llm set-key %2`").arg(endpoint.keyEnv, endpoint.name);
    return QStringLiteral("; set a key with `kforge llm set-key %1`").arg(endpoint.name);
}

} // namespace

QString requestUrl(const Endpoint& endpoint) {
    QUrl url(endpoint.baseUrl);
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    url.setPath(path
                + (endpoint.api == Api::Anthropic ? QStringLiteral("/messages") : QStringLiteral("/chat/completions")));
    return url.toString(QUrl::FullyEncoded);
}

QString redactedUrl(const QString& text) {
    QUrl url(text);
    if (!url.isValid())
        return QStringLiteral("(a base URL that is not valid)");
    url.setUserInfo(QString());
    if (url.hasQuery()) {
        static const QStringList secret = {
            QStringLiteral("key"), QStringLiteral("token"), QStringLiteral("secret"),     QStringLiteral("pass"),
            QStringLiteral("sig"), QStringLiteral("auth"),  QStringLiteral("credential"), QStringLiteral("session")};
        // Pair by pair in the encoded query, everything but a secret's value kept as it was (a
        // rebuilt query would drop empty pairs and re-encode the rest): redacting a redacted URL
        // changes nothing, so a stored endpoint reads and writes back the same.
        QStringList pairs = url.query(QUrl::FullyEncoded).split(QLatin1Char('&'));
        for (QString& pair : pairs) {
            const qsizetype eq = pair.indexOf(QLatin1Char('='));
            if (eq < 0)
                continue;
            const QString name = QUrl::fromPercentEncoding(pair.left(eq).toUtf8());
            if (std::any_of(secret.begin(), secret.end(),
                            [&](const QString& s) { return name.contains(s, Qt::CaseInsensitive); }))
                pair = pair.left(eq + 1) + QStringLiteral("***");
        }
        url.setQuery(pairs.join(QLatin1Char('&')), QUrl::TolerantMode);
    }
    return url.toString(QUrl::PrettyDecoded);
}

QString chatUrl(const Endpoint& endpoint) {
    return redactedUrl(requestUrl(endpoint));
}

QByteArray requestBody(Api api, const ChatRequest& request, bool stream, const ModelParams& params,
                       bool cacheSystemPrompt) {
    QJsonArray messages;
    if (api == Api::OpenAI && !request.system.isEmpty())
        messages.append(QJsonObject{{QStringLiteral("role"), QStringLiteral("system")},
                                    {QStringLiteral("content"), request.system}});
    for (const Message& m : request.messages)
        messages.append(QJsonObject{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}});
    QJsonObject o;
    o[QStringLiteral("model")] = request.model;
    if (api == Api::Anthropic && !request.system.isEmpty()) {
        // A run's calls share their system prompt: cached, later calls read it at a tenth of the
        // input price. (A prompt shorter than the model's minimum is simply not cached.)
        if (marksSystemPromptForCache(api, request, cacheSystemPrompt))
            o[QStringLiteral("system")] = QJsonArray{QJsonObject{
                {QStringLiteral("type"), QStringLiteral("text")},
                {QStringLiteral("text"), request.system},
                {QStringLiteral("cache_control"), QJsonObject{{QStringLiteral("type"), QStringLiteral("ephemeral")}}}}};
        else
            o[QStringLiteral("system")] = request.system;
    }
    o[QStringLiteral("messages")] = messages;
    const bool thinking = api == Api::Anthropic && params.thinkingBudget > 0;
    if (thinking) {
        // The answer keeps its room: thinking counts against max_tokens.
        o[QStringLiteral("max_tokens")] = outputTokenLimit(api, request, params);
        o[QStringLiteral("thinking")] = QJsonObject{{QStringLiteral("type"), QStringLiteral("enabled")},
                                                    {QStringLiteral("budget_tokens"), params.thinkingBudget}};
    } else if (api == Api::OpenAI && params.maxCompletionTokens) {
        o[QStringLiteral("max_completion_tokens")] = request.maxTokens;
    } else {
        o[QStringLiteral("max_tokens")] = request.maxTokens;
    }
    // Thinking works only at the default temperature; reasoning models accept no other.
    if (params.temperature && !thinking)
        o[QStringLiteral("temperature")] = request.temperature;
    if (api == Api::OpenAI && !params.reasoningEffort.isEmpty())
        o[QStringLiteral("reasoning_effort")] = params.reasoningEffort;
    o[QStringLiteral("stream")] = stream;
    // Without it an OpenAI stream never reports usage, and cost would stay unknown.
    if (api == Api::OpenAI && stream)
        o[QStringLiteral("stream_options")] = QJsonObject{{QStringLiteral("include_usage"), true}};
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

qint64 outputTokenLimit(Api api, const ChatRequest& request, const ModelParams& params) {
    const qint64 limit = request.maxTokens;
    return api == Api::Anthropic && params.thinkingBudget > 0 ? limit + params.thinkingBudget : limit;
}

bool marksSystemPromptForCache(Api api, const ChatRequest& request, bool cacheSystemPrompt) {
    return api == Api::Anthropic && cacheSystemPrompt && !request.system.isEmpty();
}

HttpHeaders requestHeaders(Api api, const QString& key, bool stream) {
    HttpHeaders h;
    h.append(QPair<QByteArray, QByteArray>("content-type", "application/json"));
    h.append(QPair<QByteArray, QByteArray>("accept", stream ? "text/event-stream" : "application/json"));
    if (api == Api::Anthropic) {
        h.append(QPair<QByteArray, QByteArray>("anthropic-version", "2023-06-01"));
        if (!key.isEmpty())
            h.append(QPair<QByteArray, QByteArray>("x-api-key", key.toUtf8()));
    } else if (!key.isEmpty()) {
        h.append(QPair<QByteArray, QByteArray>("authorization", "Bearer " + key.toUtf8()));
    }
    return h;
}

bool isRetryable(ErrorKind kind) {
    return kind == ErrorKind::RateLimited || kind == ErrorKind::Server || kind == ErrorKind::Network
           || kind == ErrorKind::Timeout;
}

ChatResult parseResponse(const Endpoint& endpoint, const QByteArray& body) {
    ChatResult r;
    r.httpStatus = 200;
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(body, &pe);
    auto malformed = [&](const QString& what) {
        r.ok = false;
        r.error = ErrorKind::Malformed;
        r.message = QStringLiteral("%1: the answer is not a valid %2 response: %3; body: %4")
                        .arg(where(endpoint), apiName(endpoint.api), what, excerpt(body));
        return r;
    };
    if (pe.error != QJsonParseError::NoError)
        return malformed(pe.errorString());
    if (!doc.isObject())
        return malformed(QStringLiteral("not a JSON object"));
    const QJsonObject o = doc.object();
    r.model = o.value(QStringLiteral("model")).toString();
    const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
    if (endpoint.api == Api::OpenAI) {
        const QJsonArray choices = o.value(QStringLiteral("choices")).toArray();
        if (choices.isEmpty() || !choices.first().isObject())
            return malformed(QStringLiteral("no choices"));
        const QJsonObject choice = choices.first().toObject();
        const QJsonValue content = choice.value(QStringLiteral("message")).toObject().value(QStringLiteral("content"));
        if (!content.isString() && !content.isNull())
            return malformed(QStringLiteral("choices[0].message.content is not text"));
        r.text = content.toString();
        r.stopReason = choice.value(QStringLiteral("finish_reason")).toString();
        readOpenAiInput(usage, &r.usage);
        r.usage.outputTokens = tokenCount(usage, QStringLiteral("completion_tokens"));
    } else {
        const QJsonValue content = o.value(QStringLiteral("content"));
        if (!content.isArray())
            return malformed(QStringLiteral("no content array"));
        for (const auto& block : content.toArray())
            if (block.toObject().value(QStringLiteral("type")).toString() == QLatin1String("text"))
                r.text += block.toObject().value(QStringLiteral("text")).toString();
        r.stopReason = o.value(QStringLiteral("stop_reason")).toString();
        readAnthropicInput(usage, &r.usage);
        r.usage.outputTokens = tokenCount(usage, QStringLiteral("output_tokens"));
    }
    r.ok = true;
    return r;
}

ChatResult classifyHttpError(const Endpoint& endpoint, int status, const QByteArray& body) {
    ChatResult r;
    r.httpStatus = status;
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const ServerError e = doc.isObject() ? serverError(doc.object()) : ServerError{};
    const QString said = e.message.isEmpty() ? excerpt(body) : e.message;
    QString hint;
    if (status == 401 || status == 403) {
        r.error = ErrorKind::Auth;
        hint = keyHint(endpoint);
    } else if (status == 402 || ((status == 429 || status == 400) && isQuota(e))) {
        r.error = ErrorKind::Quota;
        hint = QStringLiteral("; the account is out of credit or over its quota");
    } else if (status == 429) {
        r.error = ErrorKind::RateLimited;
    } else if (status == 408) {
        r.error = ErrorKind::Timeout;
    } else if (status >= 500 || status == 529) {
        r.error = ErrorKind::Server;
    } else if (status >= 400) {
        r.error = ErrorKind::Request;
    } else {
        // A 1xx or 3xx that was not followed: the base URL points somewhere else.
        r.error = ErrorKind::Config;
        hint = QStringLiteral("; check the endpoint's base URL");
    }
    const QString typed = e.type.isEmpty() ? e.code : e.type;
    r.message = QStringLiteral("%1: HTTP %2%3: %4%5")
                    .arg(where(endpoint))
                    .arg(status)
                    .arg(typed.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(typed), said, hint);
    return r;
}

StreamAccumulator::StreamAccumulator(const Endpoint& endpoint) : m_endpoint(endpoint) {
    m_result.httpStatus = 200;
}

void StreamAccumulator::fail(ErrorKind kind, const QString& message) {
    m_failed = true;
    m_result.error = kind;
    m_result.message = message;
}

QString StreamAccumulator::consume(const SseEvent& event) {
    if (ended())
        return {};
    ++m_events;
    if (m_endpoint.api == Api::OpenAI && event.data.trimmed() == "[DONE]") {
        m_ended = true;
        return {};
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(event.data, &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
        fail(ErrorKind::Malformed, QStringLiteral("%1: a streamed event is not valid JSON (%2): %3")
                                       .arg(where(m_endpoint), pe.errorString(), excerpt(event.data)));
        return {};
    }
    const QJsonObject o = doc.object();
    if (m_endpoint.api == Api::OpenAI)
        return consumeOpenAi(o);
    // The event name and the data's "type" agree in the real API; trust either.
    const QString type = event.event.isEmpty() ? o.value(QStringLiteral("type")).toString() : event.event;
    return consumeAnthropic(type, o);
}

void StreamAccumulator::failWithStreamError(const QJsonObject& o) {
    const ServerError e = serverError(o);
    fail(kindOfErrorType(e),
         QStringLiteral("%1: the stream reported an error%2: %3")
             .arg(where(m_endpoint), e.type.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(e.type),
                  e.message.isEmpty() ? QStringLiteral("(no message)") : e.message));
}

QString StreamAccumulator::consumeOpenAi(const QJsonObject& o) {
    if (o.contains(QStringLiteral("error"))) {
        failWithStreamError(o);
        return {};
    }
    if (const QString model = o.value(QStringLiteral("model")).toString(); !model.isEmpty())
        m_result.model = model;
    if (const QJsonValue usage = o.value(QStringLiteral("usage")); usage.isObject()) {
        readOpenAiInput(usage.toObject(), &m_result.usage);
        m_result.usage.outputTokens = tokenCount(usage.toObject(), QStringLiteral("completion_tokens"));
    }
    const QJsonArray choices = o.value(QStringLiteral("choices")).toArray();
    if (choices.isEmpty())
        return {};
    const QJsonObject choice = choices.first().toObject();
    if (const QString reason = choice.value(QStringLiteral("finish_reason")).toString(); !reason.isEmpty())
        m_result.stopReason = reason;
    QString delta = choice.value(QStringLiteral("delta")).toObject().value(QStringLiteral("content")).toString();
    m_result.text += delta;
    return delta;
}

QString StreamAccumulator::consumeAnthropic(const QString& type, const QJsonObject& o) {
    if (type == QLatin1String("message_start")) {
        const QJsonObject message = o.value(QStringLiteral("message")).toObject();
        if (const QString model = message.value(QStringLiteral("model")).toString(); !model.isEmpty())
            m_result.model = model;
        const QJsonObject usage = message.value(QStringLiteral("usage")).toObject();
        m_result.usage = Usage{};
        readAnthropicInput(usage, &m_result.usage);
        // Its output_tokens is a placeholder (usually 1): the count is known only from
        // message_delta, so a stream that ends before it has an unknown output, and cost.
    } else if (type == QLatin1String("content_block_delta")) {
        const QJsonObject delta = o.value(QStringLiteral("delta")).toObject();
        if (delta.value(QStringLiteral("type")).toString() == QLatin1String("text_delta")) {
            QString text = delta.value(QStringLiteral("text")).toString();
            m_result.text += text;
            return text;
        }
    } else if (type == QLatin1String("message_delta")) {
        const QString reason =
            o.value(QStringLiteral("delta")).toObject().value(QStringLiteral("stop_reason")).toString();
        if (!reason.isEmpty())
            m_result.stopReason = reason;
        const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
        if (auto out = tokenCount(usage, QStringLiteral("output_tokens")))
            m_result.usage.outputTokens = out;
        readAnthropicInput(usage, &m_result.usage);
    } else if (type == QLatin1String("message_stop")) {
        m_ended = true;
    } else if (type == QLatin1String("error")) {
        failWithStreamError(o);
    }
    // ping, content_block_start, content_block_stop and event types added later carry no text.
    return {};
}

ChatResult StreamAccumulator::finish() const {
    ChatResult r = m_result;
    if (m_failed) {
        r.ok = false;
        return r;
    }
    if (!m_ended) {
        r.ok = false;
        r.error = ErrorKind::Truncated;
        r.message = QStringLiteral("%1: the stream ended before its end marker (%2) after %3 characters")
                        .arg(where(m_endpoint), m_endpoint.api == Api::OpenAI ? QStringLiteral("data: [DONE]")
                                                                              : QStringLiteral("message_stop"))
                        .arg(r.text.size());
        return r;
    }
    r.ok = true;
    r.error = ErrorKind::None;
    return r;
}

} // namespace kforge::llm
