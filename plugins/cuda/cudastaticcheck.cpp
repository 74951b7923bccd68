#include "cudastaticcheck.h"

#include "kernelfile.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

namespace kforge::cuda {

namespace {

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

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// The offset just past "::" after `pos` (blanks allowed between), or npos.
std::size_t scopeAfter(const std::string& code, std::size_t pos) {
    std::size_t p = pos;
    while (p < code.size() && (code[p] == ' ' || code[p] == '\t' || code[p] == '\n' || code[p] == '\r'))
        ++p;
    return code.compare(p, 2, "::") == 0 ? p + 2 : std::string::npos;
}

std::size_t skipBlanks(const std::string& code, std::size_t p) {
    while (p < code.size() && (code[p] == ' ' || code[p] == '\t' || code[p] == '\n' || code[p] == '\r'))
        ++p;
    return p;
}

// Identifier rules, read token by token (no regular expressions over hostile input).
void checkNames(const std::string& code, Collector& out) {
    static const char* const vendorPrefixes[] = {"cublas", "cudnn", "cufft", "cusparse", "cusolver"};
    static const char* const curandHost[] = {"curandCreate", "curandDestroy", "curandGenerate", "curandSet",
                                             "curandGet"};
    static const char* const runtime[] = {"cudaMalloc",
                                          "cudaFree",
                                          "cudaMemcpy",
                                          "cudaMemset",
                                          "cudaStream",
                                          "cudaLaunch",
                                          "cudaDeviceSynchronize",
                                          "cudaDeviceReset",
                                          "cudaGraph",
                                          "cudaEvent",
                                          "cudaSetDevice",
                                          "cudaGetParameterBuffer",
                                          "cudaHostAlloc",
                                          "cudaHostRegister"};
    spec::forEachIdentifier(code, [&](std::size_t pos, std::string_view word) {
        const std::string w(word.substr(0, 120));
        const std::size_t end = pos + word.size();
        for (const char* v : vendorPrefixes)
            if (startsWith(word, v)) {
                out.add(pos, "error", "vendor",
                        "'" + w
                            + "': vendor libraries (cuBLAS, cuDNN, cuFFT, cuSPARSE, cuSOLVER) are not allowed; "
                              "the candidate must be the kernel itself");
                return;
            }
        for (const char* v : curandHost)
            if (startsWith(word, v)) {
                out.add(pos, "error", "vendor", "'" + w + "': the cuRAND host API is not allowed");
                return;
            }
        for (const char* r : runtime)
            if (startsWith(word, r)) {
                out.add(pos, "error", "runtime",
                        "'" + w + "': CUDA runtime calls are not allowed; " + std::string(kDeviceOnly));
                return;
            }
        if (word == "cutlass" || word == "cute") {
            if (scopeAfter(code, end) != std::string::npos)
                out.add(pos, "error", "vendor",
                        "'" + w + "::': CUTLASS and CuTe are not allowed; the candidate must be the kernel itself");
        } else if (word == "thrust") {
            if (scopeAfter(code, end) != std::string::npos)
                out.add(pos, "error", "vendor", "'thrust::': Thrust is not allowed; write the kernel itself");
        } else if (word == "cub") {
            const std::size_t after = scopeAfter(code, end);
            if (after != std::string::npos) {
                const std::size_t p = skipBlanks(code, after);
                if (code.compare(p, 6, "Device") == 0)
                    out.add(pos, "error", "vendor",
                            "'cub::Device...': device-wide CUB algorithms launch their own kernels and are not allowed "
                            "(block-, warp- and thread-level CUB are)");
            }
        } else if (word == "main") {
            const std::size_t p = skipBlanks(code, end);
            if (p < code.size() && code[p] == '(')
                out.add(pos, "error", "main",
                        "'main(': " + std::string(kDeviceOnly) + "; no host program is compiled or run");
        } else if (word == "printf") {
            out.add(pos, "warning", "printf",
                    "printf in a kernel serialises output and distorts timing; remove it before measuring");
        } else if (word == "__host__") {
            // `__host__` is fine as part of `__host__ __device__`; on its own it declares host code,
            // which the worker never runs. The declaration is read within a bounded window.
            constexpr std::size_t kWindow = 1024;
            const std::size_t from = pos > kWindow ? pos - kWindow : 0;
            std::size_t begin = from;
            for (std::size_t k = pos; k > from; --k)
                if (code[k - 1] == ';' || code[k - 1] == '{' || code[k - 1] == '}') {
                    begin = k;
                    break;
                }
            std::size_t stop = std::min(code.size(), end + kWindow);
            for (std::size_t k = end; k < stop; ++k)
                if (code[k] == ';' || code[k] == '{' || code[k] == '(') {
                    stop = k;
                    break;
                }
            bool device = false;
            spec::forEachIdentifier(code.substr(begin, stop - begin),
                                    [&](std::size_t, std::string_view x) { device |= x == "__device__"; });
            if (!device)
                out.add(pos, "error", "host",
                        "__host__ function without __device__: " + std::string(kDeviceOnly)
                            + ", so helpers must be __device__ (or __host__ __device__)");
        }
    });
    for (std::size_t p = code.find("<<<"); p != std::string::npos; p = code.find("<<<", p + 3))
        out.add(p, "error", "launch",
                "kernel launch syntax '<<<...>>>' is not allowed: every kernel is launched by the kernel file's "
                "'// kforge:launch' lines");
}

} // namespace

bool isAllowedInclude(const std::string& header) {
    static const std::set<std::string> exact = {
        "cuda_fp16.h", "cuda_bf16.h",          "cuda_fp8.h", "mma.h",   "cuda/pipeline",   "cuda/barrier",
        "cuda/atomic", "cooperative_groups.h", "stdint.h",   "cstdint", "math_constants.h"};
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
    // What the compiler sees: splices joined, comments and literals blanked (lines kept), #if 0
    // regions left out and undecidable regions checked.
    const std::string code = spec::checkedCode(source, spec::Dialect::Cuda);
    Collector out(code);
    spec::IncludePolicy policy;
    policy.allowed = isAllowedInclude;
    policy.allowedText =
        "Allowed: cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, mma.h, math_constants.h, stdint.h, cstdint, "
        "cooperative_groups.h, cooperative_groups/*, cuda/pipeline, cuda/barrier, cuda/atomic, cuda/std/*, "
        "cub/block/*, cub/warp/*, cub/thread/*";
    for (const auto& f : spec::checkPreprocessor(source, spec::Dialect::Cuda, policy))
        out.addAt(f.line, f.column, "include", f.message);
    if (source.size() <= spec::kMaxSourceBytes)
        checkNames(code, out);
    return out.take();
}

} // namespace kforge::cuda
