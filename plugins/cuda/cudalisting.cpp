#include "cudalisting.h"

#include "toolprocess.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace kforge::cuda {

namespace {

constexpr const char* kProgramName = "candidate.cu";
constexpr double kToolSeconds = 60.0;
constexpr std::size_t kMaxListingBytes = std::size_t{32} << 20;

// A CUBIN in a temporary file for the disassembler, removed with the object.
class TempCubin {
public:
    explicit TempCubin(const std::string& cubin) {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kforge-listing-XXXXXX.cubin";
        const int fd = ::mkstemps(pattern.data(), 6);
        if (fd < 0)
            return;
        std::size_t written = 0;
        while (written < cubin.size()) {
            const ssize_t n = ::write(fd, cubin.data() + written, cubin.size() - written);
            if (n <= 0)
                break;
            written += static_cast<std::size_t>(n);
        }
        ::close(fd);
        m_path = pattern;
        if (written != cubin.size())
            m_error = true;
    }
    ~TempCubin() {
        if (!m_path.empty())
            ::unlink(m_path.c_str());
    }
    TempCubin(const TempCubin&) = delete;
    TempCubin& operator=(const TempCubin&) = delete;
    const std::string& path() const { return m_path; }
    bool ok() const { return !m_path.empty() && !m_error; }

private:
    std::string m_path;
    bool m_error = false;
};

std::string firstLine(const std::string& text) {
    const auto nl = text.find('\n');
    return text.substr(0, nl);
}

// Runs one disassembler; fills the result's machine code or says why not.
// The listings name the kernel's file as the compiler saw it, inside the worker's folder
// ("/tmp/candidate.cu"): a quoted path that ends in the program's name loses its folder, which
// says nothing to the reader and differs from host to host.
void dropWorkerFolder(std::string& listing) {
    const std::string tail = std::string("/") + kProgramName + "\"";
    for (std::size_t at = listing.find(tail); at != std::string::npos; at = listing.find(tail, at)) {
        const std::size_t lineStart = listing.rfind('\n', at);
        const std::size_t open = listing.rfind('"', at);
        if (open == std::string::npos || (lineStart != std::string::npos && open < lineStart)) {
            at += tail.size();
            continue;
        }
        listing.erase(open + 1, at + 1 - (open + 1));
        at = open + 1 + tail.size() - 1;
    }
}

bool disassembleWith(const std::string& tool, const std::vector<std::string>& args, const std::string& name,
                     protocol::DisassembleResult& result) {
    std::vector<std::string> argv{tool};
    argv.insert(argv.end(), args.begin(), args.end());
    auto ran = harness::runTool(argv, kToolSeconds, kMaxListingBytes);
    if (!ran) {
        result.machineCodeNote = ran.error();
        return false;
    }
    if (ran->timedOut) {
        result.machineCodeNote =
            name + " did not finish within " + std::to_string(static_cast<int>(kToolSeconds)) + " s";
        return false;
    }
    if (ran->exitCode != 0 || ran->out.empty()) {
        result.machineCodeNote = name + " failed (exit " + std::to_string(ran->exitCode) + ")"
                                 + (ran->err.empty() ? "" : ": " + firstLine(ran->err));
        return false;
    }
    result.machineCode = std::move(ran->out);
    dropWorkerFolder(result.machineCode);
    result.machineTool = name;
    if (ran->truncated)
        result.machineCodeNote = "the listing was cut at " + std::to_string(kMaxListingBytes >> 20) + " MiB";
    return true;
}

} // namespace

std::vector<std::string> toolkitBinDirs(const NvrtcCompiler& compiler) {
    std::vector<std::string> dirs;
    const auto add = [&](const std::string& d) {
        if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
            dirs.push_back(d);
    };
    const auto folderOf = [](const std::string& program) {
        return std::filesystem::path(program).parent_path().string();
    };
    if (const char* v = std::getenv("KFORGE_NVDISASM"); v && *v)
        add(folderOf(v));
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* v = std::getenv(var); v && *v)
            add(std::string(v) + "/bin");
    add("/usr/local/cuda/bin");
    for (const auto& inc : compiler.includeDirs()) {
        std::error_code ec;
        const auto bin = std::filesystem::weakly_canonical(std::filesystem::path(inc) / ".." / "bin", ec);
        if (!ec)
            add(bin.string());
    }
    if (const char* path = std::getenv("PATH")) {
        std::istringstream in(path);
        for (std::string d; std::getline(in, d, ':');)
            add(d);
    }
#ifdef KFORGE_VENV_NVDISASM
    add(folderOf(KFORGE_VENV_NVDISASM));
#endif
    return dirs;
}

protocol::DisassembleResult listKernel(const NvrtcCompiler& compiler, const std::string& source,
                                       const std::vector<std::string>& defines, int cc, bool machineCode) {
    protocol::DisassembleResult result;
    result.file = kProgramName;
    result.compiler = "NVRTC " + compiler.versionText();
    NvrtcOutput built = compiler.compileWithPtx(source, defines, kProgramName, kernelNamesIn(source), cc);
    result.arch = built.arch;
    result.log = built.log;
    if (!built.ok) {
        result.message = "it does not compile for " + (built.arch.empty() ? "this target" : built.arch)
                         + (built.log.empty() ? std::string() : ": " + firstLine(built.log));
        return result;
    }
    if (built.ptx.empty()) {
        result.message = "NVRTC " + compiler.versionText() + " gave no PTX for " + built.arch;
        return result;
    }
    result.ok = true;
    result.intermediate = std::move(built.ptx);
    dropWorkerFolder(result.intermediate);
    if (!machineCode)
        return result;

    const TempCubin cubin(built.cubin);
    if (!cubin.ok()) {
        result.machineCodeNote = "cannot write the CUBIN to a temporary file for the disassembler";
        return result;
    }
    for (const auto& dir : toolkitBinDirs(compiler)) {
        const std::string nvdisasm = harness::firstExecutable({dir + "/nvdisasm"});
        if (!nvdisasm.empty()) {
            // -c: code sections only; -g: the source line of each instruction group.
            disassembleWith(nvdisasm, {"-c", "-g", cubin.path()}, "nvdisasm", result);
            return result;
        }
    }
    for (const auto& dir : toolkitBinDirs(compiler)) {
        const std::string cuobjdump = harness::firstExecutable({dir + "/cuobjdump"});
        if (!cuobjdump.empty()) {
            if (disassembleWith(cuobjdump, {"-sass", cubin.path()}, "cuobjdump", result))
                result.machineCodeNote = "cuobjdump gives no source lines; nvdisasm would";
            return result;
        }
    }
    result.machineCodeNote =
        "no SASS: neither nvdisasm nor cuobjdump is installed here (looked in $KFORGE_NVDISASM's folder, "
        "$CUDA_HOME/bin, /usr/local/cuda/bin and $PATH); the CUDA toolkit's cuda-nvdisasm package or PyPI's "
        "nvidia-cuda-nvdisasm provides it";
    return result;
}

} // namespace kforge::cuda
