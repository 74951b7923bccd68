#pragma once
// Workers that share one device take turns at timing. Any number of workers may run kernels there
// together to verify, compute references or digest (each a shared hold, taken around that device
// work only), but a worker holds the device alone (an exclusive hold) for each timed run, from its
// cache flush to the end of its kernels, so no other worker's kernels run beside the timed ones
// and take DRAM bandwidth, L2 or SMs from them. Host work (compiling, making inputs, comparing)
// and copies between host and device need no hold.
//
// The lock is a pair of files per device, locked with flock(2), so it holds between processes,
// is released by the kernel when a worker dies, and costs nothing when one worker is alone:
//   <dir>/kforge-device-<key>.lock       shared by users, exclusive for timing;
//   <dir>/kforge-device-<key>.turnstile  taken by a timer while it waits and holds the device; a
//                                        new user passes through it first, so a timer waiting for
//                                        users to leave is not starved by users that keep coming.
// <dir> is $KFORGE_LOCK_DIR, else /dev/shm, else the temporary directory. <key> names the device
// (UUID, or platform and device name) as a SHA-256 digest, so any key makes a valid file name.
//
// A waiter blocks in flock(2) and gets the lock the moment its holder lets go (one hand-over per
// timed run: polling with pauses would leave the device idle between turns). To keep to its
// deadline the waiting thread is woken every 50 ms by a signal, SIGRTMIN + 7, whose handler this
// installs and which does nothing.
//
// Waits are bounded (`patience`, 30 s by default): a worker whose kernel never finishes holds the
// device until its pool stops it, and the others must not stall with it. A wait that runs out is
// not granted (Hold::granted() is false): the work goes on without the device to itself, and a
// timer says so in its result.

#include <chrono>
#include <map>
#include <memory>
#include <string>

namespace kforge::harness {

class DeviceLock {
public:
    // Holds the lock until destroyed or released. Moves, never copies.
    class Hold {
    public:
        Hold() = default;
        Hold(Hold&& other) noexcept;
        Hold& operator=(Hold&& other) noexcept;
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;
        ~Hold() { release(); }
        void release();
        bool held() const { return m_lock != nullptr; }
        // False when the wait ran out and this hold guards nothing.
        bool granted() const { return m_granted; }

    private:
        friend class DeviceLock;
        Hold(DeviceLock* lock, bool granted) : m_lock(lock), m_granted(granted) {}
        DeviceLock* m_lock = nullptr;
        bool m_granted = false;
    };

    // An empty key makes a lock that never blocks (a backend with no device identity).
    explicit DeviceLock(const std::string& deviceKey, std::string directory = defaultDirectory(),
                        std::chrono::milliseconds patience = std::chrono::seconds(30));
    ~DeviceLock();
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;

    static std::string defaultDirectory();

    // Waits until granted or out of patience. A lock whose files cannot be opened grants at once and
    // says why in problem(): timing goes on, only unguarded. A hold asked for while this lock
    // already holds (device work inside device work) comes at once under the hold already there,
    // whose mode and grant stand; the files are let go with the outermost hold.
    Hold shared();
    Hold exclusive();

    const std::string& path() const { return m_path; }
    const std::string& problem() const { return m_problem; }

private:
    Hold acquire(bool exclusive);
    void unlock();

    std::string m_path;
    std::string m_problem;
    int m_lockFd = -1;
    int m_turnstileFd = -1;
    std::chrono::milliseconds m_patience;
    int m_depth = 0;          // holds given out and not yet released
    bool m_exclusive = false; // the outermost hold's mode
    bool m_granted = false;   // whether the outermost hold got its locks
    bool m_turnstileHeld = false;
};

// One DeviceLock per device key, made at first use: what an evaluator keeps across evaluations.
class DeviceLocks {
public:
    DeviceLock& forKey(const std::string& deviceKey);

private:
    std::map<std::string, std::unique_ptr<DeviceLock>> m_locks;
};

} // namespace kforge::harness
