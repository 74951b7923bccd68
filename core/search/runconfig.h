#pragma once
// The configuration of a run: what to search, how, and for how long. Stored with the run as JSON,
// so a resumed run continues with the settings it started with.

#include "expected.h"
#include "llm/llmsettings.h"
#include "model/kinds.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>

namespace kforge::search {

struct RunConfig {
    QString task; // name or folder
    model::Backend backend = model::Backend::OpenCL;
    QString variant = QStringLiteral("default");
    int islands = 4;
    int childrenPerIsland = 4;      // proposals per island and generation
    int migrationInterval = 3;      // generations between migrations (0: never)
    int migrants = 1;               // elites each island sends to the next one (a ring)
    double exploitation = 0.5;      // share of parents chosen by fitness; the rest by recent progress
    double tunerRestart = 0.2;      // chance the tuner jumps to a random configuration
    double expertRate = 0.25;       // chance a child is an expert kernel not yet tried on its island
    qint64 budgetEvaluations = 200; // every evaluation counts, re-measurements included; 0: none
    double budgetSeconds = 0.0;     // wall time over all sessions of the run; 0: none
    std::uint64_t seed = 1;
    int workers = 1; // worker processes (several share a GPU well; on a CPU device they slow each other's timings)
    int device = 0;
    // Where the workers run (eval/placement.h): --worker arguments ("local",
    // "ssh://[user@]host[:port][/path]", "slurm[:/path]"), empty for this machine alone; which of
    // this machine's GPUs get `workers` each ("all", "0,1"; empty: `device` alone); and the srun
    // options of Slurm pilots ("--partition=gpu --time=4:00:00").
    QStringList workerPlaces;
    QString devices;
    QString slurmArgs;
    double evalTimeoutSeconds = 300.0;
    bool confirmBest = true; // re-measure a new best before promoting it
    QString descriptors;     // a descriptor space file; empty: the built-in one
    // A speedup over the task's naive baseline says nothing about honesty (an expert SGEMM is 50x
    // a naive one at a few per cent of the device's roof), so by default it never sends a kernel
    // to review; a user may still ask for that (0: never).
    double reviewSpeedup = 0.0;
    // Physics does: compute throughput above reviewCeiling of the measured compute roof, and memory
    // throughput above memoryReviewCeiling of the measured DRAM bandwidth, wait for a person (0:
    // never); above rejectCeiling times the roof that binds it is impossible and the kernel is
    // rejected. The margins over 1 allow for the roof being a measurement itself. Well-tuned
    // memory-bound kernels (PyTorch's own among them) move their bytes at 90-98% of the measured
    // DRAM bandwidth, and the best of them at up to 101-102%: no micro-kernel reaches every
    // GPU's best streaming pattern (on an H100, torch.compile's gemv reads at 101% of the fastest
    // of the worker's seven read forms). So only a kernel more than 3% faster than that
    // measurement is suspicious; FP32 and tensor kernels rarely come within 10% of their
    // measured peaks.
    double reviewCeiling = 0.9;
    double memoryReviewCeiling = 1.03;
    double rejectCeiling = 1.1;
    // Time the task's PyTorch form (eager and torch.compile) beside the first seed and, at the end,
    // beside the best: the run's speedups over PyTorch. Only for tasks that have a PyTorch form.
    bool pytorch = true;
    // Rounds of each of those comparisons (protocol::EvalOptions::pytorchRounds): more narrow the
    // interval that tells a speedup near 1x from a tie.
    int pytorchRounds = 20;
    // Kernel files to start from besides (or, for a task without a baseline kernel, instead of)
    // the baseline: a user's own kernels for the task.
    QStringList seedKernels;
    llm::LlmSettings llm; // language-model proposers; none by default

    QJsonObject toJson() const;
    // Errors name the key and what is wrong; keys not given keep their defaults.
    static spec::Expected<RunConfig> fromJson(const QJsonObject& json);
    // Checks ranges; the message names the setting.
    spec::Status validate() const;
};

} // namespace kforge::search
