#pragma once
// What the compiler made of a run's CUDA candidates, for the code view's PTX and SASS: each listing
// is read from the run store where a worker's listing was kept, else asked of a CUDA worker of this
// machine (which compiles with NVRTC and disassembles, needing no GPU or driver: a stored H200 run
// is listed on a laptop), then kept in the store. Nothing blocks the GUI thread.

#include "eval/executor.h" // DisassembleResult as a signal argument
#include "protocol.h"

#include <QHash>
#include <QObject>
#include <QPair>
#include <QPointer>

#include <optional>

namespace kforge::eval {
class WorkerPool;
}

namespace kforge::ui {

class RunSession;

class ListingService : public QObject {
    Q_OBJECT
public:
    explicit ListingService(RunSession* session, QObject* parent = nullptr);
    ~ListingService() override;

    struct Entry {
        enum class State { Reading, Compiling, Done };
        State state = State::Reading;
        protocol::DisassembleResult listing; // when Done: ok, or a message saying why not
    };

    // What is known of the listing of `candidate` for compute capability `target`; null until
    // request() was called for it.
    const Entry* entry(qint64 candidate, int target) const;
    // Starts reading or compiling the listing unless it is known or on its way; changed() follows
    // each step. A failed listing is asked for again only after retry().
    void request(qint64 candidate, int target);
    void retry(qint64 candidate, int target);

    // The compute capability of an NVIDIA GPU model as results name it ("NVIDIA H200" -> 90), 0
    // when the name is not one kforge knows.
    static int targetForDevice(const QString& device);
    // The targets the view offers, newest last, and their names ("sm_90").
    static QList<int> targets();
    static QString targetName(int target);

signals:
    void changed(qint64 candidate, int target);

private:
    using Key = QPair<qint64, int>;
    void runChanged();
    void onRead(qint64 candidate, int target, bool found, const protocol::DisassembleResult& listing);
    void compile(qint64 candidate, int target);
    void onListed(qint64 ticket, const protocol::DisassembleResult& listing);
    void finish(const Key& key, protocol::DisassembleResult listing, bool keep);
    // The CUDA worker pool of this machine, started at first use; null with `problem` set when
    // there is no CUDA worker.
    eval::WorkerPool* pool(QString& problem);

    RunSession* m_session;
    QHash<Key, Entry> m_entries;
    QHash<qint64, Key> m_tickets; // in flight at the pool
    QPointer<eval::WorkerPool> m_pool;
    // The run's task as this machine has it, loaded at the first compile.
    std::optional<protocol::DisassembleRequest> m_template;
    QString m_taskProblem;
    bool m_taskLoaded = false;
};

} // namespace kforge::ui
