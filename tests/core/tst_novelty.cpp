// Novelty: an answer that only changes comments or layout is an exact duplicate; a changed
// `// kforge:` directive is not; a renamed identifier is a near duplicate with its similarity; a
// different kernel matches nothing; thousands of stored kernels stay cheap to check.

#include "llm/novelty.h"

#include <QTest>

using kforge::llm::NoveltyFilter;

namespace {

const QString kKernel = QStringLiteral(R"(// Row sum, one warp per row.
// kforge:param ROWS in {4, 8} = 8
// kforge:launch row_sum grid=(cdiv(M, ROWS)) block=(32 * ROWS)
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    const int row = blockIdx.x * ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= M)
        return;
    const float* xr = x + (size_t)row * N;
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32)
        acc += xr[j];
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0)
        y[row] = acc;
}
)");

const QString kOther = QStringLiteral(R"(// kforge:param BLOCK in {128, 256} = 256
// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        y[i] = 2.0f * x[i] + 1.0f;
}
)");

} // namespace

class TestNovelty : public QObject {
    Q_OBJECT

private slots:
    void exactDespiteCommentsAndWhitespace();
    void directivesCount();
    void nearDuplicate();
    void differentKernels();
    void firstIdKept();
    void manyKernels();
};

void TestNovelty::exactDespiteCommentsAndWhitespace() {
    NoveltyFilter filter;
    filter.add(7, kKernel);
    QString changed = kKernel;
    changed.replace(QStringLiteral("// Row sum, one warp per row."),
                    QStringLiteral("/* A different header\n   comment. */"));
    changed.replace(QStringLiteral("    "), QStringLiteral("\t"));
    changed.replace(QStringLiteral("acc += xr[j];"), QStringLiteral("acc  +=  xr[j];   // the strided sum\n\n\n"));
    changed.replace(QStringLiteral("\n"), QStringLiteral("\r\n"));
    changed.replace(QStringLiteral("//  kforge"), QStringLiteral("//kforge"));
    const auto match = filter.check(changed);
    QVERIFY(match.has_value());
    QCOMPARE(match->id, 7);
    QVERIFY(match->exact);
    QCOMPARE(match->similarity, 1.0);
    QCOMPARE(NoveltyFilter::normalise(changed), NoveltyFilter::normalise(kKernel));
    QVERIFY(NoveltyFilter::normalise(kKernel).startsWith(QStringLiteral("// kforge:param ROWS in {4, 8} = 8\n")));
}

void TestNovelty::directivesCount() {
    NoveltyFilter filter;
    filter.add(1, kKernel);
    QString otherDefault = kKernel;
    otherDefault.replace(QStringLiteral("{4, 8} = 8"), QStringLiteral("{4, 8} = 4"));
    const auto match = filter.check(otherDefault);
    QVERIFY(!match || !match->exact);
    QVERIFY(NoveltyFilter::normalise(otherDefault) != NoveltyFilter::normalise(kKernel));

    QString otherLaunch = kKernel;
    otherLaunch.replace(QStringLiteral("block=(32 * ROWS)"), QStringLiteral("block=(32 * ROWS) smem=0"));
    const auto launchMatch = filter.check(otherLaunch);
    QVERIFY(!launchMatch || !launchMatch->exact);
}

void TestNovelty::nearDuplicate() {
    NoveltyFilter filter;
    filter.add(3, kOther);
    filter.add(4, kKernel);
    QString renamed = kKernel;
    renamed.replace(QStringLiteral("xr"), QStringLiteral("row_ptr"));
    const double s = NoveltyFilter::similarity(kKernel, renamed);
    QVERIFY2(s >= 0.8 && s < 1.0, qPrintable(QString::number(s)));
    NoveltyFilter lenient(0.8);
    lenient.add(3, kOther);
    lenient.add(4, kKernel);
    const auto match = lenient.check(renamed);
    QVERIFY(match.has_value());
    QCOMPARE(match->id, 4);
    QVERIFY(!match->exact);
    QCOMPARE(match->similarity, s);

    // One rename in a larger kernel stays above the default threshold.
    QString big = kKernel;
    for (int i = 0; i < 6; ++i)
        big += QString(kKernel)
                   .replace(QStringLiteral("row_sum"), QStringLiteral("row_sum_%1").arg(i))
                   .section(QLatin1Char('\n'), 3);
    filter.add(5, big);
    QString bigRenamed = big;
    bigRenamed.replace(QStringLiteral("float acc = 0.0f;"), QStringLiteral("float total = 0.0f;"));
    const auto bigMatch = filter.check(bigRenamed);
    QVERIFY(bigMatch.has_value());
    QCOMPARE(bigMatch->id, 5);
    QVERIFY(!bigMatch->exact);
    QVERIFY2(bigMatch->similarity >= 0.95 && bigMatch->similarity < 1.0,
             qPrintable(QString::number(bigMatch->similarity)));
}

void TestNovelty::differentKernels() {
    NoveltyFilter filter;
    filter.add(1, kKernel);
    QVERIFY(!filter.check(kOther).has_value());
    QVERIFY(NoveltyFilter::similarity(kKernel, kOther) < 0.3);
    QVERIFY(!filter.check(QString()).has_value());
    NoveltyFilter empty;
    QVERIFY(!empty.check(kKernel).has_value());
}

void TestNovelty::firstIdKept() {
    NoveltyFilter filter;
    filter.add(10, kKernel);
    filter.add(11, QStringLiteral("// only a comment differs\n") + kKernel);
    QCOMPARE(filter.size(), 1);
    QCOMPARE(filter.check(kKernel)->id, 10);
}

void TestNovelty::manyKernels() {
    // Thousands of kernels of one family, as a long run collects them.
    NoveltyFilter filter;
    for (int i = 0; i < 3000; ++i) {
        QString k = kKernel;
        k.replace(QStringLiteral("{4, 8} = 8"), QStringLiteral("{4, 8, %1} = 8").arg(i + 16));
        k.replace(QStringLiteral("0.0f"), QStringLiteral("%1.0f").arg(i));
        k.replace(QStringLiteral("16; o > 0"), QStringLiteral("%1; o > 0").arg(i % 17));
        filter.add(i, k);
    }
    QCOMPARE(filter.size(), 3000);
    const auto match = filter.check(kOther);
    QVERIFY(!match.has_value());
    QString again = kKernel;
    again.replace(QStringLiteral("{4, 8} = 8"), QStringLiteral("{4, 8, %1} = 8").arg(1234 + 16));
    again.replace(QStringLiteral("0.0f"), QStringLiteral("%1.0f").arg(1234));
    again.replace(QStringLiteral("16; o > 0"), QStringLiteral("%1; o > 0").arg(1234 % 17));
    QCOMPARE(filter.check(again)->id, 1234);
}

QTEST_GUILESS_MAIN(TestNovelty)
#include "tst_novelty.moc"
