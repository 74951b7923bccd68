#include "devicelock.h"

#include "sha256.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kforge::harness {

namespace {

// Opens (creating where needed) a file only to lock it. An existing file is opened without O_CREAT:
// in a sticky directory such as /dev/shm, O_CREAT on another user's file is refused where
// fs.protected_regular is set, while a plain read-only open is not.
int openLockFile(const std::string& path, std::string& problem) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && problem.empty())
        problem = "cannot open " + path + ": " + std::strerror(errno);
    return fd;
}

void unlockFd(int fd) {
    if (fd >= 0)
        ::flock(fd, LOCK_UN);
}

void ignoreWakeSignal(int) {}

// The signal that wakes a waiting thread out of flock(2); its handler does nothing.
int wakeSignal() {
    return SIGRTMIN + 7;
}

// While it lives, sends this thread the wake signal every `period` (first after `first`), so that a
// blocking flock returns with EINTR and its caller can look at its deadline. A tick that comes just
// before flock blocks is not lost: the next one comes a period later. armed() is false where no
// timer could be made (the caller then polls).
class WakeTimer {
public:
    WakeTimer(std::chrono::nanoseconds first, std::chrono::nanoseconds period) {
        static const bool handled = [] {
            struct sigaction action {};
            action.sa_handler = ignoreWakeSignal;
            sigemptyset(&action.sa_mask);
            action.sa_flags = 0; // no SA_RESTART: the signal is there to interrupt the wait
            return ::sigaction(wakeSignal(), &action, nullptr) == 0;
        }();
        if (!handled)
            return;
        sigset_t wake;
        sigemptyset(&wake);
        sigaddset(&wake, wakeSignal());
        if (::pthread_sigmask(SIG_UNBLOCK, &wake, &m_mask) != 0)
            return;
        m_restoreMask = true;
        sigevent event{};
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = wakeSignal();
        event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
        if (::timer_create(CLOCK_MONOTONIC, &event, &m_timer) != 0)
            return;
        const auto spec = [](std::chrono::nanoseconds d) {
            d = std::max(d, std::chrono::nanoseconds(1000));
            return timespec{static_cast<time_t>(d.count() / 1000000000), static_cast<long>(d.count() % 1000000000)};
        };
        const itimerspec ticks{spec(period), spec(first)};
        if (::timer_settime(m_timer, 0, &ticks, nullptr) != 0) {
            ::timer_delete(m_timer);
            return;
        }
        m_armed = true;
    }
    ~WakeTimer() {
        if (m_armed)
            ::timer_delete(m_timer); // a tick still pending is taken on the way out of this call
        if (m_restoreMask)
            ::pthread_sigmask(SIG_SETMASK, &m_mask, nullptr);
    }
    WakeTimer(const WakeTimer&) = delete;
    WakeTimer& operator=(const WakeTimer&) = delete;
    bool armed() const { return m_armed; }

private:
    timer_t m_timer{};
    sigset_t m_mask{};
    bool m_armed = false;
    bool m_restoreMask = false;
};

// Takes `fd` under `operation` unless `deadline` passes first. Blocks in flock(2), so the lock
// passes to a waiter the moment its holder lets go (the kernel wakes the waiters; a poll would
// sleep on, and at one hand-over per timed run those sleeps added up to half the device's time),
// woken every 50 ms to look at the deadline. Where no wake timer can be made it polls instead,
// pausing from 50 us up to 2 ms.
bool lockFdBefore(int fd, int operation, std::chrono::steady_clock::time_point deadline) {
    if (fd < 0)
        return true;
    const auto cannotLock = [] { return errno != EWOULDBLOCK && errno != EINTR; };
    if (::flock(fd, operation | LOCK_NB) == 0)
        return true;
    if (cannotLock())
        return true; // the file cannot be locked at all: go on unguarded, as without files
    constexpr auto tick = std::chrono::milliseconds(50);
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero())
        return false;
    const WakeTimer wake(std::min<std::chrono::nanoseconds>(left, tick), tick);
    for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
        if (::flock(fd, wake.armed() ? operation : operation | LOCK_NB) == 0)
            return true;
        if (cannotLock())
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        if (!wake.armed())
            std::this_thread::sleep_for(pause);
    }
}

} // namespace

std::string DeviceLock::defaultDirectory() {
    if (const char* dir = std::getenv("KFORGE_LOCK_DIR"); dir && *dir)
        return dir;
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec))
        return "/dev/shm";
    return std::filesystem::temp_directory_path(ec).string();
}

DeviceLock::DeviceLock(const std::string& deviceKey, std::string directory, std::chrono::milliseconds patience)
    : m_patience(patience) {
    if (deviceKey.empty())
        return;
    Sha256 h;
    h.update(deviceKey);
    const std::string stem = std::move(directory) + "/kforge-device-" + h.hexDigest().substr(0, 24);
    m_path = stem + ".lock";
    m_lockFd = openLockFile(m_path, m_problem);
    m_turnstileFd = openLockFile(stem + ".turnstile", m_problem);
    if (m_lockFd < 0 || m_turnstileFd < 0) {
        // Half a lock would only mislead: without both files no one waits.
        if (m_lockFd >= 0)
            ::close(m_lockFd);
        if (m_turnstileFd >= 0)
            ::close(m_turnstileFd);
        m_lockFd = m_turnstileFd = -1;
    }
}

DeviceLock::~DeviceLock() {
    if (m_lockFd >= 0)
        ::close(m_lockFd);
    if (m_turnstileFd >= 0)
        ::close(m_turnstileFd);
}

DeviceLock::Hold DeviceLock::shared() {
    return acquire(false);
}

DeviceLock::Hold DeviceLock::exclusive() {
    return acquire(true);
}

DeviceLock::Hold DeviceLock::acquire(bool exclusive) {
    if (m_depth++ > 0)
        return Hold(this, m_granted);
    m_exclusive = exclusive;
    const auto deadline = std::chrono::steady_clock::now() + m_patience;
    m_turnstileHeld = lockFdBefore(m_turnstileFd, LOCK_EX, deadline);
    m_granted = m_turnstileHeld && lockFdBefore(m_lockFd, exclusive ? LOCK_EX : LOCK_SH, deadline);
    // A timer keeps the turnstile until release, so no new user gets in while it waits or times;
    // a user only passes through it (a waiting timer holds it, so users queue behind that timer).
    if (m_turnstileHeld && (!exclusive || !m_granted)) {
        unlockFd(m_turnstileFd);
        m_turnstileHeld = false;
    }
    return Hold(this, m_granted);
}

void DeviceLock::unlock() {
    if (--m_depth > 0)
        return;
    if (m_granted)
        unlockFd(m_lockFd);
    if (m_turnstileHeld)
        unlockFd(m_turnstileFd);
    m_granted = m_turnstileHeld = false;
}

DeviceLock::Hold::Hold(Hold&& other) noexcept
    : m_lock(std::exchange(other.m_lock, nullptr)), m_granted(other.m_granted) {}

DeviceLock::Hold& DeviceLock::Hold::operator=(Hold&& other) noexcept {
    if (this != &other) {
        release();
        m_lock = std::exchange(other.m_lock, nullptr);
        m_granted = other.m_granted;
    }
    return *this;
}

void DeviceLock::Hold::release() {
    if (m_lock)
        std::exchange(m_lock, nullptr)->unlock();
}

DeviceLock& DeviceLocks::forKey(const std::string& deviceKey) {
    auto& lock = m_locks[deviceKey];
    if (!lock)
        lock = std::make_unique<DeviceLock>(deviceKey);
    return *lock;
}

} // namespace kforge::harness
