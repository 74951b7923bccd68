// The LLM transport against kforge-fake-llm-server, a real HTTP server that speaks both APIs as a
// script says: plain and streamed answers, usage and cost, retries (Retry-After, 5xx, 529), errors
// that must not be retried, malformed and truncated answers, timeouts, the concurrency limit,
// cancellation, the bytes on the wire, keys; and the pieces alone: the SSE parser, the price table
// and endpoint parsing. No assertion depends on how fast the machine is.

#include "llm/apiformat.h"
#include "llm/apikeys.h"
#include "llm/endpoints.h"
#include "llm/llmclient.h"
#include "llm/llmsettings.h"
#include "llm/modeltable.h"
#include "llm/pricetable.h"
#include "llm/sse.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <memory>
#include <optional>

using namespace kforge::llm;

namespace {

// Generous: a loaded two-core machine may be slow to start processes. Never a timing assertion.
constexpr int kWaitMs = 20000;

// One fake server process with its own script and request log.
class FakeServer {
public:
    explicit FakeServer(const QTemporaryDir& dir) : m_dir(dir.path()) {}
    ~FakeServer() {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.closeWriteChannel(); // the server exits when its stdin closes
            if (!m_process.waitForFinished(5000)) {
                m_process.kill();
                m_process.waitForFinished(5000);
            }
        }
    }

    bool start(const QJsonArray& rules) {
        static int count = 0;
        ++count;
        const QString script = m_dir + QStringLiteral("/script-%1.json").arg(count);
        m_log = m_dir + QStringLiteral("/requests-%1.jsonl").arg(count);
        QFile f(script);
        if (!f.open(QIODevice::WriteOnly))
            return false;
        f.write(QJsonDocument(QJsonObject{{QStringLiteral("rules"), rules}}).toJson());
        f.close();
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(QStringLiteral(KFORGE_FAKE_LLM_SERVER),
                        {QStringLiteral("--script"), script, QStringLiteral("--log"), m_log});
        if (!m_process.waitForStarted(kWaitMs))
            return false;
        while (!m_process.canReadLine())
            if (!m_process.waitForReadyRead(kWaitMs))
                return false;
        const QByteArray line = m_process.readLine().trimmed();
        if (!line.startsWith("listening "))
            return false;
        m_port = line.mid(10).toInt();
        return m_port > 0;
    }

    QString baseUrl() const { return QStringLiteral("http://127.0.0.1:%1/v1").arg(m_port); }

    QList<QJsonObject> requests() const {
        QList<QJsonObject> out;
        QFile f(m_log);
        if (!f.open(QIODevice::ReadOnly))
            return out;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (!line.trimmed().isEmpty())
                out << QJsonDocument::fromJson(line).object();
        return out;
    }

private:
    QString m_dir;
    QString m_log;
    QProcess m_process;
    int m_port = 0;
};

Endpoint fakeEndpoint(Api api, const QString& baseUrl, bool stream) {
    Endpoint e;
    e.name = QStringLiteral("fake");
    e.api = api;
    e.baseUrl = baseUrl;
    e.keyEnv.clear();
    e.keyring = false;
    e.keyRequired = false;
    e.maxConcurrent = 4;
    e.connectTimeoutSeconds = 10;
    e.totalTimeoutSeconds = 60;
    e.maxRetries = 3;
    e.backoffSeconds = 0.05;
    e.stream = stream;
    return e;
}

ChatRequest chatRequest(Api api) {
    ChatRequest r;
    r.endpoint = QStringLiteral("fake");
    r.model = api == Api::OpenAI ? QStringLiteral("gpt-4o") : QStringLiteral("claude-3-5-sonnet");
    r.system = QStringLiteral("You write fast kernels.");
    r.messages = {Message{QStringLiteral("user"), QStringLiteral("Make it faster.")}};
    r.maxTokens = 1000;
    r.temperature = 0.5;
    return r;
}

PriceTable testPrices() {
    PriceTable t;
    t.set(QStringLiteral("gpt-4o"), Price{2.5, 10.0});
    t.set(QStringLiteral("claude-sonnet-4"), Price{3.0, 15.0});
    t.set(QStringLiteral("claude-3-5-sonnet"), Price{3.0, 15.0});
    return t;
}

QJsonObject rule(std::initializer_list<QPair<QString, QJsonValue>> fields) {
    QJsonObject o;
    for (const auto& [k, v] : fields)
        o[k] = v;
    return o;
}

QJsonObject usage(int input, int output) {
    return QJsonObject{{QStringLiteral("input"), input}, {QStringLiteral("output"), output}};
}

// Waits for the one finished() of `ticket`; nullopt when it never came.
std::optional<ChatResult> waitFor(QSignalSpy& spy, qint64 ticket) {
    std::optional<ChatResult> found;
    (void)QTest::qWaitFor(
        [&] {
            for (const QList<QVariant>& args : spy)
                if (args.at(0).toLongLong() == ticket) {
                    found = args.at(1).value<ChatResult>();
                    return true;
                }
            return false;
        },
        kWaitMs);
    return found;
}

std::optional<ChatResult> runOne(LlmClient& client, const ChatRequest& request) {
    QSignalSpy spy(&client, &LlmClient::finished);
    const qint64 ticket = client.submit(request);
    return waitFor(spy, ticket);
}

void addApiRows() {
    QTest::addColumn<Api>("api");
    QTest::newRow("openai") << Api::OpenAI;
    QTest::newRow("anthropic") << Api::Anthropic;
}

void addApiStreamRows() {
    QTest::addColumn<Api>("api");
    QTest::addColumn<bool>("stream");
    QTest::newRow("openai-json") << Api::OpenAI << false;
    QTest::newRow("openai-stream") << Api::OpenAI << true;
    QTest::newRow("anthropic-json") << Api::Anthropic << false;
    QTest::newRow("anthropic-stream") << Api::Anthropic << true;
}

} // namespace

Q_DECLARE_METATYPE(kforge::llm::Api)

class TestLlmClient : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(m_dir.isValid(), "no temporary folder");
        QVERIFY2(QFile::exists(QStringLiteral(KFORGE_FAKE_LLM_SERVER)), KFORGE_FAKE_LLM_SERVER);
    }

    // --- the parts alone ---

    void sseParserAtEveryBoundary() {
        const QByteArray stream = ": a comment\r\n"
                                  "event: first\r\n"
                                  "data: one\r\n"
                                  "\r\n"
                                  "data: two\n"
                                  "data:  lines\n"
                                  "\n"
                                  "event: third\r"
                                  "data:x\r"
                                  "\r"
                                  "event: no-data\n"
                                  "\n"
                                  "id: 7\n"
                                  "retry: 100\n"
                                  "data: {\"a\": [1, 2]}\r\n"
                                  "\r\n";
        const std::vector<SseEvent> expected{{QStringLiteral("first"), "one"},
                                             {QString(), "two\n lines"},
                                             {QStringLiteral("third"), "x"},
                                             {QString(), "{\"a\": [1, 2]}"}};
        auto check = [&](const std::vector<SseEvent>& got, const QByteArray& what) {
            QVERIFY2(got.size() == expected.size(), what.constData());
            for (size_t i = 0; i < got.size(); ++i) {
                QVERIFY2(got[i].event == expected[i].event, what.constData());
                QVERIFY2(got[i].data == expected[i].data, what.constData());
            }
        };
        for (qsizetype split = 0; split <= stream.size(); ++split) {
            SseParser parser;
            std::vector<SseEvent> got = parser.feed(stream.left(split));
            for (SseEvent& e : parser.feed(stream.mid(split)))
                got.push_back(std::move(e));
            check(got, "split at " + QByteArray::number(split));
        }
        SseParser bytewise;
        std::vector<SseEvent> got;
        for (char c : stream)
            for (SseEvent& e : bytewise.feed(QByteArray(1, c)))
                got.push_back(std::move(e));
        check(got, "byte by byte");

        // A byte order mark first is skipped; finish() delivers an event whose blank line never came.
        SseParser tail;
        QVERIFY(tail.feed("\xEF\xBB").empty());
        QVERIFY(tail.feed("\xBF"
                          "data: [DONE]")
                    .empty());
        const std::vector<SseEvent> last = tail.finish();
        QCOMPARE(last.size(), size_t(1));
        QCOMPARE(last[0].data, QByteArray("[DONE]"));
    }

    void priceTablePrefixMatching() {
        PriceTable t;
        t.set(QStringLiteral("claude-sonnet-4"), Price{3, 15});
        t.set(QStringLiteral("claude-sonnet-4-5"), Price{4, 16});
        t.set(QStringLiteral("gpt-4o"), Price{2.5, 10});
        t.set(QStringLiteral("gpt-4o-mini"), Price{0.15, 0.6});
        t.set(QStringLiteral("gpt-4"), Price{30, 60});
        QCOMPARE(t.find(QStringLiteral("claude-sonnet-4-5-20250929"))->inputPerMillion, 4.0);
        QCOMPARE(t.find(QStringLiteral("claude-sonnet-4-20250514"))->inputPerMillion, 3.0);
        QCOMPARE(t.find(QStringLiteral("gpt-4o-mini-2024-07-18"))->inputPerMillion, 0.15);
        QCOMPARE(t.find(QStringLiteral("gpt-4o"))->inputPerMillion, 2.5);
        QCOMPARE(t.find(QStringLiteral("gpt-4-0613"))->inputPerMillion, 30.0);
        QVERIFY(!t.find(QStringLiteral("llama3:8b")));

        PriceTable onlyGpt4;
        onlyGpt4.set(QStringLiteral("gpt-4"), Price{30, 60});
        QVERIFY2(!onlyGpt4.find(QStringLiteral("gpt-4o")), "gpt-4 must not price gpt-4o");

        Usage u;
        u.inputTokens = 1000;
        QVERIFY2(!t.cost(QStringLiteral("gpt-4o"), u), "unknown output tokens: unknown cost");
        u.outputTokens = 500;
        QCOMPARE(*t.cost(QStringLiteral("gpt-4o"), u), (1000 * 2.5 + 500 * 10.0) / 1e6);
        QVERIFY2(!t.cost(QStringLiteral("qwen2.5-coder"), u), "an unknown model has an unknown cost, not zero");
    }

    void priceTableFiles() {
        auto builtIn = PriceTable::builtIn();
        QVERIFY2(builtIn.ok(), builtIn.ok() ? "" : builtIn.error().c_str());
        for (const char* model : {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5",
                                  "gpt-5-mini", "claude-opus-4", "claude-sonnet-4", "claude-3-5-haiku"})
            QVERIFY2(builtIn->find(QString::fromLatin1(model)), model);
        QVERIFY(builtIn->find(QStringLiteral("claude-sonnet-4-20250514")));

        const QString user = m_dir.filePath(QStringLiteral("llm-prices.json"));
        QFile f(user);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("{\"_comment\": \"mine\", \"models\": {\"gpt-4o\": {\"input\": 1, \"output\": 2}, \"my-local\": "
                "{\"input\": 0, \"output\": 0}}}");
        f.close();
        auto merged = PriceTable::loadDefault(user);
        QVERIFY2(merged.ok(), merged.ok() ? "" : merged.error().c_str());
        QCOMPARE(merged->find(QStringLiteral("gpt-4o"))->inputPerMillion, 1.0);
        QCOMPARE(merged->find(QStringLiteral("gpt-4o"))->outputPerMillion, 2.0);
        QVERIFY(merged->find(QStringLiteral("claude-opus-4")));
        Usage u;
        u.inputTokens = 10;
        u.outputTokens = 10;
        QCOMPARE(*merged->cost(QStringLiteral("my-local"), u), 0.0);

        const QString bad = m_dir.filePath(QStringLiteral("bad-prices.json"));
        QFile b(bad);
        QVERIFY(b.open(QIODevice::WriteOnly | QIODevice::Truncate));
        b.write("{\"models\": {\"x\": {\"input\": \"cheap\", \"output\": 1}}}");
        b.close();
        auto failed = PriceTable::load(bad);
        QVERIFY(!failed.ok());
        QVERIFY2(QString::fromStdString(failed.error()).contains(bad), failed.error().c_str());
        QVERIFY2(QString::fromStdString(failed.error()).contains(QStringLiteral("models.x.input")),
                 failed.error().c_str());
        // A price no model has is a typo, refused before it makes every cost infinite.
        const auto absurd = PriceTable::fromJson(
            QJsonDocument::fromJson(R"({"models": {"x": {"input": 1, "output": 1e300}}})").object(),
            QStringLiteral("prices.json"));
        QVERIFY(!absurd.ok());
        QVERIFY2(QString::fromStdString(absurd.error())
                     .contains(QStringLiteral("models.x.output: expected a number from 0 to 1000000")),
                 absurd.error().c_str());
    }

    // Token counts are whole numbers a server can have counted; anything else (1e300, which no
    // integer holds; a fraction; a negative) leaves the usage, and so the cost, unknown.
    void implausibleTokenCountsAreUnknown_data() { addApiRows(); }
    void implausibleTokenCountsAreUnknown() {
        QFETCH(Api, api);
        const Endpoint endpoint = fakeEndpoint(api, QStringLiteral("http://127.0.0.1:9/v1"), false);
        const QByteArray body =
            api == Api::OpenAI
                ? R"({"model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e300,"completion_tokens":12.5}})"
                : R"({"model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":-4,"output_tokens":9.5e18}})";
        const ChatResult r = parseResponse(endpoint, body);
        QVERIFY2(r.ok, qPrintable(r.message));
        QCOMPARE(r.text, QStringLiteral("hi"));
        QVERIFY(!r.usage.inputTokens);
        QVERIFY(!r.usage.outputTokens);
        const ChatResult counted = parseResponse(
            endpoint,
            api == Api::OpenAI
                ? R"({"choices":[{"message":{"content":""}}],"usage":{"prompt_tokens":120,"completion_tokens":4e9}})"
                : R"({"content":[],"usage":{"input_tokens":120,"output_tokens":4e9}})");
        QCOMPARE(counted.usage.inputTokens.value_or(-1), qint64{120});
        QCOMPARE(counted.usage.outputTokens.value_or(-1), qint64{4000000000});
    }

    void endpointPresets() {
        auto presets = builtInEndpoints();
        QVERIFY2(presets.ok(), presets.ok() ? "" : presets.error().c_str());
        const Endpoint* openai = findEndpoint(*presets, QStringLiteral("openai"));
        const Endpoint* anthropic = findEndpoint(*presets, QStringLiteral("anthropic"));
        const Endpoint* ollama = findEndpoint(*presets, QStringLiteral("ollama"));
        QVERIFY(openai && anthropic && ollama);
        QVERIFY(findEndpoint(*presets, QStringLiteral("vllm")) && findEndpoint(*presets, QStringLiteral("llamacpp")));
        QCOMPARE(openai->baseUrl, QStringLiteral("https://api.openai.com/v1"));
        QCOMPARE(openai->keyEnv, QStringLiteral("OPENAI_API_KEY"));
        QCOMPARE(anthropic->api, Api::Anthropic);
        QCOMPARE(anthropic->keyEnv, QStringLiteral("ANTHROPIC_API_KEY"));
        QCOMPARE(ollama->maxConcurrent, 1);
        QVERIFY(ollama->keyEnv.isEmpty());

        const QString user = m_dir.filePath(QStringLiteral("llm-endpoints.json"));
        QFile f(user);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("{\"endpoints\": [{\"name\": \"openai\", \"maxConcurrent\": 9}, {\"name\": \"lab\", \"baseUrl\": "
                "\"http://10.0.0.5:8000/v1\", \"keyring\": false}]}");
        f.close();
        auto loaded = loadEndpoints(user);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().c_str());
        QCOMPARE(findEndpoint(*loaded, QStringLiteral("openai"))->maxConcurrent, 9);
        QCOMPARE(findEndpoint(*loaded, QStringLiteral("openai"))->keyEnv, QStringLiteral("OPENAI_API_KEY"));
        QVERIFY(findEndpoint(*loaded, QStringLiteral("lab")));

        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("{\"endpoints\": [{\"name\": \"openai\", \"maxConcurent\": 9}]}");
        f.close();
        auto bad = loadEndpoints(user);
        QVERIFY(!bad.ok());
        QVERIFY2(QString::fromStdString(bad.error()).contains(user), bad.error().c_str());
        QVERIFY2(QString::fromStdString(bad.error()).contains(QStringLiteral("maxConcurent")), bad.error().c_str());

        // toJson and fromJson round-trip.
        QString error;
        auto back = Endpoint::fromJson(anthropic->toJson(), &error);
        QVERIFY2(back, qPrintable(error));
        QCOMPARE(back->toJson(), anthropic->toJson());
    }

    void endpointSpec_data() {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("error"); // a part of the message; empty: valid
        QTest::newRow("minimal") << "local=http://127.0.0.1:8000/v1"
                                 << "";
        QTest::newRow("full") << "lab=https://lab.example/v1,api=anthropic,key-env=LAB_KEY,concurrency=2,stream=0,"
                                 "timeout=30,connect-timeout=2,retries=1,backoff=0.5,keyring=1,cache=0"
                              << "";
        QTest::newRow("preset") << "openai,concurrency=7"
                                << "";
        QTest::newRow("no-url") << "local="
                                << "part 1";
        QTest::newRow("bad-scheme") << "local=ftp://x/v1"
                                    << "http://";
        QTest::newRow("unknown-preset") << "nosuch"
                                        << "known endpoint";
        QTest::newRow("bad-api") << "l=http://h/v1,api=gemini"
                                 << "part 2 \"api=gemini\"";
        QTest::newRow("bad-concurrency") << "l=http://h/v1,concurrency=0"
                                         << "part 2";
        QTest::newRow("bad-flag") << "l=http://h/v1,stream=maybe"
                                  << "expected 0 or 1";
        QTest::newRow("unknown-key") << "l=http://h/v1,colour=blue"
                                     << "unknown key \"colour\"";
        QTest::newRow("no-equals") << "l=http://h/v1,stream"
                                   << "KEY=VALUE";
        QTest::newRow("bad-timeout") << "l=http://h/v1,timeout=-1"
                                     << "part 2";
        QTest::newRow("infinite-timeout") << "l=http://h/v1,timeout=inf"
                                          << "expected seconds";
    }

    void endpointSpec() {
        QFETCH(QString, spec);
        QFETCH(QString, error);
        Endpoint preset;
        preset.name = QStringLiteral("openai");
        preset.baseUrl = QStringLiteral("https://api.openai.com/v1");
        preset.keyEnv = QStringLiteral("OPENAI_API_KEY");
        auto parsed = parseEndpointSpec(spec, {preset});
        if (error.isEmpty()) {
            QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().c_str());
            if (spec.startsWith(QLatin1String("lab="))) {
                QCOMPARE(parsed->name, QStringLiteral("lab"));
                QCOMPARE(parsed->api, Api::Anthropic);
                QCOMPARE(parsed->keyEnv, QStringLiteral("LAB_KEY"));
                QVERIFY(parsed->keyRequired);
                QVERIFY(parsed->keyring);
                QCOMPARE(parsed->maxConcurrent, 2);
                QCOMPARE(parsed->stream, false);
                QCOMPARE(parsed->totalTimeoutSeconds, 30.0);
                QCOMPARE(parsed->connectTimeoutSeconds, 2.0);
                QCOMPARE(parsed->maxRetries, 1);
                QCOMPARE(parsed->backoffSeconds, 0.5);
                QVERIFY(!parsed->cachePrompts);
            } else if (spec.startsWith(QLatin1String("openai"))) {
                QCOMPARE(parsed->maxConcurrent, 7);
                QCOMPARE(parsed->keyEnv, QStringLiteral("OPENAI_API_KEY"));
            } else {
                QVERIFY2(!parsed->keyRequired, "a command-line endpoint without key-env needs no key");
                QVERIFY2(parsed->cachePrompts, "the prompt cache is used unless turned off");
            }
        } else {
            QVERIFY(!parsed.ok());
            QVERIFY2(QString::fromStdString(parsed.error()).contains(error), parsed.error().c_str());
        }
    }

    void keysAndRedaction() {
        Endpoint e;
        e.name = QStringLiteral("x");
        e.keyring = false;
        QCOMPARE(*resolveKey(e), QString());
        e.keyEnv = QStringLiteral("KFORGE_TEST_RESOLVE_KEY");
        qputenv("KFORGE_TEST_RESOLVE_KEY", "sk-from-env");
        QCOMPARE(*resolveKey(e), QStringLiteral("sk-from-env"));
        qunsetenv("KFORGE_TEST_RESOLVE_KEY");
        e.keyRequired = false;
        QCOMPARE(*resolveKey(e), QString());
        e.keyRequired = true;
        auto missing = resolveKey(e);
        QVERIFY(!missing.ok());
        QVERIFY2(QString::fromStdString(missing.error()).contains(QStringLiteral("export KFORGE_TEST_RESOLVE_KEY=")),
                 missing.error().c_str());
        QVERIFY2(QString::fromStdString(missing.error()).contains(QStringLiteral("kforge llm set-key x")),
                 missing.error().c_str());
        QCOMPARE(redactSecrets(QStringLiteral("bad key sk-1 and sk-1"), {QStringLiteral("sk-1"), QString()}),
                 QStringLiteral("bad key [redacted] and [redacted]"));
    }

    // --- against the fake server ---

    void plainAnswer_data() { addApiRows(); }
    void plainAnswer() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("__global__ void k() {}")},
                                    {QStringLiteral("usage"), usage(12, 34)}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), false)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->error, ErrorKind::None);
        QCOMPARE(r->text, QStringLiteral("__global__ void k() {}"));
        QCOMPARE(r->stopReason, api == Api::OpenAI ? QStringLiteral("stop") : QStringLiteral("end_turn"));
        QCOMPARE(r->model, chatRequest(api).model);
        QCOMPARE(*r->usage.inputTokens, qint64(12));
        QCOMPARE(*r->usage.outputTokens, qint64(34));
        const double expected = api == Api::OpenAI ? (12 * 2.5 + 34 * 10.0) / 1e6 : (12 * 3.0 + 34 * 15.0) / 1e6;
        QVERIFY(r->costUsd);
        QVERIFY(qFuzzyCompare(*r->costUsd, expected));
        QCOMPARE(r->attempts, 1);
        QCOMPARE(r->httpStatus, 200);
        QVERIFY(r->latencySeconds >= 0.0);
    }

    // The prompt cache: Anthropic's only for a system prompt marked for it (the endpoint's
    // cachePrompts), OpenAI's always. Tokens read from it or written to it are counted within
    // the input and priced apart, so the cost is the one the API bills.
    void promptCacheIsPricedApart_data() {
        QTest::addColumn<Api>("api");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<bool>("cachePrompts");
        for (const bool stream : {false, true}) {
            const QString how = stream ? QStringLiteral("stream") : QStringLiteral("json");
            QTest::newRow(qPrintable(QStringLiteral("openai-%1").arg(how))) << Api::OpenAI << stream << true;
            QTest::newRow(qPrintable(QStringLiteral("anthropic-%1").arg(how))) << Api::Anthropic << stream << true;
            QTest::newRow(qPrintable(QStringLiteral("anthropic-%1-uncached").arg(how)))
                << Api::Anthropic << stream << false;
        }
    }

    void promptCacheIsPricedApart() {
        QFETCH(Api, api);
        QFETCH(bool, stream);
        QFETCH(bool, cachePrompts);
        FakeServer server(m_dir);
        QJsonObject counts = usage(3000, 200);
        counts[QStringLiteral("cached")] = 2000;
        counts[QStringLiteral("cache_write")] = api == Api::Anthropic ? 500 : 0;
        QVERIFY(
            server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}, {QStringLiteral("usage"), counts}})}));
        PriceTable prices;
        Price gpt{2.5, 10.0};
        gpt.cachedInputPerMillion = 1.25;
        prices.set(QStringLiteral("gpt-4o"), gpt);
        Price claude{3.0, 15.0};
        claude.cachedInputPerMillion = 0.3;
        claude.cacheWritePerMillion = 3.75;
        prices.set(QStringLiteral("claude-3-5-sonnet"), claude);
        Endpoint endpoint = fakeEndpoint(api, server.baseUrl(), stream);
        endpoint.cachePrompts = cachePrompts;
        LlmClient client({endpoint}, prices);
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->usage.inputTokens.value_or(-1), qint64{3000});
        QCOMPARE(r->usage.outputTokens.value_or(-1), qint64{200});
        double expected = 0.0;
        if (api == Api::OpenAI) {
            QCOMPARE(r->usage.cachedInputTokens.value_or(-1), qint64{2000});
            expected = (1000 * 2.5 + 2000 * 1.25 + 200 * 10.0) / 1e6;
        } else if (cachePrompts) {
            QCOMPARE(r->usage.cachedInputTokens.value_or(-1), qint64{2000});
            QCOMPARE(r->usage.cacheWriteTokens.value_or(-1), qint64{500});
            expected = (500 * 3.0 + 2000 * 0.3 + 500 * 3.75 + 200 * 15.0) / 1e6;
        } else {
            QVERIFY2(!r->usage.cachedInputTokens && !r->usage.cacheWriteTokens, "nothing was asked of the cache");
            expected = (3000 * 3.0 + 200 * 15.0) / 1e6;
        }
        QVERIFY(r->costUsd);
        QVERIFY2(qFuzzyCompare(*r->costUsd, expected), qPrintable(QString::number(*r->costUsd, 'g', 10)));
        // What was sent: Anthropic's system prompt as a cached block only when the endpoint asks.
        const QJsonObject body = server.requests().at(0).value(QStringLiteral("body")).toObject();
        if (api == Api::Anthropic)
            QCOMPARE(body.value(QStringLiteral("system")).isArray(), cachePrompts);
    }

    // Without a cached price a cached token costs the input price; a written one 1.25 times it.
    void cachePricesDefault() {
        PriceTable prices;
        prices.set(QStringLiteral("m"), Price{2.0, 8.0});
        Usage u;
        u.inputTokens = 1000;
        u.outputTokens = 100;
        u.cachedInputTokens = 600;
        u.cacheWriteTokens = 300;
        QVERIFY(
            qFuzzyCompare(*prices.cost(QStringLiteral("m"), u), (100 * 2.0 + 600 * 2.0 + 300 * 2.5 + 100 * 8.0) / 1e6));
        // Counts beyond the prompt (a server's mistake) are held to it.
        u.cachedInputTokens = 5000;
        QVERIFY(qFuzzyCompare(*prices.cost(QStringLiteral("m"), u), (1000 * 2.0 + 100 * 8.0) / 1e6));
    }

    void streamedAnswer_data() { addApiRows(); }
    void streamedAnswer() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        const QString text = QStringLiteral("Tiles of 32x32 in shared memory, then unroll the inner loop by 4.");
        // The server names a dated model; the price comes from the longest matching prefix.
        const QString dated =
            api == Api::OpenAI ? QStringLiteral("gpt-4o-2024-08-06") : QStringLiteral("claude-sonnet-4-20250514");
        QVERIFY(server.start({rule({{QStringLiteral("text"), text},
                                    {QStringLiteral("model"), dated},
                                    {QStringLiteral("usage"), usage(100, 20)},
                                    {QStringLiteral("chunk_chars"), 5}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        QSignalSpy deltas(&client, &LlmClient::streamed);
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->text, text);
        QCOMPARE(r->model, dated);
        QCOMPARE(*r->usage.inputTokens, qint64(100));
        QCOMPARE(*r->usage.outputTokens, qint64(20));
        const double expected = api == Api::OpenAI ? (100 * 2.5 + 20 * 10.0) / 1e6 : (100 * 3.0 + 20 * 15.0) / 1e6;
        QVERIFY(r->costUsd && qFuzzyCompare(*r->costUsd, expected));
        QCOMPARE(r->stopReason, api == Api::OpenAI ? QStringLiteral("stop") : QStringLiteral("end_turn"));
        // The deltas, delivered before finished(), add up to the text.
        QString assembled;
        for (const QList<QVariant>& args : deltas)
            assembled += args.at(1).toString();
        QCOMPARE(assembled, text);
    }

    void streamWithoutUsage_data() { addApiRows(); }
    void streamWithoutUsage() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("no usage here")}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->text, QStringLiteral("no usage here"));
        QVERIFY(!r->usage.known());
        QVERIFY2(!r->costUsd.has_value(), "unknown usage must give an unknown cost, not zero");
    }

    void retryAfterIsHonoured_data() { addApiRows(); }
    void retryAfterIsHonoured() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        QVERIFY(server.start(
            {rule({{QStringLiteral("status"), 429},
                   {QStringLiteral("times"), 1},
                   {QStringLiteral("headers"), QJsonObject{{QStringLiteral("Retry-After"), QStringLiteral("1")}}},
                   {QStringLiteral("error"),
                    QJsonObject{{QStringLiteral("type"),
                                 api == Api::OpenAI ? QStringLiteral("requests") : QStringLiteral("rate_limit_error")},
                                {QStringLiteral("code"), QStringLiteral("rate_limit_exceeded")},
                                {QStringLiteral("message"), QStringLiteral("Rate limit reached")}}}}),
             rule({{QStringLiteral("text"), QStringLiteral("after the wait")}})}));
        Endpoint e = fakeEndpoint(api, server.baseUrl(), true);
        // A backoff far beyond the test's patience: only honouring Retry-After (1 s) finishes in time.
        e.backoffSeconds = 600;
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->attempts, 2);
        QCOMPARE(r->text, QStringLiteral("after the wait"));
        const QList<QJsonObject> log = server.requests();
        QCOMPARE(log.size(), 2);
        QCOMPARE(log.at(0).value(QStringLiteral("rule")).toInt(), 0);
        QCOMPARE(log.at(1).value(QStringLiteral("rule")).toInt(), 1);
        // The second request came no sooner than Retry-After allows. A lower bound only: a slow
        // machine makes the gap longer, never shorter.
        const qint64 gap = log.at(1).value(QStringLiteral("time_ms")).toInteger()
                           - log.at(0).value(QStringLiteral("time_ms")).toInteger();
        QVERIFY2(gap >= 950, qPrintable(QStringLiteral("retried after %1 ms").arg(gap)));
    }

    void serverErrorsAreRetried_data() {
        QTest::addColumn<Api>("api");
        QTest::addColumn<int>("status");
        QTest::newRow("openai-500") << Api::OpenAI << 500;
        QTest::newRow("openai-503") << Api::OpenAI << 503;
        QTest::newRow("anthropic-500") << Api::Anthropic << 500;
        QTest::newRow("anthropic-529-overloaded") << Api::Anthropic << 529;
    }
    void serverErrorsAreRetried() {
        QFETCH(Api, api);
        QFETCH(int, status);
        FakeServer server(m_dir);
        QVERIFY(
            server.start({rule({{QStringLiteral("status"), status},
                                {QStringLiteral("times"), 2},
                                {QStringLiteral("error"),
                                 QJsonObject{{QStringLiteral("type"), status == 529 ? QStringLiteral("overloaded_error")
                                                                                    : QStringLiteral("api_error")},
                                             {QStringLiteral("message"), QStringLiteral("Overloaded")}}}}),
                          rule({{QStringLiteral("text"), QStringLiteral("third time lucky")}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->attempts, 3);
        QCOMPARE(r->text, QStringLiteral("third time lucky"));
        QCOMPARE(server.requests().size(), 3);

        // Still failing after every retry: Server, with the status and the retries in the message.
        FakeServer failing(m_dir);
        QVERIFY(failing.start(
            {rule({{QStringLiteral("status"), status},
                   {QStringLiteral("error"), QJsonObject{{QStringLiteral("message"), QStringLiteral("down")}}}})}));
        Endpoint e = fakeEndpoint(api, failing.baseUrl(), false);
        e.maxRetries = 1;
        LlmClient client2({e}, testPrices());
        const auto f = runOne(client2, chatRequest(api));
        QVERIFY(f);
        QCOMPARE(f->error, ErrorKind::Server);
        QCOMPARE(f->attempts, 2);
        QCOMPARE(f->httpStatus, status);
        QVERIFY2(f->message.contains(QString::number(status)) && f->message.contains(QStringLiteral("down")),
                 qPrintable(f->message));
    }

    void authFailureIsNotRetriedAndKeyNotShown_data() { addApiRows(); }
    void authFailureIsNotRetriedAndKeyNotShown() {
        QFETCH(Api, api);
        const QByteArray secret = "sk-test-SECRET-0123456789";
        qputenv("KFORGE_TEST_LLM_KEY", secret);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule(
            {{QStringLiteral("status"), 401},
             {QStringLiteral("error"),
              QJsonObject{{QStringLiteral("type"), QStringLiteral("authentication_error")},
                          {QStringLiteral("message"), QStringLiteral("Incorrect API key provided: {{key}}")}}}})}));
        Endpoint e = fakeEndpoint(api, server.baseUrl(), true);
        e.keyEnv = QStringLiteral("KFORGE_TEST_LLM_KEY");
        e.keyRequired = true;
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        qunsetenv("KFORGE_TEST_LLM_KEY");
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Auth);
        QCOMPARE(r->attempts, 1);
        QCOMPARE(r->httpStatus, 401);
        QVERIFY2(r->message.contains(QStringLiteral("401")) && r->message.contains(QStringLiteral("fake"))
                     && r->message.contains(QStringLiteral("Incorrect API key provided")),
                 qPrintable(r->message));
        QVERIFY2(!r->message.contains(QString::fromLatin1(secret)), qPrintable(r->message));
        QVERIFY2(r->message.contains(QStringLiteral("KFORGE_TEST_LLM_KEY")), qPrintable(r->message));
        const QList<QJsonObject> log = server.requests();
        QCOMPARE(log.size(), 1);
        // The key did go to the server, in the API's header.
        const QJsonObject headers = log.at(0).value(QStringLiteral("headers")).toObject();
        if (api == Api::OpenAI)
            QCOMPARE(headers.value(QStringLiteral("authorization")).toString(),
                     QStringLiteral("Bearer ") + QString::fromLatin1(secret));
        else
            QCOMPARE(headers.value(QStringLiteral("x-api-key")).toString(), QString::fromLatin1(secret));
    }

    void quotaIsNotRetried_data() {
        QTest::addColumn<Api>("api");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("code");
        QTest::newRow("openai-insufficient-quota") << Api::OpenAI << 429 << "insufficient_quota"
                                                   << "insufficient_quota";
        QTest::newRow("anthropic-billing") << Api::Anthropic << 402 << "billing_error"
                                           << "";
        QTest::newRow("anthropic-billing-429") << Api::Anthropic << 429 << "billing_error"
                                               << "";
    }
    void quotaIsNotRetried() {
        QFETCH(Api, api);
        QFETCH(int, status);
        QFETCH(QString, type);
        QFETCH(QString, code);
        FakeServer server(m_dir);
        QJsonObject error{{QStringLiteral("type"), type},
                          {QStringLiteral("message"), QStringLiteral("You exceeded your current quota")}};
        if (!code.isEmpty())
            error[QStringLiteral("code")] = code;
        QVERIFY(server.start({rule({{QStringLiteral("status"), status}, {QStringLiteral("error"), error}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Quota);
        QCOMPARE(r->attempts, 1);
        QCOMPARE(server.requests().size(), 1);
    }

    void requestErrorIsNotRetried() {
        FakeServer server(m_dir);
        QVERIFY(server.start(
            {rule({{QStringLiteral("status"), 404},
                   {QStringLiteral("error"),
                    QJsonObject{{QStringLiteral("type"), QStringLiteral("invalid_request_error")},
                                {QStringLiteral("code"), QStringLiteral("model_not_found")},
                                {QStringLiteral("message"), QStringLiteral("The model does not exist")}}}})}));
        LlmClient client({fakeEndpoint(Api::OpenAI, server.baseUrl(), false)}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Request);
        QCOMPARE(r->attempts, 1);
        QVERIFY2(r->message.contains(QStringLiteral("The model does not exist")), qPrintable(r->message));
    }

    void malformedAnswer_data() { addApiRows(); }
    void malformedAnswer() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("mode"), QStringLiteral("malformed")}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Malformed);
        QCOMPARE(r->attempts, 1);
        QCOMPARE(server.requests().size(), 1);
        QVERIFY(!r->costUsd);
    }

    void truncatedStream_data() { addApiRows(); }
    void truncatedStream() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        const QString text = QStringLiteral("0123456789abcdefghijklmnopqrstuvwxyz");
        QVERIFY(server.start({rule({{QStringLiteral("mode"), QStringLiteral("truncated")},
                                    {QStringLiteral("text"), text},
                                    {QStringLiteral("chunk_chars"), 4},
                                    {QStringLiteral("usage"), usage(5, 9)}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Truncated);
        QVERIFY(!r->ok);
        QVERIFY2(!r->text.isEmpty() && r->text.size() < text.size() && text.startsWith(r->text), qPrintable(r->text));
        QCOMPARE(r->attempts, 1);
    }

    void errorInTheStream_data() { addApiRows(); }
    void errorInTheStream() {
        QFETCH(Api, api);
        const QJsonObject overloaded{{QStringLiteral("type"), QStringLiteral("overloaded_error")},
                                     {QStringLiteral("message"), QStringLiteral("Overloaded")}};
        // Before any text: retried like a 529.
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("mode"), QStringLiteral("stream-error")},
                                    {QStringLiteral("times"), 1},
                                    {QStringLiteral("error"), overloaded}}),
                              rule({{QStringLiteral("text"), QStringLiteral("second try")}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        QCOMPARE(r->attempts, 2);
        QCOMPARE(r->text, QStringLiteral("second try"));

        // After some text: not retried (the text was already delivered), the partial text kept.
        FakeServer late(m_dir);
        const QString text = QStringLiteral("abcdefghijklmnop");
        QVERIFY(late.start({rule({{QStringLiteral("mode"), QStringLiteral("stream-error")},
                                  {QStringLiteral("text"), text},
                                  {QStringLiteral("chunk_chars"), 2},
                                  {QStringLiteral("error"), overloaded}})}));
        LlmClient client2({fakeEndpoint(api, late.baseUrl(), true)}, testPrices());
        const auto f = runOne(client2, chatRequest(api));
        QVERIFY(f);
        QCOMPARE(f->error, ErrorKind::Server);
        QCOMPARE(f->attempts, 1);
        QVERIFY2(f->message.contains(QStringLiteral("Overloaded")), qPrintable(f->message));
        QVERIFY2(!f->text.isEmpty() && text.startsWith(f->text) && f->text.size() < text.size(), qPrintable(f->text));
    }

    void totalTimeout_data() { addApiRows(); }
    void totalTimeout() {
        QFETCH(Api, api);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("mode"), QStringLiteral("hang")}})}));
        Endpoint e = fakeEndpoint(api, server.baseUrl(), true);
        e.totalTimeoutSeconds = 0.5;
        e.maxRetries = 0;
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(api));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Timeout);
        QCOMPARE(r->attempts, 1);
        QCOMPARE(r->httpStatus, 0);
    }

    void networkError() {
        // Nothing listens on the port of a server that has exited.
        int port = 0;
        {
            FakeServer gone(m_dir);
            QVERIFY(gone.start({}));
            port = QUrl(gone.baseUrl()).port();
        }
        Endpoint e = fakeEndpoint(Api::OpenAI, QStringLiteral("http://127.0.0.1:%1/v1").arg(port), false);
        e.maxRetries = 1;
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Network);
        QCOMPARE(r->attempts, 2);
    }

    void concurrencyLimit() {
        FakeServer server(m_dir);
        QVERIFY(server.start(
            {rule({{QStringLiteral("delay_ms"), 300}, {QStringLiteral("text"), QStringLiteral("one at a time")}})}));
        Endpoint e = fakeEndpoint(Api::OpenAI, server.baseUrl(), true);
        e.maxConcurrent = 1;
        LlmClient client({e}, testPrices());
        QSignalSpy spy(&client, &LlmClient::finished);
        QList<qint64> tickets;
        for (int i = 0; i < 3; ++i)
            tickets << client.submit(chatRequest(Api::OpenAI));
        for (qint64 t : tickets) {
            const auto r = waitFor(spy, t);
            QVERIFY(r);
            QVERIFY2(r->ok, qPrintable(r->message));
        }
        const QList<QJsonObject> log = server.requests();
        QCOMPARE(log.size(), 3);
        // Each request arrived while no other one was being answered.
        for (const QJsonObject& line : log)
            QCOMPARE(line.value(QStringLiteral("active")).toInt(), 0);
        QCOMPARE(spy.count(), 3);
    }

    void requestOnTheWire_data() { addApiStreamRows(); }
    void requestOnTheWire() {
        QFETCH(Api, api);
        QFETCH(bool, stream);
        qputenv("KFORGE_TEST_WIRE_KEY", "sk-wire-key");
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}})}));
        Endpoint e = fakeEndpoint(api, server.baseUrl(), stream);
        e.keyEnv = QStringLiteral("KFORGE_TEST_WIRE_KEY");
        LlmClient client({e}, testPrices());
        ChatRequest request = chatRequest(api);
        request.messages << Message{QStringLiteral("assistant"), QStringLiteral("Which kernel?")}
                         << Message{QStringLiteral("user"), QStringLiteral("The GEMM.")};
        const auto r = runOne(client, request);
        qunsetenv("KFORGE_TEST_WIRE_KEY");
        QVERIFY(r && r->ok);
        const QList<QJsonObject> log = server.requests();
        QCOMPARE(log.size(), 1);
        const QJsonObject body = log.at(0).value(QStringLiteral("body")).toObject();
        const QJsonObject headers = log.at(0).value(QStringLiteral("headers")).toObject();
        const QJsonArray messages = body.value(QStringLiteral("messages")).toArray();
        QCOMPARE(body.value(QStringLiteral("model")).toString(), request.model);
        QCOMPARE(body.value(QStringLiteral("max_tokens")).toInt(), 1000);
        QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 0.5);
        QCOMPARE(body.value(QStringLiteral("stream")).toBool(), stream);
        QVERIFY(
            headers.value(QStringLiteral("content-type")).toString().startsWith(QStringLiteral("application/json")));
        if (api == Api::OpenAI) {
            QVERIFY(
                log.at(0).value(QStringLiteral("path")).toString().endsWith(QStringLiteral("/v1/chat/completions")));
            QCOMPARE(messages.size(), 4);
            QCOMPARE(messages.at(0).toObject().value(QStringLiteral("role")).toString(), QStringLiteral("system"));
            QCOMPARE(messages.at(0).toObject().value(QStringLiteral("content")).toString(), request.system);
            QCOMPARE(messages.at(3).toObject().value(QStringLiteral("content")).toString(),
                     QStringLiteral("The GEMM."));
            QVERIFY(!body.contains(QStringLiteral("system")));
            QCOMPARE(
                body.value(QStringLiteral("stream_options")).toObject().value(QStringLiteral("include_usage")).toBool(),
                stream);
            QCOMPARE(body.contains(QStringLiteral("stream_options")), stream);
            QCOMPARE(headers.value(QStringLiteral("authorization")).toString(), QStringLiteral("Bearer sk-wire-key"));
            QVERIFY(!headers.contains(QStringLiteral("x-api-key")));
        } else {
            QVERIFY(log.at(0).value(QStringLiteral("path")).toString().endsWith(QStringLiteral("/v1/messages")));
            // The system prompt, the same for all of a run's calls, goes as one block marked for
            // the prompt cache.
            const QJsonArray system = body.value(QStringLiteral("system")).toArray();
            QCOMPARE(system.size(), 1);
            QCOMPARE(system.at(0).toObject().value(QStringLiteral("type")).toString(), QStringLiteral("text"));
            QCOMPARE(system.at(0).toObject().value(QStringLiteral("text")).toString(), request.system);
            QCOMPARE(system.at(0)
                         .toObject()
                         .value(QStringLiteral("cache_control"))
                         .toObject()
                         .value(QStringLiteral("type"))
                         .toString(),
                     QStringLiteral("ephemeral"));
            QCOMPARE(messages.size(), 3);
            for (const QJsonValue& m : messages)
                QVERIFY(m.toObject().value(QStringLiteral("role")).toString() != QLatin1String("system"));
            QCOMPARE(messages.at(1).toObject().value(QStringLiteral("role")).toString(), QStringLiteral("assistant"));
            QVERIFY(!body.contains(QStringLiteral("stream_options")));
            QCOMPARE(headers.value(QStringLiteral("x-api-key")).toString(), QStringLiteral("sk-wire-key"));
            QCOMPARE(headers.value(QStringLiteral("anthropic-version")).toString(), QStringLiteral("2023-06-01"));
            QVERIFY(!headers.contains(QStringLiteral("authorization")));
        }
    }

    // Each model family is sent what its API accepts (resources/llm/models.json): OpenAI's reasoning
    // models max_completion_tokens and no temperature, Anthropic's thinking models extended
    // thinking with max_tokens grown by its budget, the others max_tokens and the temperature. The
    // fake server refuses what the real APIs refuse, so each call must succeed.
    void parametersFollowTheModel_data() {
        QTest::addColumn<Api>("api");
        QTest::addColumn<QString>("model");
        QTest::newRow("o1") << Api::OpenAI << QStringLiteral("o1");
        QTest::newRow("o3-mini dated") << Api::OpenAI << QStringLiteral("o3-mini-2025-01-31");
        QTest::newRow("gpt-5") << Api::OpenAI << QStringLiteral("gpt-5");
        QTest::newRow("gpt-5-mini") << Api::OpenAI << QStringLiteral("gpt-5-mini");
        QTest::newRow("gpt-4o") << Api::OpenAI << QStringLiteral("gpt-4o");
        QTest::newRow("claude-sonnet-4-5") << Api::Anthropic << QStringLiteral("claude-sonnet-4-5-20250929");
        QTest::newRow("claude-3-5-haiku") << Api::Anthropic << QStringLiteral("claude-3-5-haiku");
    }
    void parametersFollowTheModel() {
        QFETCH(Api, api);
        QFETCH(QString, model);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}})}));
        LlmClient client({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
        ChatRequest request = chatRequest(api);
        request.model = model;
        request.temperature = 0.8;
        const auto r = runOne(client, request);
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        const QJsonObject body = server.requests().at(0).value(QStringLiteral("body")).toObject();
        const bool reasoning = api == Api::OpenAI && model != QLatin1String("gpt-4o");
        const bool thinking = model.startsWith(QLatin1String("claude-sonnet-4"));
        QCOMPARE(body.contains(QStringLiteral("max_completion_tokens")), reasoning);
        QCOMPARE(body.contains(QStringLiteral("max_tokens")), !reasoning);
        QCOMPARE(body.contains(QStringLiteral("temperature")), !reasoning && !thinking);
        QCOMPARE(body.contains(QStringLiteral("thinking")), thinking);
        if (reasoning)
            QCOMPARE(body.value(QStringLiteral("max_completion_tokens")).toInt(), 1000);
        if (thinking) {
            const int budget =
                body.value(QStringLiteral("thinking")).toObject().value(QStringLiteral("budget_tokens")).toInt();
            QVERIFY(budget >= 1024);
            QCOMPARE(body.value(QStringLiteral("max_tokens")).toInt(), 1000 + budget);
        }
        if (!reasoning && !thinking)
            QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 0.8);

        // Without the table, the old parameters are refused as the real API refuses them.
        if (reasoning) {
            LlmClient plain({fakeEndpoint(api, server.baseUrl(), true)}, testPrices());
            plain.setModels(ModelTable{});
            const auto refused = runOne(plain, request);
            QVERIFY(refused);
            QCOMPARE(refused->error, ErrorKind::Request);
            QVERIFY2(refused->message.contains(QStringLiteral("max_completion_tokens")), qPrintable(refused->message));
        }
    }

    // What the budget reserves for a call covers what the call can be billed for: as output the
    // limit the body sends (max_tokens with any thinking budget on top), and where the system
    // prompt is marked for the cache, its writing, which costs more than input.
    void worstUsageCoversTheRequest_data() {
        QTest::addColumn<Api>("api");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("cachePrompts");
        QTest::newRow("gpt-4o") << Api::OpenAI << QStringLiteral("gpt-4o") << true;
        QTest::newRow("gpt-5 (reasoning)") << Api::OpenAI << QStringLiteral("gpt-5") << true;
        QTest::newRow("claude-3-5-haiku") << Api::Anthropic << QStringLiteral("claude-3-5-haiku") << true;
        QTest::newRow("claude-3-5-haiku, cache off") << Api::Anthropic << QStringLiteral("claude-3-5-haiku") << false;
        QTest::newRow("claude-sonnet-4-5 (thinking)")
            << Api::Anthropic << QStringLiteral("claude-sonnet-4-5-20250929") << true;
    }
    void worstUsageCoversTheRequest() {
        QFETCH(Api, api);
        QFETCH(QString, model);
        QFETCH(bool, cachePrompts);
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}})}));
        Endpoint endpoint = fakeEndpoint(api, server.baseUrl(), false);
        endpoint.cachePrompts = cachePrompts;
        LlmClient client({endpoint}, testPrices());
        ChatRequest request = chatRequest(api);
        request.model = model;
        const Usage worst = client.worstUsage(request, 5000, 2000);
        const auto r = runOne(client, request);
        QVERIFY(r);
        QVERIFY2(r->ok, qPrintable(r->message));
        const QJsonObject body = server.requests().at(0).value(QStringLiteral("body")).toObject();
        const int sentLimit = body.contains(QStringLiteral("max_completion_tokens"))
                                  ? body.value(QStringLiteral("max_completion_tokens")).toInt()
                                  : body.value(QStringLiteral("max_tokens")).toInt();
        QVERIFY(sentLimit >= request.maxTokens);
        QCOMPARE(worst.outputTokens.value_or(-1), qint64{sentLimit});
        QCOMPARE(worst.inputTokens.value_or(-1), qint64{5000});
        const bool marked = body.value(QStringLiteral("system")).isArray();
        QCOMPARE(marked, api == Api::Anthropic && cachePrompts);
        QCOMPARE(worst.cacheWriteTokens.value_or(0), marked ? qint64{2000} : qint64{0});

        // A system prompt counted above the whole prompt is held to it; an endpoint the client does
        // not know gives max_tokens and no cache.
        QCOMPARE(client.worstUsage(request, 500, 2000).cacheWriteTokens.value_or(0), marked ? qint64{500} : qint64{0});
        request.endpoint = QStringLiteral("elsewhere");
        const Usage unknown = client.worstUsage(request, 5000, 2000);
        QCOMPARE(unknown.outputTokens.value_or(-1), qint64{request.maxTokens});
        QVERIFY(!unknown.cacheWriteTokens);
    }

    void modelTableFiles() {
        auto builtIn = ModelTable::loadDefault(QString());
        QVERIFY2(builtIn, builtIn ? "" : builtIn.error().c_str());
        QVERIFY(builtIn->find(QStringLiteral("o3-mini")).maxCompletionTokens);
        QVERIFY(!builtIn->find(QStringLiteral("gpt-4o")).maxCompletionTokens);
        QVERIFY(builtIn->find(QStringLiteral("gpt-4o")).temperature);
        QVERIFY(builtIn->find(QStringLiteral("claude-opus-4-5-20251101")).thinkingBudget >= 1024);
        // A user's entry replaces the built-in one; a bad one is named with its key.
        const QString path = m_dir.filePath(QStringLiteral("llm-models.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            R"({"models": {"claude-sonnet-4-5": {"thinkingBudget": 0}, "my-reasoner": {"maxTokensField": "max_completion_tokens", "temperature": false, "reasoningEffort": "high"}}})");
        f.close();
        auto merged = ModelTable::loadDefault(path);
        QVERIFY2(merged, merged ? "" : merged.error().c_str());
        QCOMPARE(merged->find(QStringLiteral("claude-sonnet-4-5")).thinkingBudget, 0);
        QCOMPARE(merged->find(QStringLiteral("my-reasoner")).reasoningEffort, QStringLiteral("high"));
        const QByteArray body =
            requestBody(Api::OpenAI, chatRequest(Api::OpenAI), false, merged->find(QStringLiteral("my-reasoner")));
        QVERIFY(body.contains("\"reasoning_effort\":\"high\""));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(R"({"models": {"o9": {"thinkingBudget": 100}}})");
        f.close();
        auto bad = ModelTable::loadDefault(path);
        QVERIFY(!bad);
        QVERIFY2(QString::fromStdString(bad.error()).contains(QStringLiteral("models.o9.thinkingBudget")),
                 bad.error().c_str());
    }

    void anthropicTemperatureRange() {
        // The Messages API takes 0 to 1; a run that would send more is refused before it starts,
        // and the fake server refuses it as the API does.
        LlmSettings s;
        QVERIFY(s.useModels({QStringLiteral("anthropic:claude-3-5-haiku")}, QString(), *loadEndpoints(QString())));
        s.temperature = 1.5;
        const auto refused = s.validate(1);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error()).contains(QStringLiteral("between 0 and 1")),
                 refused.error().c_str());
        s.temperature = 0.9;
        QVERIFY(s.validate(1));
        LlmSettings openai;
        QVERIFY(openai.useModels({QStringLiteral("openai:gpt-4o")}, QString(), *loadEndpoints(QString())));
        openai.temperature = 1.5;
        QVERIFY(openai.validate(1));

        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}})}));
        LlmClient client({fakeEndpoint(Api::Anthropic, server.baseUrl(), false)}, testPrices());
        ChatRequest hot = chatRequest(Api::Anthropic);
        hot.temperature = 1.5;
        const auto r = runOne(client, hot);
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Request);
        QVERIFY2(r->message.contains(QStringLiteral("0..1")), qPrintable(r->message));
    }

    void keyWithALineBreakIsRefused() {
        // "abc\r\nX-Injected: yes" would start a header of its own: refused, naming the variable
        // and the character's position, never the key; nothing reaches the server.
        qputenv("KFORGE_TEST_CRLF_KEY", "sk-abc\r\nX-Injected: yes");
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("ok")}})}));
        Endpoint e = fakeEndpoint(Api::OpenAI, server.baseUrl(), false);
        e.keyEnv = QStringLiteral("KFORGE_TEST_CRLF_KEY");
        e.keyRequired = true;
        const auto key = resolveKey(e);
        QVERIFY(!key);
        const QString why = QString::fromStdString(key.error());
        QVERIFY2(why.contains(QStringLiteral("KFORGE_TEST_CRLF_KEY")) && why.contains(QStringLiteral("line break")),
                 qPrintable(why));
        QVERIFY2(!why.contains(QStringLiteral("sk-abc")) && !why.contains(QStringLiteral("Injected")), qPrintable(why));
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        qunsetenv("KFORGE_TEST_CRLF_KEY");
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Config);
        QVERIFY2(!r->message.contains(QStringLiteral("sk-abc")), qPrintable(r->message));
        QVERIFY(server.requests().isEmpty());
        QVERIFY(!storeKey(QStringLiteral("fake"), QStringLiteral("sk-abc\nX: y")));
    }

    void baseUrlWithQueryAndCredentials() {
        // The API's path goes before the query; a user, a password and a token in the URL reach
        // the server, and appear in no message, stored configuration or listing.
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("status"), 503}, {QStringLiteral("times"), 10}})}));
        QUrl url(server.baseUrl());
        url.setUserName(QStringLiteral("alice"));
        url.setPassword(QStringLiteral("hunter2pass"));
        url.setQuery(QStringLiteral("api-version=2024&token=tok-secret-1"));
        Endpoint e = fakeEndpoint(Api::OpenAI, url.toString(), false);
        e.maxRetries = 0;
        QCOMPARE(requestUrl(e),
                 server.baseUrl().replace(QStringLiteral("http://"), QStringLiteral("http://alice:hunter2pass@"))
                     + QStringLiteral("/chat/completions?api-version=2024&token=tok-secret-1"));
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Server);
        const QJsonObject logged = server.requests().at(0);
        QCOMPARE(logged.value(QStringLiteral("path")).toString(), QStringLiteral("/v1/chat/completions"));
        QCOMPARE(logged.value(QStringLiteral("query")).toString(),
                 QStringLiteral("api-version=2024&token=tok-secret-1"));
        QVERIFY(logged.value(QStringLiteral("headers"))
                    .toObject()
                    .value(QStringLiteral("authorization"))
                    .toString()
                    .startsWith(QStringLiteral("Basic ")));
        for (const QString& secret : {QStringLiteral("hunter2pass"), QStringLiteral("tok-secret-1")}) {
            QVERIFY2(!r->message.contains(secret), qPrintable(r->message));
            QVERIFY(!chatUrl(e).contains(secret));
            QVERIFY(!QJsonDocument(e.toJson()).toJson().contains(secret.toUtf8()));
        }
        QVERIFY2(r->message.contains(QStringLiteral("api-version=2024")), qPrintable(r->message));
        QVERIFY(e.toJson().value(QStringLiteral("credentialsLeftOut")).toBool());
        QVERIFY(QJsonDocument(e.toJson(true)).toJson().contains("hunter2pass"));
        // A run's stored settings leave them out too.
        LlmSettings s;
        s.endpoints = {e};
        s.models = {*ModelChoice::parse(QStringLiteral("fake:gpt-4o"))};
        QVERIFY(!QJsonDocument(s.toJson()).toJson().contains("hunter2pass"));
        auto back = LlmSettings::fromJson(s.toJson());
        QVERIFY(back);
        QVERIFY(back->endpoints.at(0).credentialsLeftOut);
    }

    // What is stored and shown of a base URL: no user, password or secret-looking query value,
    // everything else as it was, and redacting again changes nothing (a stored endpoint reads and
    // writes back the same).
    void redactedUrls_data() {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("redacted");
        QTest::newRow("user and token") << "https://alice:pw@llm.example/v1?api-version=2024&token=tok-1"
                                        << "https://llm.example/v1?api-version=2024&token=***";
        QTest::newRow("empty pairs kept") << "https://llm.example/v1?a=1&&key=k&&&b=2#frag"
                                          << "https://llm.example/v1?a=1&&key=***&&&b=2#frag";
        QTest::newRow("encoded name") << "https://llm.example/v1?api%5Fkey=k%26more"
                                      << "https://llm.example/v1?api_key=***";
        QTest::newRow("name alone") << "https://llm.example/v1?session"
                                    << "https://llm.example/v1?session";
        QTest::newRow("no query") << "http://127.0.0.1:8000/v1"
                                  << "http://127.0.0.1:8000/v1";
    }

    void redactedUrls() {
        QFETCH(QString, url);
        QFETCH(QString, redacted);
        QCOMPARE(redactedUrl(url), redacted);
        QCOMPARE(redactedUrl(redacted), redacted);
    }

    void noKeyNoAuthHeader() {
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("text"), QStringLiteral("local")}})}));
        LlmClient client({fakeEndpoint(Api::OpenAI, server.baseUrl(), false)}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        QVERIFY(r && r->ok);
        const QJsonObject headers = server.requests().at(0).value(QStringLiteral("headers")).toObject();
        QVERIFY(!headers.contains(QStringLiteral("authorization")));
        QVERIFY(!headers.contains(QStringLiteral("x-api-key")));
    }

    void missingKeyIsAConfigError() {
        qunsetenv("KFORGE_TEST_NO_SUCH_KEY");
        Endpoint e = fakeEndpoint(Api::Anthropic, QStringLiteral("http://127.0.0.1:9/v1"), true);
        e.keyEnv = QStringLiteral("KFORGE_TEST_NO_SUCH_KEY");
        e.keyRequired = true;
        LlmClient client({e}, testPrices());
        QSignalSpy spy(&client, &LlmClient::finished);
        const qint64 ticket = client.submit(chatRequest(Api::Anthropic));
        QCOMPARE(spy.count(), 0); // never inside submit()
        const auto r = waitFor(spy, ticket);
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Config);
        QCOMPARE(r->attempts, 0);
        QVERIFY2(r->message.contains(QStringLiteral("export KFORGE_TEST_NO_SUCH_KEY=")), qPrintable(r->message));

        ChatRequest unknown = chatRequest(Api::Anthropic);
        unknown.endpoint = QStringLiteral("nowhere");
        const auto u = runOne(client, unknown);
        QVERIFY(u);
        QCOMPARE(u->error, ErrorKind::Config);
        QVERIFY2(u->message.contains(QStringLiteral("nowhere")), qPrintable(u->message));
    }

    void keysAreLookedUpAheadWithoutBlocking() {
        qputenv("KFORGE_TEST_LOOKUP_KEY", "sk-ahead");
        qunsetenv("KFORGE_TEST_NO_SUCH_KEY");
        Endpoint fromEnv = fakeEndpoint(Api::OpenAI, QStringLiteral("http://127.0.0.1:9/v1"), true);
        fromEnv.name = QStringLiteral("env");
        fromEnv.keyEnv = QStringLiteral("KFORGE_TEST_LOOKUP_KEY");
        fromEnv.keyring = false;
        Endpoint none = fromEnv;
        none.name = QStringLiteral("none");
        none.keyEnv.clear();
        Endpoint optional = fromEnv;
        optional.name = QStringLiteral("optional");
        optional.keyEnv = QStringLiteral("KFORGE_TEST_NO_SUCH_KEY");
        optional.keyRequired = false;
        Endpoint required = optional;
        required.name = QStringLiteral("required");
        required.keyRequired = true;
        KeyLookup lookup({fromEnv, none, optional, required});
        QSignalSpy finished(&lookup, &KeyLookup::finished);
        lookup.start();
        QCOMPARE(finished.count(), 0); // never inside start()
        QVERIFY(finished.wait(10000));
        const auto keys = finished.first().at(0).value<QHash<QString, QString>>();
        const auto problems = finished.first().at(1).value<QHash<QString, QString>>();
        qunsetenv("KFORGE_TEST_LOOKUP_KEY");
        QCOMPARE(keys.value(QStringLiteral("env")), QStringLiteral("sk-ahead"));
        QVERIFY(keys.contains(QStringLiteral("none")) && keys.value(QStringLiteral("none")).isEmpty());
        QVERIFY(keys.contains(QStringLiteral("optional")) && keys.value(QStringLiteral("optional")).isEmpty());
        QVERIFY(!keys.contains(QStringLiteral("required")));
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.value(QStringLiteral("required")).contains(QStringLiteral("export KFORGE_TEST_NO_SUCH_KEY=")),
                 qPrintable(problems.value(QStringLiteral("required"))));

        // The client takes the looked-up keys and problems; the problem is the refusal.
        LlmClient client({fromEnv, required}, testPrices());
        client.setKeys(keys, problems);
        ChatRequest toRequired = chatRequest(Api::OpenAI);
        toRequired.endpoint = QStringLiteral("required");
        const auto r = runOne(client, toRequired);
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Config);
        QVERIFY2(r->message.contains(QStringLiteral("export KFORGE_TEST_NO_SUCH_KEY=")), qPrintable(r->message));
    }

    void aKeyringOnlyKeyIsNeverLookedUpInsideSubmit() {
        qunsetenv("KFORGE_TEST_NO_SUCH_KEY");
        Endpoint e = fakeEndpoint(Api::OpenAI, QStringLiteral("http://127.0.0.1:9/v1"), true);
        e.keyEnv = QStringLiteral("KFORGE_TEST_NO_SUCH_KEY");
        e.keyring = true;
        e.keyRequired = true;
        LlmClient client({e}, testPrices());
        const auto r = runOne(client, chatRequest(Api::OpenAI));
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Config);
        QVERIFY2(r->message.contains(QStringLiteral("was not looked up before the request")), qPrintable(r->message));
    }

    void cancel() {
        FakeServer server(m_dir);
        QVERIFY(server.start({rule({{QStringLiteral("mode"), QStringLiteral("hang")}})}));
        Endpoint e = fakeEndpoint(Api::OpenAI, server.baseUrl(), true);
        e.maxConcurrent = 1;
        LlmClient client({e}, testPrices());
        QSignalSpy spy(&client, &LlmClient::finished);
        const qint64 running = client.submit(chatRequest(Api::OpenAI));
        const qint64 queued = client.submit(chatRequest(Api::OpenAI));
        const qint64 other = client.submit(chatRequest(Api::OpenAI));
        QTRY_COMPARE_WITH_TIMEOUT(server.requests().size(), 1, kWaitMs);

        client.cancel(running);
        auto r = waitFor(spy, running);
        QVERIFY(r);
        QCOMPARE(r->error, ErrorKind::Cancelled);
        // The queued request takes the freed slot; cancelAll then ends it and the last one.
        QTRY_COMPARE_WITH_TIMEOUT(server.requests().size(), 2, kWaitMs);
        client.cancelAll();
        for (qint64 t : {queued, other}) {
            r = waitFor(spy, t);
            QVERIFY(r);
            QCOMPARE(r->error, ErrorKind::Cancelled);
        }
        client.cancel(running); // already finished: nothing more
        // The transfer thread handles requests and cancels in order: a stray answer to the cancel
        // above would come before the cancellation of a request submitted after it.
        const qint64 last = client.submit(chatRequest(Api::OpenAI));
        client.cancel(last);
        QVERIFY(waitFor(spy, last));
        QCOMPARE(spy.count(), 4);

        // A client destroyed with a request in flight neither hangs nor signals.
        {
            LlmClient doomed({e}, testPrices());
            QSignalSpy doomedSpy(&doomed, &LlmClient::finished);
            doomed.submit(chatRequest(Api::OpenAI));
            QTRY_COMPARE_WITH_TIMEOUT(server.requests().size(), 3, kWaitMs);
        }
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestLlmClient)
#include "tst_llmclient.moc"
