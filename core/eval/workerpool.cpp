#include "eval/workerpool.h"

#include "eval/workerlocator.h"

#include "util/logging.h"
#include "util/secretenvironment.h"

#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSysInfo>
#include <QTimer>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

namespace kforge::eval {

spec::Expected<Executor*> localExecutor(const QString& backend, int workers, QObject* parent) {
    auto program = WorkerLocator::find(backend);
    if (!program)
        return spec::fail(program.error());
    return static_cast<Executor*>(new WorkerPool(backend, *program, {}, workers, parent));
}

using namespace std::chrono_literals;
using protocol::Diagnostic;
using protocol::EvaluateResult;
using protocol::Status;

namespace {

constexpr int kExitUsage = protocol::ExitUsage;
constexpr int kExitDeviceLost = protocol::ExitDeviceLost;

constexpr auto kKillGrace = 300ms;      // between SIGTERM and SIGKILL
constexpr auto kShutdownGrace = 2000ms; // for a worker asked to exit before it is terminated
constexpr qsizetype kStderrKept = qsizetype{16} * 1024;
constexpr qsizetype kStderrQuoted = qsizetype{4} * 1024;
constexpr qsizetype kMaxLineBytes = qsizetype{64} * 1024 * 1024;
constexpr qsizetype kQuotedChars = 200;
constexpr int kMaxAttempts = 2; // a request a dying worker never read is tried once more

QString describe(std::chrono::milliseconds d) {
    if (d < 1s)
        return QStringLiteral("%1 ms").arg(d.count());
    if (d.count() % 1000 == 0)
        return QStringLiteral("%1 s").arg(d.count() / 1000);
    return QStringLiteral("%1 s").arg(static_cast<double>(d.count()) / 1000.0, 0, 'f', 1);
}

QString describeExit(int exitCode, bool crashed) {
    if (crashed) {
        const char* name = ::strsignal(exitCode);
        return QStringLiteral("crashed with signal %1 (%2)")
            .arg(exitCode)
            .arg(QString::fromLocal8Bit(name ? name : "unknown"));
    }
    switch (exitCode) {
    case kExitDeviceLost:
        return QStringLiteral("exited with code %1 (its device became unusable)").arg(exitCode);
    case kExitUsage:
        return QStringLiteral("exited with code %1 (it did not accept its command line)").arg(exitCode);
    default:
        return QStringLiteral("exited with code %1").arg(exitCode);
    }
}

QString quote(const QByteArray& line) {
    QString text = QString::fromUtf8(line.left(kQuotedChars));
    if (line.size() > kQuotedChars)
        text += QStringLiteral("… (%1 bytes)").arg(line.size());
    return u'"' + text + u'"';
}

QString lastLine(const QByteArray& text) {
    const QList<QByteArray> lines = text.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.last().trimmed().left(500));
}

Diagnostic workerDiagnostic(const QString& message, const char* severity = "error") {
    Diagnostic d;
    d.kind = "worker";
    d.severity = severity;
    d.message = message.toStdString();
    return d;
}

int timerInterval(std::chrono::milliseconds d) {
    return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(d.count(), 0, INT_MAX));
}

} // namespace

WorkerPool::WorkerPool(QString backend, QString program, QStringList arguments, int workerCount, QObject* parent)
    : Executor(parent), m_backend(std::move(backend)), m_program(std::move(program)), m_arguments(std::move(arguments)),
      m_workerCount(std::max(1, workerCount)) {
    // Results cross threads (engine thread -> UI) through queued connections.
    qRegisterMetaType<kforge::protocol::EvaluateResult>();
    qRegisterMetaType<kforge::protocol::ProbeResult>();
    qRegisterMetaType<kforge::protocol::CeilingsResult>();
    qRegisterMetaType<kforge::protocol::DisassembleResult>();
}

WorkerPool::~WorkerPool() {
    // Kill everything first and wait afterwards, so that several workers cost one short wait.
    std::vector<QProcess*> running;
    for (auto& w : m_workers) {
        if (!w->process)
            continue;
        w->process->disconnect();
        w->timer->stop();
        if (w->process->state() != QProcess::NotRunning) {
            w->process->kill();
            running.push_back(w->process);
        }
    }
    for (QProcess* process : running) {
        if (!process->waitForFinished(500))
            qCWarning(lcWorker) << "worker" << process->processId() << "did not exit after SIGKILL";
    }
    // Scheduler queries still out: nobody is left to hear their answers.
    for (const Loss& loss : m_losses)
        loss.query->disconnect(this);
    runCleanup();
}

void WorkerPool::setCleanupCommand(QString program, QStringList arguments) {
    m_cleanupProgram = std::move(program);
    m_cleanupArguments = std::move(arguments);
}

void WorkerPool::setJobStateQuery(QString program, QStringList arguments, JobStateReader read,
                                  std::chrono::milliseconds wait) {
    m_jobStateProgram = std::move(program);
    m_jobStateArguments = std::move(arguments);
    m_readJobState = std::move(read);
    m_jobStateWait = wait;
}

void WorkerPool::runCleanup() {
    if (m_cleanupProgram.isEmpty())
        return;
    qCDebug(lcWorker).noquote() << "cleaning up:" << m_cleanupProgram << m_cleanupArguments.join(u' ');
    if (!QProcess::startDetached(m_cleanupProgram, m_cleanupArguments))
        qCWarning(lcWorker).noquote() << "could not run" << m_cleanupProgram << m_cleanupArguments.join(u' ');
    m_cleanupProgram.clear();
}

qint64 WorkerPool::submit(protocol::EvaluateRequest request, std::chrono::milliseconds timeout) {
    Job job;
    job.kind = Job::Kind::Evaluate;
    job.id = m_nextId++;
    request.id = job.id;
    job.request = std::move(request);
    job.timeout = timeout;
    const qint64 ticket = job.id;
    if (m_shutDown) {
        failJob(job, Status::RuntimeError, QStringLiteral("the %1 worker pool has been shut down").arg(m_backend), {});
        return ticket;
    }
    if (m_gaveUp) {
        // The failures that made the pool give up may have been fixed since (a worker was built).
        m_gaveUp = false;
        m_startFailures = 0;
    }
    m_queue.push_back(std::move(job));
    schedulePump();
    return ticket;
}

void WorkerPool::cancel(qint64 ticket) {
    auto queued = std::find_if(m_queue.begin(), m_queue.end(),
                               [ticket](const Job& j) { return j.kind == Job::Kind::Evaluate && j.id == ticket; });
    if (queued != m_queue.end()) {
        Job job = std::move(*queued);
        m_queue.erase(queued);
        failJob(job, Status::RuntimeError, QStringLiteral("cancelled"), {});
        return;
    }
    for (auto& w : m_workers) {
        if (w->state != Worker::State::Busy || !w->job || w->job->kind != Job::Kind::Evaluate || w->job->id != ticket)
            continue;
        qCDebug(lcWorker).noquote() << "cancelling request" << ticket << "running on" << workerName(*w);
        auto job = takeJob(*w);
        stop(*w);
        failJob(*job, Status::RuntimeError,
                QStringLiteral("cancelled (the worker running it was stopped and will be restarted)"), {});
        schedulePump();
        return;
    }
    // Lost already, the scheduler not yet heard: the loss is the answer, now.
    for (const Loss& loss : m_losses)
        if (loss.job && loss.job->kind == Job::Kind::Evaluate && loss.job->id == ticket) {
            settleLoss(loss.query);
            return;
        }
}

int WorkerPool::requestCeilings(int device, bool refresh) {
    Job job;
    job.kind = Job::Kind::Ceilings;
    job.device = device;
    job.refresh = refresh;
    enqueueFirst(std::move(job));
    return 1;
}

qint64 WorkerPool::requestDisassembly(protocol::DisassembleRequest request) {
    Job job;
    job.kind = Job::Kind::Disassemble;
    job.disassemble = std::make_shared<const protocol::DisassembleRequest>(std::move(request));
    return enqueueFirst(std::move(job));
}

void WorkerPool::probe() {
    Job job;
    job.kind = Job::Kind::Probe;
    enqueueFirst(std::move(job));
}

qint64 WorkerPool::enqueueFirst(Job job) {
    job.id = m_nextId++;
    const qint64 id = job.id;
    if (m_shutDown) {
        failJob(job, Status::RuntimeError, QStringLiteral("the %1 worker pool has been shut down").arg(m_backend), {});
        return id;
    }
    if (m_gaveUp) {
        m_gaveUp = false;
        m_startFailures = 0;
    }
    m_queue.push_front(std::move(job));
    schedulePump();
    return id;
}

void WorkerPool::shutdown() {
    if (m_shutDown)
        return;
    m_shutDown = true;
    const QString message = QStringLiteral("cancelled: the %1 worker pool was shut down").arg(m_backend);
    while (!m_queue.empty()) {
        Job job = std::move(m_queue.front());
        m_queue.pop_front();
        failJob(job, Status::RuntimeError, message, {});
    }
    while (!m_losses.empty())
        settleLoss(m_losses.front().query);
    for (auto& w : m_workers) {
        switch (w->state) {
        case Worker::State::Busy: {
            auto job = takeJob(*w);
            stop(*w);
            failJob(*job, Status::RuntimeError, message, {});
            break;
        }
        case Worker::State::Starting:
        case Worker::State::Checking:
        case Worker::State::Idle: {
            const std::string line = protocol::encode(protocol::Request{protocol::ShutdownRequest{m_nextId++}}) + '\n';
            w->process->write(line.data(), static_cast<qint64>(line.size()));
            w->process->closeWriteChannel();
            stop(*w, kShutdownGrace);
            break;
        }
        case Worker::State::Stopping:
        case Worker::State::Dead:
            break;
        }
    }
    schedulePump(); // announces the end once the last worker has exited
}

WorkerPool::Worker* WorkerPool::worker(int serial) {
    for (auto& w : m_workers)
        if (w->serial == serial)
            return w.get();
    return nullptr;
}

QString WorkerPool::workerName(const Worker& w) const {
    const QString& where = w.where.isEmpty() ? m_host : w.where;
    const QString name =
        QFileInfo(m_program).fileName() + (where.isEmpty() ? QString() : QStringLiteral(" on ") + where);
    return w.pid > 0 ? QStringLiteral("%1 (pid %2)").arg(name).arg(w.pid)
                     : QStringLiteral("%1 #%2").arg(name).arg(w.serial);
}

int WorkerPool::count(Worker::State state) const {
    return static_cast<int>(
        std::count_if(m_workers.begin(), m_workers.end(), [state](const auto& w) { return w->state == state; }));
}

void WorkerPool::schedulePump() {
    // Decisions happen in one place, from the event loop: never inside submit() or a process
    // callback, so no signal is emitted re-entrantly and a slot can be dropped safely.
    if (m_pumpScheduled)
        return;
    m_pumpScheduled = true;
    QMetaObject::invokeMethod(
        this, [this] { pump(); }, Qt::QueuedConnection);
}

void WorkerPool::pump() {
    m_pumpScheduled = false;
    std::erase_if(m_workers, [](const auto& w) { return w->state == Worker::State::Dead; });
    if (m_shutDown) {
        if (m_workers.empty() && !m_shutDownAnnounced) {
            m_shutDownAnnounced = true;
            runCleanup();
            emit shutDown();
        }
        return;
    }

    for (std::size_t i = 0; i < m_workers.size() && !m_queue.empty(); ++i) {
        Worker& w = *m_workers[i];
        if (w.state != Worker::State::Idle)
            continue;
        Job job = std::move(m_queue.front());
        m_queue.pop_front();
        dispatch(w, std::move(job));
    }

    // Start workers lazily: only as many as the queue can keep busy.
    while (!m_gaveUp && !m_queue.empty()) {
        const int starting = count(Worker::State::Starting) + count(Worker::State::Checking);
        const int ready = starting + count(Worker::State::Idle);
        const int live = ready + count(Worker::State::Busy);
        if (live >= m_workerCount || ready >= static_cast<int>(m_queue.size()))
            break;
        if (m_maxStarting > 0 && starting >= m_maxStarting)
            break; // the next starts once one of these has said hello (or failed)
        spawn();
    }
}

void WorkerPool::setPlacement(QString host, std::optional<int> deviceIndex) {
    m_host = std::move(host);
    m_deviceIndex = deviceIndex;
}

void WorkerPool::spawn() {
    auto owned = std::make_unique<Worker>();
    Worker& w = *owned;
    w.serial = m_nextSerial++;
    w.process = new QProcess(this);
    w.process->setProgram(m_program);
    w.process->setArguments(m_arguments);
    w.process->setProcessChannelMode(QProcess::SeparateChannels);
    // A worker runs untrusted kernels and starts Python for PyTorch references; neither may read
    // the keys kforge calls models with. What the worker does not inherit, its children lack too.
    QStringList scrubbed;
    QProcessEnvironment environment = util::withoutSecrets(QProcessEnvironment::systemEnvironment(), &scrubbed);
    for (const QString& assignment : m_extraEnvironment)
        environment.insert(assignment.section(u'=', 0, 0), assignment.section(u'=', 1));
    w.process->setProcessEnvironment(environment);
    if (!scrubbed.isEmpty())
        qCDebug(lcWorker).noquote() << "left out of the worker's environment:" << scrubbed.join(QStringLiteral(", "));
    w.timer = new QTimer(w.process);
    w.timer->setSingleShot(true);

    const int serial = w.serial;
    connect(w.process, &QProcess::readyReadStandardOutput, this, [this, serial] { onStdout(serial); });
    connect(w.process, &QProcess::readyReadStandardError, this, [this, serial] { onStderr(serial); });
    connect(w.process, &QProcess::finished, this, [this, serial](int exitCode, QProcess::ExitStatus status) {
        onFinished(serial, exitCode, status == QProcess::CrashExit);
    });
    connect(w.process, &QProcess::errorOccurred, this, [this, serial](QProcess::ProcessError error) {
        // Crashes arrive through finished(); only a failed start never does.
        if (error == QProcess::FailedToStart)
            onFailedToStart(serial);
    });
    connect(w.process, &QProcess::started, this, [this, serial] {
        if (Worker* started = worker(serial); started && started->process)
            started->pid = started->process->processId();
    });
    connect(w.timer, &QTimer::timeout, this, [this, serial] { onTimer(serial); });

    m_workers.push_back(std::move(owned));
    qCDebug(lcWorker).noquote() << "starting" << m_program << m_arguments.join(u' ');
    if (m_startTimeout > 0ms)
        w.timer->start(timerInterval(m_startTimeout));
    w.process->start(); // may report FailedToStart before it returns
}

void WorkerPool::dispatch(Worker& w, Job job) {
    ++job.attempts;
    std::string line;
    if (job.kind == Job::Kind::Evaluate) {
        job.request.id = job.id;
        line = protocol::encode(protocol::Request{job.request});
    } else if (job.kind == Job::Kind::Ceilings) {
        line = protocol::encode(protocol::Request{protocol::CeilingsRequest{job.id, job.device, job.refresh}});
    } else if (job.kind == Job::Kind::Disassemble) {
        protocol::DisassembleRequest request = *job.disassemble;
        request.id = job.id;
        line = protocol::encode(protocol::Request{std::move(request)});
    } else {
        line = protocol::encode(protocol::Request{protocol::ProbeRequest{job.id}});
    }
    line += '\n';
    w.process->write(line.data(), static_cast<qint64>(line.size()));

    const auto limit = job.kind == Job::Kind::Evaluate ? job.timeout : m_probeTimeout;
    if (limit > 0ms)
        w.timer->start(timerInterval(limit));
    else
        w.timer->stop();
    job.clock.start();
    job.where = w.where;
    job.node = w.node;
    w.state = Worker::State::Busy;
    w.served = true;
    // Only now did the start succeed: a worker that dies between its hello and its first request
    // must not reset the count, or it would be replaced forever.
    m_startFailures = 0;
    const bool evaluation = job.kind == Job::Kind::Evaluate;
    const qint64 ticket = job.id;
    w.job = std::move(job);
    if (evaluation)
        QMetaObject::invokeMethod(
            this, [this, ticket] { emit evaluationStarted(ticket); }, Qt::QueuedConnection);
}

void WorkerPool::onStdout(int serial) {
    Worker* w = worker(serial);
    if (!w || !w->process)
        return;
    w->out += w->process->readAllStandardOutput();
    if (w->state == Worker::State::Stopping || w->state == Worker::State::Dead) {
        // A worker on its way out has nothing left to say that counts.
        w->out.clear();
        w->scanned = 0;
        return;
    }
    for (;;) {
        const qsizetype newline = w->out.indexOf('\n', w->scanned);
        if (newline < 0)
            break;
        QByteArray line = w->out.left(newline);
        w->out.remove(0, newline + 1);
        w->scanned = 0;
        if (line.endsWith('\r'))
            line.chop(1);
        if (!handleLine(*w, line)) {
            w->out.clear();
            return;
        }
    }
    w->scanned = w->out.size();
    if (w->out.size() > kMaxLineBytes) {
        const QByteArray line = std::exchange(w->out, {});
        w->scanned = 0;
        protocolViolation(*w, QStringLiteral("it wrote more than 64 MiB without a newline"), line);
    }
}

void WorkerPool::onStderr(int serial) {
    Worker* w = worker(serial);
    if (!w || !w->process)
        return;
    const QByteArray chunk = w->process->readAllStandardError();
    w->errTail += chunk;
    if (w->errTail.size() > kStderrKept)
        w->errTail.remove(0, w->errTail.size() - kStderrKept);
    w->errLine += chunk;
    for (qsizetype newline = w->errLine.indexOf('\n'); newline >= 0; newline = w->errLine.indexOf('\n')) {
        qCDebug(lcWorker).noquote() << workerName(*w) << QString::fromUtf8(w->errLine.left(newline));
        w->errLine.remove(0, newline + 1);
    }
    if (w->errLine.size() > kStderrQuoted) {
        qCDebug(lcWorker).noquote() << workerName(*w) << QString::fromUtf8(w->errLine);
        w->errLine.clear();
    }
}

bool WorkerPool::handleLine(Worker& w, const QByteArray& line) {
    if (line.trimmed().isEmpty())
        return true;
    if (w.state == Worker::State::Starting) {
        handleHello(w, line);
        return w.state == Worker::State::Idle || w.state == Worker::State::Checking;
    }
    if (w.state == Worker::State::Checking) {
        handleDeviceCheck(w, line);
        return w.state == Worker::State::Idle;
    }
    if (w.state != Worker::State::Busy || !w.job) {
        protocolViolation(w, QStringLiteral("it wrote a line while no request was in flight"), line);
        return false;
    }

    auto response = protocol::decodeResponse(line.toStdString());
    if (!response) {
        protocolViolation(w, QString::fromStdString(response.error()), line);
        return false;
    }
    const qint64 expected = w.job->id;
    const auto answered = protocol::responseId(*response);
    if (const auto* error = std::get_if<protocol::ErrorResponse>(&*response)) {
        // A worker that could not read the request may not know its id; one request is in
        // flight per worker, so an id-less error can only be about that one.
        if (answered && *answered != expected) {
            protocolViolation(
                w, QStringLiteral("it answered request %1 while request %2 was in flight").arg(*answered).arg(expected),
                line);
            return false;
        }
        auto job = takeJob(w);
        w.state = Worker::State::Idle;
        failJob(*job, Status::RuntimeError,
                QStringLiteral("the worker rejected the request: %1").arg(QString::fromStdString(error->message)), {});
        schedulePump();
        return true;
    }
    if (!answered || *answered != expected) {
        protocolViolation(w,
                          QStringLiteral("it answered request %1 while request %2 was in flight")
                              .arg(answered ? QString::number(*answered) : QStringLiteral("(none)"))
                              .arg(expected),
                          line);
        return false;
    }

    if (w.job->kind == Job::Kind::Evaluate) {
        auto* result = std::get_if<EvaluateResult>(&*response);
        if (!result) {
            protocolViolation(w, QStringLiteral("it sent a probe result in answer to an evaluation"), line);
            return false;
        }
        auto job = takeJob(w);
        w.state = Worker::State::Idle;
        deliver(*job, std::move(*result));
    } else if (w.job->kind == Job::Kind::Disassemble) {
        auto* result = std::get_if<protocol::DisassembleResult>(&*response);
        if (!result) {
            protocolViolation(w, QStringLiteral("it sent another kind of answer to a disassemble request"), line);
            return false;
        }
        auto job = takeJob(w);
        w.state = Worker::State::Idle;
        QMetaObject::invokeMethod(
            this, [this, ticket = job->id, listing = std::move(*result)] { emit disassembled(ticket, listing); },
            Qt::QueuedConnection);
    } else if (w.job->kind == Job::Kind::Ceilings) {
        auto* result = std::get_if<protocol::CeilingsResult>(&*response);
        if (!result) {
            protocolViolation(w, QStringLiteral("it sent another kind of answer to a ceilings request"), line);
            return false;
        }
        takeJob(w);
        w.state = Worker::State::Idle;
        QMetaObject::invokeMethod(
            this,
            [this, ceilings = std::move(*result)] {
                if (ceilings.ok)
                    emit ceilingsMeasured(ceilings);
                else
                    emit ceilingsFailed(QString::fromStdString(ceilings.message));
            },
            Qt::QueuedConnection);
    } else {
        auto* result = std::get_if<protocol::ProbeResult>(&*response);
        if (!result) {
            protocolViolation(w, QStringLiteral("it sent an evaluation result in answer to a probe"), line);
            return false;
        }
        takeJob(w);
        w.state = Worker::State::Idle;
        QMetaObject::invokeMethod(
            this, [this, probe = std::move(*result)] { emit probed(probe); }, Qt::QueuedConnection);
    }
    schedulePump();
    return true;
}

void WorkerPool::handleHello(Worker& w, const QByteArray& line) {
    auto hello = protocol::decodeHello(line.toStdString());
    if (!hello) {
        startFailed(
            w, QStringLiteral("%1 (its first line was %2)").arg(QString::fromStdString(hello.error()), quote(line)));
        return;
    }
    const QString backend = QString::fromStdString(hello->backend);
    if (!backend.isEmpty() && backend != m_backend) {
        startFailed(w, QStringLiteral("it is a worker for the '%1' backend, not '%2'").arg(backend, m_backend));
        return;
    }
    if (hello->pid > 0)
        w.pid = hello->pid;
    if (m_hostsFromWorkers && !hello->host.empty()) {
        w.node = hello->host;
        w.where = QString::fromStdString(hello->host);
        if (!hello->job.empty()) {
            w.schedulerJob = QString::fromStdString(hello->job);
            w.where += QStringLiteral(" (%1 job %2)").arg(m_host, w.schedulerJob);
        }
    }
    w.timer->stop();
    qCDebug(lcWorker).noquote() << workerName(w) << "said hello, version"
                                << QString::fromStdString(hello->workerVersion);
    if (m_checkDevices) {
        w.state = Worker::State::Checking;
        w.checkId = m_nextId++;
        const std::string probe = protocol::encode(protocol::Request{protocol::ProbeRequest{w.checkId}}) + '\n';
        w.process->write(probe.data(), static_cast<qint64>(probe.size()));
        if (m_probeTimeout > 0ms)
            w.timer->start(timerInterval(m_probeTimeout));
        return;
    }
    w.state = Worker::State::Idle;
    schedulePump();
}

void WorkerPool::handleDeviceCheck(Worker& w, const QByteArray& line) {
    auto response = protocol::decodeResponse(line.toStdString());
    const auto* probe = response ? std::get_if<protocol::ProbeResult>(&*response) : nullptr;
    if (!probe || probe->id != w.checkId) {
        startFailed(w, QStringLiteral("it gave no device list when asked (its answer: %1)").arg(quote(line)));
        return;
    }
    if (!probe->available || probe->devices.empty()) {
        QStringList problems;
        for (const auto& p : probe->problems)
            problems << QString::fromStdString(p);
        startFailed(w,
                    QStringLiteral("it has no device it can use there (%1)")
                        .arg(problems.isEmpty() ? QStringLiteral("none listed") : problems.join(QStringLiteral("; "))));
        return;
    }
    w.timer->stop();
    w.state = Worker::State::Idle;
    schedulePump();
}

void WorkerPool::protocolViolation(Worker& w, const QString& reason, const QByteArray& line) {
    qCWarning(lcWorker).noquote() << workerName(w) << "broke the protocol:" << reason << "- line:" << quote(line);
    auto job = takeJob(w);
    stop(w);
    if (!w.served) {
        // Otherwise a worker that babbles right after its hello would be replaced forever.
        recordStartFailure(QStringLiteral("it broke the protocol before taking a request (%1; the line: %2)")
                               .arg(reason, quote(line)));
        return;
    }
    if (job) {
        std::vector<Diagnostic> diagnostics{
            workerDiagnostic(QStringLiteral("%1 broke the protocol: %2. The offending line: %3")
                                 .arg(workerName(w), reason, quote(line)))};
        if (auto err = stderrDiagnostic(w); !err.message.empty())
            diagnostics.push_back(std::move(err));
        failJob(*job, Status::RuntimeError,
                QStringLiteral("the worker broke the protocol (%1); it was stopped and will be restarted").arg(reason),
                std::move(diagnostics));
    }
    schedulePump();
}

void WorkerPool::onTimer(int serial) {
    Worker* w = worker(serial);
    if (!w)
        return;
    switch (w->state) {
    case Worker::State::Starting: {
        QString reason = QStringLiteral("it printed no hello line within %1").arg(describe(m_startTimeout));
        if (const QString err = lastLine(w->errTail); !err.isEmpty())
            reason += QStringLiteral(" (its last words on stderr: %1)").arg(err);
        startFailed(*w, reason);
        break;
    }
    case Worker::State::Checking:
        startFailed(*w, QStringLiteral("it did not list its devices within %1").arg(describe(m_probeTimeout)));
        break;
    case Worker::State::Busy: {
        auto job = takeJob(*w);
        const auto limit = job->kind == Job::Kind::Evaluate ? job->timeout : m_probeTimeout;
        qCWarning(lcWorker).noquote() << workerName(*w) << "gave no answer to request" << job->id << "within"
                                      << describe(limit);
        std::vector<Diagnostic> diagnostics{
            workerDiagnostic(QStringLiteral("%1 gave no answer to request %2 within %3 and was stopped")
                                 .arg(workerName(*w))
                                 .arg(job->id)
                                 .arg(describe(limit)))};
        if (auto err = stderrDiagnostic(*w); !err.message.empty())
            diagnostics.push_back(std::move(err));
        stop(*w);
        const QString what = job->kind == Job::Kind::Evaluate ? QStringLiteral("no answer")
                             : job->kind == Job::Kind::Probe  ? QStringLiteral("no answer to the probe")
                             : job->kind == Job::Kind::Disassemble
                                 ? QStringLiteral("no listing")
                                 : QStringLiteral("no answer to the ceilings request");
        failJob(*job, Status::Timeout,
                QStringLiteral("%1 within %2: the worker was stopped and restarted").arg(what, describe(limit)),
                std::move(diagnostics));
        schedulePump();
        break;
    }
    case Worker::State::Stopping:
        if (!w->terminated) {
            w->process->terminate();
            w->terminated = true;
            w->timer->start(timerInterval(kKillGrace));
        } else {
            qCDebug(lcWorker).noquote() << workerName(*w) << "ignored SIGTERM; killing it";
            w->process->kill();
        }
        break;
    case Worker::State::Idle:
    case Worker::State::Dead:
        break;
    }
}

void WorkerPool::onFailedToStart(int serial) {
    Worker* w = worker(serial);
    if (!w || w->state != Worker::State::Starting)
        return;
    const QString reason = QStringLiteral("cannot run it (%1)").arg(w->process->errorString());
    retire(*w);
    recordStartFailure(reason);
}

void WorkerPool::onFinished(int serial, int exitCode, bool crashed) {
    Worker* w = worker(serial);
    if (!w || w->state == Worker::State::Dead)
        return;
    // Whatever it wrote before exiting is still ours to read: an answer may be among it.
    onStdout(serial);
    onStderr(serial);
    if (!w->errLine.isEmpty()) {
        qCDebug(lcWorker).noquote() << workerName(*w) << QString::fromUtf8(w->errLine);
        w->errLine.clear();
    }

    const Worker::State was = w->state;
    const QString what = describeExit(exitCode, crashed);
    auto job = takeJob(*w);
    retire(*w);

    switch (was) {
    case Worker::State::Starting:
    case Worker::State::Checking: {
        QString reason =
            QStringLiteral("it %1 %2")
                .arg(what, was == Worker::State::Starting ? QStringLiteral("before printing its hello line")
                                                          : QStringLiteral("while listing its devices"));
        if (const QString err = lastLine(w->errTail); !err.isEmpty())
            reason += QStringLiteral(" (its last words on stderr: %1)").arg(err);
        recordStartFailure(reason);
        break;
    }
    case Worker::State::Busy: {
        if (!crashed && exitCode == kExitDeviceLost && job->attempts < kMaxAttempts) {
            // The harness answers the request that broke the device and exits without reading
            // further: a request written after that answer was never seen, so it goes again.
            qCInfo(lcWorker).noquote() << workerName(*w) << what << "- request" << job->id << "goes to a new worker";
            m_queue.push_front(std::move(*job));
            break;
        }
        qCWarning(lcWorker).noquote() << workerName(*w) << what << "while request" << job->id << "was in flight";
        const QString doing = job->kind == Job::Kind::Evaluate      ? QStringLiteral("evaluating")
                              : job->kind == Job::Kind::Disassemble ? QStringLiteral("compiling a listing")
                                                                    : QStringLiteral("probing");
        std::vector<Diagnostic> diagnostics{workerDiagnostic(
            QStringLiteral("%1 %2 while %3 (request %4)").arg(workerName(*w), what, doing).arg(job->id))};
        if (auto err = stderrDiagnostic(*w); !err.message.empty())
            diagnostics.push_back(std::move(err));
        else
            diagnostics.push_back(workerDiagnostic(QStringLiteral("the worker wrote nothing to stderr"), "info"));
        reportLoss(*w, std::move(*job), QStringLiteral("the worker %1 while %2; it will be restarted").arg(what, doing),
                   std::move(diagnostics));
        break;
    }
    case Worker::State::Idle:
        if (!w->served) {
            recordStartFailure(QStringLiteral("it %1 right after its hello line").arg(what));
            break;
        }
        // Exit code 3 after an answer lands here: the answer already counted. A pilot ended by its
        // scheduler (its time limit, say) is worth a reason in the log.
        reportLoss(*w, std::nullopt, what + QStringLiteral(" while idle"), {});
        break;
    case Worker::State::Stopping:
        qCDebug(lcWorker).noquote() << workerName(*w) << "stopped:" << what;
        break;
    case Worker::State::Dead:
        break;
    }
    schedulePump();
}

void WorkerPool::stop(Worker& w, std::chrono::milliseconds politeWait) {
    if (w.state == Worker::State::Stopping || w.state == Worker::State::Dead)
        return;
    w.state = Worker::State::Stopping;
    if (politeWait > 0ms) {
        w.terminated = false;
        w.timer->start(timerInterval(politeWait));
    } else {
        w.process->terminate();
        w.terminated = true;
        w.timer->start(timerInterval(kKillGrace));
    }
}

void WorkerPool::retire(Worker& w) {
    w.state = Worker::State::Dead;
    if (w.process) {
        w.timer->stop();
        w.process->disconnect(this);
        w.process->deleteLater();
        w.process = nullptr;
        w.timer = nullptr;
    }
}

void WorkerPool::startFailed(Worker& w, const QString& reason) {
    stop(w);
    recordStartFailure(reason);
}

void WorkerPool::recordStartFailure(const QString& reason) {
    ++m_startFailures;
    qCWarning(lcWorker).noquote() << "worker start failed" << m_startFailures << "of" << m_maxStartFailures << "-"
                                  << m_program << "-" << reason;
    if (m_startFailures >= m_maxStartFailures && !m_gaveUp) {
        m_gaveUp = true;
        const QString message =
            QStringLiteral("the %1 worker could not be started (%2 attempts in a row failed; the last: %3). "
                           "Program: %4")
                .arg(m_backend)
                .arg(m_startFailures)
                .arg(reason, m_host.isEmpty() ? m_program : m_program + QStringLiteral(" (on ") + m_host + u')');
        // Announced before the queued requests fail, so that a receiver can tell "no worker" (a
        // set-up problem: `kforge eval` exits 3, the engine stops resumable) from results that
        // count as evaluations.
        QMetaObject::invokeMethod(
            this, [this, message] { emit workersFailedToStart(message); }, Qt::QueuedConnection);
        while (!m_queue.empty()) {
            Job job = std::move(m_queue.front());
            m_queue.pop_front();
            failJob(job, Status::RuntimeError, message, {workerDiagnostic(message)});
        }
    }
    schedulePump();
}

std::optional<WorkerPool::Job> WorkerPool::takeJob(Worker& w) {
    std::optional<Job> job = std::move(w.job);
    w.job.reset();
    if (w.timer)
        w.timer->stop();
    return job;
}

void WorkerPool::failJob(const Job& job, Status status, const QString& what, std::vector<Diagnostic> diagnostics) {
    // Workers elsewhere: every message says where.
    const QString& where = job.where.isEmpty() ? m_host : job.where;
    const QString message = where.isEmpty() ? what : QStringLiteral("on %1: %2").arg(where, what);
    if (job.kind == Job::Kind::Ceilings) {
        QMetaObject::invokeMethod(
            this, [this, message] { emit ceilingsFailed(message); }, Qt::QueuedConnection);
        return;
    }
    if (job.kind == Job::Kind::Disassemble) {
        protocol::DisassembleResult listing;
        listing.id = job.id;
        listing.message = message.toStdString();
        for (const auto& d : diagnostics)
            listing.log += (listing.log.empty() ? "" : "\n") + d.message;
        QMetaObject::invokeMethod(
            this, [this, ticket = job.id, listing] { emit disassembled(ticket, listing); }, Qt::QueuedConnection);
        return;
    }
    if (job.kind == Job::Kind::Probe) {
        QString text = message;
        for (const auto& d : diagnostics)
            text += u'\n' + QString::fromStdString(d.message);
        QMetaObject::invokeMethod(
            this, [this, text] { emit probeFailed(text); }, Qt::QueuedConnection);
        return;
    }
    EvaluateResult result;
    result.status = status;
    result.message = message.toStdString();
    result.diagnostics = std::move(diagnostics);
    // The time the request held a worker counts against the run's budget like any other.
    // A lost one's clock stopped with its worker: not the wait for the scheduler's word.
    if (job.heldMs >= 0)
        result.wallSeconds = static_cast<double>(job.heldMs) / 1000.0;
    else if (job.clock.isValid())
        result.wallSeconds = static_cast<double>(job.clock.elapsed()) / 1000.0;
    deliver(job, std::move(result));
}

void WorkerPool::reportLoss(const Worker& w, std::optional<Job> job, const QString& what,
                            std::vector<Diagnostic> diagnostics) {
    if (m_jobStateProgram.isEmpty() || w.schedulerJob.isEmpty() || m_shutDown) {
        if (job)
            failJob(*job, Status::RuntimeError, what, std::move(diagnostics));
        else
            qCInfo(lcWorker).noquote() << workerName(w) << what;
        return;
    }
    if (job && job->clock.isValid())
        job->heldMs = job->clock.elapsed();
    auto* query = new QProcess(this);
    query->setProgram(m_jobStateProgram);
    query->setArguments(m_jobStateArguments + QStringList{w.schedulerJob});
    query->setProcessChannelMode(QProcess::MergedChannels);
    query->setStandardInputFile(QProcess::nullDevice());
    m_losses.push_back({std::move(job), workerName(w), what, std::move(diagnostics), query, {}});
    connect(query, &QProcess::finished, this, [this, query](int exitCode, QProcess::ExitStatus status) {
        onJobStateAnswer(query, status == QProcess::NormalExit && exitCode == 0);
    });
    connect(query, &QProcess::errorOccurred, this, [this, query](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart) {
            qCWarning(lcWorker).noquote() << "could not ask the scheduler about a lost worker:" << query->errorString();
            settleLoss(query);
        }
    });
    // However often it is asked, the loss goes out after the wait.
    QTimer::singleShot(m_jobStateWait, query, [this, query] { settleLoss(query); });
    qCDebug(lcWorker).noquote() << "asking" << m_jobStateProgram << query->arguments().join(u' ') << "why"
                                << workerName(w) << "died";
    query->start();
}

std::vector<WorkerPool::Loss>::iterator WorkerPool::lossAsking(const QProcess* query) {
    return std::find_if(m_losses.begin(), m_losses.end(), [query](const Loss& l) { return l.query == query; });
}

void WorkerPool::onJobStateAnswer(QProcess* query, bool answered) {
    const auto it = lossAsking(query);
    if (it == m_losses.end())
        return;
    SchedulerJobState state;
    if (answered && m_readJobState)
        state = m_readJobState(query->readAll());
    if (state.said.isEmpty()) { // nothing to learn: an unknown job, an error
        settleLoss(query);
        return;
    }
    it->said = state.said;
    if (state.ended) {
        settleLoss(query);
        return;
    }
    constexpr auto kAskAgain = 250ms;
    QTimer::singleShot(kAskAgain, query, [this, query] {
        // Unless the loss went out meanwhile (the wait ran out, a cancel, a shutdown).
        if (lossAsking(query) != m_losses.end())
            query->start();
    });
}

void WorkerPool::settleLoss(QProcess* query) {
    const auto it = lossAsking(query);
    if (it == m_losses.end())
        return;
    Loss loss = std::move(*it);
    m_losses.erase(it);
    query->disconnect(this);
    if (query->state() != QProcess::NotRunning)
        query->kill();
    query->deleteLater();
    if (!loss.job) {
        qCInfo(lcWorker).noquote() << loss.worker + u' ' + loss.what
                                          + (loss.said.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(loss.said));
        return;
    }
    QString what = loss.what;
    if (!loss.said.isEmpty()) {
        // The scheduler's word is the likeliest reason: it goes into the message, and first
        // after the worker's own line among the diagnostics.
        what += QStringLiteral(" (%1)").arg(loss.said);
        const auto at = loss.diagnostics.empty() ? loss.diagnostics.end() : loss.diagnostics.begin() + 1;
        loss.diagnostics.insert(at, workerDiagnostic(loss.said));
    }
    failJob(*loss.job, Status::RuntimeError, what, std::move(loss.diagnostics));
}

void WorkerPool::deliver(const Job& job, EvaluateResult result) {
    const qint64 ticket = job.id;
    result.id = ticket;
    // Where it ran, as the pool knows it (not as the worker says): this machine, the device the
    // request named. The worker's own `device` names the model.
    static const std::string thisHost = QSysInfo::machineHostName().toStdString();
    result.host = !job.node.empty() ? job.node : m_host.isEmpty() ? thisHost : m_host.toStdString();
    result.deviceIndex = m_deviceIndex.value_or(job.request.options.device);
    // Always through the event loop: never from inside submit() or cancel(), whatever happened.
    QMetaObject::invokeMethod(
        this, [this, ticket, result = std::move(result)] { emit evaluated(ticket, result); }, Qt::QueuedConnection);
}

Diagnostic WorkerPool::stderrDiagnostic(const Worker& w) const {
    const QByteArray tail = w.errTail.right(kStderrQuoted).trimmed();
    if (tail.isEmpty())
        return {};
    const QString header = w.errTail.size() > kStderrQuoted
                               ? QStringLiteral("stderr of %1 (last 4 KB):\n").arg(workerName(w))
                               : QStringLiteral("stderr of %1:\n").arg(workerName(w));
    return workerDiagnostic(header + QString::fromUtf8(tail), "info");
}

} // namespace kforge::eval
