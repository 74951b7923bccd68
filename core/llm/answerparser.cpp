#include "llm/answerparser.h"

#include <QRegularExpression>

#include <optional>
#include <vector>

namespace kforge::llm {

namespace {

// A kernel line this long is a runaway answer; the kernel file parser's regular expressions are
// also not meant for it.
constexpr int kMaxLineChars = 4000;

struct Block {
    QString lang;            // first word of the info string, lower case
    QStringList lines;       // content
    qsizetype firstLine = 0; // the opening fence's line
    qsizetype lastLine = 0;  // the closing fence's line (the last line when not closed)
    bool closed = false;
};

struct Fence {
    QChar ch;
    qsizetype length = 0;
    QString info;
};

// "```cuda", "~~~", "  ````c++ kernel.cu": a run of at least three backticks or tildes.
std::optional<Fence> openingFence(const QString& line) {
    const QString t = line.trimmed();
    if (t.size() < 3 || (t[0] != QLatin1Char('`') && t[0] != QLatin1Char('~')))
        return std::nullopt;
    Fence f;
    f.ch = t[0];
    while (f.length < t.size() && t[f.length] == f.ch)
        ++f.length;
    if (f.length < 3)
        return std::nullopt;
    f.info = t.mid(f.length).trimmed();
    // "```x```" on one line is inline code, not a fence.
    if (f.ch == QLatin1Char('`') && f.info.contains(QLatin1Char('`')))
        return std::nullopt;
    return f;
}

bool closesFence(const QString& line, const Fence& open) {
    const QString t = line.trimmed();
    if (t.size() < open.length)
        return false;
    for (QChar c : t)
        if (c != open.ch)
            return false;
    return true;
}

std::vector<Block> findBlocks(const QStringList& lines, QStringList* outside) {
    std::vector<Block> blocks;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        const auto fence = openingFence(lines[i]);
        if (!fence) {
            if (outside)
                *outside << lines[i];
            continue;
        }
        Block b;
        b.firstLine = i;
        const QString word = fence->info.section(QLatin1Char(' '), 0, 0, QString::SectionSkipEmpty);
        b.lang = word.toLower();
        if (b.lang.startsWith(QLatin1Char('{')) || b.lang.startsWith(QLatin1Char('.')))
            b.lang.remove(QRegularExpression(QStringLiteral("[{}.]")));
        qsizetype j = i + 1;
        for (; j < lines.size(); ++j) {
            if (closesFence(lines[j], *fence)) {
                b.closed = true;
                break;
            }
            b.lines << lines[j];
        }
        b.lastLine = b.closed ? j : lines.size() - 1;
        i = b.closed ? j : lines.size();
        blocks.push_back(std::move(b));
        if (outside)
            *outside << QString(); // keeps paragraphs apart where a block was
    }
    return blocks;
}

bool isKernelLanguage(const QString& lang) {
    static const QStringList known{QString(),
                                   QStringLiteral("cuda"),
                                   QStringLiteral("cu"),
                                   QStringLiteral("c++"),
                                   QStringLiteral("cpp"),
                                   QStringLiteral("c"),
                                   QStringLiteral("opencl"),
                                   QStringLiteral("cl")};
    return known.contains(lang);
}

bool hasLaunch(const Block& b) {
    static const QRegularExpression launch(QStringLiteral(R"(^\s*//\s*kforge:launch\b)"));
    for (const QString& line : b.lines)
        if (line.contains(QLatin1String("kforge:launch")) && launch.match(line).hasMatch())
            return true;
    return false;
}

bool hasKernelFunction(const QString& code, spec::Dialect dialect) {
    static const QRegularExpression cuda(QStringLiteral(R"(__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\b)"));
    static const QRegularExpression opencl(
        QStringLiteral(R"((?:__kernel|\bkernel)\s+(?:__attribute__\s*\(\([^\n]*?\)\)\s*)*void\b)"));
    return (dialect == spec::Dialect::Cuda ? cuda : opencl).match(code).hasMatch();
}

QString dialectName(spec::Dialect d) {
    return d == spec::Dialect::Cuda ? QStringLiteral("CUDA") : QStringLiteral("OpenCL C");
}

spec::Dialect otherDialect(spec::Dialect d) {
    return d == spec::Dialect::Cuda ? spec::Dialect::OpenCL : spec::Dialect::Cuda;
}

// The last closed block of `indices`, or the last one when none is closed.
const Block* pickLast(const std::vector<Block>& blocks, const std::vector<std::size_t>& indices) {
    for (auto it = indices.rbegin(); it != indices.rend(); ++it)
        if (blocks[*it].closed)
            return &blocks[*it];
    return indices.empty() ? nullptr : &blocks[indices.back()];
}

QString explanationOf(const QStringList& outside) {
    QString text = outside.join(QLatin1Char('\n'));
    static const QRegularExpression blankRuns(QStringLiteral("\\n\\s*\\n(\\s*\\n)+"));
    text.replace(blankRuns, QStringLiteral("\n\n"));
    text = text.trimmed();
    if (text.size() <= kMaxExplanationChars)
        return text;
    QString cut = text.left(kMaxExplanationChars - 4);
    const qsizetype space = cut.lastIndexOf(QLatin1Char(' '));
    if (space > kMaxExplanationChars / 2)
        cut.truncate(space);
    return cut.trimmed() + QStringLiteral(" ...");
}

// The answer's lines, without the CRs that end them: "\r\n" and "\r\r\n" (a CRLF converted twice on
// the way) end a line as "\n" does, so the same kernel reads the same whichever way it came.
QStringList answerLines(const QString& answer) {
    QStringList lines = answer.split(QLatin1Char('\n'));
    for (QString& line : lines)
        while (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
    return lines;
}

spec::Error answerError(const QString& what) {
    return spec::fail(what.toStdString());
}

} // namespace

spec::Expected<ParsedAnswer> parseAnswer(const QString& answer, spec::Dialect dialect) {
    const QStringList lines = answerLines(answer);
    const std::vector<Block> blocks = findBlocks(lines, nullptr);
    const QString example = dialect == spec::Dialect::Cuda ? QStringLiteral("```cuda") : QStringLiteral("```opencl");
    if (blocks.empty())
        return answerError(QStringLiteral("the answer has no code block: put the complete kernel file, with its "
                                          "// kforge: directives, in one fenced block (%1 ... ```)")
                               .arg(example));

    std::vector<std::size_t> withLaunch, withKernel;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        // A block that holds a launch plan is the kernel file whatever its tag says.
        if (hasLaunch(blocks[i]))
            withLaunch.push_back(i);
        else if (isKernelLanguage(blocks[i].lang)
                 && hasKernelFunction(blocks[i].lines.join(QLatin1Char('\n')), dialect))
            withKernel.push_back(i);
    }
    ParsedAnswer result;
    const Block* chosen = pickLast(blocks, withLaunch);
    if (!chosen) {
        if (!withKernel.empty())
            return answerError(QStringLiteral("the code block has no // kforge:launch directive: add at least one line "
                                              "'// kforge:launch KERNEL grid=(...) block=(...)' that runs the kernel"));
        for (const Block& b : blocks)
            if (isKernelLanguage(b.lang) && hasKernelFunction(b.lines.join(QLatin1Char('\n')), otherDialect(dialect)))
                return answerError(QStringLiteral("the code block holds %1 code, but this task's kernels are %2")
                                       .arg(dialectName(otherDialect(dialect)), dialectName(dialect)));
        return answerError(
            QStringLiteral("the answer has no code block with a kernel file: none of its %1 code block(s) "
                           "holds a // kforge:launch directive or a %2 function")
                .arg(blocks.size())
                .arg(dialect == spec::Dialect::Cuda ? QStringLiteral("__global__") : QStringLiteral("__kernel")));
    }
    if (withLaunch.size() > 1)
        result.warnings
            << QStringLiteral(
                   "the answer has %1 code blocks with a // kforge:launch directive; the last %2 one was used")
                   .arg(withLaunch.size())
                   .arg(chosen->closed ? QStringLiteral("complete") : QStringLiteral("(unclosed)"));
    if (!chosen->closed)
        result.warnings << QStringLiteral(
            "the answer ends inside the code block (no closing fence): it may have been cut off");

    // One line end at the end, whatever blank lines the block closed with (or, unclosed, the answer
    // ended with): the same kernel reads the same from any answer.
    result.source = chosen->lines.join(QLatin1Char('\n'));
    while (result.source.endsWith(QLatin1Char('\n')))
        result.source.chop(1);
    if (!result.source.isEmpty())
        result.source += QLatin1Char('\n');
    if (result.source.size() > kMaxKernelChars)
        return answerError(QStringLiteral("the code block is %1 characters long, more than a kernel file may be (%2)")
                               .arg(result.source.size())
                               .arg(kMaxKernelChars));
    for (qsizetype i = 0; i < chosen->lines.size(); ++i)
        if (chosen->lines[i].size() > kMaxLineChars)
            return answerError(QStringLiteral("line %1 of the kernel is %2 characters long (at most %3)")
                                   .arg(i + 1)
                                   .arg(chosen->lines[i].size())
                                   .arg(kMaxLineChars));

    auto kf = spec::KernelFile::parse(result.source.toStdString(), dialect);
    if (!kf) {
        const QString message = QString::fromStdString(kf.error());
        static const QRegularExpression lineRef(QStringLiteral(R"(^line (\d+): )"));
        const auto m = lineRef.match(message);
        QString error;
        if (m.hasMatch())
            error = QStringLiteral("line %1 of the kernel: %2").arg(m.captured(1), message.mid(m.capturedLength(0)));
        else if (message.startsWith(QLatin1String("no launch plan")))
            error = QStringLiteral("the code block has no // kforge:launch directive: add at least one line "
                                   "'// kforge:launch KERNEL grid=(...) block=(...)' that runs the kernel");
        else
            error = QStringLiteral("the kernel file: %1").arg(message);
        if (message.contains(QLatin1String("kernels found: none"))
            && hasKernelFunction(result.source, otherDialect(dialect)))
            error += QStringLiteral(" (the code is %1, but this task's kernels are %2)")
                         .arg(dialectName(otherDialect(dialect)), dialectName(dialect));
        return answerError(error);
    }
    if (kf->launches.empty())
        return answerError(QStringLiteral("the code block has no // kforge:launch directive"));

    QStringList outside;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        if (i == chosen->firstLine) {
            outside << QString();
            i = chosen->lastLine;
            continue;
        }
        outside << lines[i];
    }
    // Other blocks (drafts, a host-side example) are not part of the explanation either.
    QStringList prose;
    findBlocks(outside, &prose);
    result.explanation = explanationOf(prose);
    return result;
}

spec::Expected<QString> parseStrategyAnswer(const QString& answer) {
    const QStringList lines = answerLines(answer);
    const std::vector<Block> blocks = findBlocks(lines, nullptr);
    QString strategy;
    if (blocks.empty()) {
        strategy = lines.join(QLatin1Char('\n'));
    } else {
        static const QStringList textual{QStringLiteral("text"),
                                         QStringLiteral("txt"),
                                         QStringLiteral("plain"),
                                         QStringLiteral("plaintext"),
                                         QStringLiteral("markdown"),
                                         QStringLiteral("md"),
                                         QString()};
        std::vector<std::size_t> indices;
        for (std::size_t i = 0; i < blocks.size(); ++i)
            if (textual.contains(blocks[i].lang))
                indices.push_back(i);
        const Block* chosen = pickLast(blocks, indices);
        if (!chosen)
            return answerError(
                QStringLiteral("the answer has no ```text block with the new strategy (it has %1 other code "
                               "block(s))")
                    .arg(blocks.size()));
        strategy = chosen->lines.join(QLatin1Char('\n'));
    }
    strategy = strategy.trimmed();
    if (strategy.isEmpty())
        return answerError(QStringLiteral("the strategy text is empty"));
    if (strategy.size() > kMaxStrategyChars)
        return answerError(QStringLiteral("the strategy text is %1 characters long; at most %2 are allowed")
                               .arg(strategy.size())
                               .arg(kMaxStrategyChars));
    return strategy;
}

} // namespace kforge::llm
