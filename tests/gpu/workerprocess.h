#pragma once
// A worker process driven without Qt, for the GPU checks and benchmarks that must run on bare GPU
// hosts. It does what the WorkerPool does for one worker — hello, one request at a time, a deadline,
// a restart after a crash — and reports each failure as the result status the pool would give.

#include "protocol.h"

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kforge::gputest {

class WorkerProcess {
public:
    explicit WorkerProcess(std::string program, std::vector<std::string> extraEnvironment = {});
    ~WorkerProcess();
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    // Starts the worker if it is not running and reads its hello line.
    spec::Status start(std::chrono::milliseconds timeout = std::chrono::seconds(30));

    // Sends one evaluate request and waits for its result. A worker that dies, hangs past the
    // deadline or answers garbage is stopped, and the failure comes back as a result with status
    // runtime_error or timeout. The next call starts a fresh worker.
    protocol::EvaluateResult evaluate(protocol::EvaluateRequest request, std::chrono::milliseconds timeout);
    spec::Expected<protocol::ProbeResult> probe(std::chrono::milliseconds timeout = std::chrono::seconds(60));

    // How many times a worker process was started.
    int starts() const { return m_starts; }
    // The exit status of the last worker that ended, as text ("exit code 3", "signal 9").
    const std::string& lastExit() const { return m_lastExit; }
    void stop();

private:
    spec::Expected<std::string> readLine(std::chrono::steady_clock::time_point deadline);
    bool writeLine(const std::string& line);
    void reap(bool kill);

    std::string m_program;
    std::vector<std::string> m_environment;
    pid_t m_pid = -1;
    int m_in = -1;  // the worker's stdin
    int m_out = -1; // the worker's stdout
    std::string m_buffer;
    std::int64_t m_nextId = 1;
    int m_starts = 0;
    std::string m_lastExit;
};

} // namespace kforge::gputest
