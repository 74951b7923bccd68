// Answer parsing: the kernel file is found in the answer's code blocks whatever the fence style,
// language tag or surrounding prose; broken answers give errors a person (and a repair prompt) can
// act on; no input, however malformed, crashes the parser. Strategy answers of the meta operator.

#include "llm/answerparser.h"

#include <QRandomGenerator>
#include <QTest>

#include <iterator>

using kforge::llm::kMaxExplanationChars;
using kforge::llm::kMaxStrategyChars;
using kforge::llm::parseAnswer;
using kforge::llm::parseStrategyAnswer;
using kforge::spec::Dialect;

Q_DECLARE_METATYPE(kforge::spec::Dialect)

namespace {

const QString kCuda = QStringLiteral(R"(// kforge:param BLOCK in {128, 256} = 256
// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        y[i] = 2.0f * x[i];
}
)");

const QString kOpenCl = QStringLiteral(R"(// kforge:param BLOCK in {64, 128} = 128
// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)
__kernel void scale(__global const float* x, __global float* y, int N)
{
    const int i = get_global_id(0);
    if (i < N)
        y[i] = 2.0f * x[i];
}
)");

QString fenced(const QString& lang, const QString& code, const QString& fence = QStringLiteral("```")) {
    return fence + lang + QLatin1Char('\n') + code + fence + QLatin1Char('\n');
}

} // namespace

class TestAnswerParser : public QObject {
    Q_OBJECT

private slots:
    void goodAnswers_data();
    void goodAnswers();
    void badAnswers_data();
    void badAnswers();
    void explanationIsCut();
    void neverCrashes_data();
    void neverCrashes();
    void randomBytesNeverCrash();
    void strategyAnswers_data();
    void strategyAnswers();
};

void TestAnswerParser::goodAnswers_data() {
    QTest::addColumn<QString>("answer");
    QTest::addColumn<Dialect>("dialect");
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("explanation");
    QTest::addColumn<QStringList>("warnings"); // a part of each expected warning

    QTest::newRow("cuda") << QStringLiteral("Here is the kernel:\n\n") + fenced(QStringLiteral("cuda"), kCuda)
                                 + QStringLiteral("\nEach thread scales one element.\n")
                          << Dialect::Cuda << kCuda
                          << QStringLiteral("Here is the kernel:\n\nEach thread scales one element.") << QStringList{};
    QTest::newRow("opencl") << fenced(QStringLiteral("opencl"), kOpenCl) + QStringLiteral("Vectorised later.")
                            << Dialect::OpenCL << kOpenCl << QStringLiteral("Vectorised later.") << QStringList{};
    QTest::newRow("no tag, tildes, crlf") << QString(QStringLiteral("~~~~\n") + kCuda + QStringLiteral("~~~~\ndone\n"))
                                                 .replace(QStringLiteral("\n"), QStringLiteral("\r\n"))
                                          << Dialect::Cuda << kCuda << QStringLiteral("done") << QStringList{};
    for (const char* tag : {"cu", "c++", "cpp", "c", "CUDA", "cuda title=\"scale.cu\""})
        QTest::newRow(qPrintable(QStringLiteral("tag %1").arg(QLatin1String(tag))))
            << fenced(QLatin1String(tag), kCuda) << Dialect::Cuda << kCuda << QString() << QStringList{};
    QTest::newRow("tag cl") << fenced(QStringLiteral("cl"), kOpenCl) << Dialect::OpenCL << kOpenCl << QString()
                            << QStringList{};
    QTest::newRow("directives block beats a kernel without them")
        << fenced(QStringLiteral("cuda"), kCuda) + QStringLiteral("Without the plan it would be:\n")
               + fenced(QStringLiteral("cuda"), QStringLiteral("__global__ void scale(float* y) {}\n"))
               + fenced(QStringLiteral("bash"), QStringLiteral("nvcc -o x x.cu\n"))
        << Dialect::Cuda << kCuda << QStringLiteral("Without the plan it would be:") << QStringList{};
    QString draft = kCuda;
    draft.replace(QStringLiteral("2.0f"), QStringLiteral("3.0f"));
    QTest::newRow("two kernel files: the last")
        << QStringLiteral("First try:\n") + fenced(QStringLiteral("cuda"), draft) + QStringLiteral("Better:\n")
               + fenced(QStringLiteral("cuda"), kCuda)
        << Dialect::Cuda << kCuda << QStringLiteral("First try:\n\nBetter:")
        << QStringList{QStringLiteral("2 code blocks")};
    QTest::newRow("truncated at the end") << QStringLiteral("Sure.\n```cuda\n") + kCuda << Dialect::Cuda << kCuda
                                          << QStringLiteral("Sure.") << QStringList{QStringLiteral("no closing fence")};
    QTest::newRow("complete beats truncated")
        << fenced(QStringLiteral("cuda"), kCuda) + QStringLiteral("```cuda\n") + draft.left(120) << Dialect::Cuda
        << kCuda << QString() << QStringList{QStringLiteral("last complete one")};
    QTest::newRow("inline code is not a fence")
        << QStringLiteral("Use ```float4``` loads.\n") + fenced(QStringLiteral("cuda"), kCuda) << Dialect::Cuda << kCuda
        << QStringLiteral("Use ```float4``` loads.") << QStringList{};
    QTest::newRow("longer fence holds a shorter one")
        << fenced(QStringLiteral("cuda"), kCuda + QStringLiteral("/*\n```\n*/\n"), QStringLiteral("````"))
        << Dialect::Cuda << kCuda + QStringLiteral("/*\n```\n*/\n") << QString() << QStringList{};
    // The same kernel reads the same whatever its block ends with or its lines end in.
    QTest::newRow("blank lines before the closing fence")
        << fenced(QStringLiteral("cuda"), kCuda + QStringLiteral("\n\n")) << Dialect::Cuda << kCuda << QString()
        << QStringList{};
    QTest::newRow("truncated after blank lines")
        << QStringLiteral("```cuda\n") + kCuda + QStringLiteral("\n\n") << Dialect::Cuda << kCuda << QString()
        << QStringList{QStringLiteral("no closing fence")};
    QTest::newRow("CRLF converted twice")
        << QString(fenced(QStringLiteral("cuda"), kCuda)).replace(QStringLiteral("\n"), QStringLiteral("\r\r\n"))
        << Dialect::Cuda << kCuda << QString() << QStringList{};
}

void TestAnswerParser::goodAnswers() {
    QFETCH(QString, answer);
    QFETCH(Dialect, dialect);
    QFETCH(QString, source);
    QFETCH(QString, explanation);
    QFETCH(QStringList, warnings);
    auto parsed = parseAnswer(answer, dialect);
    QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().c_str());
    QCOMPARE(parsed->source, source);
    QCOMPARE(parsed->explanation, explanation);
    QCOMPARE(parsed->warnings.size(), warnings.size());
    for (int i = 0; i < warnings.size(); ++i)
        QVERIFY2(parsed->warnings[i].contains(warnings[i]), qPrintable(parsed->warnings[i]));
}

void TestAnswerParser::badAnswers_data() {
    QTest::addColumn<QString>("answer");
    QTest::addColumn<Dialect>("dialect");
    QTest::addColumn<QString>("error"); // the start of the error

    QTest::newRow("empty") << QString() << Dialect::Cuda << "the answer has no code block";
    QTest::newRow("no fence") << kCuda << Dialect::Cuda << "the answer has no code block: put the complete kernel file";
    QTest::newRow("prose only") << QStringLiteral("I cannot help with that.") << Dialect::OpenCL
                                << "the answer has no code block";
    QString noLaunch = kCuda;
    noLaunch.remove(QStringLiteral("// kforge:launch scale grid=(cdiv(N, BLOCK)) block=(BLOCK)\n"));
    QTest::newRow("no launch") << fenced(QStringLiteral("cuda"), noLaunch) << Dialect::Cuda
                               << "the code block has no // kforge:launch directive";
    QString badParam = kCuda;
    badParam.replace(QStringLiteral("= 256"), QStringLiteral("= 64"));
    QTest::newRow("directive error with its line")
        << QStringLiteral("x\n") + fenced(QStringLiteral("cuda"), badParam) << Dialect::Cuda
        << "line 1 of the kernel: param BLOCK: default 64 is not one of its choices";
    QString badLaunch = kCuda;
    badLaunch.replace(QStringLiteral("block=(BLOCK)"), QStringLiteral("blocks=(BLOCK)"));
    QTest::newRow("launch key error") << fenced(QStringLiteral("cuda"), badLaunch) << Dialect::Cuda
                                      << "line 2 of the kernel: launch scale: unknown key 'blocks'";
    QString wrongName = kCuda;
    wrongName.replace(QStringLiteral("launch scale"), QStringLiteral("launch scale2"));
    QTest::newRow("launch of an undefined kernel") << fenced(QStringLiteral("cuda"), wrongName) << Dialect::Cuda
                                                   << "line 2 of the kernel: launch names kernel 'scale2'";
    QTest::newRow("cuda for an opencl task") << fenced(QStringLiteral("cuda"), kCuda) << Dialect::OpenCL
                                             << "line 2 of the kernel: launch names kernel 'scale'";
    QTest::newRow("only other languages") << fenced(QStringLiteral("python"), QStringLiteral("print(1)\n"))
                                          << Dialect::Cuda << "the answer has no code block with a kernel file";
    QTest::newRow("opencl without plan for a cuda task")
        << fenced(QString(), QStringLiteral("__kernel void k(__global float* y) {}\n")) << Dialect::Cuda
        << "the code block holds OpenCL C code";
    QTest::newRow("huge block") << fenced(QStringLiteral("cuda"),
                                          kCuda + QString(300000, QLatin1Char(' ')) + QLatin1Char('\n'))
                                << Dialect::Cuda << "the code block is";
    QTest::newRow("huge directive line") << fenced(
        QStringLiteral("cuda"), QStringLiteral("// kforge:launch scale grid=(") + QString(10000, QLatin1Char('N'))
                                    + QStringLiteral(") block=(1)\n") + kCuda)
                                         << Dialect::Cuda << "line 1 of the kernel is ";
}

void TestAnswerParser::badAnswers() {
    QFETCH(QString, answer);
    QFETCH(Dialect, dialect);
    QFETCH(QString, error);
    auto parsed = parseAnswer(answer, dialect);
    QVERIFY(!parsed.ok());
    QVERIFY2(QString::fromStdString(parsed.error()).startsWith(error), parsed.error().c_str());
}

void TestAnswerParser::explanationIsCut() {
    QString prose;
    for (int i = 0; i < 200; ++i)
        prose += QStringLiteral("word%1 ").arg(i);
    auto parsed = parseAnswer(fenced(QStringLiteral("cuda"), kCuda) + prose, Dialect::Cuda);
    QVERIFY(parsed.ok());
    QVERIFY(parsed->explanation.size() <= kMaxExplanationChars);
    QVERIFY(parsed->explanation.size() > kMaxExplanationChars / 2);
    QVERIFY(parsed->explanation.endsWith(QStringLiteral(" ...")));
    QVERIFY(parsed->explanation.startsWith(QStringLiteral("word0 word1 ")));
}

void TestAnswerParser::neverCrashes_data() {
    QTest::addColumn<QString>("answer");
    QTest::newRow("empty") << QString();
    QTest::newRow("only a fence") << QStringLiteral("```");
    QTest::newRow("fence and tag") << QStringLiteral("```cuda");
    QTest::newRow("unbalanced") << QStringLiteral("```cuda\n```\n```\n~~~\n```cuda\n// kforge:launch");
    QTest::newRow("directive only") << QStringLiteral("```\n// kforge:launch\n```");
    QTest::newRow("broken directives") << QStringLiteral(
        "```\n// kforge:param\n// kforge:scratch\n// kforge:launch k grid=(\n// kforge:\n```");
    QTest::newRow("unclosed parens") << QStringLiteral(
        "```\n// kforge:launch k grid=((((((( block=(1)\n__global__ void k(((((\n```");
    QTest::newRow("nul bytes") << QStringLiteral("```\n// kforge:launch k grid=(1) block=(1)\n__global__ void k(")
                                      + QString(2, QChar(0)) + QStringLiteral(")\n```");
    QTest::newRow("many fences") << QStringLiteral("```\n").repeated(20000);
    QTest::newRow("huge prose") << QString(2 * 1024 * 1024, QLatin1Char('a'));
    QTest::newRow("huge line in block") << QStringLiteral("```\n") + QString(1024 * 1024, QLatin1Char('('))
                                               + QStringLiteral("\n```");
    QTest::newRow("many launches") << QStringLiteral("```cuda\n")
                                          + QStringLiteral("// kforge:launch k grid=(1) block=(1)\n").repeated(5000)
                                          + QStringLiteral("__global__ void k() {}\n```");
    QTest::newRow("deep attribute") << QStringLiteral(
                                           "```opencl\n// kforge:launch k grid=(1) block=(1)\n__kernel __attribute__((")
                                           + QString(3000, QLatin1Char('(')) + QStringLiteral(" void k() {}\n```");
    QTest::newRow("unicode") << QStringLiteral(
        "```cuda\n// kforge:launch ядро grid=(1) block=(1)\n__global__ void ядро() {}\n```");
}

void TestAnswerParser::neverCrashes() {
    QFETCH(QString, answer);
    for (Dialect d : {Dialect::Cuda, Dialect::OpenCL}) {
        auto parsed = parseAnswer(answer, d);
        if (!parsed.ok())
            QVERIFY(!parsed.error().empty());
        auto strategy = parseStrategyAnswer(answer);
        if (!strategy.ok())
            QVERIFY(!strategy.error().empty());
    }
}

void TestAnswerParser::randomBytesNeverCrash() {
    QRandomGenerator rng(42);
    const QByteArray pieces[] = {"```",
                                 "~~~",
                                 "\n",
                                 "// kforge:launch k grid=(1) block=(1)",
                                 "// kforge:param B in {1} = 1",
                                 "__global__ void k(",
                                 "__kernel void k(",
                                 ")",
                                 "{",
                                 "}",
                                 "/*",
                                 "*/",
                                 "\"",
                                 "'",
                                 "\\"};
    for (int round = 0; round < 300; ++round) {
        QByteArray bytes;
        const int n = static_cast<int>(rng.bounded(200));
        for (int i = 0; i < n; ++i) {
            if (rng.bounded(2))
                bytes += pieces[rng.bounded(static_cast<int>(std::size(pieces)))];
            else
                bytes += static_cast<char>(rng.bounded(256));
        }
        const QString answer = QString::fromUtf8(bytes);
        auto parsed = parseAnswer(answer, round % 2 ? Dialect::Cuda : Dialect::OpenCL);
        if (!parsed.ok())
            QVERIFY(!parsed.error().empty());
        auto strategy = parseStrategyAnswer(answer);
        Q_UNUSED(strategy);
    }
}

void TestAnswerParser::strategyAnswers_data() {
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("strategy"); // empty: an error is expected
    QTest::addColumn<QString>("error");
    QTest::newRow("text fence") << QStringLiteral("Here:\n```text\nFuse the passes.\nKeep rows on chip.\n```\nBecause.")
                                << QStringLiteral("Fuse the passes.\nKeep rows on chip.") << QString();
    QTest::newRow("no fence") << QStringLiteral("  Use warp shuffles.\n") << QStringLiteral("Use warp shuffles.")
                              << QString();
    QTest::newRow("untagged fence") << QStringLiteral("```\nTile by 8.\n```") << QStringLiteral("Tile by 8.")
                                    << QString();
    QTest::newRow("last text fence") << QStringLiteral("```text\nold\n```\n```text\nnew\n```") << QStringLiteral("new")
                                     << QString();
    QTest::newRow("text among code") << QStringLiteral("```cuda\nint x;\n```\n~~~text\nThe strategy.\n~~~")
                                     << QStringLiteral("The strategy.") << QString();
    QTest::newRow("truncated text fence")
        << QStringLiteral("```text\nStream rows") << QStringLiteral("Stream rows") << QString();
    QTest::newRow("empty") << QString() << QString() << QStringLiteral("the strategy text is empty");
    QTest::newRow("empty fence") << QStringLiteral("```text\n\n```") << QString()
                                 << QStringLiteral("the strategy text is empty");
    QTest::newRow("only code") << QStringLiteral("```cuda\nint x;\n```") << QString()
                               << QStringLiteral("the answer has no ```text block");
    QTest::newRow("too long") << QStringLiteral("```text\n") + QString(kMaxStrategyChars + 1, QLatin1Char('s'))
                                     + QStringLiteral("\n```")
                              << QString() << QStringLiteral("the strategy text is 4001 characters long");
}

void TestAnswerParser::strategyAnswers() {
    QFETCH(QString, answer);
    QFETCH(QString, strategy);
    QFETCH(QString, error);
    auto parsed = parseStrategyAnswer(answer);
    if (strategy.isEmpty()) {
        QVERIFY(!parsed.ok());
        QVERIFY2(QString::fromStdString(parsed.error()).startsWith(error), parsed.error().c_str());
    } else {
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().c_str());
        QCOMPARE(*parsed, strategy);
    }
}

QTEST_GUILESS_MAIN(TestAnswerParser)
#include "tst_answerparser.moc"
