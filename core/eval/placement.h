#pragma once
// Where a run's workers go: this machine (one pool, or one per GPU with `devices`), other hosts
// reached with OpenSSH in batch mode, and a Slurm cluster's nodes, where pilot workers started
// with srun live for the run. Every worker speaks the same protocol over its stdio (through the
// SSH connection, through srun). Requests carry everything an evaluation needs (task, kernel
// sources), so a remote host needs the worker program and nothing else of kforge's.

#include "eval/executor.h"
#include "eval/workerpool.h"
#include "expected.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace kforge::eval {

// One --worker argument: "local"; ssh://[user@]host[:port][/path/to/kforge-worker-<backend>]
// (without a path, the worker program is looked up on the remote PATH); or slurm[:/path/to/worker]
// (without a path, the nodes run the worker program this machine has, at the same path: a
// cluster's shared file system).
struct WorkerPlace {
    enum class Kind { Local, Ssh, Slurm };
    Kind kind = Kind::Local;
    QString user;
    QString host;
    int port = 0; // 0: ssh's default
    QString path; // empty: see above
    // How messages and results name it: "this machine", "gpu1", "me@gpu1:2222", "Slurm".
    QString label() const;
};
// Errors name the argument and what is wrong with it.
spec::Expected<WorkerPlace> parseWorkerPlace(const QString& text);

// The ssh command line for a remote worker: batch mode (never a password prompt), keep-alives
// that notice a dead connection within half a minute, then KFORGE_SSH_ARGS (extra options, split
// like a shell would, e.g. "-i ~/.ssh/gpu -F ~/.ssh/config.kforge"), the destination and the
// worker program.
QStringList sshArguments(const WorkerPlace& place, const QString& backend);

// The srun command line of one Slurm pilot: one task on one node named `jobName` (so that
// `scancel --name` finds every pilot of a run), its stdio unbuffered, one GPU as a generic
// resource for the CUDA backend unless `slurmArgs` asks for GPUs itself, then `slurmArgs` (split
// like a shell would: "--partition=gpu --time=2:00:00 --account=lab"), and the worker program.
// Fails, naming the option, when `slurmArgs` holds an option that would take the worker's
// stdio or task count from kforge (--pty, --input, --output, --error, --ntasks, --nodes).
spec::Expected<QStringList> srunArguments(const WorkerPlace& place, const QString& backend, const QString& program,
                                          const QString& jobName, const QString& slurmArgs);

// What became of a Slurm job, from `scontrol --oneliner show job <id>`'s answer: a sentence with its
// state in Slurm's word and, for the usual ends of a pilot, what that means ("Slurm says job 17 is
// TIMEOUT: it reached its time limit (--time=00:10:00)"), and whether that state is an end state
// (COMPLETING, RUNNING and the like are not). The sentence is empty where the answer names no
// state (a job Slurm has forgotten, an error).
WorkerPool::SchedulerJobState describeSlurmJob(const QByteArray& answer);

// "all" or a comma-separated list of device indices ("0,2"), checked against the `available`
// devices (when known, i.e. >= 0).
spec::Expected<std::vector<int>> parseDevices(const QString& text, int available);

struct Placement {
    int workers = 1;    // worker processes per place (per GPU with `devices`)
    int device = 0;     // the device requests name, where `devices` is not given
    QStringList places; // --worker arguments; empty: this machine alone
    QString devices;    // each local or SSH place's GPUs that get workers: "" (just `device`), "all", "0,1"
    QString slurmArgs;  // srun options for the pilots of a "slurm" place
};

// The executor for a run: a plain local pool where nothing else is asked for, else a group of
// pools (ExecutorGroup). With `devices`, each GPU of this machine and of each SSH host gets its own
// pool; CUDA workers are pinned with CUDA_VISIBLE_DEVICES (through `env` on the remote command
// line for SSH), OpenCL pools name the device in their requests; "all" asks the worker program
// (there) for its devices first. A "slurm" place gets `workers` pilots, each one srun job that
// lives for the run (replaced when Slurm preempts or cancels it), waiting in the queue as long as
// the cluster keeps it there; shutting the executor down cancels its jobs, pending ones too.
// Workers elsewhere (SSH, Slurm) list their devices before they take work: a host without a
// usable device (no driver) is given up before it costs an evaluation.
spec::Expected<Executor*> makeExecutor(const QString& backend, const Placement& placement, QObject* parent);

} // namespace kforge::eval
