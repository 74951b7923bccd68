// kforge-fake-llm-server: a real HTTP/1.1 server on 127.0.0.1 that speaks the OpenAI Chat
// Completions and Anthropic Messages APIs (plain and streamed answers, errors, rate limits) as a
// script tells it, so that the LLM client and the engine can be tested end to end without a model.
//
// Usage: kforge-fake-llm-server [--port N] [--script FILE] [--log FILE]
//   Listens on 127.0.0.1 (port 0: any free port) and prints exactly "listening <port>" on stdout.
//   Exits on SIGTERM or SIGINT, and when its stdin is a pipe or socket that closes (so a test that
//   dies takes its server with it; a QProcess keeps stdin open until the process object goes).
//
// Requests: POST <any prefix>/chat/completions is OpenAI style, POST <any prefix>/messages is
// Anthropic style; anything else gets a 404. Keep-alive unless the client sends
// "Connection: close"; "Expect: 100-continue" is honoured. JSON answers carry Content-Length,
// streams use chunked transfer encoding.
//
// Script (--script FILE), one JSON object:
//   {"rules": [ {
//      "match": "regex",        optional; searched in the raw request body
//      "api": "openai",         optional; "openai" or "anthropic": only requests of that API
//      "times": N,              optional; how many requests this rule answers (default unlimited)
//      "status": 200,           HTTP status (default 200); a non-200 status answers with an error body
//      "headers": {"Retry-After": "1"},   extra response headers, any status
//      "delay_ms": 0,           wait before answering
//      "mode": "json",          json | stream | malformed | truncated | stream-error | hang; absent: stream when
//                               the request asks for it ("stream": true), json otherwise
//      "text": "answer text",  "{{n}}" becomes the request's seq, so answers can differ
//      "model": "name",         optional; the model the answer names (default: the requested one)
//      "stop_reason": "...",    optional; default "stop" (OpenAI) or "end_turn" (Anthropic)
//      "usage": {"input": 12, "output": 34},   absent: the answer reports no usage at all; with
//                               "cached": N and "cache_write": N, that many of the input tokens
//                               come from the prompt cache or go into it, as each API reports them
//                               (OpenAI: prompt_tokens_details.cached_tokens, always; Anthropic:
//                               cache_read/cache_creation_input_tokens, only when the request
//                               marks its system prompt with cache_control); "output": "max"
//                               bills the whole limit the request set (max_completion_tokens or
//                               max_tokens, thinking budget included), as an answer that ran out
//      "error": {"type": "...", "code": "...", "message": "..."},   for a non-200 status; "{{key}}"
//                               in the message is replaced by the key the request carried (servers
//                               do echo keys; the client must redact them)
//      "chunk_chars": 8,        stream: characters of text per delta event
//      "chunk_delay_ms": 0      stream: pause between events
//   } ]}
// The first rule that matches and has times left answers; when none does: 500 with an error body.
// Before any rule, a request the real API refuses for its parameters gets that API's 400 (OpenAI's
// reasoning models: max_completion_tokens, no temperature but 1; Anthropic: temperature 0..1,
// extended thinking's budget): see refusedByTheApi.
// The answers follow the real formats: chat.completion and chat.completion.chunk objects ending
// with "data: [DONE]" (a final usage chunk when the request sets stream_options.include_usage and
// the rule has usage); Anthropic message objects and the event stream message_start,
// content_block_start, ping, content_block_delta (text_delta)..., content_block_stop,
// message_delta, message_stop. Modes: "malformed" answers 200 with a JSON body cut in the middle;
// "truncated" streams about half of the text, then closes the connection without the end marker
// (and without the last chunk of the chunked encoding); "stream-error" streams about half of the
// text, then the API's error event built from "error" (Anthropic: event: error; OpenAI: a data line
// holding {"error": {...}}) and ends the response; "hang" reads the request and never answers.
//
// Log (--log FILE): one JSON line per request, appended as it arrives:
//   {"seq": 1, "active": 0, "time_ms": <ms since epoch>, "method": "POST", "path": "/v1/messages", "query": "",
//    "api": "anthropic", "rule": 0, "headers": {<lowercased name>: value}, "body": <JSON or string>}
// seq counts requests from 1; active is how many other requests were being answered at that
// moment (hung ones included), so a test can check a concurrency limit; rule is the index of the
// rule that answers, -1 for none.

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSocketNotifier>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

struct Rule {
    QRegularExpression match;
    bool hasMatch = false;
    QString api;
    int times = -1; // unlimited
    int status = 200;
    QJsonObject headers;
    int delayMs = 0;
    QString mode;
    QString text;
    QString model;
    QString stopReason;
    bool hasUsage = false;
    qint64 inputTokens = 0;
    qint64 outputTokens = 0;
    bool outputAtLimit = false; // "output": "max"
    qint64 cachedTokens = 0;
    qint64 cacheWriteTokens = 0;
    QJsonObject error;
    int chunkChars = 8;
    int chunkDelayMs = 0;
};

struct Request {
    QByteArray method;
    QByteArray path;     // without the query
    QByteArray query;    // after '?', if any
    QJsonObject headers; // lowercased names
    QByteArray body;
    bool close = false;
};

struct Connection {
    QTcpSocket* socket = nullptr;
    QByteArray buffer;
    bool busy = false;      // a request is being answered; pipelined ones wait
    bool inFlight = false;  // counted in Server::m_active
    bool continued = false; // "100 Continue" already sent for the request being read
};

QByteArray compact(const QJsonObject& o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray reasonPhrase(int status) {
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 408:
        return "Request Timeout";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 529:
        return "Overloaded";
    default:
        return "Status";
    }
}

class Server {
public:
    bool loadScript(const QString& path, QString* error);
    bool openLog(const QString& path, QString* error);
    bool listen(quint16 port) {
        QObject::connect(&m_server, &QTcpServer::newConnection, &m_server, [this] { onNewConnections(); });
        return m_server.listen(QHostAddress::LocalHost, port);
    }
    quint16 port() const { return m_server.serverPort(); }
    QString errorString() const { return m_server.errorString(); }

private:
    void onNewConnections();
    void readRequests(const std::shared_ptr<Connection>& c);
    void handle(const std::shared_ptr<Connection>& c, const Request& request);
    void answer(const std::shared_ptr<Connection>& c, const Request& request, const QString& api, const Rule* rule);
    void sendSimple(const std::shared_ptr<Connection>& c, const Request& request, int status,
                    const QJsonObject& extraHeaders, const QByteArray& contentType, const QByteArray& body);
    void sendStream(const std::shared_ptr<Connection>& c, const Request& request, const QString& api, const Rule& rule,
                    const QJsonObject& requestBody, const QString& mode);
    void finished(const std::shared_ptr<Connection>& c, bool close);
    void log(const Request& request, const QString& api, int seq, int active, int rule);

    QTcpServer m_server;
    QList<Rule> m_rules;
    std::unique_ptr<QFile> m_log;
    int m_seq = 0;
    int m_active = 0;
};

bool Server::loadScript(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = path + QStringLiteral(": ") + f.errorString();
        return false;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()
        || !doc.object().value(QStringLiteral("rules")).isArray()) {
        *error = path + QStringLiteral(": expected {\"rules\": [...]} ") + pe.errorString();
        return false;
    }
    const QJsonArray rules = doc.object().value(QStringLiteral("rules")).toArray();
    for (qsizetype i = 0; i < rules.size(); ++i) {
        const QJsonObject o = rules.at(i).toObject();
        Rule r;
        if (o.contains(QStringLiteral("match"))) {
            r.match = QRegularExpression(o.value(QStringLiteral("match")).toString());
            r.hasMatch = true;
            if (!r.match.isValid()) {
                *error = QStringLiteral("%1: rules[%2].match: %3").arg(path).arg(i).arg(r.match.errorString());
                return false;
            }
        }
        r.api = o.value(QStringLiteral("api")).toString();
        r.times = o.value(QStringLiteral("times")).toInt(-1);
        r.status = o.value(QStringLiteral("status")).toInt(200);
        r.headers = o.value(QStringLiteral("headers")).toObject();
        r.delayMs = o.value(QStringLiteral("delay_ms")).toInt(0);
        r.mode = o.value(QStringLiteral("mode")).toString();
        r.text = o.value(QStringLiteral("text")).toString();
        r.model = o.value(QStringLiteral("model")).toString();
        r.stopReason = o.value(QStringLiteral("stop_reason")).toString();
        if (o.value(QStringLiteral("usage")).isObject()) {
            const QJsonObject u = o.value(QStringLiteral("usage")).toObject();
            r.hasUsage = true;
            r.inputTokens = u.value(QStringLiteral("input")).toInteger();
            r.outputTokens = u.value(QStringLiteral("output")).toInteger();
            r.outputAtLimit = u.value(QStringLiteral("output")).toString() == QLatin1String("max");
            r.cachedTokens = u.value(QStringLiteral("cached")).toInteger();
            r.cacheWriteTokens = u.value(QStringLiteral("cache_write")).toInteger();
        }
        r.error = o.value(QStringLiteral("error")).toObject();
        r.chunkChars = std::max(1, o.value(QStringLiteral("chunk_chars")).toInt(8));
        r.chunkDelayMs = std::max(0, o.value(QStringLiteral("chunk_delay_ms")).toInt(0));
        static const QStringList modes{QString(),
                                       QStringLiteral("json"),
                                       QStringLiteral("stream"),
                                       QStringLiteral("malformed"),
                                       QStringLiteral("truncated"),
                                       QStringLiteral("stream-error"),
                                       QStringLiteral("hang")};
        if (!modes.contains(r.mode)) {
            *error = QStringLiteral("%1: rules[%2].mode: unknown mode \"%3\"").arg(path).arg(i).arg(r.mode);
            return false;
        }
        m_rules << r;
    }
    return true;
}

bool Server::openLog(const QString& path, QString* error) {
    m_log = std::make_unique<QFile>(path);
    if (!m_log->open(QIODevice::WriteOnly | QIODevice::Append)) {
        *error = path + QStringLiteral(": ") + m_log->errorString();
        return false;
    }
    return true;
}

void Server::onNewConnections() {
    while (QTcpSocket* socket = m_server.nextPendingConnection()) {
        auto c = std::make_shared<Connection>();
        c->socket = socket;
        QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, c] { readRequests(c); });
        QObject::connect(socket, &QTcpSocket::disconnected, socket, [this, c] {
            // A client that gave up on a hung or slow answer: it is no longer being answered.
            if (c->inFlight) {
                c->inFlight = false;
                --m_active;
            }
            c->socket->deleteLater();
        });
    }
}

void Server::readRequests(const std::shared_ptr<Connection>& c) {
    c->buffer += c->socket->readAll();
    while (!c->busy) {
        const qsizetype end = c->buffer.indexOf("\r\n\r\n");
        if (end < 0)
            return;
        const QList<QByteArray> lines = c->buffer.left(end).split('\n');
        Request request;
        const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
        request.method = first.value(0);
        request.path = first.value(1);
        if (const qsizetype q = request.path.indexOf('?'); q >= 0) {
            request.query = request.path.mid(q + 1);
            request.path.truncate(q);
        }
        qsizetype length = 0;
        bool expectContinue = false;
        for (qsizetype i = 1; i < lines.size(); ++i) {
            const QByteArray line = lines.at(i).trimmed();
            const qsizetype colon = line.indexOf(':');
            if (colon <= 0)
                continue;
            const QString name = QString::fromLatin1(line.left(colon).trimmed().toLower());
            const QString value = QString::fromUtf8(line.mid(colon + 1).trimmed());
            request.headers[name] = value;
            if (name == QLatin1String("content-length"))
                length = value.toLongLong();
            else if (name == QLatin1String("connection"))
                request.close = value.compare(QLatin1String("close"), Qt::CaseInsensitive) == 0;
            else if (name == QLatin1String("expect"))
                expectContinue = value.compare(QLatin1String("100-continue"), Qt::CaseInsensitive) == 0;
        }
        if (c->buffer.size() < end + 4 + length) {
            if (expectContinue && !c->continued) {
                c->continued = true;
                c->socket->write("HTTP/1.1 100 Continue\r\n\r\n");
            }
            return;
        }
        request.body = c->buffer.mid(end + 4, length);
        c->buffer.remove(0, end + 4 + length);
        c->continued = false;
        c->busy = true;
        handle(c, request);
    }
}

void Server::log(const Request& request, const QString& api, int seq, int active, int rule) {
    if (!m_log)
        return;
    QJsonObject line;
    line[QStringLiteral("seq")] = seq;
    line[QStringLiteral("active")] = active;
    line[QStringLiteral("time_ms")] = QDateTime::currentMSecsSinceEpoch();
    line[QStringLiteral("method")] = QString::fromLatin1(request.method);
    line[QStringLiteral("path")] = QString::fromUtf8(request.path);
    line[QStringLiteral("query")] = QString::fromUtf8(request.query);
    line[QStringLiteral("api")] = api;
    line[QStringLiteral("rule")] = rule;
    line[QStringLiteral("headers")] = request.headers;
    const QJsonDocument body = QJsonDocument::fromJson(request.body);
    if (body.isObject())
        line[QStringLiteral("body")] = body.object();
    else
        line[QStringLiteral("body")] = QString::fromUtf8(request.body);
    m_log->write(compact(line) + '\n');
    m_log->flush();
}

// The documented rules of the two APIs on a request's parameters, with their own messages: OpenAI's
// reasoning models (o1, o3, o4-mini, gpt-5 and their dated names) take max_completion_tokens, not
// max_tokens, and no temperature but 1; Anthropic takes a temperature from 0 to 1, and extended
// thinking needs a budget of at least 1024 tokens below max_tokens and no temperature but 1. Empty
// when the request keeps them.
static QString refusedByTheApi(const QString& api, const QJsonObject& body) {
    const QString model = body.value(QStringLiteral("model")).toString();
    const QJsonValue temperature = body.value(QStringLiteral("temperature"));
    if (api == QLatin1String("openai")) {
        static const QRegularExpression reasoning(QStringLiteral("^(o1|o3|o4|gpt-5)($|[-.])"));
        if (!reasoning.match(model).hasMatch())
            return {};
        if (body.contains(QStringLiteral("max_tokens")))
            return QStringLiteral("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                  "'max_completion_tokens' instead.");
        if (!temperature.isUndefined() && temperature.toDouble() != 1.0)
            return QStringLiteral("Unsupported value: 'temperature' does not support %1 with this model. Only the "
                                  "default (1) value is supported.")
                .arg(temperature.toDouble());
        return {};
    }
    if (!temperature.isUndefined() && (temperature.toDouble() < 0.0 || temperature.toDouble() > 1.0))
        return QStringLiteral("temperature: range: 0..1");
    if (!body.contains(QStringLiteral("max_tokens")))
        return QStringLiteral("max_tokens: Field required");
    const QJsonValue thinking = body.value(QStringLiteral("thinking"));
    if (thinking.isObject()
        && thinking.toObject().value(QStringLiteral("type")).toString() == QLatin1String("enabled")) {
        const int budget = thinking.toObject().value(QStringLiteral("budget_tokens")).toInt();
        if (budget < 1024)
            return QStringLiteral("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
        if (budget >= body.value(QStringLiteral("max_tokens")).toInt())
            return QStringLiteral("`max_tokens` must be greater than `thinking.budget_tokens`");
        if (!temperature.isUndefined() && temperature.toDouble() != 1.0)
            return QStringLiteral("`temperature` may only be set to 1 when thinking is enabled");
    }
    return {};
}

void Server::handle(const std::shared_ptr<Connection>& c, const Request& request) {
    const int seq = ++m_seq;
    const int active = m_active;
    c->inFlight = true;
    ++m_active;
    QString api;
    if (request.path.endsWith("/chat/completions"))
        api = QStringLiteral("openai");
    else if (request.path.endsWith("/messages"))
        api = QStringLiteral("anthropic");
    int ruleIndex = -1;
    if (!api.isEmpty() && request.method == "POST") {
        const QString body = QString::fromUtf8(request.body);
        for (qsizetype i = 0; i < m_rules.size(); ++i) {
            Rule& r = m_rules[i];
            if (r.times == 0 || (!r.api.isEmpty() && r.api != api) || (r.hasMatch && !r.match.match(body).hasMatch()))
                continue;
            if (r.times > 0)
                --r.times;
            ruleIndex = static_cast<int>(i);
            break;
        }
    }
    log(request, api, seq, active, ruleIndex);
    if (api.isEmpty() || request.method != "POST") {
        sendSimple(
            c, request, 404, {}, "application/json",
            compact(QJsonObject{{QStringLiteral("error"),
                                 QJsonObject{{QStringLiteral("message"),
                                              QStringLiteral("no such endpoint: ") + QString::fromUtf8(request.path)},
                                             {QStringLiteral("type"), QStringLiteral("invalid_request_error")}}}}));
        return;
    }
    // What the real APIs refuse is refused here too, whatever the script says.
    if (const QString refused = refusedByTheApi(api, QJsonDocument::fromJson(request.body).object());
        !refused.isEmpty()) {
        Rule bad;
        bad.status = 400;
        bad.error = QJsonObject{{QStringLiteral("type"), QStringLiteral("invalid_request_error")},
                                {QStringLiteral("message"), refused}};
        answer(c, request, api, &bad);
        return;
    }
    if (ruleIndex < 0) {
        answer(c, request, api, nullptr);
        return;
    }
    // Copy: a later request may not change how this one is answered.
    Rule rule = m_rules.at(ruleIndex);
    rule.text.replace(QLatin1String("{{n}}"), QString::number(seq));
    if (rule.delayMs > 0)
        QTimer::singleShot(rule.delayMs, c->socket, [this, c, request, api, rule] { answer(c, request, api, &rule); });
    else
        answer(c, request, api, &rule);
}

namespace {

// OpenAI's usage: the whole prompt, and the part its automatic prompt cache served.
qint64 outputTokens(const Rule& rule, const QJsonObject& requestBody) {
    if (!rule.outputAtLimit)
        return rule.outputTokens;
    const QJsonValue limit = requestBody.contains(QStringLiteral("max_completion_tokens"))
                                 ? requestBody.value(QStringLiteral("max_completion_tokens"))
                                 : requestBody.value(QStringLiteral("max_tokens"));
    return limit.toInteger();
}

QJsonObject openAiUsage(const Rule& rule, const QJsonObject& requestBody) {
    const qint64 output = outputTokens(rule, requestBody);
    QJsonObject u{{QStringLiteral("prompt_tokens"), rule.inputTokens},
                  {QStringLiteral("completion_tokens"), output},
                  {QStringLiteral("total_tokens"), rule.inputTokens + output}};
    if (rule.cachedTokens > 0)
        u[QStringLiteral("prompt_tokens_details")] = QJsonObject{{QStringLiteral("cached_tokens"), rule.cachedTokens}};
    return u;
}

// Anthropic's prompt counts: the cache is used only for a prompt that asks for it (a system block
// with cache_control), and then input_tokens counts only what was neither read nor written.
QJsonObject anthropicInputUsage(const Rule& rule, const QJsonObject& requestBody, qint64 outputTokens) {
    bool marked = false;
    for (const QJsonValue& block : requestBody.value(QStringLiteral("system")).toArray())
        marked = marked || block.toObject().contains(QStringLiteral("cache_control"));
    const qint64 read = marked ? rule.cachedTokens : 0;
    const qint64 written = marked ? rule.cacheWriteTokens : 0;
    QJsonObject u{{QStringLiteral("input_tokens"), rule.inputTokens - read - written},
                  {QStringLiteral("output_tokens"), outputTokens}};
    if (marked) {
        u[QStringLiteral("cache_read_input_tokens")] = read;
        u[QStringLiteral("cache_creation_input_tokens")] = written;
    }
    return u;
}

} // namespace

void Server::answer(const std::shared_ptr<Connection>& c, const Request& request, const QString& api,
                    const Rule* rule) {
    const bool openai = api == QLatin1String("openai");
    if (!rule || rule->status != 200) {
        const int status = rule ? rule->status : 500;
        QJsonObject e = rule ? rule->error : QJsonObject{};
        QString message =
            e.value(QStringLiteral("message"))
                .toString(rule ? QStringLiteral("fake error")
                               : QStringLiteral("no rule of the fake server's script matches this request"));
        // Echo the key as careless servers do, so that the client's redaction can be tested.
        QString key = request.headers.value(QStringLiteral("x-api-key")).toString();
        const QString auth = request.headers.value(QStringLiteral("authorization")).toString();
        if (auth.startsWith(QLatin1String("Bearer ")))
            key = auth.mid(7);
        message.replace(QLatin1String("{{key}}"), key);
        const QString type = e.value(QStringLiteral("type"))
                                 .toString(openai ? QStringLiteral("server_error") : QStringLiteral("api_error"));
        QJsonObject body;
        if (openai) {
            const QJsonValue code = e.contains(QStringLiteral("code")) ? e.value(QStringLiteral("code")) : QJsonValue();
            body[QStringLiteral("error")] = QJsonObject{{QStringLiteral("message"), message},
                                                        {QStringLiteral("type"), type},
                                                        {QStringLiteral("param"), QJsonValue()},
                                                        {QStringLiteral("code"), code}};
        } else {
            body[QStringLiteral("type")] = QStringLiteral("error");
            body[QStringLiteral("error")] =
                QJsonObject{{QStringLiteral("type"), type}, {QStringLiteral("message"), message}};
        }
        sendSimple(c, request, status, rule ? rule->headers : QJsonObject{}, "application/json", compact(body));
        return;
    }
    if (rule->mode == QLatin1String("hang"))
        return; // never answers; the connection stays open until the client gives up
    if (rule->mode == QLatin1String("malformed")) {
        const QByteArray broken =
            openai ? QByteArray(
                R"({"id":"chatcmpl-fake","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"unfinis)")
                   : QByteArray(R"({"id":"msg_fake","type":"message","content":[{"type":"text","text":"unfinis)");
        sendSimple(c, request, 200, rule->headers, "application/json", broken);
        return;
    }
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    const bool wantsStream = body.value(QStringLiteral("stream")).toBool();
    const bool stream = rule->mode == QLatin1String("stream") || rule->mode == QLatin1String("truncated")
                        || rule->mode == QLatin1String("stream-error") || (rule->mode.isEmpty() && wantsStream);
    if (stream) {
        sendStream(c, request, api, *rule, body, rule->mode);
        return;
    }
    const QString model = rule->model.isEmpty() ? body.value(QStringLiteral("model")).toString() : rule->model;
    QJsonObject out;
    if (openai) {
        out[QStringLiteral("id")] = QStringLiteral("chatcmpl-fake%1").arg(m_seq);
        out[QStringLiteral("object")] = QStringLiteral("chat.completion");
        out[QStringLiteral("created")] = QDateTime::currentSecsSinceEpoch();
        out[QStringLiteral("model")] = model;
        out[QStringLiteral("choices")] = QJsonArray{QJsonObject{
            {QStringLiteral("index"), 0},
            {QStringLiteral("message"), QJsonObject{{QStringLiteral("role"), QStringLiteral("assistant")},
                                                    {QStringLiteral("content"), rule->text},
                                                    {QStringLiteral("refusal"), QJsonValue()}}},
            {QStringLiteral("logprobs"), QJsonValue()},
            {QStringLiteral("finish_reason"), rule->stopReason.isEmpty() ? QStringLiteral("stop") : rule->stopReason}}};
        if (rule->hasUsage)
            out[QStringLiteral("usage")] = openAiUsage(*rule, body);
        out[QStringLiteral("system_fingerprint")] = QJsonValue();
    } else {
        out[QStringLiteral("id")] = QStringLiteral("msg_fake%1").arg(m_seq);
        out[QStringLiteral("type")] = QStringLiteral("message");
        out[QStringLiteral("role")] = QStringLiteral("assistant");
        out[QStringLiteral("model")] = model;
        out[QStringLiteral("content")] = QJsonArray{
            QJsonObject{{QStringLiteral("type"), QStringLiteral("text")}, {QStringLiteral("text"), rule->text}}};
        out[QStringLiteral("stop_reason")] = rule->stopReason.isEmpty() ? QStringLiteral("end_turn") : rule->stopReason;
        out[QStringLiteral("stop_sequence")] = QJsonValue();
        if (rule->hasUsage)
            out[QStringLiteral("usage")] = anthropicInputUsage(*rule, body, outputTokens(*rule, body));
    }
    sendSimple(c, request, 200, rule->headers, "application/json", compact(out));
}

void Server::sendSimple(const std::shared_ptr<Connection>& c, const Request& request, int status,
                        const QJsonObject& extraHeaders, const QByteArray& contentType, const QByteArray& body) {
    QByteArray head = "HTTP/1.1 " + QByteArray::number(status) + ' ' + reasonPhrase(status) + "\r\n";
    head += "content-type: " + contentType + "\r\n";
    head += "content-length: " + QByteArray::number(body.size()) + "\r\n";
    for (auto it = extraHeaders.begin(); it != extraHeaders.end(); ++it)
        head += it.key().toUtf8() + ": " + it.value().toVariant().toString().toUtf8() + "\r\n";
    if (request.close)
        head += "connection: close\r\n";
    head += "\r\n";
    c->socket->write(head + body);
    finished(c, request.close);
}

void Server::sendStream(const std::shared_ptr<Connection>& c, const Request& request, const QString& api,
                        const Rule& rule, const QJsonObject& requestBody, const QString& mode) {
    const bool openai = api == QLatin1String("openai");
    const bool truncate = mode == QLatin1String("truncated");
    const bool failLate = mode == QLatin1String("stream-error");
    const QString model = rule.model.isEmpty() ? requestBody.value(QStringLiteral("model")).toString() : rule.model;
    QStringList pieces;
    for (qsizetype i = 0; i < rule.text.size(); i += rule.chunkChars)
        pieces << rule.text.mid(i, rule.chunkChars);

    // The events, each one complete with its blank line; "text" marks those that carry text.
    QList<QByteArray> events;
    QList<bool> carriesText;
    auto add = [&](const QByteArray& e, bool text = false) {
        events << e;
        carriesText << text;
    };
    if (openai) {
        const QString id = QStringLiteral("chatcmpl-fake%1").arg(m_seq);
        const qint64 created = QDateTime::currentSecsSinceEpoch();
        const bool includeUsage = requestBody.value(QStringLiteral("stream_options"))
                                      .toObject()
                                      .value(QStringLiteral("include_usage"))
                                      .toBool();
        auto chunk = [&](const QJsonObject& delta, const QJsonValue& finish) {
            QJsonObject o{
                {QStringLiteral("id"), id},
                {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                {QStringLiteral("created"), created},
                {QStringLiteral("model"), model},
                {QStringLiteral("system_fingerprint"), QJsonValue()},
                {QStringLiteral("choices"), QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                                                   {QStringLiteral("delta"), delta},
                                                                   {QStringLiteral("logprobs"), QJsonValue()},
                                                                   {QStringLiteral("finish_reason"), finish}}}}};
            if (includeUsage)
                o[QStringLiteral("usage")] = QJsonValue();
            return "data: " + compact(o) + "\n\n";
        };
        add(chunk(QJsonObject{{QStringLiteral("role"), QStringLiteral("assistant")},
                              {QStringLiteral("content"), QString()},
                              {QStringLiteral("refusal"), QJsonValue()}},
                  QJsonValue()));
        for (const QString& p : pieces)
            add(chunk(QJsonObject{{QStringLiteral("content"), p}}, QJsonValue()), true);
        add(chunk(QJsonObject{}, rule.stopReason.isEmpty() ? QStringLiteral("stop") : rule.stopReason));
        if (includeUsage && rule.hasUsage) {
            const QJsonObject o{{QStringLiteral("id"), id},
                                {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                                {QStringLiteral("created"), created},
                                {QStringLiteral("model"), model},
                                {QStringLiteral("system_fingerprint"), QJsonValue()},
                                {QStringLiteral("choices"), QJsonArray{}},
                                {QStringLiteral("usage"), openAiUsage(rule, requestBody)}};
            add("data: " + compact(o) + "\n\n");
        }
        add("data: [DONE]\n\n");
    } else {
        auto event = [](const char* name, const QJsonObject& o) {
            return QByteArray("event: ") + name + "\ndata: " + compact(o) + "\n\n";
        };
        QJsonObject message{{QStringLiteral("id"), QStringLiteral("msg_fake%1").arg(m_seq)},
                            {QStringLiteral("type"), QStringLiteral("message")},
                            {QStringLiteral("role"), QStringLiteral("assistant")},
                            {QStringLiteral("content"), QJsonArray{}},
                            {QStringLiteral("model"), model},
                            {QStringLiteral("stop_reason"), QJsonValue()},
                            {QStringLiteral("stop_sequence"), QJsonValue()}};
        if (rule.hasUsage)
            message[QStringLiteral("usage")] = anthropicInputUsage(rule, requestBody, 1);
        add(event("message_start",
                  {{QStringLiteral("type"), QStringLiteral("message_start")}, {QStringLiteral("message"), message}}));
        add(event("content_block_start",
                  {{QStringLiteral("type"), QStringLiteral("content_block_start")},
                   {QStringLiteral("index"), 0},
                   {QStringLiteral("content_block"), QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                                                 {QStringLiteral("text"), QString()}}}}));
        add(event("ping", {{QStringLiteral("type"), QStringLiteral("ping")}}));
        for (const QString& p : pieces)
            add(event("content_block_delta",
                      {{QStringLiteral("type"), QStringLiteral("content_block_delta")},
                       {QStringLiteral("index"), 0},
                       {QStringLiteral("delta"), QJsonObject{{QStringLiteral("type"), QStringLiteral("text_delta")},
                                                             {QStringLiteral("text"), p}}}}),
                true);
        add(event("content_block_stop",
                  {{QStringLiteral("type"), QStringLiteral("content_block_stop")}, {QStringLiteral("index"), 0}}));
        QJsonObject delta{{QStringLiteral("type"), QStringLiteral("message_delta")},
                          {QStringLiteral("delta"),
                           QJsonObject{{QStringLiteral("stop_reason"),
                                        rule.stopReason.isEmpty() ? QStringLiteral("end_turn") : rule.stopReason},
                                       {QStringLiteral("stop_sequence"), QJsonValue()}}}};
        if (rule.hasUsage)
            delta[QStringLiteral("usage")] =
                QJsonObject{{QStringLiteral("output_tokens"), outputTokens(rule, requestBody)}};
        add(event("message_delta", delta));
        add(event("message_stop", {{QStringLiteral("type"), QStringLiteral("message_stop")}}));
    }
    if (truncate || failLate) {
        // Keep the events up to about half of the text, then stop as a dropped connection would or
        // report an error as an overloaded server does.
        const qsizetype textEvents = std::count(carriesText.begin(), carriesText.end(), true);
        const qsizetype half = (textEvents + 1) / 2;
        qsizetype keep = 0, seen = 0;
        while (keep < events.size() && seen < half) {
            if (carriesText.at(keep))
                ++seen;
            ++keep;
        }
        keep = std::max<qsizetype>(keep, 1);
        events = events.mid(0, keep);
    }
    if (failLate) {
        const QString type = rule.error.value(QStringLiteral("type")).toString(QStringLiteral("overloaded_error"));
        const QString message = rule.error.value(QStringLiteral("message")).toString(QStringLiteral("Overloaded"));
        if (openai) {
            QJsonObject e{{QStringLiteral("message"), message},
                          {QStringLiteral("type"), type},
                          {QStringLiteral("param"), QJsonValue()},
                          {QStringLiteral("code"), rule.error.value(QStringLiteral("code"))}};
            events << "data: " + compact(QJsonObject{{QStringLiteral("error"), e}}) + "\n\n";
        } else {
            events << "event: error\ndata: "
                          + compact(
                              QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                          {QStringLiteral("error"), QJsonObject{{QStringLiteral("type"), type},
                                                                                {QStringLiteral("message"), message}}}})
                          + "\n\n";
        }
    }

    QByteArray head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
                      "transfer-encoding: chunked\r\n";
    for (auto it = rule.headers.begin(); it != rule.headers.end(); ++it)
        head += it.key().toUtf8() + ": " + it.value().toVariant().toString().toUtf8() + "\r\n";
    if (request.close)
        head += "connection: close\r\n";
    head += "\r\n";
    c->socket->write(head);
    auto chunked = [](const QByteArray& data) { return QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n"; };
    const bool close = request.close || truncate;
    auto end = [this, c, close, truncate] {
        if (!truncate)
            c->socket->write("0\r\n\r\n");
        finished(c, close);
    };
    if (rule.chunkDelayMs <= 0) {
        QByteArray all;
        for (const QByteArray& e : events)
            all += chunked(e);
        c->socket->write(all);
        end();
        return;
    }
    // Paced: one event per tick, so that a client sees the text arrive piece by piece.
    auto index = std::make_shared<qsizetype>(0);
    auto timer = new QTimer(c->socket);
    timer->setInterval(rule.chunkDelayMs);
    QObject::connect(timer, &QTimer::timeout, c->socket, [c, events, index, timer, end, chunked] {
        if (*index < events.size()) {
            c->socket->write(chunked(events.at((*index)++)));
            return;
        }
        timer->stop();
        timer->deleteLater();
        end();
    });
    timer->start();
}

void Server::finished(const std::shared_ptr<Connection>& c, bool close) {
    if (c->inFlight) {
        c->inFlight = false;
        --m_active;
    }
    c->busy = false;
    if (close) {
        c->socket->disconnectFromHost();
        return;
    }
    // A pipelined request may already be waiting in the buffer.
    QTimer::singleShot(0, c->socket, [this, c] { readRequests(c); });
}

int g_signalPipe[2] = {-1, -1};

void onSignal(int) {
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_signalPipe[1], &byte, 1);
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("A fake LLM server (OpenAI and Anthropic APIs) for kforge's tests."));
    parser.addHelpOption();
    parser.addOption({QStringLiteral("port"), QStringLiteral("Port to listen on (0: any free port)."),
                      QStringLiteral("N"), QStringLiteral("0")});
    parser.addOption({QStringLiteral("script"), QStringLiteral("JSON script of rules."), QStringLiteral("FILE")});
    parser.addOption(
        {QStringLiteral("log"), QStringLiteral("Append one JSON line per request."), QStringLiteral("FILE")});
    parser.process(app);

    Server server;
    QString error;
    if (parser.isSet(QStringLiteral("script")) && !server.loadScript(parser.value(QStringLiteral("script")), &error)) {
        std::fprintf(stderr, "kforge-fake-llm-server: %s\n", qPrintable(error));
        return 2;
    }
    if (parser.isSet(QStringLiteral("log")) && !server.openLog(parser.value(QStringLiteral("log")), &error)) {
        std::fprintf(stderr, "kforge-fake-llm-server: %s\n", qPrintable(error));
        return 2;
    }
    if (!server.listen(static_cast<quint16>(parser.value(QStringLiteral("port")).toUInt()))) {
        std::fprintf(stderr, "kforge-fake-llm-server: cannot listen: %s\n", qPrintable(server.errorString()));
        return 2;
    }

    // SIGTERM/SIGINT end the event loop through a pipe, so the process exits normally.
    if (::pipe(g_signalPipe) == 0) {
        auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, &app);
        QObject::connect(notifier, &QSocketNotifier::activated, &app, [] { QCoreApplication::quit(); });
        std::signal(SIGTERM, onSignal);
        std::signal(SIGINT, onSignal);
    }
    // Watch stdin only when it is a pipe or socket: run from a shell with </dev/null it must live.
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        auto* notifier = new QSocketNotifier(STDIN_FILENO, QSocketNotifier::Read, &app);
        QObject::connect(notifier, &QSocketNotifier::activated, &app, [notifier] {
            char buffer[256];
            const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
            if (n <= 0) {
                notifier->setEnabled(false);
                QCoreApplication::quit();
            }
        });
    }

    std::printf("listening %u\n", static_cast<unsigned>(server.port()));
    std::fflush(stdout);
    return app.exec();
}
