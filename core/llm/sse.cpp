#include "llm/sse.h"

namespace kforge::llm {

std::vector<SseEvent> SseParser::feed(const QByteArray& bytes) {
    std::vector<SseEvent> out;
    qsizetype i = 0;
    if (!m_started) {
        // The format allows one UTF-8 byte order mark before the first line; it may itself arrive split.
        static const QByteArray bom("\xEF\xBB\xBF");
        const QByteArray head = m_line + bytes.left(3);
        if (head.size() < 3 && bom.startsWith(head)) {
            m_line = head;
            return out;
        }
        m_started = true;
        if (head.startsWith(bom)) {
            i = 3 - m_line.size();
            m_line.clear();
        }
    }
    const qsizetype n = bytes.size();
    while (i < n) {
        const char c = bytes[i];
        if (m_skipLf) {
            m_skipLf = false;
            if (c == '\n') {
                ++i;
                continue;
            }
        }
        // Copy a run of ordinary bytes at once rather than byte by byte.
        qsizetype j = i;
        while (j < n && bytes[j] != '\n' && bytes[j] != '\r')
            ++j;
        m_line.append(bytes.constData() + i, j - i);
        if (j == n)
            break;
        m_skipLf = bytes[j] == '\r';
        const QByteArray line = m_line;
        m_line.clear();
        processLine(line, &out);
        i = j + 1;
    }
    return out;
}

std::vector<SseEvent> SseParser::finish() {
    std::vector<SseEvent> out;
    if (!m_line.isEmpty() && m_started) {
        const QByteArray line = m_line;
        m_line.clear();
        processLine(line, &out);
    }
    dispatch(&out);
    reset();
    return out;
}

void SseParser::reset() {
    m_line.clear();
    m_skipLf = false;
    m_started = false;
    m_event.clear();
    m_data.clear();
    m_hasData = false;
}

void SseParser::processLine(const QByteArray& line, std::vector<SseEvent>* out) {
    if (line.isEmpty()) {
        dispatch(out);
        return;
    }
    if (line.startsWith(':'))
        return;
    const qsizetype colon = line.indexOf(':');
    const QByteArray field = colon < 0 ? line : line.left(colon);
    QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
    if (value.startsWith(' '))
        value.remove(0, 1);
    if (field == "data") {
        if (m_hasData)
            m_data.append('\n');
        m_data.append(value);
        m_hasData = true;
    } else if (field == "event") {
        m_event = QString::fromUtf8(value);
    }
}

void SseParser::dispatch(std::vector<SseEvent>* out) {
    // An event without data lines is not dispatched; its type is forgotten all the same.
    if (m_hasData)
        out->push_back(SseEvent{m_event, m_data});
    m_event.clear();
    m_data.clear();
    m_hasData = false;
}

} // namespace kforge::llm
