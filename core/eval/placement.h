#pragma once
// Where a run's workers go: this machine (one pool, or one per GPU with `devices`), and other
// hosts reached with OpenSSH in batch mode, whose workers speak the same protocol over the SSH
// connection's stdio. Requests carry everything an evaluation needs (task, kernel sources), so a
// remote host needs the worker program and nothing else of kforge's.

#include "eval/executor.h"
#include "expected.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace kforge::eval {

// One --worker argument: "local", or ssh://[user@]host[:port][/path/to/kforge-worker-<backend>]
// (without a path, the worker program is looked up on the remote PATH).
struct WorkerPlace {
    bool ssh = false;
    QString user;
    QString host;
    int port = 0; // 0: ssh's default
    QString path; // empty: kforge-worker-<backend> on the remote PATH
    // How messages and results name it: "gpu1", "me@gpu1:2222".
    QString label() const;
};
// Errors name the argument and what is wrong with it.
spec::Expected<WorkerPlace> parseWorkerPlace(const QString& text);

// The ssh command line for a remote worker: batch mode (never a password prompt), keep-alives
// that notice a dead connection within half a minute, then KFORGE_SSH_ARGS (extra options, split
// like a shell would, e.g. "-i ~/.ssh/gpu -F ~/.ssh/config.kforge"), the destination and the
// worker program.
QStringList sshArguments(const WorkerPlace& place, const QString& backend);

// "all" or a comma-separated list of device indices ("0,2"), checked against the `available`
// devices (when known, i.e. >= 0).
spec::Expected<std::vector<int>> parseDevices(const QString& text, int available);

struct Placement {
    int workers = 1;    // worker processes per place (per GPU with `devices`)
    int device = 0;     // the device requests name, where `devices` is not given
    QStringList places; // --worker arguments; empty: this machine alone
    QString devices;    // this machine's GPUs that get workers: "" (just `device`), "all", "0,1"
};

// The executor for a run: a plain local pool where nothing else is asked for, else a group of
// pools (ExecutorGroup). With `devices`, each of this machine's GPUs gets its own pool, pinned
// with CUDA_VISIBLE_DEVICES for the CUDA backend (an OpenCL pool names the device in its
// requests); "all" asks the worker program for the devices first.
spec::Expected<Executor*> makeExecutor(const QString& backend, const Placement& placement, QObject* parent);

} // namespace kforge::eval
