#pragma once
// An incremental parser for server-sent events (the WHATWG event-stream format), which both LLM
// APIs stream their answers in. Bytes arrive in whatever pieces the network delivers: a line, an
// event or even a CRLF pair may be split across feed() calls.

#include <QByteArray>
#include <QString>

#include <vector>

namespace kforge::llm {

struct SseEvent {
    QString event;   // the `event:` field; empty when the stream named none (OpenAI never does)
    QByteArray data; // the `data:` lines joined with '\n'
};

class SseParser {
public:
    // The events completed by these bytes, in order. Lines end in LF, CRLF or CR; a blank line
    // dispatches; comments (lines starting with ':') and `id:`/`retry:` are ignored.
    std::vector<SseEvent> feed(const QByteArray& bytes);
    // At the end of the stream: the last event when its closing blank line never came (servers
    // that close right after the last `data:` line). Resets the parser.
    std::vector<SseEvent> finish();
    void reset();

private:
    void processLine(const QByteArray& line, std::vector<SseEvent>* out);
    void dispatch(std::vector<SseEvent>* out);

    QByteArray m_line;      // the incomplete line so far
    bool m_skipLf = false;  // the last byte was a CR: a following LF belongs to it
    bool m_started = false; // past a possible byte order mark
    QString m_event;
    QByteArray m_data;
    bool m_hasData = false;
};

} // namespace kforge::llm
