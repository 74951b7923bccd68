#pragma once
// NVRTC front end of the CUDA worker: one kernel file in, a CUBIN for one GPU architecture out, with
// the lowered name of every kernel the launch plan names (so kernels need not be extern "C").
// Thread-safe and free of any CUDA context, so the evaluator can compile reference, candidate and
// baseline at once, and so compiling works on a machine without the NVIDIA driver.

#include "cubincache.h"

#include <map>
#include <string>
#include <vector>

namespace kforge::cuda {

struct NvrtcOutput {
    bool ok = false;
    std::string log; // the compiler's messages: "candidate.cu(12): error: ..."
    double seconds = 0.0;
    bool cacheHit = false;
    std::string arch; // the -arch value used, e.g. "sm_90a"
    std::string cubin;
    std::string ptx;                                 // from compileWithPtx() only
    std::map<std::string, std::string> loweredNames; // kernel name as written -> symbol in the CUBIN
};

class NvrtcCompiler {
public:
    NvrtcCompiler();

    // NVRTC's version ("13.0"), and whether it has automatic precompiled headers (12.8+).
    int versionMajor() const { return m_major; }
    int versionMinor() const { return m_minor; }
    std::string versionText() const { return std::to_string(m_major) + "." + std::to_string(m_minor); }
    bool hasPch() const { return m_major > 12 || (m_major == 12 && m_minor >= 8); }

    // Compute capabilities (major * 10 + minor) NVRTC can emit code for.
    const std::vector<int>& supportedArchs() const { return m_archs; }
    // The -arch value for a device of compute capability `cc`: the architecture-specific variant
    // ("sm_90a") where one exists, since it runs on exactly that device and unlocks wgmma, setmaxnreg
    // and the like; "" when NVRTC cannot compile for `cc` at all.
    std::string archFor(int cc) const;

    // Include directories passed with -I: the toolkit's include dir (and its cccl/ subdirectory).
    const std::vector<std::string>& includeDirs() const { return m_includeDirs; }
    const CubinCache& cache() const { return m_cache; }

    // `programName` names the source in the log ("candidate.cu"); `kernels` are registered as name
    // expressions. Thread-safe.
    NvrtcOutput compile(const std::string& source, const std::vector<std::string>& defines,
                        const std::string& programName, const std::vector<std::string>& kernels, int cc) const;

    // compile() that also keeps the PTX (with .loc line annotations), bypassing the CUBIN cache,
    // for showing what the compiler made of a kernel.
    NvrtcOutput compileWithPtx(const std::string& source, const std::vector<std::string>& defines,
                               const std::string& programName, const std::vector<std::string>& kernels, int cc) const;

private:
    NvrtcOutput compileUncached(const std::string& source, const std::vector<std::string>& options,
                                const std::string& programName, const std::vector<std::string>& kernels,
                                bool withPtx = false) const;
    // The options for `arch`: -arch, line info, the standard, include dirs, precompiled headers.
    std::vector<std::string> optionsFor(const std::string& arch) const;
    // The architecture `cc` compiles for, or the log that says it cannot.
    NvrtcOutput targetFor(int cc) const;
    // compileUncached(), retried for the generic target when NVRTC does not know the
    // architecture-specific one.
    NvrtcOutput compileForTarget(const std::string& source, std::vector<std::string> options,
                                 const std::string& programName, const std::vector<std::string>& kernels,
                                 const std::string& arch, bool withPtx) const;

    int m_major = 0;
    int m_minor = 0;
    std::vector<int> m_archs;
    std::vector<std::string> m_includeDirs;
    CubinCache m_cache;
};

// `source` with the plan's defines ("-DNAME=value") as #define lines after its last top-level
// #include, and a #line that keeps the kernel's own line numbers. Passed as -D options they would
// also reach NVRTC's built-in headers, where a parameter named like a template argument (T)
// breaks them.
std::string withDefines(const std::string& source, const std::vector<std::string>& defines);

// The names of the kernels to register for `source`: those its launch plan launches, or, when the
// file has no readable plan, every __global__ function found in it.
std::vector<std::string> kernelNamesIn(const std::string& source);

} // namespace kforge::cuda
