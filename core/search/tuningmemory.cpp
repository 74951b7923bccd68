#include "search/tuningmemory.h"

#include "util/text.h"

#include <QRegularExpression>
#include <QStringList>

namespace kforge::search {

using util::q;

void TuningMemory::attach(Context context) {
    m_c = std::move(context);
}

QString TuningMemory::sizesKey(const QString& variant, const spec::Sizes& sizes) {
    QStringList values;
    for (const auto& [name, value] : sizes)
        values << QStringLiteral("%1=%2").arg(q(name)).arg(value);
    return QStringLiteral("%1: %2").arg(variant, values.join(QLatin1Char(' ')));
}

QString TuningMemory::templateKey(const QString& source) {
    static const QRegularExpression paramLine(QStringLiteral(R"(^[ \t]*//[ \t]*kforge:param\b[^\n]*\n?)"),
                                              QRegularExpression::MultilineOption);
    QString code = source;
    code.remove(paramLine);
    return model::candidateKey(code, {});
}

experience::TuningKey TuningMemory::keyOf(const Entry& entry, const QString& device) const {
    experience::TuningKey key;
    key.task = m_c.task;
    key.backend = model::backendName(m_c.backend);
    key.sizes = m_c.sizes;
    key.device = device;
    const auto it = m_kernels.find(entry.templateKey);
    key.kernel = it != m_kernels.end() ? it->second : templateKey(entry.candidate.source);
    return key;
}

void TuningMemory::warn(const QString& message) {
    if (m_c.notice)
        m_c.notice(message);
}

void TuningMemory::learn(const Entry& entry, bool fresh) {
    if (!entry.result || !m_c.population)
        return;
    propose::Tuner* tuner = m_c.population->tunerFor(entry);
    if (!tuner || !tuner->tunable())
        return;
    const protocol::EvaluateResult& result = *entry.result;
    const bool ran = result.status == protocol::Status::Ok;
    if (ran && !result.candidateTiming)
        return; // correct but not timed: says nothing about speed
    std::optional<double> time;
    if (ran)
        time = result.candidateTiming->medianUs;
    tuner->observe(entry.candidate.params, time);

    const QString device = QString::fromStdString(result.device);
    if (m_device.isEmpty())
        m_device = device;
    if (!fresh || !m_c.library || m_broken)
        return;
    // A plan that did not resolve never reached a worker: it failed on the run's device.
    const QString where = device.isEmpty() ? m_device : device;
    if (where.isEmpty())
        return;
    if (!m_kernels.count(entry.templateKey))
        m_kernels[entry.templateKey] = templateKey(entry.candidate.source);
    experience::TuningRecord record;
    record.params = entry.candidate.params;
    record.medianUs = time;
    record.status = q(protocol::statusName(result.status));
    m_fresh[{where, m_kernels[entry.templateKey]}].push_back(std::move(record));
}

void TuningMemory::flush() {
    auto fresh = std::move(m_fresh);
    m_fresh.clear();
    if (!m_c.library || m_broken)
        return;
    for (const auto& [where, records] : fresh) {
        experience::TuningKey key;
        key.task = m_c.task;
        key.backend = model::backendName(m_c.backend);
        key.sizes = m_c.sizes;
        key.device = where.first;
        key.kernel = where.second;
        if (auto written = m_c.library->recordTuning(key, records); !written) {
            m_broken = true;
            warn(QStringLiteral("tuning cache: %1 (the run does not add to it)").arg(q(written.error())));
            return;
        }
    }
}

void TuningMemory::recall(const Entry& entry, propose::Tuner& tuner) {
    if (!m_c.library || m_broken || m_device.isEmpty() || !tuner.tunable())
        return;
    if (!m_recalled.insert(entry.templateKey).second)
        return;
    if (!m_kernels.count(entry.templateKey))
        m_kernels[entry.templateKey] = templateKey(entry.candidate.source);
    auto recalled = m_c.library->recallTuning(keyOf(entry, m_device));
    if (!recalled) {
        m_broken = true;
        warn(QStringLiteral("tuning cache: %1 (ignored: the tuners start without it)").arg(q(recalled.error())));
        return;
    }
    for (const QString& problem : recalled->problems)
        warn(QStringLiteral("tuning cache: %1 (ignored)").arg(problem));
    std::vector<propose::TunerMeasurement> earlier;
    for (const auto& r : recalled->records)
        earlier.push_back({r.params, r.medianUs});
    if (!earlier.empty())
        tuner.recall(earlier);
}

} // namespace kforge::search
