#include "listingservice.h"

#include "candidatedetails.h"
#include "eval/workerlocator.h"
#include "eval/workerpool.h"
#include "runsession.h"
#include "task/taskcatalog.h"
#include "util/text.h"

#include <QRegularExpression>

#include <chrono>

namespace kforge::ui {

namespace {

using util::q;

// A listing compiles one kernel and disassembles it: seconds, but a large unrolled kernel can take
// a while.
constexpr std::chrono::seconds kListingTimeout{120};

} // namespace

ListingService::ListingService(RunSession* session, QObject* parent) : QObject(parent), m_session(session) {
    connect(session, &RunSession::opened, this, &ListingService::runChanged);
    connect(session, &RunSession::listingRead, this, &ListingService::onRead);
    connect(session->details(), &CandidateDetails::loaded, this, [this](qint64 candidate) {
        // A compile that waited for the candidate's source.
        for (auto it = m_entries.cbegin(); it != m_entries.cend(); ++it)
            if (it.key().first == candidate && it->state == Entry::State::Compiling
                && !m_tickets.values().contains(it.key()))
                compile(it.key().first, it.key().second);
    });
}

ListingService::~ListingService() {
    if (m_pool)
        m_pool->shutdown();
}

const ListingService::Entry* ListingService::entry(qint64 candidate, int target) const {
    auto it = m_entries.constFind({candidate, target});
    return it == m_entries.cend() ? nullptr : &*it;
}

void ListingService::request(qint64 candidate, int target) {
    const Key key{candidate, target};
    if (m_entries.contains(key))
        return;
    m_entries.insert(key, Entry{});
    m_session->readListing(candidate, target);
    emit changed(candidate, target);
}

void ListingService::retry(qint64 candidate, int target) {
    auto it = m_entries.find({candidate, target});
    if (it == m_entries.end() || it->state != Entry::State::Done || it->listing.ok)
        return request(candidate, target);
    it->state = Entry::State::Compiling;
    it->listing = {};
    m_taskLoaded = false; // the task may have been fixed meanwhile
    emit changed(candidate, target);
    compile(candidate, target);
}

void ListingService::runChanged() {
    m_entries.clear();
    m_tickets.clear();
    m_template.reset();
    m_taskLoaded = false;
    m_taskProblem.clear();
}

void ListingService::onRead(qint64 candidate, int target, bool found, const protocol::DisassembleResult& listing) {
    const Key key{candidate, target};
    auto it = m_entries.find(key);
    if (it == m_entries.end() || it->state != Entry::State::Reading)
        return;
    if (found)
        return finish(key, listing, false);
    it->state = Entry::State::Compiling;
    emit changed(candidate, target);
    compile(candidate, target);
}

eval::WorkerPool* ListingService::pool(QString& problem) {
    if (m_pool)
        return m_pool;
    auto program = eval::WorkerLocator::find(QStringLiteral("cuda"));
    if (!program) {
        problem = tr("PTX and SASS are made by the CUDA worker, and there is none here: %1").arg(q(program.error()));
        return nullptr;
    }
    m_pool = new eval::WorkerPool(QStringLiteral("cuda"), *program, {}, 1, this);
    m_pool->setProbeTimeout(kListingTimeout);
    connect(m_pool, &eval::WorkerPool::disassembled, this, &ListingService::onListed);
    return m_pool;
}

void ListingService::compile(qint64 candidate, int target) {
    const Key key{candidate, target};
    const auto& run = m_session->data()->run();
    if (run.backend != model::Backend::Cuda) {
        protocol::DisassembleResult none;
        none.message = tr("PTX and SASS are for CUDA kernels; this run's kernels are %1")
                           .arg(model::backendName(run.backend))
                           .toStdString();
        return finish(key, none, false);
    }
    if (!m_taskLoaded) {
        m_taskLoaded = true;
        m_template.reset();
        // The run's task as this machine has it: where the run was made, else the built-in one.
        auto task = task::TaskCatalog::load(run.taskDir.isEmpty() ? run.task : run.taskDir);
        if (!task && !run.taskDir.isEmpty())
            task = task::TaskCatalog::load(run.task);
        if (!task) {
            m_taskProblem = tr("the run's task %1 cannot be loaded here: %2").arg(run.task, q(task.error()));
        } else {
            protocol::DisassembleRequest request;
            request.task = task->spec;
            request.variant = run.variant.isEmpty() ? std::string("default") : run.variant.toStdString();
            m_template = std::move(request);
        }
    }
    if (!m_template) {
        protocol::DisassembleResult none;
        none.message = m_taskProblem.toStdString();
        return finish(key, none, false);
    }
    const CandidateDetail* detail = m_session->details()->details(candidate);
    if (!detail)
        return; // asked for; compiled once loaded
    if (!detail->error.isEmpty()) {
        protocol::DisassembleResult none;
        none.message = detail->error.toStdString();
        return finish(key, none, false);
    }
    QString problem;
    eval::WorkerPool* workers = pool(problem);
    if (!workers) {
        protocol::DisassembleResult none;
        none.message = problem.toStdString();
        return finish(key, none, false);
    }
    protocol::DisassembleRequest request = *m_template;
    request.kernel.role = "candidate";
    request.kernel.file = "candidate " + std::to_string(candidate);
    request.kernel.source = detail->candidate.source.toStdString();
    request.kernel.params = detail->candidate.params;
    request.arch = target;
    m_tickets.insert(workers->requestDisassembly(std::move(request)), key);
}

void ListingService::onListed(qint64 ticket, const protocol::DisassembleResult& listing) {
    const auto it = m_tickets.constFind(ticket);
    if (it == m_tickets.cend())
        return; // of a run no longer shown
    const Key key = *it;
    m_tickets.erase(it);
    // A listing that compiled is the compiler's answer and worth keeping; a failure may be this
    // machine's (no toolkit headers) and is asked again next time.
    finish(key, listing, listing.ok);
}

void ListingService::finish(const Key& key, protocol::DisassembleResult listing, bool keep) {
    auto it = m_entries.find(key);
    if (it == m_entries.end())
        return;
    if (keep)
        m_session->keepListing(key.first, key.second, listing);
    it->state = Entry::State::Done;
    it->listing = std::move(listing);
    emit changed(key.first, key.second);
}

int ListingService::targetForDevice(const QString& device) {
    // Data-centre and workstation parts by family; consumer parts by series. Newest first, so
    // that "GB200" is matched before "B200" and "H100" is not read as "A100".
    static const QList<QPair<QRegularExpression, int>> families = {
        {QRegularExpression(QStringLiteral("\\bG?B(100|200|300)\\b|RTX PRO 6000 Blackwell Server"),
                            QRegularExpression::CaseInsensitiveOption),
         100},
        {QRegularExpression(QStringLiteral("RTX 50\\d0|RTX PRO \\d+ Blackwell"),
                            QRegularExpression::CaseInsensitiveOption),
         120},
        {QRegularExpression(QStringLiteral("\\bG?H(100|200|800|20)\\b"), QRegularExpression::CaseInsensitiveOption),
         90},
        {QRegularExpression(QStringLiteral("\\bL(4|40S?|20)\\b|RTX 40\\d0|RTX \\d+ Ada"),
                            QRegularExpression::CaseInsensitiveOption),
         89},
        {QRegularExpression(QStringLiteral("\\bA(10G?|16|2|40|4000|5000|6000)\\b|RTX 30\\d0"),
                            QRegularExpression::CaseInsensitiveOption),
         86},
        {QRegularExpression(QStringLiteral("\\bA(100|800|30)\\b"), QRegularExpression::CaseInsensitiveOption), 80},
        {QRegularExpression(QStringLiteral("\\bT4\\b|RTX 20\\d0|Quadro RTX|TITAN RTX"),
                            QRegularExpression::CaseInsensitiveOption),
         75},
        {QRegularExpression(QStringLiteral("\\bV100\\b|TITAN V"), QRegularExpression::CaseInsensitiveOption), 70},
    };
    for (const auto& [pattern, cc] : families)
        if (pattern.match(device).hasMatch())
            return cc;
    return 0;
}

QList<int> ListingService::targets() {
    return {70, 75, 80, 86, 89, 90, 100, 120};
}

QString ListingService::targetName(int target) {
    return QStringLiteral("sm_%1").arg(target);
}

} // namespace kforge::ui
