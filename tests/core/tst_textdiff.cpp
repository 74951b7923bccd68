// Line diffs: the unified diff people and prompts read (its hunks, ranges and context, checked
// against what diff(1) -u prints), and the edit script, which must turn `before` into `after`.

#include "util/textdiff.h"

#include <QTest>

using kforge::util::diffLines;
using kforge::util::LineChange;
using kforge::util::unifiedDiff;

namespace {

// Applies the edit script to `before`, checking that what it keeps and removes is really there.
QStringList apply(const QStringList& before, const QList<LineChange>& changes, bool* consistent) {
    QStringList after;
    int next = 0; // 0-based index into before
    *consistent = true;
    for (const LineChange& change : changes) {
        switch (change.kind) {
        case LineChange::Kind::Same:
        case LineChange::Kind::Removed:
            if (change.beforeLine != next + 1 || next >= before.size() || before.at(next) != change.text)
                *consistent = false;
            ++next;
            if (change.kind == LineChange::Kind::Same)
                after.append(change.text);
            break;
        case LineChange::Kind::Added:
            if (change.beforeLine != 0)
                *consistent = false;
            after.append(change.text);
            break;
        }
        if (change.kind != LineChange::Kind::Removed && change.afterLine != after.size())
            *consistent = false;
        if (change.kind == LineChange::Kind::Removed && change.afterLine != 0)
            *consistent = false;
    }
    if (next != before.size())
        *consistent = false;
    return after;
}

QStringList lines(const QString& text) {
    QStringList result = text.split(u'\n');
    if (text.endsWith(u'\n') || text.isEmpty())
        result.removeLast();
    return result;
}

QString numbered(int from, int to) {
    QString text;
    for (int i = from; i <= to; ++i)
        text += QStringLiteral("line %1\n").arg(i);
    return text;
}

// numbered(from, to) with the given lines in capitals: "LINE 4".
QString changed(int from, int to, std::initializer_list<int> lines) {
    QString text = numbered(from, to);
    for (int line : lines)
        text.replace(QStringLiteral("line %1\n").arg(line), QStringLiteral("LINE %1\n").arg(line));
    return text;
}

const char* const kKernelBefore = R"(#include <cuda_runtime.h>

__global__ void softmax(const float* x, float* y, int n) {
    int row = blockIdx.x;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        m = fmaxf(m, x[row * n + i]);
    m = blockReduceMax(m);
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += expf(x[row * n + i] - m);
    s = blockReduceSum(s);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[row * n + i] = expf(x[row * n + i] - m) / s;
}
)";

const char* const kKernelAfter = R"(#include <cuda_runtime.h>

__global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int n) {
    int row = blockIdx.x;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        m = fmaxf(m, x[row * n + i]);
    m = blockReduceMax(m);
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += __expf(x[row * n + i] - m);
    s = blockReduceSum(s);
    const float inv = 1.f / s;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[row * n + i] = __expf(x[row * n + i] - m) * inv;
}
)";

} // namespace

class TestTextDiff : public QObject {
    Q_OBJECT

private slots:
    void unified_data();
    void unified();
    void names();
    void diffLinesNumbers();
    void appliesBack_data();
    void appliesBack();
};

void TestTextDiff::unified_data() {
    QTest::addColumn<QString>("before");
    QTest::addColumn<QString>("after");
    QTest::addColumn<int>("context");
    QTest::addColumn<QString>("expected");

    const QString head = QStringLiteral("--- before\n+++ after\n");

    QTest::newRow("equal") << numbered(1, 5) << numbered(1, 5) << 3 << QString();
    QTest::newRow("both empty") << QString() << QString() << 3 << QString();
    QTest::newRow("equal up to CRLF") << QStringLiteral("a\r\nb\r\n") << QStringLiteral("a\nb\n") << 3 << QString();

    QTest::newRow("one changed line")
        << numbered(1, 10) << QString(numbered(1, 10)).replace(QLatin1String("line 5\n"), QLatin1String("LINE 5\n"))
        << 3
        << head
               + QStringLiteral("@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+LINE 5\n line 6\n line 7\n"
                                " line 8\n");

    QTest::newRow("insert at start") << numbered(1, 5) << QStringLiteral("line 0\n") + numbered(1, 5) << 3
                                     << head + QStringLiteral("@@ -1,3 +1,4 @@\n+line 0\n line 1\n line 2\n line 3\n");
    QTest::newRow("insert at end") << numbered(1, 5) << numbered(1, 6) << 3
                                   << head + QStringLiteral("@@ -3,3 +3,4 @@\n line 3\n line 4\n line 5\n+line 6\n");
    QTest::newRow("delete at start") << numbered(1, 5) << numbered(2, 5) << 3
                                     << head + QStringLiteral("@@ -1,4 +1,3 @@\n-line 1\n line 2\n line 3\n line 4\n");
    QTest::newRow("delete at end") << numbered(1, 5) << numbered(1, 4) << 3
                                   << head + QStringLiteral("@@ -2,4 +2,3 @@\n line 2\n line 3\n line 4\n-line 5\n");

    QTest::newRow("from empty") << QString() << QStringLiteral("a\nb\n") << 3
                                << head + QStringLiteral("@@ -0,0 +1,2 @@\n+a\n+b\n");
    QTest::newRow("to empty") << QStringLiteral("a\nb\n") << QString() << 3
                              << head + QStringLiteral("@@ -1,2 +0,0 @@\n-a\n-b\n");
    QTest::newRow("one line, no context") << QStringLiteral("a\nb\nc\n") << QStringLiteral("a\nB\nc\n") << 0
                                          << head + QStringLiteral("@@ -2 +2 @@\n-b\n+B\n");

    // Changes at lines 4 and 10: 5 unchanged lines between them, within 2*3, so one hunk.
    QTest::newRow("hunks merge within 2*context")
        << numbered(1, 14) << changed(1, 14, {4, 10}) << 3
        << head
               + QStringLiteral("@@ -1,13 +1,13 @@\n line 1\n line 2\n line 3\n-line 4\n+LINE 4\n line 5\n line 6\n"
                                " line 7\n line 8\n line 9\n-line 10\n+LINE 10\n line 11\n line 12\n line 13\n");
    // Lines 3 and 10 changed: 6 unchanged between them, exactly 2*3: the contexts touch, one hunk.
    QTest::newRow("hunks merge at exactly 2*context")
        << numbered(1, 13) << changed(1, 13, {3, 10}) << 3
        << head
               + QStringLiteral("@@ -1,13 +1,13 @@\n line 1\n line 2\n-line 3\n+LINE 3\n line 4\n line 5\n line 6\n"
                                " line 7\n line 8\n line 9\n-line 10\n+LINE 10\n line 11\n line 12\n line 13\n");
    // Lines 2 and 10 changed: 7 unchanged lines between, more than 2*3: two hunks.
    QTest::newRow("hunks apart")
        << numbered(1, 12) << changed(1, 12, {2, 10}) << 3
        << head
               + QStringLiteral("@@ -1,5 +1,5 @@\n line 1\n-line 2\n+LINE 2\n line 3\n line 4\n line 5\n"
                                "@@ -7,6 +7,6 @@\n line 7\n line 8\n line 9\n-line 10\n+LINE 10\n line 11\n line 12\n");

    QTest::newRow("newline added at end") << QStringLiteral("a\nb") << QStringLiteral("a\nb\n") << 3
                                          << head
                                                 + QStringLiteral("@@ -1,2 +1,2 @@\n a\n-b\n"
                                                                  "\\ No newline at end of file\n+b\n");
    QTest::newRow("no newline at end, both") << QStringLiteral("a\nb\nc") << QStringLiteral("a\nB\nc") << 3
                                             << head
                                                    + QStringLiteral("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
                                                                     "\\ No newline at end of file\n");
    QTest::newRow("CRLF against LF") << QStringLiteral("a\r\nb\r\nc\r\n") << QStringLiteral("a\nB\nc\n") << 3
                                     << head + QStringLiteral("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");

    QTest::newRow("kernel edit") << QString::fromUtf8(kKernelBefore) << QString::fromUtf8(kKernelAfter) << 3
                                 << head
                                        + QStringLiteral(
                                            "@@ -1,6 +1,6 @@\n"
                                            " #include <cuda_runtime.h>\n"
                                            " \n"
                                            "-__global__ void softmax(const float* x, float* y, int n) {\n"
                                            "+__global__ void softmax(const float* __restrict__ x, float* __restrict__ "
                                            "y, int n) {\n"
                                            "     int row = blockIdx.x;\n"
                                            "     float m = -INFINITY;\n"
                                            "     for (int i = threadIdx.x; i < n; i += blockDim.x)\n"
                                            "@@ -8,8 +8,9 @@\n"
                                            "     m = blockReduceMax(m);\n"
                                            "     float s = 0.f;\n"
                                            "     for (int i = threadIdx.x; i < n; i += blockDim.x)\n"
                                            "-        s += expf(x[row * n + i] - m);\n"
                                            "+        s += __expf(x[row * n + i] - m);\n"
                                            "     s = blockReduceSum(s);\n"
                                            "+    const float inv = 1.f / s;\n"
                                            "     for (int i = threadIdx.x; i < n; i += blockDim.x)\n"
                                            "-        y[row * n + i] = expf(x[row * n + i] - m) / s;\n"
                                            "+        y[row * n + i] = __expf(x[row * n + i] - m) * inv;\n"
                                            " }\n");
}

void TestTextDiff::unified() {
    QFETCH(QString, before);
    QFETCH(QString, after);
    QFETCH(int, context);
    QFETCH(QString, expected);
    QCOMPARE(unifiedDiff(before, after, QStringLiteral("before"), QStringLiteral("after"), context), expected);
}

void TestTextDiff::names() {
    const QString diff = unifiedDiff(QStringLiteral("a\n"), QStringLiteral("b\n"), QStringLiteral("a/kernel.cu"),
                                     QStringLiteral("b/kernel.cu"));
    QCOMPARE(diff, QStringLiteral("--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1 +1 @@\n-a\n+b\n"));
}

void TestTextDiff::diffLinesNumbers() {
    const QList<LineChange> changes = diffLines(QStringLiteral("a\nb\nc\nd\n"), QStringLiteral("a\nc\nx\nd\ne\n"));
    using K = LineChange::Kind;
    struct Row {
        K kind;
        int beforeLine;
        int afterLine;
        const char* text;
    };
    const QList<Row> expected = {
        {K::Same, 1, 1, "a"},  {K::Removed, 2, 0, "b"}, {K::Same, 3, 2, "c"},
        {K::Added, 0, 3, "x"}, {K::Same, 4, 4, "d"},    {K::Added, 0, 5, "e"},
    };
    QCOMPARE(changes.size(), expected.size());
    for (int i = 0; i < expected.size(); ++i) {
        QCOMPARE(changes.at(i).kind, expected.at(i).kind);
        QCOMPARE(changes.at(i).beforeLine, expected.at(i).beforeLine);
        QCOMPARE(changes.at(i).afterLine, expected.at(i).afterLine);
        QCOMPARE(changes.at(i).text, QString::fromLatin1(expected.at(i).text));
    }

    QVERIFY(diffLines(QString(), QString()).isEmpty());
    const QList<LineChange> same = diffLines(QStringLiteral("x\r\ny\r\n"), QStringLiteral("x\ny\n"));
    QCOMPARE(same.size(), 2);
    QCOMPARE(same.at(1).kind, K::Same);
    QCOMPARE(same.at(1).text, QStringLiteral("y")); // no trailing CR
}

void TestTextDiff::appliesBack_data() {
    QTest::addColumn<QString>("before");
    QTest::addColumn<QString>("after");
    QTest::newRow("kernel") << QString::fromUtf8(kKernelBefore) << QString::fromUtf8(kKernelAfter);
    QTest::newRow("kernel reversed") << QString::fromUtf8(kKernelAfter) << QString::fromUtf8(kKernelBefore);
    QTest::newRow("from empty") << QString() << numbered(1, 4);
    QTest::newRow("to empty") << numbered(1, 4) << QString();
    QTest::newRow("longer before") << numbered(1, 30) << numbered(5, 12) + numbered(20, 22);
    QTest::newRow("longer after") << numbered(5, 12) + numbered(20, 22) << numbered(1, 30);
    QTest::newRow("shuffled") << QStringLiteral("a\nb\nc\nd\ne\nf\n") << QStringLiteral("f\nb\na\ne\nd\nc\nz\n");
}

void TestTextDiff::appliesBack() {
    QFETCH(QString, before);
    QFETCH(QString, after);
    bool consistent = false;
    QCOMPARE(apply(lines(before), diffLines(before, after), &consistent), lines(after));
    QVERIFY(consistent);
}

QTEST_GUILESS_MAIN(TestTextDiff)
#include "tst_textdiff.moc"
