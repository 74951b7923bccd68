#include "nvrtccompiler.h"

#include "compilelog.h"
#include "kernelfile.h"
#include "sha256.h"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#ifndef KFORGE_CUDA_INCLUDE_DIRS
#define KFORGE_CUDA_INCLUDE_DIRS ""
#endif

namespace kforge::cuda {

namespace {

// Bumped when what goes into a cache key changes meaning.
constexpr std::string_view kKeyVersion = "kforge-nvrtc-cubin-1";

struct DestroyProgram {
    void operator()(nvrtcProgram* p) const {
        if (p && *p)
            nvrtcDestroyProgram(p);
        delete p;
    }
};
using ProgramHandle = std::unique_ptr<nvrtcProgram, DestroyProgram>;

std::string nvrtcError(nvrtcResult r) {
    const char* s = nvrtcGetErrorString(r);
    return s ? s : "NVRTC error " + std::to_string(static_cast<int>(r));
}

std::string programLog(nvrtcProgram p) {
    std::size_t size = 0;
    if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1)
        return {};
    std::string log(size, '\0');
    if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS)
        return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' '))
        log.pop_back();
    return log;
}

bool hasHeader(const std::string& dir, const char* header) {
    std::error_code ec;
    return std::filesystem::is_regular_file(std::filesystem::path(dir) / header, ec);
}

// The toolkit's include dir: $CUDA_HOME (or $CUDA_PATH), the usual /usr/local/cuda, then the one the
// build was configured with. CUDA 13 moved CUB, Thrust and libcu++ to include/cccl, so that is
// added too when present.
std::vector<std::string> findIncludeDirs() {
    std::vector<std::string> candidates;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* v = std::getenv(var); v && *v)
            candidates.push_back(std::string(v) + "/include");
    candidates.push_back("/usr/local/cuda/include");
    std::istringstream configured(KFORGE_CUDA_INCLUDE_DIRS);
    for (std::string d; std::getline(configured, d, ';');)
        if (!d.empty())
            candidates.push_back(d);
    for (const auto& dir : candidates) {
        if (!hasHeader(dir, "cuda_fp16.h") && !hasHeader(dir, "cuda_runtime.h"))
            continue;
        std::vector<std::string> dirs{dir};
        if (hasHeader(dir + "/cccl", "cuda/std/version"))
            dirs.push_back(dir + "/cccl");
        return dirs;
    }
    return {};
}

} // namespace

std::string withDefines(const std::string& source, const std::vector<std::string>& defines) {
    std::string block;
    for (const auto& d : defines) {
        std::string text = d.rfind("-D", 0) == 0 ? d.substr(2) : d;
        const auto eq = text.find('=');
        const std::string name = text.substr(0, eq);
        std::string value = eq == std::string::npos ? "1" : text.substr(eq + 1);
        if (!spec::isIdentifier(name))
            continue; // plans only give identifiers; anything else cannot be a define
        for (char& c : value)
            if (c == '\n' || c == '\r' || c == '\\')
                c = ' ';
        block.append("#define ").append(name).append(" ").append(value).append("\n");
    }
    if (block.empty())
        return source;
    // After the last #include that is not inside a conditional (or after the #endif that closes
    // the conditional it is in).
    const std::string code = spec::stripComments(source, spec::Dialect::Cuda);
    int depth = 0;
    bool pending = false;
    int insertAfter = 0;
    for (const auto& l : spec::logicalLines(code)) {
        const spec::Directive d = spec::directiveOf(l.text);
        if (d.isDirective) {
            if (d.name == "if" || d.name == "ifdef" || d.name == "ifndef")
                ++depth;
            else if (d.name == "endif" && depth > 0)
                --depth;
            else if (d.name == "include")
                pending = true;
        }
        if (pending && depth == 0) {
            insertAfter = l.lastLine;
            pending = false;
        }
    }
    std::size_t offset = 0;
    for (int line = 0; line < insertAfter && offset < source.size(); ++line) {
        const std::size_t nl = source.find('\n', offset);
        offset = nl == std::string::npos ? source.size() : nl + 1;
    }
    std::string out = source.substr(0, offset);
    if (!out.empty() && out.back() != '\n')
        out += '\n';
    out += block;
    out += "#line " + std::to_string(insertAfter + 1) + "\n";
    out.append(source, offset, std::string::npos);
    return out;
}

std::vector<std::string> kernelNamesIn(const std::string& source) {
    std::vector<std::string> names;
    if (auto kf = spec::KernelFile::parse(source, spec::Dialect::Cuda)) {
        for (const auto& l : kf->launches)
            if (std::find(names.begin(), names.end(), l.kernel) == names.end())
                names.push_back(l.kernel);
        return names;
    }
    if (source.size() > spec::kMaxSourceBytes)
        return names;
    for (const auto& h : spec::findKernelHeads(spec::checkedCode(source, spec::Dialect::Cuda), spec::Dialect::Cuda))
        if (std::find(names.begin(), names.end(), h.name) == names.end() && names.size() < spec::kMaxKernels)
            names.push_back(h.name);
    return names;
}

NvrtcCompiler::NvrtcCompiler() : m_includeDirs(findIncludeDirs()) {
    nvrtcVersion(&m_major, &m_minor);
    int count = 0;
    if (nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
        m_archs.resize(static_cast<std::size_t>(count));
        if (nvrtcGetSupportedArchs(m_archs.data()) != NVRTC_SUCCESS)
            m_archs.clear();
    }
}

std::string NvrtcCompiler::archFor(int cc) const {
    if (!m_archs.empty() && std::find(m_archs.begin(), m_archs.end(), cc) == m_archs.end())
        return {};
    // Architecture-specific targets exist from sm_90a on, for every major version since.
    const bool specific = cc >= 90 && m_major >= 12;
    return "sm_" + std::to_string(cc) + (specific ? "a" : "");
}

NvrtcOutput NvrtcCompiler::targetFor(int cc) const {
    NvrtcOutput out;
    out.arch = archFor(cc);
    if (out.arch.empty()) {
        std::string list;
        for (int a : m_archs)
            list += (list.empty() ? "" : ", ") + std::to_string(a);
        out.log = "NVRTC " + versionText() + " cannot compile for compute capability " + std::to_string(cc / 10) + "."
                  + std::to_string(cc % 10) + " (it supports " + list + "); use a CUDA toolkit that supports this GPU";
    }
    return out;
}

std::vector<std::string> NvrtcCompiler::optionsFor(const std::string& arch) const {
    std::vector<std::string> options{"-arch=" + arch, "-lineinfo", "--std=c++17"};
    for (const auto& dir : m_includeDirs)
        options.push_back("-I" + dir);
    if (hasPch()) {
        // Automatic precompiled headers take heavy headers (cub, cuda_bf16.h) from ~1.5 s to ~0.14 s;
        // their messages would only clutter the log users read.
        options.insert(options.end(), {"-pch", "-pch-messages=false", "-pch-verbose=false"});
    }
    return options;
}

NvrtcOutput NvrtcCompiler::compileForTarget(const std::string& source, std::vector<std::string> options,
                                            const std::string& programName, const std::vector<std::string>& kernels,
                                            const std::string& arch, bool withPtx) const {
    NvrtcOutput built = compileUncached(source, options, programName, kernels, withPtx);
    built.arch = arch;
    if (!built.ok && arch.back() == 'a' && built.log.find("NVRTC_ERROR_INVALID_OPTION") != std::string::npos) {
        // An NVRTC that does not know the architecture-specific target still builds the generic one.
        options.front() = "-arch=" + arch.substr(0, arch.size() - 1);
        built = compileUncached(source, options, programName, kernels, withPtx);
        built.arch = options.front().substr(6);
    }
    return built;
}

NvrtcOutput NvrtcCompiler::compile(const std::string& source, const std::vector<std::string>& defines,
                                   const std::string& programName, const std::vector<std::string>& kernels,
                                   int cc) const {
    const auto start = std::chrono::steady_clock::now();
    const auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };

    NvrtcOutput out = targetFor(cc);
    if (out.arch.empty())
        return out;
    const std::vector<std::string> options = optionsFor(out.arch);
    // Plans give "-DNAME=value". On the command line such a define would also rewrite NVRTC's
    // built-in and toolkit headers (a parameter named T breaks their templates), so the defines
    // go into the source after its #include lines instead.
    const std::string program = withDefines(source, defines);

    harness::Sha256 key;
    key.updateField(kKeyVersion);
    key.updateField(versionText());
    key.updateField(programName);
    for (const auto& o : options)
        key.updateField(o);
    key.updateField("--kernels--");
    for (const auto& k : kernels)
        key.updateField(k);
    key.updateField(program);
    const std::string cacheKey = key.hexDigest();

    if (auto hit = m_cache.load(cacheKey)) {
        std::map<std::string, std::string> lowered(hit->loweredNames.begin(), hit->loweredNames.end());
        const bool complete =
            std::all_of(kernels.begin(), kernels.end(), [&](const auto& k) { return lowered.count(k) > 0; });
        if (complete) {
            out.ok = true;
            out.cacheHit = true;
            out.cubin = std::move(hit->cubin);
            out.log = std::move(hit->log);
            out.loweredNames = std::move(lowered);
            out.seconds = seconds();
            return out;
        }
    }

    NvrtcOutput built = compileForTarget(program, options, programName, kernels, out.arch, false);
    if (built.ok) {
        CubinEntry entry;
        entry.cubin = built.cubin;
        entry.log = built.log;
        entry.loweredNames.assign(built.loweredNames.begin(), built.loweredNames.end());
        m_cache.store(cacheKey, entry);
    }
    built.seconds = seconds();
    return built;
}

NvrtcOutput NvrtcCompiler::compileWithPtx(const std::string& source, const std::vector<std::string>& defines,
                                          const std::string& programName, const std::vector<std::string>& kernels,
                                          int cc) const {
    const auto start = std::chrono::steady_clock::now();
    NvrtcOutput out = targetFor(cc);
    if (out.arch.empty())
        return out;
    NvrtcOutput built =
        compileForTarget(withDefines(source, defines), optionsFor(out.arch), programName, kernels, out.arch, true);
    built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return built;
}

NvrtcOutput NvrtcCompiler::compileUncached(const std::string& source, const std::vector<std::string>& options,
                                           const std::string& programName, const std::vector<std::string>& kernels,
                                           bool withPtx) const {
    NvrtcOutput out;
    ProgramHandle program(new nvrtcProgram(nullptr));
    if (const nvrtcResult r =
            nvrtcCreateProgram(program.get(), source.c_str(), programName.c_str(), 0, nullptr, nullptr);
        r != NVRTC_SUCCESS) {
        out.log = "nvrtcCreateProgram failed with " + nvrtcError(r);
        return out;
    }
    for (const auto& k : kernels) {
        if (const nvrtcResult r = nvrtcAddNameExpression(*program, k.c_str()); r != NVRTC_SUCCESS) {
            out.log = "nvrtcAddNameExpression(" + k + ") failed with " + nvrtcError(r);
            return out;
        }
    }

    std::vector<const char*> argv;
    argv.reserve(options.size());
    for (const auto& o : options)
        argv.push_back(o.c_str());
    const nvrtcResult r = nvrtcCompileProgram(*program, static_cast<int>(argv.size()), argv.data());
    // Only messages about the kernel's own source: a log must never quote another file.
    out.log =
        harness::filterCompileLog(programLog(*program), [&](const std::string& file) { return file == programName; });
    if (r != NVRTC_SUCCESS) {
        // A failed compile's log carries "candidate.cu(12): error: ..." lines; other failures (a bad
        // option, no memory) have to be named.
        if (r != NVRTC_ERROR_COMPILATION || out.log.empty()) {
            std::string joined;
            for (const auto& o : options)
                joined += (joined.empty() ? "" : " ") + o;
            out.log += std::string(out.log.empty() ? "" : "\n") + "nvrtcCompileProgram failed with " + nvrtcError(r)
                       + " (options: " + joined + ")";
        }
        return out;
    }

    for (const auto& k : kernels) {
        const char* lowered = nullptr;
        if (const nvrtcResult lr = nvrtcGetLoweredName(*program, k.c_str(), &lowered);
            lr != NVRTC_SUCCESS || !lowered) {
            out.log.append(out.log.empty() ? "" : "\n").append(programName).append(": the launch plan's kernel '");
            out.log.append(k).append("' has no lowered name (").append(nvrtcError(lr));
            out.log.append("); is it a __global__ function of that exact name, and not a template?");
            return out;
        }
        out.loweredNames[k] = lowered;
    }

    std::size_t size = 0;
    if (const nvrtcResult cr = nvrtcGetCUBINSize(*program, &size); cr != NVRTC_SUCCESS || size == 0) {
        out.log += std::string(out.log.empty() ? "" : "\n") + "nvrtcGetCUBINSize failed with " + nvrtcError(cr)
                   + " (NVRTC produces a CUBIN only for a real architecture such as sm_90)";
        return out;
    }
    out.cubin.assign(size, '\0');
    if (const nvrtcResult cr = nvrtcGetCUBIN(*program, out.cubin.data()); cr != NVRTC_SUCCESS) {
        out.log += std::string(out.log.empty() ? "" : "\n") + "nvrtcGetCUBIN failed with " + nvrtcError(cr);
        out.cubin.clear();
        return out;
    }
    if (withPtx) {
        std::size_t ptxSize = 0;
        if (const nvrtcResult pr = nvrtcGetPTXSize(*program, &ptxSize); pr == NVRTC_SUCCESS && ptxSize > 1) {
            out.ptx.assign(ptxSize, '\0');
            if (nvrtcGetPTX(*program, out.ptx.data()) != NVRTC_SUCCESS)
                out.ptx.clear();
            while (!out.ptx.empty() && out.ptx.back() == '\0')
                out.ptx.pop_back();
        }
    }
    out.ok = true;
    return out;
}

} // namespace kforge::cuda
