#pragma once
// Line diffs of kernel sources (dtl's shortest edit script): a unified diff for people, prompts
// and the experience library, and per-line change marks for side-by-side views.

#include <QList>
#include <QString>
#include <QStringList>

namespace kforge::util {

struct LineChange {
    enum class Kind { Same, Added, Removed };
    Kind kind = Kind::Same;
    int beforeLine = 0; // 1-based in `before`, 0 for added lines
    int afterLine = 0;  // 1-based in `after`, 0 for removed lines
    QString text;
};

// The edit script, line by line.
QList<LineChange> diffLines(const QString& before, const QString& after);
// A unified diff with `context` lines around each hunk; empty when the texts are equal.
QString unifiedDiff(const QString& before, const QString& after, const QString& beforeName = QStringLiteral("before"),
                    const QString& afterName = QStringLiteral("after"), int context = 3);

} // namespace kforge::util
