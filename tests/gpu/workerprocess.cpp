#include "workerprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace kforge::gputest {

using Clock = std::chrono::steady_clock;

WorkerProcess::WorkerProcess(std::string program, std::vector<std::string> extraEnvironment)
    : m_program(std::move(program)), m_environment(std::move(extraEnvironment)) {}

WorkerProcess::~WorkerProcess() {
    stop();
}

spec::Status WorkerProcess::start(std::chrono::milliseconds timeout) {
    if (m_pid > 0)
        return spec::success();
    int toChild[2], fromChild[2];
    if (::pipe(toChild) != 0 || ::pipe(fromChild) != 0)
        return spec::fail(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0)
        return spec::fail(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::dup2(toChild[0], STDIN_FILENO);
        ::dup2(fromChild[1], STDOUT_FILENO);
        ::close(toChild[0]);
        ::close(toChild[1]);
        ::close(fromChild[0]);
        ::close(fromChild[1]);
        for (const auto& e : m_environment)
            ::putenv(const_cast<char*>(e.c_str()));
        ::execl(m_program.c_str(), m_program.c_str(), static_cast<char*>(nullptr));
        std::fprintf(stderr, "cannot start %s: %s\n", m_program.c_str(), std::strerror(errno));
        ::_exit(127);
    }
    ::close(toChild[0]);
    ::close(fromChild[1]);
    m_pid = pid;
    m_in = toChild[1];
    m_out = fromChild[0];
    m_buffer.clear();
    ++m_starts;
    ::signal(SIGPIPE, SIG_IGN);
    auto hello = readLine(Clock::now() + timeout);
    if (!hello) {
        reap(true);
        return spec::fail(m_program + " did not start: " + hello.error());
    }
    if (auto h = protocol::decodeHello(*hello); !h) {
        reap(true);
        return spec::fail(m_program + ": " + h.error());
    }
    return spec::success();
}

spec::Expected<std::string> WorkerProcess::readLine(Clock::time_point deadline) {
    for (;;) {
        if (const auto nl = m_buffer.find('\n'); nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0)
            return spec::fail("timeout");
        pollfd p{m_out, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (n < 0 && errno != EINTR)
            return spec::fail(std::string("poll: ") + std::strerror(errno));
        if (n <= 0)
            continue;
        char chunk[65536];
        const ssize_t got = ::read(m_out, chunk, sizeof chunk);
        if (got <= 0)
            return spec::fail("exited");
        m_buffer.append(chunk, static_cast<std::size_t>(got));
    }
}

bool WorkerProcess::writeLine(const std::string& line) {
    std::string data = line + "\n";
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(m_in, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void WorkerProcess::reap(bool kill) {
    if (m_pid <= 0)
        return;
    if (m_in >= 0)
        ::close(m_in);
    m_in = -1;
    if (kill)
        ::kill(m_pid, SIGKILL);
    int status = 0;
    // A worker that answered and is exiting by itself gets a moment before it is killed.
    for (int i = 0; i < 100 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i) {
        if (i == 50)
            ::kill(m_pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (WIFEXITED(status))
        m_lastExit = "exit code " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        m_lastExit = "signal " + std::to_string(WTERMSIG(status));
    ::close(m_out);
    m_out = -1;
    m_pid = -1;
}

void WorkerProcess::stop() {
    if (m_pid > 0) {
        writeLine(protocol::encode(protocol::Request{protocol::ShutdownRequest{m_nextId++}}));
        reap(false);
    }
}

protocol::EvaluateResult WorkerProcess::evaluate(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) {
    protocol::EvaluateResult failure;
    failure.status = protocol::Status::RuntimeError;
    // A worker that lost its device answers and then exits with code 3; a request sent to it in
    // that moment is not lost but retried once on a fresh worker, as the pool does.
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (m_pid > 0) {
            int status = 0;
            if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
                m_lastExit = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                               : "signal " + std::to_string(WTERMSIG(status));
                ::close(m_in);
                ::close(m_out);
                m_in = m_out = -1;
                m_pid = -1;
            }
        }
        if (auto st = start(); !st) {
            failure.message = st.error();
            return failure;
        }
        request.id = m_nextId++;
        failure.id = request.id;
        const auto t0 = Clock::now();
        const bool sent = writeLine(protocol::encode(protocol::Request{request}));
        auto line = sent ? readLine(t0 + timeout) : spec::Expected<std::string>(spec::Error{"exited"});
        failure.wallSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!line) {
            const bool timedOut = line.error() == "timeout";
            reap(true);
            if (!timedOut && attempt == 0 && m_lastExit == "exit code " + std::to_string(protocol::ExitDeviceLost))
                continue;
            failure.status = timedOut ? protocol::Status::Timeout : protocol::Status::RuntimeError;
            failure.message = timedOut ? "no answer within the deadline: the worker was stopped"
                                       : "the worker ended without answering (" + m_lastExit + ")";
            failure.diagnostics.push_back({"worker", "error", failure.message, "", 0, 0});
            return failure;
        }
        auto response = protocol::decodeResponse(*line);
        if (!response || !std::holds_alternative<protocol::EvaluateResult>(*response)
            || std::get<protocol::EvaluateResult>(*response).id != request.id) {
            reap(true);
            failure.message = "the worker answered something that is not a result: " + line->substr(0, 200);
            return failure;
        }
        return std::get<protocol::EvaluateResult>(*response);
    }
    return failure;
}

spec::Expected<protocol::ProbeResult> WorkerProcess::probe(std::chrono::milliseconds timeout) {
    if (auto st = start(); !st)
        return spec::Error{st.error()};
    const std::int64_t id = m_nextId++;
    if (!writeLine(protocol::encode(protocol::Request{protocol::ProbeRequest{id}})))
        return spec::fail("the worker closed its input");
    auto line = readLine(Clock::now() + timeout);
    if (!line) {
        reap(true);
        return spec::fail("probe: " + line.error());
    }
    auto response = protocol::decodeResponse(*line);
    if (!response || !std::holds_alternative<protocol::ProbeResult>(*response))
        return spec::fail("probe: unexpected answer: " + line->substr(0, 200));
    return std::get<protocol::ProbeResult>(*response);
}

} // namespace kforge::gputest
