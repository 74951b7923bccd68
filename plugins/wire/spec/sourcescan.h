#pragma once
// Linear, non-recursive scanners over kernel source, which is hostile input (language models write
// it under search pressure). They see what the compiler will see: line splices (backslash-newline)
// joined, comments and literals (raw strings, digit separators, character literals) blanked, and
// preprocessor regions that are decidably inactive (#if 0, #ifdef of a name the file never defines
// after an #undef...) told apart from those kforge cannot decide. The CUDA and OpenCL static checks
// share checkPreprocessor(); KernelFile::parse finds kernel signatures with findKernelHeads() in
// active code only.

#include "expected.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::spec {

enum class Dialect { OpenCL, Cuda };

// Source files larger than this are not kernels (and would only slow every scan down).
constexpr std::size_t kMaxSourceBytes = std::size_t{1024} * 1024;

// The source with comments and the contents of string and character literals blanked to spaces;
// newlines (and line-splice backslashes outside comments and literals) are kept, so offsets, lines
// and columns still match the original. CUDA is C++ (raw strings, digit separators); OpenCL is C.
std::string stripComments(const std::string& source, Dialect dialect = Dialect::Cuda);

// One logical line: physical lines joined at line splices. `text` is taken from the blanked code.
struct LogicalLine {
    std::string text;
    int line = 0;     // first physical line, 1-based
    int lastLine = 0; // last physical line
};
std::vector<LogicalLine> logicalLines(const std::string& code);

// A preprocessor directive on a logical line: "#  name rest" (or the digraph "%:"). `name` is empty
// for a line that is not a directive; "#" alone gives isDirective with an empty name.
struct Directive {
    bool isDirective = false;
    std::string name;       // "include", "define", "123" for a GNU line marker...
    std::string rest;       // after the name, leading blanks removed
    std::size_t column = 0; // 0-based column of '#'
};
Directive directiveOf(const std::string& logicalText);

enum class Region { Active, Inactive, Undecided };

// Which physical lines the preprocessor keeps (index line - 1). A condition is decided from the
// file's own #define/#undef lines and a few names the compiler is known to define; a name the file
// does not define may come from the compiler or the command line, so a test of it is Undecided.
// `sticky` names (kforge:param values, injected by kforge) are always Undecided in a condition.
std::vector<Region> conditionalRegions(const std::vector<LogicalLine>& lines, int lineCount, Dialect dialect,
                                       const std::set<std::string>& sticky = {});

// `code` with every physical line whose region is not in `keep` blanked, newlines kept.
std::string blankRegions(const std::string& code, const std::vector<Region>& regions, bool keepUndecided);

// What a static check scans: the blanked code with decidably inactive regions blanked too (regions
// kforge cannot decide are kept, so both branches are checked).
std::string checkedCode(const std::string& source, Dialect dialect);

// Calls f(offset, word) for every identifier of `code` (a blanked source), in order.
template <typename F> void forEachIdentifier(const std::string& code, F&& f) {
    const auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'; };
    const auto part = [&](char c) { return start(c) || (c >= '0' && c <= '9'); };
    std::size_t i = 0;
    while (i < code.size()) {
        if (!start(code[i])) {
            // Skip numbers whole, so that "1e5f" yields no identifier "e5f".
            if (code[i] >= '0' && code[i] <= '9')
                while (i < code.size() && (part(code[i]) || code[i] == '.'))
                    ++i;
            else
                ++i;
            continue;
        }
        std::size_t e = i;
        while (e < code.size() && part(code[e]))
            ++e;
        f(i, std::string_view(code).substr(i, e - i));
        i = e;
    }
}

// A kernel function head found in code: `__global__ ... void NAME (` (CUDA) or
// `__kernel/kernel [__attribute__((...))] void NAME (` (OpenCL).
struct KernelHead {
    std::string name;
    std::size_t start = 0; // offset of __global__ / __kernel
    std::size_t open = 0;  // offset of the '(' of the parameter list
};
std::vector<KernelHead> findKernelHeads(const std::string& code, Dialect dialect);

// Offset of the parenthesis closing the one at `open`, or npos; gives up after `limit` characters.
std::size_t matchingParen(const std::string& code, std::size_t open, std::size_t limit = std::string::npos);

// 1-based line of an offset.
int lineAt(const std::string& text, std::size_t pos);

// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or npos when all of `text` is. The worker protocol is JSON,
// which carries UTF-8 text only.
std::size_t firstInvalidUtf8(std::string_view text);

// Where `text` stops being UTF-8 (1-based line and column) and what is there ("byte 0xB5 is not
// UTF-8"); null when all of it is. Each reader of files says which files must be UTF-8, and why.
struct NotUtf8 {
    int line = 0;
    int column = 0;
    std::string what;
};
std::optional<NotUtf8> findNotUtf8(const std::string& text);

// A finding of the shared preprocessor check: always an error that rejects the candidate.
struct SourceFinding {
    int line = 0;
    int column = 0;
    std::string message;
};

struct IncludePolicy {
    // Whether `#include <header>` may stay; nullptr allows none.
    std::function<bool(const std::string&)> allowed;
    // Shown after a rejected header: "Allowed: ..." or why none are.
    std::string allowedText;
};

// The checks both backends share: #include only of allowed <headers> (no "...", no macro-computed
// names, no include_next/import/embed), no __has_include/__has_embed probes, no #line or GNU line
// markers, no #pragma or _Pragma other than the harmless ones, no other directive than the standard
// conditional/define ones, no trigraphs, no backslash-space-newline (compilers disagree on it).
// Inactive regions (#if 0) are skipped; regions kforge cannot decide are checked.
std::vector<SourceFinding> checkPreprocessor(const std::string& source, Dialect dialect, const IncludePolicy& policy);

// Whether a pragma's text ("unroll 4", "OPENCL EXTENSION cl_khr_fp16 : enable") is one kforge lets
// through: it must not name a file or change how diagnostics are reported.
bool isAllowedPragma(const std::string& text);

} // namespace kforge::spec
