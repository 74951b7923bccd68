#pragma once
// Reads a model's answer: finds the kernel file in its fenced code blocks, checks that it parses as
// a kernel file with a launch plan, and keeps the model's short explanation. Answers come from
// outside and may be anything (empty, truncated, huge, binary), so every input gives a result or
// an error, never a crash. Errors are written for people and for the repair prompt that shows them
// to the model: "the answer has no code block ...", "line 7 of the kernel: ...".

#include "expected.h"
#include "kernelfile.h"

#include <QString>
#include <QStringList>

namespace kforge::llm {

struct ParsedAnswer {
    QString source;       // the kernel file, as the code block held it
    QString explanation;  // the text around the code block, at most kMaxExplanationChars
    QStringList warnings; // tolerated problems: a truncated block, several candidate blocks
};

// Longer explanations are cut at a word: they are shown in lists and stored with every candidate.
constexpr int kMaxExplanationChars = 600;
// No kernel file is this long; a larger block is a runaway answer, not a kernel.
constexpr int kMaxKernelChars = 256 * 1024;
// A strategy text is a prompt section: longer ones would crowd out the kernel.
constexpr int kMaxStrategyChars = 4000;

spec::Expected<ParsedAnswer> parseAnswer(const QString& answer, spec::Dialect dialect);

// The answer of the meta operator: the ```text block (the last one if several), or the whole
// answer when it has no fenced block. Empty texts and texts over kMaxStrategyChars are errors.
spec::Expected<QString> parseStrategyAnswer(const QString& answer);

} // namespace kforge::llm
