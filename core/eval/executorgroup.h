#pragma once
// Several executors as one: worker pools on this machine (one per GPU with --devices) and on other
// hosts over SSH, fed from one queue. A request goes to the member with the most free capacity;
// a member that can no longer start workers (a host gone, a worker program missing there) drops
// out with a `degraded` message naming it, costing the evaluations it had in flight, and the run
// goes on with the others. Only when every member is gone does the group report
// workersFailedToStart. Every signal is emitted from the event loop.

#include "eval/executor.h"

#include <QString>

#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace kforge::eval {

class ExecutorGroup final : public Executor {
    Q_OBJECT
public:
    explicit ExecutorGroup(QString backend, QObject* parent = nullptr);

    // Adds a member, which the group takes over (as a child object). `name` says where it runs in
    // messages ("gpu1", "this machine, GPU 2"); `device`, when set, replaces the device index of
    // every request it gets (a pool pinned to one GPU sees it as device 0).
    void add(Executor* member, QString name, std::optional<int> device = std::nullopt);
    int members() const { return static_cast<int>(m_members.size()); }
    int liveMembers() const;

    qint64 submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) override;
    void cancel(qint64 ticket) override;
    int capacity() const override;
    QString backend() const override { return m_backend; }
    // Asked of the first member still there (the engine needs one device's answer), and of the
    // next ones in turn while they fail (a host that cannot be reached, say).
    void probe() override;
    // Every live place is asked (each may hold another GPU model); failures are named by place.
    int requestCeilings(int device, bool refresh = false) override;
    void shutdown() override;

private:
    struct Member {
        Executor* executor = nullptr;
        QString name;
        std::optional<int> device;
        int inFlight = 0;
        bool lost = false;
        bool shutDown = false;
    };
    struct Pending {
        qint64 ticket = 0;
        protocol::EvaluateRequest request;
        std::chrono::milliseconds timeout{0};
    };
    struct Dispatched {
        std::size_t member = 0;
        qint64 memberTicket = 0;
        // Kept until a worker takes it: a request its place gives up before then (no worker
        // could start there) goes to another place instead of failing.
        std::optional<Pending> unstarted;
    };

    void pump();
    void schedulePump();
    void fail(const Pending& p, const QString& message);
    void onEvaluated(std::size_t member, qint64 memberTicket, const protocol::EvaluateResult& result);
    void onLost(std::size_t member, const QString& message);
    std::optional<std::size_t> firstLive() const;
    std::optional<std::size_t> nextLive(std::size_t after) const;

    QString m_backend;
    std::vector<Member> m_members;
    std::deque<Pending> m_queue;
    std::map<qint64, Dispatched> m_dispatched;                  // group ticket -> where it went
    std::map<std::pair<std::size_t, qint64>, qint64> m_tickets; // (member, its ticket) -> group ticket
    qint64 m_nextTicket = 1;
    bool m_pumpScheduled = false;
    bool m_shuttingDown = false;
    bool m_shutDownAnnounced = false;
    bool m_allLost = false;
    QStringList m_lostMessages;
};

} // namespace kforge::eval
