#include "eventmodel.h"

#include "diagnose/roofline.h"
#include "panelstyle.h"
#include "rundata.h"

#include <QLocale>

namespace kforge::ui {

namespace {

QString candidateText(const QJsonObject& data) {
    const qint64 id = data.value(QLatin1String("candidate")).toInteger();
    return id > 0 ? EventModel::tr("candidate %1").arg(id) : QString();
}

QString withReason(QString text, const QJsonObject& data) {
    const QString reason = data.value(QLatin1String("reason")).toString();
    if (reason.isEmpty())
        return text;
    return text.isEmpty() ? EventModel::tr("“%1”").arg(reason) : EventModel::tr("%1 — “%2”").arg(text, reason);
}

QString speedupText(double speedup) {
    const QString text = formatSpeedup(speedup);
    return text.isEmpty() ? EventModel::tr("not timed") : text;
}

QString genericSummary(const QJsonObject& data) {
    QStringList parts;
    for (auto it = data.begin(); it != data.end(); ++it) {
        const QJsonValue v = it.value();
        QString value;
        if (v.isString())
            value = v.toString();
        else if (v.isDouble())
            value = QLocale().toString(v.toDouble(), 'g', 6);
        else if (v.isBool())
            value = v.toBool() ? QStringLiteral("yes") : QStringLiteral("no");
        else
            continue; // nested data does not fit on one line
        parts << QStringLiteral("%1 = %2").arg(it.key(), value);
    }
    return parts.join(QStringLiteral(", "));
}

} // namespace

qint64 eventCandidate(const store::EventRecord& event) {
    return event.data.value(QLatin1String("candidate")).toInteger();
}

QString eventSummary(const store::EventRecord& event) {
    const QJsonObject& d = event.data;
    auto text = [&](const char* key) { return d.value(QLatin1String(key)).toString(); };
    auto real = [&](const char* key) { return d.value(QLatin1String(key)).toDouble(); };
    auto integer = [&](const char* key) { return d.value(QLatin1String(key)).toInteger(); };

    using K = model::EventKind;
    switch (event.kind) {
    case K::Migration:
        return EventModel::tr("island %1 → %2, candidate %3 (%4), %5")
            .arg(integer("from"))
            .arg(integer("to"))
            .arg(integer("candidate"))
            .arg(speedupText(real("speedup")), d.value(QLatin1String("accepted")).toBool()
                                                   ? EventModel::tr("accepted")
                                                   : EventModel::tr("not accepted"));
    case K::NewBest: {
        QString s = EventModel::tr("candidate %1 confirmed at %2 (first measured %3)")
                        .arg(integer("candidate"))
                        .arg(speedupText(real("confirmed_speedup")), speedupText(real("first_speedup")));
        if (!text("label").isEmpty())
            s += QStringLiteral(" — ") + text("label");
        return s;
    }
    case K::PromotionRejected: {
        const QString status = text("status");
        QString s = EventModel::tr("candidate %1 not promoted: re-measured %2 (first %3)")
                        .arg(integer("candidate"))
                        .arg(speedupText(real("confirmed_speedup")), speedupText(real("first_speedup")));
        if (!status.isEmpty() && status != QLatin1String("ok"))
            s += EventModel::tr(", %1").arg(statusTitle(status));
        if (real("previous_best") > 0.0)
            s += EventModel::tr(", best stays %1").arg(speedupText(real("previous_best")));
        return s;
    }
    case K::ReviewRequested:
        return EventModel::tr("candidate %1 waits for review: %2").arg(integer("candidate")).arg(text("reason"));
    case K::ReviewAccepted:
    case K::ReviewRejected:
    case K::Pin:
    case K::Unpin:
    case K::Veto:
        return withReason(candidateText(d), d);
    case K::Inject:
        return withReason(EventModel::tr("“%1” on island %2").arg(text("label")).arg(integer("island")), d);
    case K::Pause:
    case K::Resume:
    case K::Stop:
        return withReason({}, d);
    case K::Budget: {
        QStringList parts;
        const qint64 evaluations = integer("evaluations");
        const double seconds = real("seconds");
        parts << (evaluations > 0 ? EventModel::tr("%1 evaluations").arg(evaluations)
                                  : EventModel::tr("no evaluation limit"));
        parts << (seconds > 0.0 ? EventModel::tr("%1 s").arg(seconds) : EventModel::tr("no time limit"));
        return withReason(parts.join(QStringLiteral(", ")), d);
    }
    case K::RunStarted:
    case K::RunResumed:
        return (integer("experts") == 1
                    ? EventModel::tr("on %1 with 1 expert kernel").arg(text("backend"))
                    : EventModel::tr("on %1 with %2 expert kernels").arg(text("backend")).arg(integer("experts")));
    case K::RunEnded: {
        const QString message = text("message");
        return message.isEmpty() ? text("state") : EventModel::tr("%1: %2").arg(text("state"), message);
    }
    case K::Ceilings: {
        const QString summary = diagnose::Ceilings::fromJson(d).summary();
        const QString problem = text("problem");
        if (!problem.isEmpty())
            return EventModel::tr("no device ceilings: %1").arg(problem);
        return summary.isEmpty() ? EventModel::tr("no device ceilings") : summary;
    }
    case K::LlmBudgetReached: {
        QString s = text("message");
        const qint64 unknown = integer("calls_of_unknown_cost");
        if (unknown > 0)
            s += (unknown == 1 ? EventModel::tr(" (1 call of unknown cost)")
                               : EventModel::tr(" (%1 calls of unknown cost)").arg(unknown));
        return s;
    }
    case K::StrategyRewritten:
        return EventModel::tr("%1 strategy %2 (%3) rewritten as %4 by %5")
            .arg(text("stage"))
            .arg(integer("retired"))
            .arg(text("retired_stats"))
            .arg(integer("strategy"))
            .arg(text("model"));
    case K::LlmEndpointRetired:
        return text("message");
    case K::Unknown:
        break;
    }
    return genericSummary(d);
}

EventModel::EventModel(RunData* data, QObject* parent)
    : AppendOnlyTableModel(ColumnCount, static_cast<int>(data->events().size()), parent), m_data(data) {
    connect(data, &RunData::eventsAdded, this, &EventModel::appendRows);
    connect(data, &RunData::cleared, this, &EventModel::resetRows);
}

int EventModel::sourceRows() const {
    return m_data ? static_cast<int>(m_data->events().size()) : 0;
}

const store::EventRecord* EventModel::eventAt(int row) const {
    return isShown(row) ? &m_data->events()[row] : nullptr;
}

QVariant EventModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const store::EventRecord* event = eventAt(index.row());
    if (!event)
        return {};
    switch (role) {
    case KindRole:
        return event->kindName;
    case CandidateRole:
        return eventCandidate(*event);
    case SortRole:
        switch (index.column()) {
        case GenerationColumn:
            return event->generation;
        case TimeColumn:
            return event->id; // the store's order is the order of time
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::ToolTipRole:
        if (index.column() == TimeColumn)
            return QLocale().toString(event->at.toLocalTime(), QLocale::LongFormat);
        if (index.column() == SummaryColumn) {
            const qint64 candidate = eventCandidate(*event);
            return candidate > 0 ? tr("%1\nActivate to select candidate #%2").arg(eventSummary(*event)).arg(candidate)
                                 : eventSummary(*event);
        }
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == GenerationColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case GenerationColumn:
            return event->generation;
        case TimeColumn:
            return event->at.toLocalTime().toString(QStringLiteral("HH:mm:ss"));
        case KindColumn:
            return statusTitle(event->kindName);
        case SummaryColumn:
            return eventSummary(*event);
        }
        return {};
    default:
        return {};
    }
}

QVariant EventModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case GenerationColumn:
        return tr("Gen");
    case TimeColumn:
        return tr("Time");
    case KindColumn:
        return tr("Event");
    case SummaryColumn:
        return tr("What happened");
    }
    return {};
}

} // namespace kforge::ui
