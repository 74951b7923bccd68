#include "search/population.h"

#include "store/runexport.h"

namespace kforge::search {

QString Entry::bakedSource() const {
    return store::bakeParams(candidate.source, candidate.params);
}

Entry Population::prepare(model::Candidate candidate) {
    Entry e;
    e.candidate = std::move(candidate);
    e.candidate.params = completeParams(e.candidate.source, e.candidate.params, &e.templateKey);
    e.candidate.key = model::candidateKey(e.candidate.source, e.candidate.params);
    return e;
}

Entry& Population::add(Entry entry) {
    m_keys.insert(entry.candidate.key);
    const qint64 id = entry.candidate.id;
    return m_entries.insert_or_assign(id, std::move(entry)).first->second;
}

void Population::restore(std::vector<model::Candidate> candidates) {
    for (model::Candidate& c : candidates) {
        Entry e;
        e.candidate = std::move(c);
        e.templateKey = model::templateKey(e.candidate.source);
        add(std::move(e));
    }
}

void Population::markTried(const Entry& entry) {
    if (auto* tuner = tunerFor(entry))
        tuner->markSeen(entry.candidate.params);
}

Entry* Population::find(qint64 id) {
    auto it = m_entries.find(id);
    return it == m_entries.end() ? nullptr : &it->second;
}

const Entry* Population::find(qint64 id) const {
    auto it = m_entries.find(id);
    return it == m_entries.end() ? nullptr : &it->second;
}

const Entry* Population::baseline() const {
    for (const auto& [id, e] : m_entries)
        if (e.candidate.origin == model::Origin::Seed)
            return &e;
    return nullptr;
}

bool Population::hasKernel(const QString& source, const model::ParamValues& params) const {
    return hasKey(model::candidateKey(source, completeParams(source, params)));
}

model::ParamValues Population::completeParams(const QString& source, const model::ParamValues& params,
                                              QString* templateKey) const {
    if (templateKey)
        *templateKey = model::templateKey(source);
    auto kf = spec::KernelFile::parse(source.toStdString(), m_dialect);
    if (!kf)
        return params; // the worker will say what is wrong with it
    return propose::Tuner(kf->params).complete(params);
}

propose::Tuner* Population::tunerFor(const Entry& entry) {
    auto it = m_tuners.find(entry.templateKey);
    if (it != m_tuners.end())
        return it->second.get();
    auto kf = spec::KernelFile::parse(entry.candidate.source.toStdString(), m_dialect);
    if (!kf)
        return nullptr;
    auto tuner = std::make_unique<propose::Tuner>(kf->params, kf->requirements);
    auto* raw = tuner.get();
    m_tuners.emplace(entry.templateKey, std::move(tuner));
    return raw;
}

bool Population::tunerSpent(const Entry& entry) {
    const propose::Tuner* tuner = tunerFor(entry);
    return !tuner || tuner->exhausted();
}

void Population::setPinned(qint64 id, bool pinned) {
    Entry& e = m_entries.at(id);
    e.candidate.pinned = pinned && !e.candidate.vetoed;
    if (e.candidate.pinned)
        m_pinned.insert(id);
    else
        m_pinned.erase(id);
}

void Population::setVetoed(qint64 id) {
    Entry& e = m_entries.at(id);
    e.candidate.vetoed = true;
    e.candidate.pinned = false;
    m_pinned.erase(id);
}

} // namespace kforge::search
