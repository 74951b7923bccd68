#pragma once
// Every candidate of a run, as the engine and its policies see it: the candidate, its search
// result, fitness, behaviour cell, roofline, findings and review, plus the indexes the search
// needs ("never evaluate twice", one tuner per template, the pinned kernels).

#include "diagnose/finding.h"
#include "diagnose/roofline.h"
#include "model/candidate.h"
#include "propose/tuner.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace kforge::search {

struct Entry {
    model::Candidate candidate;
    QString templateKey;                            // model::templateKey of the source
    std::optional<protocol::EvaluateResult> result; // the search evaluation
    model::Fitness fitness;
    std::optional<model::Cell> cell;
    std::optional<diagnose::Roofline> roofline;                   // of the search evaluation; none when not timed
    diagnose::Findings findings;                                  // of the search evaluation, most severe first
    QString review;                                               // why it waits for a person; empty when it does not
    model::ReviewState reviewState = model::ReviewState::Pending; // while `review` is set

    bool awaitingReview() const { return !review.isEmpty() && reviewState != model::ReviewState::Accepted; }
    // The kernel file with its parameter values as defaults: what reproduces it on its own.
    QString bakedSource() const;
};

class Population {
public:
    explicit Population(spec::Dialect dialect = spec::Dialect::OpenCL) : m_dialect(dialect) {}
    void setDialect(spec::Dialect dialect) { m_dialect = dialect; }

    // Registers an entry whose id, params and key are final.
    Entry& add(Entry entry);
    // A resumed run's stored candidates, as they were stored (ids, keys and parameters final).
    void restore(std::vector<model::Candidate> candidates);
    qint64 nextId() const { return m_entries.empty() ? 1 : m_entries.rbegin()->first + 1; } // for a new candidate
    // The tuner of its template never proposes its configuration again.
    void markTried(const Entry& entry);
    // An entry for `candidate` with its parameters completed from the kernel's declared defaults,
    // its key and template key set (the id is the caller's).
    Entry prepare(model::Candidate candidate);

    bool contains(qint64 id) const { return m_entries.count(id) > 0; }
    Entry& at(qint64 id) { return m_entries.at(id); }
    const Entry& at(qint64 id) const { return m_entries.at(id); }
    Entry* find(qint64 id);
    const Entry* find(qint64 id) const;
    const std::map<qint64, Entry>& entries() const { return m_entries; }
    qint64 size() const { return static_cast<qint64>(m_entries.size()); }
    qint64 firstId() const { return m_entries.empty() ? 0 : m_entries.begin()->first; } // the first seed; 0: none
    const Entry* baseline() const; // the task's baseline (the first seed), if any

    // Whether the run already has this kernel with these (completed) parameter values.
    bool hasKernel(const QString& source, const model::ParamValues& params) const;
    bool hasKey(const QString& key) const { return m_keys.count(key) > 0; }
    // The parameters with every declared one filled in; the template key as well when asked.
    model::ParamValues completeParams(const QString& source, const model::ParamValues& params,
                                      QString* templateKey = nullptr) const;
    // The tuner of the entry's template; null when the kernel file does not parse.
    propose::Tuner* tunerFor(const Entry& entry);
    // A template whose every configuration was tried has nothing left for the tuner.
    bool tunerSpent(const Entry& entry);

    void setPinned(qint64 id, bool pinned);
    void setVetoed(qint64 id);
    const std::set<qint64>& pinned() const { return m_pinned; }

private:
    spec::Dialect m_dialect;
    std::map<qint64, Entry> m_entries;
    std::set<QString> m_keys;
    std::map<QString, std::unique_ptr<propose::Tuner>> m_tuners; // by template key
    std::set<qint64> m_pinned;
};

} // namespace kforge::search
