#include "util/textdiff.h"

#include <dtl/dtl.hpp>

#include <QStringView>

#include <algorithm>
#include <vector>

namespace kforge::util {

namespace {

// A line as dtl compares it: its text plus its terminator, so that "x" at the end of a file
// without a final newline differs from "x\n" — as in diff(1), which marks such a line with
// "\ No newline at end of file".
struct Line {
    QString text;
    bool terminated = true;
    bool operator==(const Line& other) const { return terminated == other.terminated && text == other.text; }
};

// CRLF counts as LF: a file saved on Windows diffs clean against the same file saved elsewhere.
std::vector<Line> splitLines(const QString& text) {
    QString normalized = text;
    normalized.replace(QLatin1String("\r\n"), QLatin1String("\n"));
    std::vector<Line> lines;
    if (normalized.isEmpty())
        return lines;
    const QList<QStringView> parts = QStringView(normalized).split(u'\n');
    lines.reserve(static_cast<std::size_t>(parts.size()));
    for (const QStringView part : parts)
        lines.push_back(Line{part.toString(), true});
    // "a\nb\n" splits into a, b and an empty rest; "a\nb" into a and an unterminated b.
    if (normalized.endsWith(u'\n'))
        lines.pop_back();
    else
        lines.back().terminated = false;
    return lines;
}

struct Edit {
    LineChange::Kind kind;
    int beforeLine; // 1-based, 0 for added lines
    int afterLine;  // 1-based, 0 for removed lines
    const Line* line;
};

// The shortest edit script, with removals before additions inside each change (as diff(1)
// prints them). Line numbers are counted here rather than taken from dtl, whose indexes depend on
// whether it swapped the sequences internally.
std::vector<Edit> editScript(const std::vector<Line>& a, const std::vector<Line>& b) {
    std::vector<Edit> edits;
    if (a.empty() && b.empty())
        return edits;
    dtl::Diff<Line, std::vector<Line>> diff(a, b, /*deletesFirst=*/true);
    diff.compose();
    const auto sequence = diff.getSes().getSequence();
    edits.reserve(sequence.size());
    int beforeLine = 0;
    int afterLine = 0;
    // dtl copies the elements into its script; point at ours, which outlive the edits.
    for (const auto& [line, info] : sequence) {
        switch (info.type) {
        case dtl::SES_COMMON:
            ++beforeLine;
            ++afterLine;
            edits.push_back(
                {LineChange::Kind::Same, beforeLine, afterLine, &a[static_cast<std::size_t>(beforeLine - 1)]});
            break;
        case dtl::SES_DELETE:
            ++beforeLine;
            edits.push_back({LineChange::Kind::Removed, beforeLine, 0, &a[static_cast<std::size_t>(beforeLine - 1)]});
            break;
        case dtl::SES_ADD:
            ++afterLine;
            edits.push_back({LineChange::Kind::Added, 0, afterLine, &b[static_cast<std::size_t>(afterLine - 1)]});
            break;
        }
    }
    return edits;
}

// "-a,b" / "+c,d" as diff(1) writes them: an empty range names the line before it, and a count of
// one is left out.
QString range(int firstLine, int count) {
    if (count == 0)
        return QString::number(firstLine - 1) + QLatin1String(",0");
    if (count == 1)
        return QString::number(firstLine);
    return QString::number(firstLine) + u',' + QString::number(count);
}

void appendLine(QString& out, QChar mark, const Line& line) {
    out += mark;
    out += line.text;
    out += u'\n';
    if (!line.terminated)
        out += QLatin1String("\\ No newline at end of file\n");
}

} // namespace

QList<LineChange> diffLines(const QString& before, const QString& after) {
    const std::vector<Line> a = splitLines(before);
    const std::vector<Line> b = splitLines(after);
    QList<LineChange> changes;
    const std::vector<Edit> edits = editScript(a, b);
    changes.reserve(static_cast<qsizetype>(edits.size()));
    for (const Edit& edit : edits)
        changes.append(LineChange{edit.kind, edit.beforeLine, edit.afterLine, edit.line->text});
    return changes;
}

QString unifiedDiff(const QString& before, const QString& after, const QString& beforeName, const QString& afterName,
                    int context) {
    context = std::max(context, 0);
    const std::vector<Line> a = splitLines(before);
    const std::vector<Line> b = splitLines(after);
    const std::vector<Edit> edits = editScript(a, b);

    std::vector<std::size_t> changed; // indexes into edits
    for (std::size_t i = 0; i < edits.size(); ++i) {
        if (edits[i].kind != LineChange::Kind::Same)
            changed.push_back(i);
    }
    if (changed.empty())
        return {};

    QString out;
    out += QLatin1String("--- ") + beforeName + u'\n';
    out += QLatin1String("+++ ") + afterName + u'\n';

    // Changes separated by at most 2*context unchanged lines share a hunk, since their contexts
    // would touch or overlap.
    std::size_t next = 0;
    while (next < changed.size()) {
        std::size_t last = next;
        while (last + 1 < changed.size()
               && changed[last + 1] - changed[last] - 1 <= static_cast<std::size_t>(2 * context))
            ++last;
        const auto span = static_cast<std::size_t>(context);
        const std::size_t begin = changed[next] > span ? changed[next] - span : 0;
        const std::size_t end = std::min(edits.size(), changed[last] + span + 1);

        // The hunk starts after the lines of each file that precede it.
        int beforeStart = 1;
        int afterStart = 1;
        for (std::size_t i = 0; i < begin; ++i) {
            beforeStart += edits[i].kind != LineChange::Kind::Added ? 1 : 0;
            afterStart += edits[i].kind != LineChange::Kind::Removed ? 1 : 0;
        }
        int beforeCount = 0;
        int afterCount = 0;
        for (std::size_t i = begin; i < end; ++i) {
            beforeCount += edits[i].kind != LineChange::Kind::Added ? 1 : 0;
            afterCount += edits[i].kind != LineChange::Kind::Removed ? 1 : 0;
        }

        out += QLatin1String("@@ -") + range(beforeStart, beforeCount) + QLatin1String(" +")
               + range(afterStart, afterCount) + QLatin1String(" @@\n");
        for (std::size_t i = begin; i < end; ++i) {
            const Edit& edit = edits[i];
            switch (edit.kind) {
            case LineChange::Kind::Same:
                appendLine(out, u' ', *edit.line);
                break;
            case LineChange::Kind::Removed:
                appendLine(out, u'-', *edit.line);
                break;
            case LineChange::Kind::Added:
                appendLine(out, u'+', *edit.line);
                break;
            }
        }
        next = last + 1;
    }
    return out;
}

} // namespace kforge::util
