#include "cudastaticcheck.h"

#include "kernelfile.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace kforge::cuda {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Offsets of line starts, to turn a match position into a line and column.
class LineIndex {
public:
    explicit LineIndex(const std::string& text) {
        m_starts.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n')
                m_starts.push_back(i + 1);
    }
    std::pair<int, int> at(std::size_t pos) const {
        const auto it = std::upper_bound(m_starts.begin(), m_starts.end(), pos) - 1;
        return {static_cast<int>(it - m_starts.begin()) + 1, static_cast<int>(pos - *it) + 1};
    }

private:
    std::vector<std::size_t> m_starts;
};

class Collector {
public:
    explicit Collector(const std::string& code) : m_lines(code) {}

    void add(std::size_t pos, const std::string& severity, const std::string& rule, const std::string& message) {
        const auto [line, column] = m_lines.at(pos);
        // One finding per rule and line is enough to act on; a rejected #include already says it all.
        if (m_seen.count({line, "include"}) || !m_seen.insert({line, rule}).second)
            return;
        protocol::Diagnostic d;
        d.kind = "integrity";
        d.severity = severity;
        d.message = message;
        d.line = line;
        d.column = column;
        m_out.push_back(std::move(d));
    }
    void addAt(int line, int column, const std::string& rule, const std::string& message) {
        if (!m_seen.insert({line, rule}).second)
            return;
        m_out.push_back({"integrity", "error", message, "", line, column});
    }

    std::vector<protocol::Diagnostic> take() {
        std::stable_sort(m_out.begin(), m_out.end(), [](const auto& a, const auto& b) {
            return a.line != b.line ? a.line < b.line : a.column < b.column;
        });
        return std::move(m_out);
    }

private:
    LineIndex m_lines;
    std::set<std::pair<int, std::string>> m_seen;
    std::vector<protocol::Diagnostic> m_out;
};

const char* const kDeviceOnly = "a kernel file holds device code only: the worker allocates the buffers and launches "
                                "the kernels its launch plan names";

void checkIncludes(const std::string& source, const std::string& code, Collector& out) {
    std::vector<std::string> original;
    {
        std::istringstream in(source);
        for (std::string l; std::getline(in, l);)
            original.push_back(l);
    }
    std::istringstream in(code);
    int lineNo = 0;
    for (std::string line; std::getline(in, line);) {
        ++lineNo;
        const int first = lineNo;
        // A backslash-newline continues a preprocessor line; "#\<newline>include" is still an include.
        std::string text = first - 1 < static_cast<int>(original.size()) ? original[static_cast<std::size_t>(first - 1)] : "";
        while (!line.empty() && line.back() == '\\') {
            std::string next;
            if (!std::getline(in, next))
                break;
            ++lineNo;
            line.pop_back();
            line += next;
            if (lineNo - 1 < static_cast<int>(original.size())) {
                if (!text.empty() && text.back() == '\\')
                    text.pop_back();
                text += original[static_cast<std::size_t>(lineNo - 1)];
            }
        }
        const std::size_t p = line.find_first_not_of(" \t");
        if (p == std::string::npos)
            continue;
        std::size_t q = std::string::npos;
        if (line[p] == '#')
            q = p + 1;
        else if (line.compare(p, 2, "%:") == 0) // digraph for '#'
            q = p + 2;
        if (q == std::string::npos)
            continue;
        q = line.find_first_not_of(" \t", q);
        if (q == std::string::npos)
            continue;
        const bool include = line.compare(q, 7, "include") == 0;
        const bool import = line.compare(q, 6, "import") == 0;
        if (!include && !import)
            continue;
        std::size_t r = q + (include ? 7 : 6);
        const std::string shown = "'" + trim(text) + "'";
        const int column = static_cast<int>(p) + 1;
        if (line.compare(r, 5, "_next") == 0 || import) {
            out.addAt(first, column, "include", shown + ": only #include <header> of an allowed header is accepted");
            continue;
        }
        r = line.find_first_not_of(" \t", r);
        if (r == std::string::npos || (line[r] != '<' && line[r] != '"')) {
            out.addAt(first, column, "include",
                      shown + ": a computed #include (through a macro) is not allowed; name the header as #include <...>");
            continue;
        }
        if (line[r] == '"') {
            out.addAt(first, column, "include",
                      shown + ": #include \"...\" is not allowed: a kernel file must be self-contained, since the worker "
                              "compiles it alone and files beside it are not part of the candidate");
            continue;
        }
        const std::size_t close = line.find('>', r + 1);
        const std::string header = trim(line.substr(r + 1, close == std::string::npos ? std::string::npos : close - r - 1));
        if (close == std::string::npos || !isAllowedInclude(header))
            out.addAt(first, column, "include",
                      shown + ": <" + header + "> is not an allowed header. Allowed: cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, "
                              "mma.h, math_constants.h, stdint.h, cstdint, cooperative_groups.h, cooperative_groups/*, "
                              "cuda/pipeline, cuda/barrier, cuda/atomic, cuda/std/*, cub/block/*, cub/warp/*, cub/thread/*");
    }
}

struct Rule {
    std::regex pattern;
    const char* severity;
    const char* name;
    std::string (*message)(const std::string& match);
};

const std::vector<Rule>& rules() {
    static const std::vector<Rule> all = [] {
        std::vector<Rule> r;
        const auto error = "error";
        r.push_back({std::regex(R"(\b(cublas\w*|cublasLt\w*|cudnn\w*|cufft\w*|cusparse\w*|cusolver\w*)\b)"), error, "vendor",
                     [](const std::string& m) -> std::string {
                         return "'" + m + "': vendor libraries (cuBLAS, cuDNN, cuFFT, cuSPARSE, cuSOLVER) are not allowed; "
                                "the candidate must be the kernel itself";
                     }});
        r.push_back({std::regex(R"(\b(cutlass|cute)\s*::)"), error, "vendor", [](const std::string& m) -> std::string {
                         return "'" + m + "': CUTLASS and CuTe are not allowed; the candidate must be the kernel itself";
                     }});
        r.push_back({std::regex(R"(\bcurand(Create|Destroy|Generate|Set|Get)\w*)"), error, "vendor", [](const std::string& m) -> std::string {
                         return "'" + m + "': the cuRAND host API is not allowed";
                     }});
        r.push_back({std::regex(R"(\bthrust\s*::)"), error, "vendor", [](const std::string& m) -> std::string {
                         return "'" + m + "': Thrust is not allowed; write the kernel itself";
                     }});
        r.push_back({std::regex(R"(\bcub\s*::\s*Device\w*)"), error, "vendor", [](const std::string& m) -> std::string {
                         return "'" + m + "': device-wide CUB algorithms launch their own kernels and are not allowed "
                                "(block-, warp- and thread-level CUB are)";
                     }});
        r.push_back({std::regex(R"(\bcuda(Malloc|Free|Memcpy|Memset|Stream|Launch|DeviceSynchronize|DeviceReset|Graph|Event|SetDevice|GetParameterBuffer|HostAlloc|HostRegister)\w*)"),
                     error, "runtime", [](const std::string& m) -> std::string {
                         return "'" + m + "': CUDA runtime calls are not allowed; " + std::string(kDeviceOnly);
                     }});
        r.push_back({std::regex(R"(<<<)"), error, "launch", [](const std::string&) -> std::string {
                         return "kernel launch syntax '<<<...>>>' is not allowed: every kernel is launched by the "
                                "kernel file's '// kforge:launch' lines";
                     }});
        r.push_back({std::regex(R"(\bmain\s*\()"), error, "main", [](const std::string&) -> std::string {
                         return "'main(': " + std::string(kDeviceOnly) + "; no host program is compiled or run";
                     }});
        r.push_back({std::regex(R"(\bprintf\b)"), "warning", "printf", [](const std::string&) -> std::string {
                         return std::string("printf in a kernel serialises output and distorts timing; remove it before measuring");
                     }});
        return r;
    }();
    return all;
}

// `__host__` is fine as part of `__host__ __device__`; on its own it declares host code, which the
// worker never runs.
void checkHostFunctions(const std::string& code, Collector& out) {
    static const std::regex host(R"(\b__host__\b)");
    static const std::regex device(R"(\b__device__\b)");
    for (auto it = std::sregex_iterator(code.begin(), code.end(), host); it != std::sregex_iterator(); ++it) {
        const std::size_t pos = static_cast<std::size_t>(it->position(0));
        const std::size_t before = code.find_last_of(";{}", pos);
        const std::size_t begin = before == std::string::npos ? 0 : before + 1;
        const std::size_t after = code.find_first_of(";{(", pos);
        const std::string declaration = code.substr(begin, (after == std::string::npos ? code.size() : after) - begin);
        if (std::regex_search(declaration, device))
            continue;
        out.add(pos, "error", "host",
                "__host__ function without __device__: " + std::string(kDeviceOnly)
                    + ", so helpers must be __device__ (or __host__ __device__)");
    }
}

} // namespace

bool isAllowedInclude(const std::string& header) {
    static const std::set<std::string> exact = {"cuda_fp16.h",  "cuda_bf16.h", "cuda_fp8.h",    "mma.h",
                                                "cuda/pipeline", "cuda/barrier", "cuda/atomic", "cooperative_groups.h",
                                                "stdint.h",     "cstdint",     "math_constants.h"};
    if (exact.count(header))
        return true;
    if (header.find("..") != std::string::npos)
        return false;
    for (const char* prefix : {"cuda/std/", "cooperative_groups/", "cub/block/", "cub/warp/", "cub/thread/"})
        if (header.rfind(prefix, 0) == 0 && header.size() > std::char_traits<char>::length(prefix))
            return true;
    return false;
}

std::vector<protocol::Diagnostic> staticCheckCuda(const std::string& source) {
    // Comments and string literals are blanked (lines kept), so names quoted in them do not count.
    const std::string code = spec::stripComments(source);
    Collector out(code);
    checkIncludes(source, code, out);
    for (const auto& rule : rules())
        for (auto it = std::sregex_iterator(code.begin(), code.end(), rule.pattern); it != std::sregex_iterator(); ++it)
            out.add(static_cast<std::size_t>(it->position(0)), rule.severity, rule.name, rule.message(it->str()));
    checkHostFunctions(code, out);
    return out.take();
}

} // namespace kforge::cuda
