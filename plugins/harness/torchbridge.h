#pragma once
// A task's PyTorch reference, computed by a Python process with PyTorch (torchbridge.py, built
// into the worker) that the worker starts on first use and keeps. Tensors go both ways as raw
// files in a private folder, in shared memory where there is one with room for them (else on disk):
// KernelBench-sized tensors never pass through a pipe. The reference runs in float64 where it can (on the GPU for the
// CUDA worker, on the CPU otherwise), its outputs converted to the task's dtypes.
//
// The Python is protocol::torchPython(): $KFORGE_PYTHON, else the one the build found PyTorch in
// (packaging/install-deps.sh --torch makes it), else python3. Every failure is a message naming what is missing or
// wrong.

#include "inputs.h"

#include "protocol.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kforge::harness {

class TorchBridge {
public:
    // `device`: "cpu" or "cuda:K" (the CPU when PyTorch sees no GPU).
    explicit TorchBridge(std::string device) : m_device(std::move(device)) {}
    ~TorchBridge();
    TorchBridge(const TorchBridge&) = delete;
    TorchBridge& operator=(const TorchBridge&) = delete;

    const std::string& device() const { return m_device; }

    // The reference's outputs for `inputs` (in the task's input order) into `expected` (sized and
    // typed by the caller). Returns a note for people (PyTorch's version, the device, the precision
    // and why float64 was not possible if it was not), or an error naming the reference file and
    // what went wrong there.
    spec::Expected<std::string> compute(const protocol::KernelInput& reference, const spec::TaskSpec& task,
                                        const spec::Sizes& sizes, const std::vector<HostTensor>& inputs,
                                        std::vector<HostTensor>& expected);

    // The task's PyTorch form timed on `inputs` in their own precision, eager and under
    // torch.compile (unless `withCompile` is false), `repetitions` calls each, as kforge times
    // kernels (see torchbridge.py). A mode that could not be timed is absent, the note says why.
    //
    // With `kernel` (Backend::portableLaunches of a verified kernel), the kernel is launched in the
    // PyTorch process too, its outputs checked against eager's, and timed side by side with eager
    // and torch.compile there, in shuffled rounds: `kernel` below. Such a request must go to a
    // bridge of its own that is let go after it, never to one that computes references later.
    struct Timings {
        std::optional<protocol::TimingStats> eager;
        std::optional<protocol::TimingStats> compile;
        std::optional<protocol::TimingStats> kernel;
        // Every call's time, in microseconds; side by side, the i-th of each is from round i.
        std::vector<double> eagerSamples, compileSamples, kernelSamples;
        std::string note;
    };
    spec::Expected<Timings> time(const protocol::KernelInput& form, const spec::TaskSpec& task,
                                 const spec::Sizes& sizes, const std::vector<HostTensor>& inputs, int repetitions,
                                 bool withCompile = true, const nlohmann::json* kernel = nullptr);

private:
    // One request: the inputs written, the answer read (and the outputs, when given).
    spec::Expected<nlohmann::json> exchange(const protocol::KernelInput& form, const spec::TaskSpec& task,
                                            const spec::Sizes& sizes, const std::vector<HostTensor>& inputs,
                                            std::vector<HostTensor>* outputs, nlohmann::json extra);
    spec::Status start();
    void stop();
    spec::Expected<std::string> readLine();
    std::string stderrTail() const;

    std::string m_device;
    std::string m_dir;      // private folder for the tensors and the bridge's stderr
    std::string m_spillDir; // on disk, for tensors that shared memory has no room for
    pid_t m_pid = -1;
    int m_in = -1;  // the bridge's stdin
    int m_out = -1; // its stdout
    std::string m_buffer;
    std::int64_t m_nextId = 1;
};

} // namespace kforge::harness
