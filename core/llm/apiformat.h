#pragma once
// The two wire formats, without any networking: the URL, headers and JSON body of a chat request;
// reading a complete answer or a stream of server-sent events back into a ChatResult; and turning
// an HTTP error into an ErrorKind and a message a person can act on. Kept apart from the transport
// so that each format can be tested on bytes alone.

#include "llm/llmtypes.h"
#include "llm/modeltable.h"
#include "llm/sse.h"

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QString>

namespace kforge::llm {

using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

// <baseUrl>/chat/completions (OpenAI) or <baseUrl>/messages (Anthropic), the API's path joined to
// the base URL's with one '/' and any query string kept after it. requestUrl is what is sent (with
// a user and password the base URL holds); chatUrl is for people: messages, logs, stored records,
// with those credentials (and any query parameter that looks like one) left out.
QString requestUrl(const Endpoint& endpoint);
QString chatUrl(const Endpoint& endpoint);
// `url` without a user, a password or credential-like query parameters (key, token, secret,
// password, signature...), which show as "***".
QString redactedUrl(const QString& url);
// The body: max_tokens or max_completion_tokens, a temperature or none, reasoning effort and
// Anthropic's extended thinking, as `params` (the model's entry in the ModelTable) says. With
// `cacheSystemPrompt`, Anthropic's system prompt is one text block marked for the prompt cache
// (cache_control: ephemeral); OpenAI's API caches long prompts without being asked.
QByteArray requestBody(Api api, const ChatRequest& request, bool stream, const ModelParams& params = {},
                       bool cacheSystemPrompt = false);
// The most output tokens a request can be billed for: max_tokens, and with Anthropic's extended
// thinking (params.thinkingBudget) the thinking budget on top, which is billed as output.
qint64 outputTokenLimit(Api api, const ChatRequest& request, const ModelParams& params);
// Whether requestBody marks the system prompt for the API's prompt cache (Anthropic), so that a
// call may be billed for writing it there.
bool marksSystemPromptForCache(Api api, const ChatRequest& request, bool cacheSystemPrompt);
// content-type, accept, and the key's header unless `key` is empty (a local server without auth).
HttpHeaders requestHeaders(Api api, const QString& key, bool stream);

// A complete (non-streamed) 2xx answer: ok with text, stop reason, model and usage, or Malformed.
ChatResult parseResponse(const Endpoint& endpoint, const QByteArray& body);

// A non-2xx answer: the kind (Auth, Quota, RateLimited, Request, Server, Timeout) and a message
// naming the endpoint, the status and the server's own explanation. `httpStatus` is set.
ChatResult classifyHttpError(const Endpoint& endpoint, int status, const QByteArray& body);

// The kinds worth another attempt: RateLimited, Server, Network, Timeout.
bool isRetryable(ErrorKind kind);

// Builds a ChatResult from a streamed answer, one event at a time.
class StreamAccumulator {
public:
    explicit StreamAccumulator(const Endpoint& endpoint);

    // The text this event adds (empty for most events). After an error event or a malformed one
    // the rest of the stream is ignored.
    QString consume(const SseEvent& event);
    // Whether the API's end marker came ([DONE], message_stop) or an error ended the stream.
    bool ended() const { return m_ended || m_failed; }
    bool sawEvents() const { return m_events > 0; }
    const QString& text() const { return m_result.text; }
    // The result when the stream is over: ok, an error the stream reported, Malformed, or
    // Truncated (with the partial text) when it stopped before its end marker.
    ChatResult finish() const;

private:
    QString consumeOpenAi(const QJsonObject& o);
    QString consumeAnthropic(const QString& type, const QJsonObject& o);
    void fail(ErrorKind kind, const QString& message);
    void failWithStreamError(const QJsonObject& event); // an error event of either API

    Endpoint m_endpoint;
    ChatResult m_result;
    int m_events = 0;
    bool m_ended = false;
    bool m_failed = false;
};

} // namespace kforge::llm
