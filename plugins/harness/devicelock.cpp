#include "devicelock.h"

#include "sha256.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
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

// Takes `fd` under `operation` unless `deadline` passes first. Polls: a blocking flock cannot be
// given a deadline. The pause grows from 50 us to 2 ms, so a short wait costs little latency.
bool lockFdBefore(int fd, int operation, std::chrono::steady_clock::time_point deadline) {
    if (fd < 0)
        return true;
    for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
        if (::flock(fd, operation | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return true; // the file cannot be locked at all: go on unguarded, as without files
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
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
