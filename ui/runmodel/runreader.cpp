#include "runreader.h"

#include "util/logging.h"
#include "util/text.h"

#include "diagnose/roofline.h"
#include "search/runconfig.h"

#include <QTimer>

#include <algorithm>

namespace kforge::ui {

namespace {

using util::q;

} // namespace

RunReader::RunReader(QObject* parent) : QObject(parent) {}

RunReader::~RunReader() = default;

void RunReader::reportFailure(const QString& message) {
    emit failed(m_token, message);
}

void RunReader::close() {
    m_store.reset();
    m_run = 0;
    m_reading = m_refreshAgain = false;
    m_lastCandidate = m_lastEvaluation = m_lastEvent = m_lastLlmCall = m_firstCandidate = 0;
    m_rows.clear();
    m_readAhead.clear();
    m_unlinkedCalls.clear();
    m_pinned.clear();
    m_vetoed.clear();
    m_reviews.clear();
    m_strategies.clear();
    m_archives.reset();
}

void RunReader::queueCommand(qint64 token, const QString& storePath, qint64 run, const QJsonObject& command) {
    // Its own connection, for writing: the reader's own stays read-only.
    auto opened = store::RunStore::open(storePath);
    if (!opened)
        return emit failed(token, q(opened.error()));
    if (auto queued = (*opened)->queueCommand(run, command); !queued)
        return emit failed(token, q(queued.error()));
    auto waiting = (*opened)->queuedCommands(run);
    if (!waiting)
        return emit failed(token, q(waiting.error()));
    emit commandQueued(token, static_cast<int>(waiting->size()));
}

void RunReader::readListing(qint64 token, qint64 candidate, int target) {
    std::optional<protocol::DisassembleResult> kept;
    if (m_store && token == m_token) {
        auto read = m_store->listing(m_run, candidate, target);
        if (read)
            kept = std::move(*read);
        else
            qCWarning(lcStore).noquote() << q(read.error());
    }
    emit listingRead(token, candidate, target, kept.has_value(), kept.value_or(protocol::DisassembleResult{}));
}

void RunReader::keepListing(const QString& storePath, qint64 run, qint64 candidate, int target,
                            const protocol::DisassembleResult& listing) {
    auto opened = store::RunStore::open(storePath);
    if (!opened) {
        qCInfo(lcStore).noquote() << "the listing of candidate" << candidate << "was not kept:" << q(opened.error());
        return;
    }
    if (auto kept = (*opened)->storeListing(run, candidate, target, listing); !kept)
        qCInfo(lcStore).noquote() << "the listing of candidate" << candidate << "was not kept:" << q(kept.error());
}

void RunReader::listRuns(qint64 token, const QString& storePath) {
    auto opened = store::RunStore::open(storePath, store::OpenMode::ReadOnly);
    if (!opened)
        return emit listFailed(token, q(opened.error()));
    auto runs = (*opened)->runs();
    if (!runs)
        return emit listFailed(token, q(runs.error()));
    emit runsListed(token, storePath, *runs);
}

void RunReader::open(qint64 token, const QString& storePath, qint64 run) {
    // The run shown so far stays open (and readable) until the new one is known to be readable: a
    // file that is no run store leaves the views as they were.
    const auto refuse = [this, token](const QString& message) { emit failed(token, message); };
    // Views only read: no migration of an older store, and a read-only file or folder still opens.
    auto opened = store::RunStore::open(storePath, store::OpenMode::ReadOnly);
    if (!opened)
        return refuse(q(opened.error()));
    if (run == 0) {
        auto runs = (*opened)->runs();
        if (!runs)
            return refuse(q(runs.error()));
        if (runs->isEmpty())
            return refuse(tr("%1 holds no runs yet").arg(storePath));
        run = runs->front().id;
    }
    auto record = (*opened)->run(run);
    if (!record)
        return refuse(q(record.error()));
    // The run's own behaviour space and islands, as its configuration says; a configuration this
    // build cannot read still shows the run with the built-in space.
    auto config = search::RunConfig::fromJson(record->config);
    const QString descriptors = config ? config->descriptors : QString();
    auto space =
        descriptors.isEmpty() ? search::DescriptorSpace::builtIn() : search::DescriptorSpace::load(descriptors);
    if (!space && !descriptors.isEmpty())
        space = search::DescriptorSpace::builtIn();
    if (!space)
        return refuse(q(space.error()));

    close();
    m_token = token;
    m_store = std::move(*opened);
    m_run = run;
    m_space = *space;
    m_islands = config ? config->islands : 1;
    m_dialect = record->backend;
    m_fresh = true;
    refresh();
}

void RunReader::refresh() {
    if (!m_store)
        return;
    if (m_reading) {
        m_refreshAgain = true; // the chunked read picks up what is new when it ends
        return;
    }
    m_reading = true;
    m_total = -1;
    readMore();
}

void RunReader::readMore() {
    if (!m_store) {
        m_reading = false;
        return;
    }
    RunDelta next;
    if (!readChunk(next)) {
        m_reading = false;
        return;
    }
    emit delta(next);
    if (!next.complete) {
        // Let detail requests in between chunks.
        QTimer::singleShot(0, this, &RunReader::readMore);
        return;
    }
    m_reading = false;
    if (m_refreshAgain) {
        m_refreshAgain = false;
        refresh();
    }
}

void RunReader::applyEvaluation(const store::EvaluationSummary& e, CandidateRow& row) {
    if (e.purpose == model::EvaluationPurpose::Confirm) {
        if (e.status == QLatin1String("ok") && e.speedup)
            row.confirmedSpeedup = *e.speedup;
        return;
    }
    if (e.purpose != model::EvaluationPurpose::Search)
        return; // the best's last comparison with PyTorch: RunData::pytorch()
    row.status = e.status;
    row.message = e.message;
    row.correct = e.status == QLatin1String("ok");
    row.speedup = row.correct ? e.speedup.value_or(0.0) : 0.0;
    row.candidateUs = e.candidateUs.value_or(0.0);
    row.device = e.device;
    row.baselineUs = e.baselineUs.value_or(0.0);
    row.hasRoofline = e.intensity > 0.0 && e.achievedFlops > 0.0;
    row.intensity = e.intensity;
    row.achievedFlops = e.achievedFlops;
    row.achievedBytes = e.achievedBytes;
    row.bound = e.bound;
    row.peakName = e.peakName;
    row.splitTf32Fraction = e.splitTf32Fraction;
    row.findings = e.findingCount;
    row.topFinding = e.topFinding;
    if (e.cell) {
        row.cell = e.cell;
        return;
    }
    // Stored before cells were: placed as the engine placed it, from the source and the candidate's
    // compile facts.
    if (!e.result)
        return;
    search::KernelFacts facts;
    facts.dialect = m_dialect;
    bool compiled = false;
    for (const auto& c : e.result->compile)
        if (c.role == "candidate") {
            facts.resources = c.resources;
            compiled = c.ok;
        }
    if (!compiled)
        return;
    auto candidate = m_store->candidates(m_run, {0, 1, row.id, true});
    if (candidate && !candidate->isEmpty())
        row.cell = m_space.describe(candidate->front().source, facts);
}

bool RunReader::readChunk(RunDelta& delta) {
    delta.token = m_token;
    delta.fresh = m_fresh;
    auto record = m_store->run(m_run);
    if (!record) {
        reportFailure(q(record.error()));
        return false;
    }
    delta.run = *record;
    delta.islands = m_islands;
    delta.dimensions = m_space.dimensions();

    // New candidates, one chunk at a time.
    auto candidates = m_store->candidates(m_run, {m_lastCandidate, kChunk, 0, false});
    if (!candidates) {
        reportFailure(q(candidates.error()));
        return false;
    }
    QList<qint64> addedIds;
    for (const auto& c : *candidates) {
        CandidateRow row;
        row.id = c.id;
        row.parents = c.parents;
        row.island = c.island;
        row.generation = c.generation;
        row.origin = c.origin;
        row.tunerStrategy = c.tunerStrategy;
        row.label = c.label;
        row.params = model::formatParams(c.params);
        row.pinned = c.pinned;
        row.vetoed = c.vetoed;
        if (c.pinned)
            m_pinned.insert(c.id);
        if (c.vetoed)
            m_vetoed.insert(c.id);
        if (m_rows.empty())
            m_firstCandidate = row.id; // the run's first: candidates are read in id order
        m_rows.emplace(row.id, row);
        addedIds.push_back(row.id);
        m_lastCandidate = row.id;
    }
    QSet<qint64> changed;

    // Their evaluations, and evaluations of earlier candidates; never past the last candidate read.
    // Those read beyond it wait in m_readAhead for the next chunk instead of being read again.
    for (;;) {
        QList<store::EvaluationSummary> evaluations;
        bool exhausted = false; // nothing more in the store after these
        if (!m_readAhead.isEmpty()) {
            evaluations.swap(m_readAhead);
        } else {
            auto read = m_store->evaluationSummaries(m_run, {m_lastEvaluation, 2 * kChunk, 0, false});
            if (!read) {
                reportFailure(q(read.error()));
                return false;
            }
            evaluations = std::move(*read);
            exhausted = evaluations.size() < 2 * kChunk;
        }
        qsizetype used = 0;
        for (; used < evaluations.size(); ++used) {
            const auto& e = evaluations.at(used);
            if (e.candidateId > m_lastCandidate)
                break;
            m_lastEvaluation = e.id;
            auto row = m_rows.find(e.candidateId);
            if (row == m_rows.end())
                continue;
            applyEvaluation(e, row->second);
            changed.insert(e.candidateId);
        }
        if (used < evaluations.size()) {
            m_readAhead = evaluations.mid(used);
            break;
        }
        if (exhausted)
            break;
    }

    // Flags and reviews change on earlier candidates too. Finding the flagged ones walks every
    // candidate of the run, so it is done once a read has caught up (the candidates of the chunks
    // before carry their flags as they were read), not once a chunk.
    delta.complete = candidates->size() < kChunk;
    if (delta.complete) {
        auto flagged = m_store->flaggedCandidates(m_run);
        if (!flagged) {
            reportFailure(q(flagged.error()));
            return false;
        }
        const QSet<qint64> pinned(flagged->first.begin(), flagged->first.end());
        const QSet<qint64> vetoed(flagged->second.begin(), flagged->second.end());
        for (const QSet<qint64>* sets :
             std::initializer_list<const QSet<qint64>*>{&pinned, &m_pinned, &vetoed, &m_vetoed})
            for (qint64 id : *sets) {
                auto row = m_rows.find(id);
                if (row == m_rows.end())
                    continue;
                const bool p = pinned.contains(id), v = vetoed.contains(id);
                if (row->second.pinned != p || row->second.vetoed != v) {
                    row->second.pinned = p;
                    row->second.vetoed = v;
                    changed.insert(id);
                }
            }
        m_pinned = pinned;
        m_vetoed = vetoed;
    }
    auto reviews = m_store->reviews(m_run);
    if (!reviews) {
        reportFailure(q(reviews.error()));
        return false;
    }
    for (const auto& r : *reviews) {
        auto row = m_rows.find(r.candidateId);
        if (row == m_rows.end() || row->second.review == std::optional(r.state))
            continue;
        row->second.review = r.state;
        changed.insert(r.candidateId);
    }

    const QSet<qint64> added(addedIds.begin(), addedIds.end());
    for (qint64 id : addedIds)
        delta.added.push_back(m_rows.at(id));
    QList<qint64> changedIds(changed.begin(), changed.end());
    std::sort(changedIds.begin(), changedIds.end());
    for (qint64 id : changedIds)
        if (!added.contains(id))
            delta.changed.push_back(m_rows.at(id));

    // How many there are is counted once a read (counting only those not read yet, so a live run's
    // refresh counts the few new ones): counting on every chunk would walk the rest of a big run
    // each time.
    delta.loaded = static_cast<qint64>(m_rows.size());
    if (m_total < 0) {
        auto unread = m_store->candidateCount(m_run, m_lastCandidate);
        m_total = delta.loaded + (unread ? *unread : 0);
    }
    delta.total = std::max(m_total, delta.loaded);
    m_fresh = false;
    if (!delta.complete)
        return true; // events, calls and strategies come with the last chunk

    auto events = m_store->events(m_run, {m_lastEvent, -1, 0});
    if (!events) {
        reportFailure(q(events.error()));
        return false;
    }
    for (const auto& e : *events) {
        // The run's ceilings: the first model's (another model's are stored with primary false).
        if (e.kind == model::EventKind::Ceilings && e.data.value(QLatin1String("primary")).toBool(true))
            delta.ceilings = diagnose::Ceilings::fromJson(e.data);
        m_lastEvent = e.id;
    }
    delta.events = *events;

    // LLM calls, and the candidates of earlier calls that were linked after they were read.
    if (!m_unlinkedCalls.isEmpty()) {
        const qint64 first = *std::min_element(m_unlinkedCalls.begin(), m_unlinkedCalls.end());
        auto links = m_store->llmCallCandidates(m_run, first - 1);
        if (!links) {
            reportFailure(q(links.error()));
            return false;
        }
        for (const auto& link : *links)
            if (m_unlinkedCalls.remove(link.first))
                delta.llmLinks.push_back(link);
    }
    auto calls = m_store->llmCalls(m_run, {m_lastLlmCall, -1, 0});
    if (!calls) {
        reportFailure(q(calls.error()));
        return false;
    }
    // Calls are stored as they are sent and completed when they end: the views take them once
    // ended, in order, so a call still in flight holds back those after it until the next read.
    const auto inFlight = std::find_if(calls->begin(), calls->end(),
                                       [](const auto& c) { return c.status == QLatin1String("in-flight"); });
    calls->erase(inFlight, calls->end());
    for (const auto& c : *calls) {
        if (c.status == QLatin1String("ok") && !c.candidateId)
            m_unlinkedCalls.insert(c.id);
        m_lastLlmCall = c.id;
    }
    delta.llmCalls = *calls;

    auto strategies = m_store->strategies(m_run);
    if (!strategies) {
        reportFailure(q(strategies.error()));
        return false;
    }
    const auto retired = [](const QList<store::StrategyRecord>& list) {
        return std::count_if(list.begin(), list.end(), [](const auto& s) { return s.retired; });
    };
    if (strategies->size() != m_strategies.size() || retired(*strategies) != retired(m_strategies)) {
        m_strategies = *strategies;
        delta.strategies = m_strategies;
        delta.strategiesChanged = true;
    }

    // What the run measured of PyTorch comes from two candidates' evaluations: the first
    // candidate's search (PyTorch is timed beside it) and the best's yardstick evaluations. Read by
    // candidate, through an index; RunStore::pytorchEvaluations would walk every evaluation.
    QList<store::EvaluationRecord> pytorch;
    QList<qint64> measured;
    for (const qint64 candidate : {m_firstCandidate, delta.run.bestCandidate})
        if (candidate != 0 && !measured.contains(candidate))
            measured.push_back(candidate);
    for (const qint64 candidate : measured) {
        auto evaluations = m_store->evaluations(m_run, {0, -1, candidate});
        if (!evaluations) {
            reportFailure(q(evaluations.error()));
            return false;
        }
        for (auto& e : *evaluations)
            if ((e.candidateId == m_firstCandidate && e.purpose == model::EvaluationPurpose::Search)
                || (e.candidateId == delta.run.bestCandidate && e.purpose == model::EvaluationPurpose::Yardstick))
                pytorch.push_back(std::move(e));
    }
    std::sort(pytorch.begin(), pytorch.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    delta.pytorch = store::yardstickFigures(pytorch, delta.run.bestCandidate);

    auto archives = m_store->archive(m_run);
    if (!archives) {
        reportFailure(q(archives.error()));
        return false;
    }
    if (*archives != m_archives) {
        m_archives = *archives;
        delta.archives = m_archives;
        delta.archivesChanged = true;
    }
    return true;
}

void RunReader::loadDetail(qint64 candidate) {
    if (!m_store)
        return;
    CandidateDetail detail;
    detail.id = candidate;
    auto candidates = m_store->candidates(m_run, {0, 1, candidate});
    if (!candidates)
        detail.error = q(candidates.error());
    else if (candidates->isEmpty())
        detail.error = tr("run %1 has no candidate %2").arg(m_run).arg(candidate);
    else
        detail.candidate = candidates->front();
    if (detail.error.isEmpty()) {
        auto evaluations = m_store->evaluations(m_run, {0, -1, candidate});
        if (!evaluations)
            detail.error = q(evaluations.error());
        else
            detail.evaluations = *evaluations;
    }
    if (detail.error.isEmpty()) {
        if (auto reviews = m_store->reviews(m_run))
            for (const auto& r : *reviews)
                if (r.candidateId == candidate)
                    detail.review = r;
    }
    emit detailLoaded(m_token, detail);
}

} // namespace kforge::ui
