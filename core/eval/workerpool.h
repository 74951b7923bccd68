#pragma once
// The local executor: a few worker processes (kforge-worker-<backend>) driven over the JSON-lines
// protocol, as Hotspot drives perfparser. Workers start lazily and are replaced whenever one
// crashes, hangs, loses its device or breaks the protocol; each such event becomes the result of
// the request it hit (status plus a "worker" diagnostic), and the queue goes on. Nothing here
// blocks the calling thread: stopping a worker is terminate, a short grace, then kill. Every
// signal is emitted from the event loop, never from inside a call. Use it from the thread it lives
// in (the engine thread); results reach other threads through queued connections. Workers start
// with this process's environment less its secrets (util/secretenvironment.h): API keys stay here.

#include "eval/executor.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QStringList>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QProcess;
class QTimer;

namespace kforge::eval {

class WorkerPool final : public Executor {
    Q_OBJECT
public:
    WorkerPool(QString backend, QString program, QStringList arguments = {}, int workerCount = 1,
               QObject* parent = nullptr);
    // Kills whatever still runs (briefly waiting for the kill to land). Requests still pending get
    // no `evaluated`: nobody is left to receive it.
    ~WorkerPool() override;

    // A timeout of zero or less means none.
    qint64 submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) override;
    void cancel(qint64 ticket) override;
    int capacity() const override { return m_workerCount; }
    QString backend() const override { return m_backend; }

    QString program() const { return m_program; }
    QStringList arguments() const { return m_arguments; }

    // Where the workers run, for results and messages: `host` (empty: this machine) and the device
    // index results report (unset: the request's). A pool of SSH workers names the remote host; a
    // pool pinned to one GPU of this machine (CUDA_VISIBLE_DEVICES) names that GPU's index.
    void setPlacement(QString host, std::optional<int> deviceIndex);
    // How many workers may be starting at once (0: no limit). An SSH server refuses connections
    // beyond a few unauthenticated ones at a time (OpenSSH's MaxStartups, 10 by default), so
    // workers reached over SSH start a few at a time.
    void setMaxStarting(int count) { m_maxStarting = count < 0 ? 0 : count; }
    // Variables set for every worker on top of this process's environment (less its secrets).
    void setExtraEnvironment(QStringList assignments) { m_extraEnvironment = std::move(assignments); }
    // Workers that a scheduler places (Slurm pilots): each result names the host the worker's
    // hello line named, and messages name its job too, instead of the pool's `host`.
    void setHostsFromWorkers(bool fromWorkers) { m_hostsFromWorkers = fromWorkers; }
    // A command run (detached, not waited for) once the pool's workers are done with: after
    // shutdown, or when the pool is destroyed. Slurm pilots cancel their jobs with it, pending
    // ones included.
    void setCleanupCommand(QString program, QStringList arguments);
    // What a scheduler's answer about a job says: a sentence for the user (empty: nothing worth
    // saying) and whether the job has reached its end state (Slurm shows COMPLETING for a while
    // before CANCELLED or TIMEOUT: asked again, it says which).
    struct SchedulerJobState {
        QString said;
        bool ended = true;
    };
    using JobStateReader = std::function<SchedulerJobState(const QByteArray& answer)>;
    // Workers that a scheduler places: when one dies with an evaluation in flight and its hello
    // line named a job, `program` `arguments` <job> asks the scheduler what became of that job,
    // and `read` turns the answer into a sentence for the failure. A pilot killed by the scheduler
    // often dies before it can relay why; the scheduler still knows (Slurm: CANCELLED, TIMEOUT,
    // PREEMPTED, NODE_FAIL, OUT_OF_MEMORY). A job not yet at its end is asked about again; the
    // failure waits at most `wait` and then goes out with the last sentence heard, or at once
    // when the pool shuts down.
    void setJobStateQuery(QString program, QStringList arguments, JobStateReader read,
                          std::chrono::milliseconds wait = std::chrono::seconds(5));

    // Each new worker is asked for its devices before it takes work; one that has none it can use
    // (a remote host without the NVIDIA driver, say) counts as a failed start, so that such a host
    // is given up before it costs an evaluation. For workers elsewhere: locally the run's own
    // probe says so once.
    void setCheckDevices(bool check) { m_checkDevices = check; }

    // How long a new worker may take to print its hello line; zero or less: no limit (a Slurm
    // pilot waits in the queue for as long as the cluster keeps it there).
    void setStartTimeout(std::chrono::milliseconds timeout) { m_startTimeout = timeout; }
    std::chrono::milliseconds startTimeout() const { return m_startTimeout; }
    void setProbeTimeout(std::chrono::milliseconds timeout) { m_probeTimeout = timeout; }
    std::chrono::milliseconds probeTimeout() const { return m_probeTimeout; }
    // After this many failed starts in a row the queued requests fail instead of waiting forever.
    void setMaxStartFailures(int count) { m_maxStartFailures = count < 1 ? 1 : count; }
    int maxStartFailures() const { return m_maxStartFailures; }

    // Asks a worker for its devices. Goes ahead of queued evaluations.
    void probe() override;
    // Asks a worker for the device's measured ceilings (measured once per device and cached by the
    // worker). Goes ahead of queued evaluations. One place: one answer.
    int requestCeilings(int device, bool refresh = false) override;
    // Asks a worker for a kernel's compiled code (PTX, SASS): answered by one `disassembled` with
    // the returned ticket, whatever happens to the worker (a failure is a result with `ok` false
    // and a message). Goes ahead of queued evaluations; limited by the probe timeout.
    qint64 requestDisassembly(protocol::DisassembleRequest request);

    // Fails everything pending as cancelled, asks idle workers to exit, stops busy ones, and kills
    // whatever has not exited after a grace period. Later submits fail at once.
    void shutdown() override;

signals:
    void disassembled(qint64 ticket, const kforge::protocol::DisassembleResult& result);

private:
    struct Job {
        enum class Kind { Evaluate, Probe, Ceilings, Disassemble };
        Kind kind = Kind::Evaluate;
        int device = 0; // ceilings
        bool refresh = false;
        qint64 id = 0; // on the wire; the ticket for evaluations and disassemblies
        protocol::EvaluateRequest request;
        std::shared_ptr<const protocol::DisassembleRequest> disassemble;
        std::chrono::milliseconds timeout{0};
        int attempts = 0;
        QElapsedTimer clock; // since it was written to a worker; invalid while queued
        qint64 heldMs = -1;  // how long it held its worker, once that worker has died; -1: still running
        QString where;       // the worker's host and job (setHostsFromWorkers); empty: the pool's
        std::string node;    // the worker's host as results name it; empty: the pool's
    };

    struct Worker {
        // Checking: said hello, its devices asked for (setCheckDevices).
        enum class State { Starting, Checking, Idle, Busy, Stopping, Dead };
        int serial = 0;
        State state = State::Starting;
        QProcess* process = nullptr;
        QTimer* timer = nullptr; // hello deadline, request deadline, or the stop grace, by state
        bool terminated = false; // while Stopping: SIGTERM sent, SIGKILL next
        bool served = false;     // took a request; until then its death counts as a failed start
        qint64 pid = 0;
        QByteArray out;         // stdout not yet split into lines
        qsizetype scanned = 0;  // bytes of `out` known to hold no newline
        QByteArray errTail;     // the last bytes of stderr, for diagnostics
        QByteArray errLine;     // an incomplete stderr line, for the log
        std::optional<Job> job; // the request in flight
        qint64 checkId = 0;     // the device check's request id, while Checking
        QString where;          // from its hello (setHostsFromWorkers): "node3 (Slurm job 17)"
        std::string node;       // from its hello (setHostsFromWorkers): "node3"
        QString schedulerJob;   // from its hello (setHostsFromWorkers): "17"
    };

    // A worker that died, waiting for the scheduler to say why (setJobStateQuery), with the
    // evaluation its death cost, if it held one; an idle worker's death is only logged.
    struct Loss {
        std::optional<Job> job;
        QString worker; // its name, for the log
        QString what;
        std::vector<protocol::Diagnostic> diagnostics;
        QProcess* query = nullptr;
        QString said; // the scheduler's latest sentence
    };

    Worker* worker(int serial);
    QString workerName(const Worker& w) const;
    int count(Worker::State state) const;

    qint64 enqueueFirst(Job job); // probes, ceilings and listings go ahead of evaluations; returns the id
    void schedulePump();
    void pump();
    void spawn();
    void dispatch(Worker& w, Job job);

    void onStdout(int serial);
    void onStderr(int serial);
    void onFinished(int serial, int exitCode, bool crashed);
    void onFailedToStart(int serial);
    void onTimer(int serial);
    // False when the line made the worker unusable and reading must stop.
    bool handleLine(Worker& w, const QByteArray& line);
    void handleHello(Worker& w, const QByteArray& line);
    void handleDeviceCheck(Worker& w, const QByteArray& line);
    void protocolViolation(Worker& w, const QString& reason, const QByteArray& line);

    // Polite wait first (after a shutdown request), then terminate, a short grace, then kill.
    void stop(Worker& w, std::chrono::milliseconds politeWait = std::chrono::milliseconds::zero());
    void retire(Worker& w); // the process is gone; pump() drops the slot
    void startFailed(Worker& w, const QString& reason);
    void recordStartFailure(const QString& reason);
    std::optional<Job> takeJob(Worker& w);
    void failJob(const Job& job, protocol::Status status, const QString& what,
                 std::vector<protocol::Diagnostic> diagnostics);
    // failJob for an evaluation its worker's death cost (or, without one, a line in the log):
    // after asking the scheduler about the worker's job, where there is one to ask.
    void reportLoss(const Worker& w, std::optional<Job> job, const QString& what,
                    std::vector<protocol::Diagnostic> diagnostics);
    // The loss whose scheduler query `query` is; m_losses.end() once it has gone out.
    std::vector<Loss>::iterator lossAsking(const QProcess* query);
    void onJobStateAnswer(QProcess* query, bool answered);
    // The scheduler has said what it will say (or did not, in time): the loss is reported.
    void settleLoss(QProcess* query);
    // Hands `result` back as the answer to `job`, recording where it ran.
    void deliver(const Job& job, protocol::EvaluateResult result);
    protocol::Diagnostic stderrDiagnostic(const Worker& w) const;
    void runCleanup();

    QString m_backend;
    QString m_program;
    QStringList m_arguments;
    QStringList m_extraEnvironment; // NAME=value
    QString m_host;                 // empty: this machine
    std::optional<int> m_deviceIndex;
    int m_workerCount = 1;
    int m_maxStarting = 0;
    std::chrono::milliseconds m_startTimeout{15000};
    std::chrono::milliseconds m_probeTimeout{60000};
    int m_maxStartFailures = 3;
    bool m_hostsFromWorkers = false;
    bool m_checkDevices = false;
    QString m_cleanupProgram; // empty: none, or already run
    QStringList m_cleanupArguments;
    QString m_jobStateProgram; // empty: nobody to ask
    QStringList m_jobStateArguments;
    JobStateReader m_readJobState;
    std::chrono::milliseconds m_jobStateWait{5000};
    std::vector<Loss> m_losses;

    std::vector<std::unique_ptr<Worker>> m_workers;
    std::deque<Job> m_queue;
    qint64 m_nextId = 1;
    int m_nextSerial = 1;
    int m_startFailures = 0; // in a row
    bool m_gaveUp = false;   // until the next submit or probe
    bool m_pumpScheduled = false;
    bool m_shutDown = false;
    bool m_shutDownAnnounced = false;
};

} // namespace kforge::eval
