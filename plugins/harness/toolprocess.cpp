#include "toolprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace kforge::harness {

namespace {

constexpr std::size_t kMaxErrorBytes = 8192;

struct Fd {
    int fd = -1;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
};

} // namespace

std::string firstExecutable(const std::vector<std::string>& candidates) {
    for (const auto& c : candidates)
        if (!c.empty() && ::access(c.c_str(), X_OK) == 0)
            return c;
    return {};
}

spec::Expected<ToolOutput> runTool(const std::vector<std::string>& argv, double timeoutSeconds,
                                   std::size_t maxOutputBytes) {
    if (argv.empty())
        return spec::fail("no program to run");
    int outPipe[2];
    int errPipe[2];
    if (::pipe2(outPipe, O_CLOEXEC) != 0)
        return spec::fail("cannot run " + argv[0] + ": pipe: " + std::strerror(errno));
    Fd outRead{outPipe[0]}, outWrite{outPipe[1]};
    if (::pipe2(errPipe, O_CLOEXEC) != 0)
        return spec::fail("cannot run " + argv[0] + ": pipe: " + std::strerror(errno));
    Fd errRead{errPipe[0]}, errWrite{errPipe[1]};

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, outWrite.fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errWrite.fd, STDERR_FILENO);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0)
        return spec::fail("cannot run " + argv[0] + ": " + std::strerror(spawned));
    outWrite.reset();
    errWrite.reset();

    ToolOutput result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
    char buffer[65536];
    while (outRead.fd >= 0 || errRead.fd >= 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            result.timedOut = true;
            break;
        }
        pollfd fds[2];
        nfds_t n = 0;
        if (outRead.fd >= 0)
            fds[n++] = {outRead.fd, POLLIN, 0};
        if (errRead.fd >= 0)
            fds[n++] = {errRead.fd, POLLIN, 0};
        const int ready = ::poll(fds, n, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (ready < 0 && errno != EINTR)
            break;
        for (nfds_t i = 0; ready > 0 && i < n; ++i) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            const bool isOut = fds[i].fd == outRead.fd;
            const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
            if (got <= 0) {
                if (got < 0 && errno == EINTR)
                    continue;
                (isOut ? outRead : errRead).reset();
                continue;
            }
            std::string& sink = isOut ? result.out : result.err;
            const std::size_t cap = isOut ? maxOutputBytes : kMaxErrorBytes;
            const std::size_t keep = std::min(static_cast<std::size_t>(got), cap - std::min(cap, sink.size()));
            sink.append(buffer, keep);
            if (isOut && keep < static_cast<std::size_t>(got))
                result.truncated = true;
        }
    }
    // Its output is closed; it may still run (a tool that closed its streams): wait up to the
    // deadline, then end it.
    int status = 0;
    while (!result.timedOut) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            if (WIFEXITED(status))
                result.exitCode = WEXITSTATUS(status);
            return result;
        }
        if (done < 0 && errno != EINTR)
            return result;
        if (std::chrono::steady_clock::now() >= deadline)
            result.timedOut = true;
        else
            ::usleep(2000);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;
}

} // namespace kforge::harness
