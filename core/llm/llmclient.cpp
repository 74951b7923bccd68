#include "llm/llmclient.h"

#include "llm/apiformat.h"
#include "llm/apikeys.h"
#include "llm/sse.h"
#include "util/logging.h"

#include <curl/curl.h>

#include <QDateTime>
#include <QLocale>
#include <QMetaObject>
#include <QTimeZone>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace kforge::llm {

namespace {

using Clock = std::chrono::steady_clock;

// An answer larger than this is not a chat answer; stop reading rather than fill memory.
constexpr qsizetype kMaxResponseBytes = 32 * 1024 * 1024;
constexpr double kMaxRetryAfterSeconds = 120.0;
constexpr double kMaxBackoffSeconds = 60.0;
// The transfer thread wakes at least this often even when nothing happens.
constexpr int kMaxPollMs = 1000;

void initCurlOnce() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

double secondsBetween(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// Retry-After is either delta-seconds or an HTTP-date (RFC 9110).
std::optional<double> parseRetryAfter(const QByteArray& value) {
    const QByteArray v = value.trimmed();
    if (v.isEmpty())
        return std::nullopt;
    bool ok = false;
    const double seconds = v.toDouble(&ok);
    if (ok)
        return std::max(0.0, seconds);
    QString text = QString::fromLatin1(v);
    if (text.endsWith(QLatin1String(" GMT")))
        text.chop(4);
    QDateTime at = QLocale::c().toDateTime(text, QStringLiteral("ddd, dd MMM yyyy HH:mm:ss"));
    if (!at.isValid())
        return std::nullopt;
    at.setTimeZone(QTimeZone::utc());
    return std::max(0.0, QDateTime::currentDateTimeUtc().msecsTo(at) / 1000.0);
}

} // namespace

// One request through all its attempts.
struct Transfer {
    qint64 ticket = 0;
    ChatRequest request;
    LlmClient* client = nullptr;
    int endpoint = 0; // index into the client's endpoints
    QString key;
    QByteArray url;
    QByteArray body;
    HttpHeaders headers;
    curl_slist* headerList = nullptr;
    CURL* easy = nullptr;
    int attempts = 0;
    Clock::time_point firstStart;
    Clock::time_point notBefore;

    // The current attempt.
    int status = 0;
    QByteArray contentType;
    std::optional<double> retryAfter;
    QByteArray response;
    bool eventStream = false;
    bool tooLarge = false;
    bool streamedText = false;
    SseParser parser;
    std::optional<StreamAccumulator> accumulator;
    char errorBuffer[CURL_ERROR_SIZE] = {};

    ~Transfer() {
        if (headerList)
            curl_slist_free_all(headerList);
    }
};

class LlmClient::Worker {
public:
    explicit Worker(LlmClient* client) : m_client(client) {
        initCurlOnce();
        m_multi = curl_multi_init();
        m_queued.resize(static_cast<size_t>(client->m_endpoints.size()));
        m_running.assign(static_cast<size_t>(client->m_endpoints.size()), 0);
        m_refused.resize(static_cast<size_t>(client->m_endpoints.size()));
        m_thread = std::thread([this] { run(); });
    }

    ~Worker() {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        curl_multi_wakeup(m_multi);
        m_thread.join();
        curl_multi_cleanup(m_multi);
    }

    void add(std::unique_ptr<Transfer> transfer) {
        {
            std::lock_guard lock(m_mutex);
            m_incoming.push_back(std::move(transfer));
        }
        curl_multi_wakeup(m_multi);
    }

    void cancel(qint64 ticket) {
        {
            std::lock_guard lock(m_mutex);
            m_cancels.insert(ticket);
        }
        curl_multi_wakeup(m_multi);
    }

    void cancelUpTo(qint64 ticket) {
        {
            std::lock_guard lock(m_mutex);
            m_cancelUpTo = std::max(m_cancelUpTo, ticket);
        }
        curl_multi_wakeup(m_multi);
    }

    // Tickets are counted here so that cancelAll() knows which requests came before it.
    std::atomic<qint64> nextTicket{1};
    std::mutex keyMutex;
    std::map<QString, QString> keys; // endpoint name -> resolved key, never written anywhere

private:
    const Endpoint& endpointOf(const Transfer& t) const { return m_client->m_endpoints.at(t.endpoint); }

    void run() {
        for (;;) {
            std::set<qint64> cancels;
            qint64 cancelUpTo = 0;
            {
                std::lock_guard lock(m_mutex);
                if (m_stop)
                    break;
                for (auto& t : m_incoming)
                    m_queued[static_cast<size_t>(t->endpoint)].push_back(std::move(t));
                m_incoming.clear();
                cancels.swap(m_cancels);
                cancelUpTo = m_cancelUpTo;
            }
            applyCancels(cancels, cancelUpTo);
            promoteWaiting();
            startQueued();

            int stillRunning = 0;
            curl_multi_perform(m_multi, &stillRunning);
            bool completed = false;
            int left = 0;
            while (CURLMsg* msg = curl_multi_info_read(m_multi, &left)) {
                if (msg->msg != CURLMSG_DONE)
                    continue;
                complete(msg->easy_handle, msg->data.result);
                completed = true;
            }
            if (completed)
                continue; // start what the finished transfers made room for before sleeping

            int timeoutMs = kMaxPollMs;
            const auto now = Clock::now();
            for (const auto& t : m_waiting)
                timeoutMs = std::min<int>(
                    timeoutMs,
                    std::max<int>(0, static_cast<int>(std::ceil(secondsBetween(now, t->notBefore) * 1000.0))));
            curl_multi_poll(m_multi, nullptr, 0, timeoutMs, nullptr);
        }
        // Stopping: drop everything without signals; the client is going away.
        for (auto& [easy, t] : m_active) {
            curl_multi_remove_handle(m_multi, easy);
            curl_easy_cleanup(easy);
            t->easy = nullptr;
        }
        m_active.clear();
    }

    void applyCancels(const std::set<qint64>& cancels, qint64 upTo) {
        auto wanted = [&](qint64 ticket) { return ticket <= upTo || cancels.count(ticket) > 0; };
        if (cancels.empty() && upTo <= m_cancelledUpTo)
            return;
        m_cancelledUpTo = upTo;
        std::vector<std::unique_ptr<Transfer>> cancelled;
        for (auto it = m_active.begin(); it != m_active.end();) {
            if (wanted(it->second->ticket)) {
                curl_multi_remove_handle(m_multi, it->first);
                curl_easy_cleanup(it->first);
                it->second->easy = nullptr;
                --m_running[static_cast<size_t>(it->second->endpoint)];
                cancelled.push_back(std::move(it->second));
                it = m_active.erase(it);
            } else {
                ++it;
            }
        }
        for (auto& queue : m_queued)
            for (auto it = queue.begin(); it != queue.end();) {
                if (wanted((*it)->ticket)) {
                    cancelled.push_back(std::move(*it));
                    it = queue.erase(it);
                } else {
                    ++it;
                }
            }
        for (auto it = m_waiting.begin(); it != m_waiting.end();) {
            if (wanted((*it)->ticket)) {
                cancelled.push_back(std::move(*it));
                it = m_waiting.erase(it);
            } else {
                ++it;
            }
        }
        for (auto& t : cancelled) {
            ChatResult r;
            r.error = ErrorKind::Cancelled;
            r.message = QStringLiteral("%1: cancelled").arg(endpointOf(*t).name);
            r.text = t->accumulator ? t->accumulator->text() : QString();
            finish(*t, std::move(r));
        }
    }

    // Retries whose wait is over go first in their endpoint's queue: they were submitted earlier.
    void promoteWaiting() {
        const auto now = Clock::now();
        for (auto it = m_waiting.begin(); it != m_waiting.end();) {
            if ((*it)->notBefore <= now) {
                m_queued[static_cast<size_t>((*it)->endpoint)].push_front(std::move(*it));
                it = m_waiting.erase(it);
            } else {
                ++it;
            }
        }
    }

    void startQueued() {
        for (size_t e = 0; e < m_queued.size(); ++e) {
            if (const auto& refusal = m_refused[e]) {
                // The endpoint refused the key or the quota is spent: nothing more goes to it.
                while (!m_queued[e].empty()) {
                    std::unique_ptr<Transfer> t = std::move(m_queued[e].front());
                    m_queued[e].pop_front();
                    ChatResult r;
                    r.error = refusal->error;
                    r.httpStatus = refusal->httpStatus;
                    r.message = QStringLiteral("%1: not sent, the endpoint refused an earlier request (%2)")
                                    .arg(endpointOf(*t).name, refusal->message);
                    finish(*t, std::move(r));
                }
                continue;
            }
            const int limit = std::max(1, m_client->m_endpoints.at(static_cast<qsizetype>(e)).maxConcurrent);
            while (!m_queued[e].empty() && m_running[e] < limit) {
                std::unique_ptr<Transfer> t = std::move(m_queued[e].front());
                m_queued[e].pop_front();
                start(std::move(t));
            }
        }
    }

    void start(std::unique_ptr<Transfer> t) {
        const Endpoint& ep = endpointOf(*t);
        if (t->attempts == 0)
            t->firstStart = Clock::now();
        ++t->attempts;
        t->status = 0;
        t->contentType.clear();
        t->retryAfter.reset();
        t->response.clear();
        t->eventStream = false;
        t->tooLarge = false;
        t->streamedText = false;
        t->parser.reset();
        t->accumulator.emplace(ep);
        t->errorBuffer[0] = '\0';
        if (!t->headerList) {
            for (const auto& [name, value] : t->headers)
                t->headerList = curl_slist_append(t->headerList, (name + ": " + value).constData());
            // No "Expect: 100-continue" round trip before large prompts.
            t->headerList = curl_slist_append(t->headerList, "Expect:");
        }

        CURL* easy = curl_easy_init();
        t->easy = easy;
        curl_easy_setopt(easy, CURLOPT_URL, t->url.constData());
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, t->body.constData());
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headerList);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Worker::onWrite);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
        curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Worker::onHeader);
        curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
        curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
        curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->errorBuffer);
        // Signals would interrupt the application's threads; the threaded resolver needs none.
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        // In milliseconds, from 1 ms to a year: a setting of 1e300 s is a very long wait, not an
        // overflowing cast.
        const auto millis = [](double seconds) {
            return static_cast<long>(std::clamp(seconds * 1000.0, 1.0, 365.0 * 86400.0 * 1000.0));
        };
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, millis(ep.connectTimeoutSeconds));
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, millis(ep.totalTimeoutSeconds));
        curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(easy, CURLOPT_USERAGENT, "kforge/" KFORGE_VERSION);
        curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");

        qCDebug(lcLlm) << "request" << t->ticket << "to" << ep.name << "model" << t->request.model << "attempt"
                       << t->attempts;
        ++m_running[static_cast<size_t>(t->endpoint)];
        curl_multi_add_handle(m_multi, easy);
        m_active.emplace(easy, std::move(t));
    }

    static size_t onHeader(char* data, size_t size, size_t count, void* user) {
        auto* t = static_cast<Transfer*>(user);
        const size_t n = size * count;
        const QByteArray line = QByteArray(data, static_cast<qsizetype>(n)).trimmed();
        if (line.startsWith("HTTP/")) {
            // A new response (after a 100 Continue, say): forget the previous one's headers.
            const QList<QByteArray> parts = line.split(' ');
            t->status = parts.size() > 1 ? parts.at(1).toInt() : 0;
            t->contentType.clear();
            t->retryAfter.reset();
            return n;
        }
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            return n;
        const QByteArray name = line.left(colon).trimmed().toLower();
        const QByteArray value = line.mid(colon + 1).trimmed();
        if (name == "content-type") {
            t->contentType = value.toLower();
        } else if (name == "retry-after") {
            if (auto s = parseRetryAfter(value))
                t->retryAfter = s;
        } else if (name == "retry-after-ms" && !t->retryAfter) {
            bool ok = false;
            const double ms = value.toDouble(&ok);
            if (ok && ms >= 0)
                t->retryAfter = ms / 1000.0;
        }
        return n;
    }

    static size_t onWrite(char* data, size_t size, size_t count, void* user) {
        auto* t = static_cast<Transfer*>(user);
        const size_t n = size * count;
        const QByteArray bytes = QByteArray::fromRawData(data, static_cast<qsizetype>(n));
        const bool success = t->status >= 200 && t->status < 300;
        if (success && t->contentType.startsWith("text/event-stream")) {
            t->eventStream = true;
            QString delta;
            for (const SseEvent& event : t->parser.feed(bytes))
                delta += t->accumulator->consume(event);
            if (!delta.isEmpty()) {
                t->streamedText = true;
                t->client->postStreamed(t->ticket, delta);
            }
            return n;
        }
        if (t->response.size() + static_cast<qsizetype>(n) > kMaxResponseBytes) {
            t->tooLarge = true;
            return 0; // aborts the transfer with CURLE_WRITE_ERROR
        }
        t->response.append(data, static_cast<qsizetype>(n));
        return n;
    }

    void complete(CURL* easy, CURLcode code) {
        auto it = m_active.find(easy);
        if (it == m_active.end())
            return;
        std::unique_ptr<Transfer> t = std::move(it->second);
        m_active.erase(it);
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(m_multi, easy);
        curl_easy_cleanup(easy);
        t->easy = nullptr;
        --m_running[static_cast<size_t>(t->endpoint)];
        const Endpoint& ep = endpointOf(*t);

        ChatResult r;
        if (t->eventStream) {
            // The last event may lack its blank line when the server closed right after it.
            for (const SseEvent& event : t->parser.finish()) {
                const QString delta = t->accumulator->consume(event);
                if (!delta.isEmpty()) {
                    t->streamedText = true;
                    m_client->postStreamed(t->ticket, delta);
                }
            }
        }
        if (code == CURLE_OK) {
            if (status >= 200 && status < 300)
                r = t->eventStream ? t->accumulator->finish() : parseResponse(ep, t->response);
            else
                r = classifyHttpError(ep, static_cast<int>(status), t->response);
        } else if (t->tooLarge) {
            r.error = ErrorKind::Malformed;
            r.message = QStringLiteral("%1 (%2): the answer is larger than %3 MiB")
                            .arg(ep.name, chatUrl(ep))
                            .arg(kMaxResponseBytes / (1024 * 1024));
        } else {
            r = transportError(*t, code);
        }
        r.httpStatus = static_cast<int>(status);

        const bool retryable = !r.ok && isRetryable(r.error) && !t->streamedText;
        if (retryable && t->attempts <= ep.maxRetries) {
            double delay = 0.0;
            if (t->retryAfter) {
                delay = std::min(*t->retryAfter, kMaxRetryAfterSeconds);
            } else {
                const double base = std::min(ep.backoffSeconds * std::pow(2.0, t->attempts - 1), kMaxBackoffSeconds);
                // Jitter keeps many clients that failed together from retrying together.
                std::uniform_real_distribution<double> jitter(0.8, 1.2);
                delay = base * jitter(m_random);
            }
            qCInfo(lcLlm).noquote() << QStringLiteral("request %1 to %2: attempt %3 failed (%4, %5); retrying in %6 s")
                                           .arg(t->ticket)
                                           .arg(ep.name)
                                           .arg(t->attempts)
                                           .arg(errorKindName(r.error), status > 0
                                                                            ? QStringLiteral("HTTP %1").arg(status)
                                                                            : QStringLiteral("no response"))
                                           .arg(delay, 0, 'f', 2);
            t->notBefore =
                Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
            m_waiting.push_back(std::move(t));
            return;
        }
        if (retryable && t->attempts > 1)
            r.message += QStringLiteral(" (after %1 attempts)").arg(t->attempts);
        finish(*t, std::move(r));
    }

    ChatResult transportError(const Transfer& t, CURLcode code) const {
        const Endpoint& ep = endpointOf(t);
        ChatResult r;
        switch (code) {
        case CURLE_OPERATION_TIMEDOUT:
            r.error = ErrorKind::Timeout;
            break;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
            r.error = ErrorKind::Config;
            break;
        default:
            r.error = ErrorKind::Network;
            break;
        }
        const QString detail = QString::fromUtf8(t.errorBuffer).trimmed();
        const QString reason = QString::fromUtf8(curl_easy_strerror(code))
                               + (detail.isEmpty() ? QString() : QStringLiteral(": ") + detail);
        r.message = QStringLiteral("%1 (%2): %3").arg(ep.name, chatUrl(ep), reason);
        if (r.error == ErrorKind::Timeout)
            r.message += QStringLiteral(" (limits: connect %1 s, total %2 s per attempt)")
                             .arg(ep.connectTimeoutSeconds)
                             .arg(ep.totalTimeoutSeconds);
        if (t.eventStream) {
            // The connection broke in the middle of a stream: keep what arrived. A stream that had
            // already ended properly is a success whatever happened to the connection after it.
            ChatResult partial = t.accumulator->finish();
            if (partial.ok || partial.error != ErrorKind::Truncated)
                return partial;
            if (r.error == ErrorKind::Network) {
                partial.message += QStringLiteral(" (%1)").arg(reason);
            } else {
                partial.error = r.error;
                partial.message = r.message;
            }
            return partial;
        }
        return r;
    }

    void finish(const Transfer& t, ChatResult r) {
        const Endpoint& ep = endpointOf(t);
        r.attempts = t.attempts;
        if (r.model.isEmpty())
            r.model = t.request.model;
        r.latencySeconds = t.attempts > 0 ? secondsBetween(t.firstStart, Clock::now()) : 0.0;
        r.message = redactSecrets(r.message, {t.key});
        if (r.ok)
            r.error = ErrorKind::None;
        r.costUsd = m_client->m_prices.cost(r.model, r.usage);
        if (!r.costUsd && r.model != t.request.model)
            r.costUsd = m_client->m_prices.cost(t.request.model, r.usage);
        if ((r.error == ErrorKind::Auth || r.error == ErrorKind::Quota) && t.attempts > 0
            && !m_refused[static_cast<size_t>(t.endpoint)])
            m_refused[static_cast<size_t>(t.endpoint)] = r;
        if (r.ok || r.error == ErrorKind::Cancelled)
            qCDebug(lcLlm) << "request" << t.ticket << "to" << ep.name << errorKindName(r.error) << "after"
                           << r.attempts << "attempt(s)";
        else
            qCInfo(lcLlm).noquote()
                << QStringLiteral("request %1 failed (%2): %3").arg(t.ticket).arg(errorKindName(r.error), r.message);
        m_client->postFinished(t.ticket, r);
    }

    LlmClient* const m_client;
    CURLM* m_multi = nullptr;
    std::thread m_thread;

    std::mutex m_mutex; // guards the members up to the next blank line
    std::vector<std::unique_ptr<Transfer>> m_incoming;
    std::set<qint64> m_cancels;
    qint64 m_cancelUpTo = 0;
    bool m_stop = false;

    // Owned by the transfer thread.
    std::vector<std::deque<std::unique_ptr<Transfer>>> m_queued; // per endpoint, in submission order
    std::vector<int> m_running;                                  // per endpoint
    // Per endpoint: the answer that refused its key or its quota, after which nothing is sent to it.
    std::vector<std::optional<ChatResult>> m_refused;
    std::map<CURL*, std::unique_ptr<Transfer>> m_active;
    std::vector<std::unique_ptr<Transfer>> m_waiting; // failed attempts waiting for their retry
    qint64 m_cancelledUpTo = 0;
    std::mt19937 m_random{std::random_device{}()};
};

LlmClient::LlmClient(QList<Endpoint> endpoints, PriceTable prices, QObject* parent)
    : QObject(parent), m_endpoints(std::move(endpoints)), m_prices(std::move(prices)) {
    qRegisterMetaType<kforge::llm::ChatResult>();
    if (auto models = ModelTable::loadDefault()) {
        m_models = std::move(*models);
    } else {
        // A broken user file must not silently send the wrong parameters: said, and the built-in
        // table used.
        qWarning("kforge: %s; using the built-in model parameters", models.error().c_str());
        if (auto builtIn = ModelTable::loadDefault(QString()))
            m_models = std::move(*builtIn);
    }
    m_worker = std::make_unique<Worker>(this);
}

LlmClient::~LlmClient() {
    m_worker.reset();
}

Usage LlmClient::worstUsage(const ChatRequest& request, qint64 promptTokens, qint64 systemTokens) const {
    Usage worst;
    worst.inputTokens = promptTokens;
    worst.outputTokens = request.maxTokens;
    if (const qsizetype index = endpointIndex(request.endpoint); index >= 0) {
        const Endpoint& ep = m_endpoints.at(index);
        worst.outputTokens = outputTokenLimit(ep.api, request, m_models.find(request.model));
        if (marksSystemPromptForCache(ep.api, request, ep.cachePrompts))
            worst.cacheWriteTokens = std::min(systemTokens, promptTokens);
    }
    return worst;
}

qsizetype LlmClient::endpointIndex(const QString& name) const {
    qsizetype index = -1;
    for (qsizetype i = 0; i < m_endpoints.size(); ++i)
        if (m_endpoints.at(i).name == name)
            index = i;
    return index;
}

qint64 LlmClient::submit(ChatRequest request) {
    const qint64 ticket = m_worker->nextTicket.fetch_add(1);
    auto refuse = [&](const QString& message) {
        ChatResult r;
        r.error = ErrorKind::Config;
        r.message = message;
        r.model = request.model;
        qCInfo(lcLlm).noquote() << QStringLiteral("request %1 refused: %2").arg(ticket).arg(message);
        postFinished(ticket, r);
        return ticket;
    };
    const qsizetype index = endpointIndex(request.endpoint);
    if (index < 0) {
        QStringList names;
        for (const Endpoint& e : m_endpoints)
            names << e.name;
        return refuse(
            QStringLiteral("unknown LLM endpoint \"%1\" (known: %2)")
                .arg(request.endpoint, names.isEmpty() ? QStringLiteral("none") : names.join(QStringLiteral(", "))));
    }
    const Endpoint& ep = m_endpoints.at(index);

    QString key;
    bool cached = false;
    {
        std::lock_guard lock(m_worker->keyMutex);
        if (auto it = m_worker->keys.find(ep.name); it != m_worker->keys.end()) {
            key = it->second;
            cached = true;
        }
    }
    if (!cached) {
        if (auto problem = m_keyProblems.find(ep.name); problem != m_keyProblems.end())
            return refuse(*problem);
        // Only what needs no waiting: a keyring lookup here would block the caller.
        auto resolved = resolveKeyAtOnce(ep);
        if (!resolved)
            return refuse(
                QStringLiteral("the key of endpoint \"%1\" was not looked up before the request (it may be in the "
                               "system keyring, which is only read ahead of a run)")
                    .arg(ep.name));
        if (!*resolved)
            return refuse(QString::fromStdString(resolved->error()));
        key = **resolved;
        std::lock_guard lock(m_worker->keyMutex);
        m_worker->keys[ep.name] = key;
    }

    auto t = std::make_unique<Transfer>();
    t->ticket = ticket;
    t->endpoint = static_cast<int>(index);
    t->key = key;
    t->url = requestUrl(ep).toUtf8();
    t->body = requestBody(ep.api, request, ep.stream, m_models.find(request.model), ep.cachePrompts);
    t->headers = requestHeaders(ep.api, key, ep.stream);
    t->request = std::move(request);
    t->client = this;
    m_worker->add(std::move(t));
    return ticket;
}

void LlmClient::setKeys(const QHash<QString, QString>& keys, const QHash<QString, QString>& problems) {
    {
        std::lock_guard lock(m_worker->keyMutex);
        for (auto it = keys.begin(); it != keys.end(); ++it)
            m_worker->keys[it.key()] = it.value();
    }
    m_keyProblems = problems;
}

void LlmClient::cancel(qint64 ticket) {
    m_worker->cancel(ticket);
}

void LlmClient::cancelAll() {
    m_worker->cancelUpTo(m_worker->nextTicket.load() - 1);
}

void LlmClient::postFinished(qint64 ticket, const ChatResult& result) {
    // Queued even from the owning thread: finished() never arrives inside submit().
    QMetaObject::invokeMethod(
        this, [this, ticket, result] { emit finished(ticket, result); }, Qt::QueuedConnection);
}

void LlmClient::postStreamed(qint64 ticket, const QString& delta) {
    QMetaObject::invokeMethod(
        this, [this, ticket, delta] { emit streamed(ticket, delta); }, Qt::QueuedConnection);
}

} // namespace kforge::llm
