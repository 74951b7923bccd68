// What a language model's server sends back, on any bytes: the event stream (split wherever the
// network splits it), a complete JSON answer, an HTTP error body, and the answer's text as a kernel
// file or a strategy. Each gives a result or an error with a message, never a crash; an event
// stream reads the same however it is cut; a streamed answer's text is the sum of its deltas; a
// kernel taken from an answer parses as a kernel file and reads the same when a model sends it
// again on its own. Links QtCore (the LLM code is Qt's), so only full builds have it.

#include "fuzzcheck.h"
#include "kernelfile.h"
#include "llm/answerparser.h"
#include "llm/apiformat.h"
#include "llm/sse.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace kforge;
using namespace kforge::llm;

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

std::string str(const QByteArray& b) {
    return b.toStdString();
}

Endpoint endpointFor(Api api) {
    Endpoint e;
    e.name = api == Api::OpenAI ? QStringLiteral("fuzz-openai") : QStringLiteral("fuzz-anthropic");
    e.api = api;
    e.baseUrl = QStringLiteral("http://127.0.0.1:9/v1");
    return e;
}

// Where the network cut the bytes: a few positions drawn from the bytes themselves, so that a
// replayed input is cut the same way every time.
std::vector<qsizetype> cutsFor(const QByteArray& bytes) {
    std::uint32_t h = 2166136261u;
    for (char c : bytes)
        h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    std::vector<qsizetype> cuts;
    for (int i = 0; i < 6 && !bytes.isEmpty(); ++i) {
        h = h * 1103515245u + 12345u;
        cuts.push_back(static_cast<qsizetype>(h % static_cast<std::uint32_t>(bytes.size() + 1)));
    }
    // Cuts right after every CR and inside the byte order mark too: the hardest places.
    for (qsizetype i = 0; i < std::min<qsizetype>(bytes.size(), 64); ++i)
        if (bytes[i] == '\r' || i < 3)
            cuts.push_back(i + 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    return cuts;
}

std::vector<SseEvent> eventsOf(const QByteArray& bytes, const std::vector<qsizetype>& cuts) {
    SseParser parser;
    std::vector<SseEvent> events;
    qsizetype from = 0;
    auto take = [&](std::vector<SseEvent> more) { events.insert(events.end(), more.begin(), more.end()); };
    for (qsizetype cut : cuts) {
        take(parser.feed(bytes.mid(from, cut - from)));
        from = cut;
    }
    take(parser.feed(bytes.mid(from)));
    take(parser.finish());
    return events;
}

void checkStream(const QByteArray& bytes) {
    const std::vector<SseEvent> whole = eventsOf(bytes, {});
    const std::vector<SseEvent> pieces = eventsOf(bytes, cutsFor(bytes));
    KFORGE_FUZZ_CHECK(whole.size() == pieces.size(), "a stream cut into pieces gives " + std::to_string(pieces.size())
                                                         + " events, whole " + std::to_string(whole.size()));
    for (std::size_t i = 0; i < whole.size(); ++i) {
        KFORGE_FUZZ_CHECK(whole[i].event == pieces[i].event && whole[i].data == pieces[i].data,
                          "event " + std::to_string(i) + " differs when the stream is cut: " + str(whole[i].data)
                              + " / " + str(pieces[i].data));
        KFORGE_FUZZ_CHECK(!whole[i].data.contains('\r') && !whole[i].event.contains(QLatin1Char('\n')),
                          "a line end inside an event: " + str(whole[i].data));
    }

    for (Api api : {Api::OpenAI, Api::Anthropic}) {
        StreamAccumulator acc(endpointFor(api));
        QString deltas;
        for (const SseEvent& e : whole)
            deltas += acc.consume(e);
        KFORGE_FUZZ_CHECK(deltas == acc.text(), "the streamed text is not the sum of its deltas");
        const ChatResult r = acc.finish();
        KFORGE_FUZZ_CHECK(r.ok == (r.error == ErrorKind::None), "ok and the error kind disagree: " + str(r.message));
        if (!r.ok) {
            KFORGE_FUZZ_CHECK(r.message.startsWith(endpointFor(api).name),
                              "a stream's error does not name the endpoint: " + str(r.message));
            KFORGE_FUZZ_CHECK(r.error == ErrorKind::Malformed || r.error == ErrorKind::Truncated || acc.ended(),
                              "an error kind a stream cannot end in: " + str(errorKindName(r.error)));
        }
        KFORGE_FUZZ_CHECK(!r.usage.inputTokens || *r.usage.inputTokens >= 0, "negative input tokens");
        KFORGE_FUZZ_CHECK(!r.usage.outputTokens || *r.usage.outputTokens >= 0, "negative output tokens");
    }
}

void checkBody(const QByteArray& bytes) {
    for (Api api : {Api::OpenAI, Api::Anthropic}) {
        const Endpoint endpoint = endpointFor(api);
        const ChatResult r = parseResponse(endpoint, bytes);
        KFORGE_FUZZ_CHECK(r.ok == (r.error == ErrorKind::None), "ok and the error kind disagree: " + str(r.message));
        if (!r.ok) {
            KFORGE_FUZZ_CHECK(r.error == ErrorKind::Malformed,
                              "a 2xx answer refused as " + str(errorKindName(r.error)));
            KFORGE_FUZZ_CHECK(r.message.startsWith(endpoint.name), "an error that does not name the endpoint");
            // The body is quoted, not pasted: a message stays readable whatever came back.
            KFORGE_FUZZ_CHECK(r.message.size() < 1200, "a message of " + std::to_string(r.message.size()) + " chars");
        }
        KFORGE_FUZZ_CHECK(!r.usage.inputTokens || *r.usage.inputTokens >= 0, "negative input tokens");
        KFORGE_FUZZ_CHECK(!r.usage.outputTokens || *r.usage.outputTokens >= 0, "negative output tokens");

        const int status =
            bytes.size() >= 2
                ? 100 + (static_cast<unsigned char>(bytes[0]) * 256 + static_cast<unsigned char>(bytes[1])) % 500
                : 500;
        const ChatResult e = classifyHttpError(endpoint, status, bytes);
        KFORGE_FUZZ_CHECK(!e.ok && e.error != ErrorKind::None, "HTTP " + std::to_string(status) + " read as success");
        KFORGE_FUZZ_CHECK(e.httpStatus == status, "the status is not kept");
        KFORGE_FUZZ_CHECK(e.message.contains(QStringLiteral("HTTP %1").arg(status))
                              && e.message.startsWith(endpoint.name),
                          "an HTTP error's message names neither the status nor the endpoint: " + str(e.message));
        KFORGE_FUZZ_CHECK(e.message.size() < 1200, "a message of " + std::to_string(e.message.size()) + " chars");
        if (status == 401 || status == 403)
            KFORGE_FUZZ_CHECK(!isRetryable(e.error), "a refused key is retried");
    }
}

// The longest line that is nothing but backticks: a fence longer than it wraps the text whole.
QString fenceAround(const QString& source) {
    qsizetype longest = 2;
    for (const QString& line : source.split(QLatin1Char('\n'))) {
        const QString t = line.trimmed();
        if (!t.isEmpty() && std::all_of(t.begin(), t.end(), [](QChar c) { return c == QLatin1Char('`'); }))
            longest = std::max(longest, t.size());
    }
    return QString(longest + 1, QLatin1Char('`'));
}

void checkAnswer(const QByteArray& bytes) {
    const QString answer = QString::fromUtf8(bytes);
    for (spec::Dialect dialect : {spec::Dialect::Cuda, spec::Dialect::OpenCL}) {
        const spec::Expected<ParsedAnswer> parsed = parseAnswer(answer, dialect);
        if (!parsed) {
            KFORGE_FUZZ_CHECK(!parsed.error().empty(), "an answer refused without a message");
            continue;
        }
        KFORGE_FUZZ_CHECK(!parsed->source.isEmpty() && parsed->source.size() <= kMaxKernelChars,
                          "a kernel of " + std::to_string(parsed->source.size()) + " chars");
        KFORGE_FUZZ_CHECK(parsed->explanation.size() <= kMaxExplanationChars,
                          "an explanation of " + std::to_string(parsed->explanation.size()) + " chars");
        const auto kf = spec::KernelFile::parse(parsed->source.toStdString(), dialect);
        KFORGE_FUZZ_CHECK(kf && !kf->launches.empty(), "a kernel taken from an answer does not parse on its own: "
                                                           + (kf ? std::string("no launch") : kf.error()));
        const QString fence = fenceAround(parsed->source);
        const auto again =
            parseAnswer(fence + QStringLiteral("cuda\n") + parsed->source + fence + QLatin1Char('\n'), dialect);
        KFORGE_FUZZ_CHECK(again && again->source == parsed->source,
                          "the kernel reads differently sent alone: " + (again ? str(again->source) : again.error()));
    }
    const spec::Expected<QString> strategy = parseStrategyAnswer(answer);
    if (!strategy) {
        KFORGE_FUZZ_CHECK(!strategy.error().empty(), "a strategy refused without a message");
        return;
    }
    KFORGE_FUZZ_CHECK(!strategy->isEmpty() && strategy->size() <= kMaxStrategyChars && *strategy == strategy->trimmed(),
                      "a strategy of " + std::to_string(strategy->size()) + " chars, or with blanks around it");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    checkStream(bytes);
    checkBody(bytes);
    checkAnswer(bytes);
    return 0;
}
