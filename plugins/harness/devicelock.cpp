#include "devicelock.h"

#include "sha256.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

void lockFd(int fd, int operation) {
    if (fd < 0)
        return;
    while (::flock(fd, operation) != 0 && errno == EINTR) {
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

DeviceLock::DeviceLock(const std::string& deviceKey, std::string directory) {
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
        return Hold(this);
    m_exclusive = exclusive;
    lockFd(m_turnstileFd, LOCK_EX);
    if (exclusive) {
        // The turnstile is kept until release: no new user gets in while this timer waits or times.
        lockFd(m_lockFd, LOCK_EX);
    } else {
        // Through the turnstile: a timer waiting for the device holds it, so this user queues behind.
        lockFd(m_lockFd, LOCK_SH);
        lockFd(m_turnstileFd, LOCK_UN);
    }
    return Hold(this);
}

void DeviceLock::unlock() {
    if (--m_depth > 0)
        return;
    lockFd(m_lockFd, LOCK_UN);
    if (m_exclusive)
        lockFd(m_turnstileFd, LOCK_UN);
}

DeviceLock::Hold::Hold(Hold&& other) noexcept : m_lock(std::exchange(other.m_lock, nullptr)) {}

DeviceLock::Hold& DeviceLock::Hold::operator=(Hold&& other) noexcept {
    if (this != &other) {
        release();
        m_lock = std::exchange(other.m_lock, nullptr);
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
