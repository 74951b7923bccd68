#include "eval/executorgroup.h"

#include <algorithm>

namespace kforge::eval {

using protocol::EvaluateResult;

ExecutorGroup::ExecutorGroup(QString backend, QObject* parent) : Executor(parent), m_backend(std::move(backend)) {}

void ExecutorGroup::add(Executor* member, QString name, std::optional<int> device) {
    const std::size_t index = m_members.size();
    member->setParent(this);
    m_members.push_back({member, std::move(name), device});
    connect(member, &Executor::evaluated, this,
            [this, index](qint64 ticket, const EvaluateResult& r) { onEvaluated(index, ticket, r); });
    connect(member, &Executor::evaluationStarted, this, [this, index](qint64 ticket) {
        if (auto it = m_tickets.find({index, ticket}); it != m_tickets.end()) {
            m_dispatched[it->second].unstarted.reset();
            emit evaluationStarted(it->second);
        }
    });
    connect(member, &Executor::workersFailedToStart, this,
            [this, index](const QString& message) { onLost(index, message); });
    connect(member, &Executor::degraded, this, [this, index](const QString& message) {
        emit degraded(m_members[index].name + QStringLiteral(": ") + message);
    });
    connect(member, &Executor::probed, this, &Executor::probed);
    connect(member, &Executor::probeFailed, this, [this, index](const QString& message) {
        // The next place that is still there is asked in turn; the last failure is the group's.
        const QString named = m_members[index].name + QStringLiteral(": ") + message;
        if (auto next = nextLive(index))
            m_members[*next].executor->probe();
        else
            emit probeFailed(named);
    });
    connect(member, &Executor::ceilingsMeasured, this, &Executor::ceilingsMeasured);
    connect(member, &Executor::ceilingsFailed, this, [this, index](const QString& message) {
        emit ceilingsFailed(m_members[index].name + QStringLiteral(": ") + message);
    });
    connect(member, &Executor::shutDown, this, [this, index] {
        m_members[index].shutDown = true;
        if (!m_shutDownAnnounced
            && std::all_of(m_members.begin(), m_members.end(), [](const Member& m) { return m.shutDown; })) {
            m_shutDownAnnounced = true;
            emit shutDown();
        }
    });
}

int ExecutorGroup::liveMembers() const {
    return static_cast<int>(std::count_if(m_members.begin(), m_members.end(), [](const Member& m) { return !m.lost; }));
}

int ExecutorGroup::capacity() const {
    int total = 0;
    for (const Member& m : m_members)
        if (!m.lost)
            total += m.executor->capacity();
    return total;
}

std::optional<std::size_t> ExecutorGroup::firstLive() const {
    for (std::size_t i = 0; i < m_members.size(); ++i)
        if (!m_members[i].lost)
            return i;
    return std::nullopt;
}

std::optional<std::size_t> ExecutorGroup::nextLive(std::size_t after) const {
    for (std::size_t i = after + 1; i < m_members.size(); ++i)
        if (!m_members[i].lost)
            return i;
    return std::nullopt;
}

qint64 ExecutorGroup::submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) {
    Pending p{m_nextTicket++, std::move(request), timeout};
    const qint64 ticket = p.ticket;
    if (m_shuttingDown || m_allLost || m_members.empty()) {
        const QString why = m_shuttingDown ? QStringLiteral("the %1 workers have been shut down").arg(m_backend)
                            : m_members.empty()
                                ? QStringLiteral("no %1 workers are configured").arg(m_backend)
                                : QStringLiteral("no %1 worker is left: %2").arg(m_backend, m_lostMessages.join(u"; "));
        fail(p, why);
        return ticket;
    }
    m_queue.push_back(std::move(p));
    schedulePump();
    return ticket;
}

void ExecutorGroup::schedulePump() {
    if (m_pumpScheduled)
        return;
    m_pumpScheduled = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            m_pumpScheduled = false;
            pump();
        },
        Qt::QueuedConnection);
}

void ExecutorGroup::pump() {
    while (!m_queue.empty() && !m_shuttingDown) {
        // The member with the most free places; ties go to the first (this machine, as added).
        std::optional<std::size_t> best;
        int bestFree = 0;
        for (std::size_t i = 0; i < m_members.size(); ++i) {
            const Member& m = m_members[i];
            const int free = m.executor->capacity() - m.inFlight;
            if (!m.lost && free > bestFree) {
                best = i;
                bestFree = free;
            }
        }
        if (!best)
            return;
        Pending p = std::move(m_queue.front());
        m_queue.pop_front();
        Member& m = m_members[*best];
        protocol::EvaluateRequest request = p.request;
        if (m.device)
            request.options.device = *m.device;
        ++m.inFlight;
        const qint64 memberTicket = m.executor->submit(std::move(request), p.timeout);
        const qint64 ticket = p.ticket;
        m_dispatched[ticket] = {*best, memberTicket, std::move(p)};
        m_tickets[{*best, memberTicket}] = ticket;
    }
}

void ExecutorGroup::fail(const Pending& p, const QString& message) {
    EvaluateResult r;
    r.id = p.ticket;
    r.status = protocol::Status::RuntimeError;
    r.message = message.toStdString();
    const qint64 ticket = p.ticket;
    QMetaObject::invokeMethod(
        this, [this, ticket, r = std::move(r)] { emit evaluated(ticket, r); }, Qt::QueuedConnection);
}

void ExecutorGroup::onEvaluated(std::size_t member, qint64 memberTicket, const EvaluateResult& result) {
    auto it = m_tickets.find({member, memberTicket});
    if (it == m_tickets.end())
        return; // not ours (a member's own probe-era leftovers)
    const qint64 ticket = it->second;
    m_tickets.erase(it);
    std::optional<Pending> unstarted = std::move(m_dispatched[ticket].unstarted);
    m_dispatched.erase(ticket);
    --m_members[member].inFlight;
    if (m_members[member].lost && unstarted && !m_allLost && !m_shuttingDown) {
        // Its place gave up before any worker took it: another place evaluates it.
        m_queue.push_front(std::move(*unstarted));
        schedulePump();
        return;
    }
    EvaluateResult r = result;
    r.id = ticket;
    emit evaluated(ticket, r);
    schedulePump();
}

void ExecutorGroup::onLost(std::size_t member, const QString& message) {
    Member& m = m_members[member];
    if (m.lost)
        return;
    m.lost = true;
    m_lostMessages << m.name + QStringLiteral(": ") + message;
    // Its requests come back failed from the member itself (those no worker took go to the
    // others); nothing new goes there.
    if (liveMembers() > 0) {
        emit degraded(QStringLiteral("%1 is left out of the run, which goes on with %2 other worker place(s): %3")
                          .arg(m.name)
                          .arg(capacity())
                          .arg(message));
        schedulePump();
        return;
    }
    m_allLost = true;
    const QString all = QStringLiteral("no %1 worker is left: %2").arg(m_backend, m_lostMessages.join(u"; "));
    emit workersFailedToStart(all);
    while (!m_queue.empty()) {
        fail(m_queue.front(), all);
        m_queue.pop_front();
    }
}

void ExecutorGroup::cancel(qint64 ticket) {
    auto queued =
        std::find_if(m_queue.begin(), m_queue.end(), [ticket](const Pending& p) { return p.ticket == ticket; });
    if (queued != m_queue.end()) {
        const Pending p = std::move(*queued);
        m_queue.erase(queued);
        fail(p, QStringLiteral("cancelled"));
        return;
    }
    if (auto it = m_dispatched.find(ticket); it != m_dispatched.end()) {
        it->second.unstarted.reset(); // cancelled: never to be moved to another place
        m_members[it->second.member].executor->cancel(it->second.memberTicket);
    }
}

void ExecutorGroup::probe() {
    if (auto i = firstLive()) {
        m_members[*i].executor->probe();
        return;
    }
    const QString why = QStringLiteral("no %1 worker is left to probe").arg(m_backend);
    QMetaObject::invokeMethod(
        this, [this, why] { emit probeFailed(why); }, Qt::QueuedConnection);
}

int ExecutorGroup::requestCeilings(int device, bool refresh) {
    int answers = 0;
    for (const Member& m : m_members)
        if (!m.lost)
            answers += m.executor->requestCeilings(m.device.value_or(device), refresh);
    if (answers > 0)
        return answers;
    const QString why = QStringLiteral("no %1 worker is left to measure ceilings").arg(m_backend);
    QMetaObject::invokeMethod(
        this, [this, why] { emit ceilingsFailed(why); }, Qt::QueuedConnection);
    return 1;
}

void ExecutorGroup::shutdown() {
    if (m_shuttingDown)
        return;
    m_shuttingDown = true;
    while (!m_queue.empty()) {
        fail(m_queue.front(), QStringLiteral("the %1 workers have been shut down").arg(m_backend));
        m_queue.pop_front();
    }
    if (m_members.empty()) {
        m_shutDownAnnounced = true;
        QMetaObject::invokeMethod(
            this, [this] { emit shutDown(); }, Qt::QueuedConnection);
        return;
    }
    for (Member& m : m_members)
        m.executor->shutdown();
}

} // namespace kforge::eval
