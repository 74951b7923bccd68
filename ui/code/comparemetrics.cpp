#include "comparemetrics.h"

#include "diagnose/diagnosis.h"
#include "theme.h"

#include <QJsonObject>
#include <QLocale>
#include <QPalette>

#include <cmath>
#include <optional>

namespace kforge::ui {

namespace {

using Value = std::optional<double>;

// A resource as the candidate's limiting kernel has it (diagnose::limitingResources).
Value resource(const protocol::EvaluateResult& r, const char* name) {
    const diagnose::Facts resources = diagnose::limitingResources(r);
    const auto it = resources.find(name);
    return it == resources.end() ? Value{} : Value{it->second};
}

Value profiled(const protocol::EvaluateResult& r, const char* metric) {
    if (!r.profile || r.profile->status != "ok")
        return std::nullopt;
    const auto it = r.profile->metrics.find(metric);
    return it == r.profile->metrics.end() ? Value{} : Value{it->second};
}

Value rooflineValue(const store::EvaluationRecord& e, const char* key) {
    const QJsonValue v = e.roofline.value(QLatin1String(key));
    return v.isDouble() && v.toDouble() > 0.0 ? Value{v.toDouble()} : Value{};
}

QString number(double v, int decimals) {
    return QLocale().toString(v, 'f', decimals);
}

QString bytes(double v) {
    return QLocale().formattedDataSize(static_cast<qint64>(std::llround(v)), 1, QLocale::DataSizeSIFormat);
}

// How a change reads: percent for times and sizes, points for fractions, a difference for counts.
enum class Change { Percent, Points, Difference, Ratio };

MetricRow row(const QString& name, Value left, Value right, const std::function<QString(double)>& format, Change change,
              bool lowerIsBetter) {
    MetricRow m;
    m.name = name;
    m.left = left ? format(*left) : QStringLiteral("–");
    m.right = right ? format(*right) : QStringLiteral("–");
    if (!left || !right)
        return m;
    const double a = *left, b = *right;
    switch (change) {
    case Change::Percent:
        m.change = a != 0.0 ? QStringLiteral("%1%2%").arg(b >= a ? QStringLiteral("+") : QString(),
                                                          number(100.0 * (b - a) / a, 1))
                            : QString();
        break;
    case Change::Points:
        m.change = QStringLiteral("%1%2 pts").arg(b >= a ? QStringLiteral("+") : QString(), number(100.0 * (b - a), 1));
        break;
    case Change::Difference:
        m.change = QStringLiteral("%1%2").arg(b >= a ? QStringLiteral("+") : QString(), number(b - a, 0));
        break;
    case Change::Ratio:
        m.change = a != 0.0 ? QStringLiteral("%1×").arg(number(b / a, 3)) : QString();
        break;
    }
    if (std::abs(b - a) > 1e-12 * std::max(std::abs(a), std::abs(b)))
        m.better = ((b < a) == lowerIsBetter) ? 1 : -1;
    return m;
}

} // namespace

QList<MetricRow> compareMetrics(const CandidateDetail& left, const CandidateDetail& right) {
    const store::EvaluationRecord* a = left.searchEvaluation();
    const store::EvaluationRecord* b = right.searchEvaluation();
    QList<MetricRow> rows;
    const auto add = [&](MetricRow m) {
        if (m.left != QStringLiteral("–") || m.right != QStringLiteral("–"))
            rows << std::move(m);
    };
    const auto either = [&](auto get) -> std::pair<Value, Value> {
        return {a ? get(*a) : Value{}, b ? get(*b) : Value{}};
    };
    const auto us = [](double v) { return QStringLiteral("%1 µs").arg(number(v, v < 100 ? 2 : 1)); };
    const auto percent = [](double v) { return QStringLiteral("%1%").arg(number(100.0 * v, 1)); };
    const auto count = [](double v) { return number(v, 0); };

    auto [ta, tb] = either([](const store::EvaluationRecord& e) -> Value {
        return e.result.candidateTiming ? Value{e.result.candidateTiming->medianUs} : Value{};
    });
    add(row(QStringLiteral("kernel time (median)"), ta, tb, us, Change::Percent, true));
    auto [sa, sb] = either([](const store::EvaluationRecord& e) { return e.result.speedup; });
    add(row(
        QStringLiteral("speedup over the baseline"), sa, sb,
        [](double v) { return QStringLiteral("%1×").arg(number(v, 3)); }, Change::Ratio, false));
    auto [ra, rb] = either([](const store::EvaluationRecord& e) { return resource(e.result, "registers"); });
    add(row(QStringLiteral("registers per thread (most)"), ra, rb, count, Change::Difference, true));
    auto [oa, ob] = either([](const store::EvaluationRecord& e) { return resource(e.result, "occupancy"); });
    add(row(QStringLiteral("occupancy (theoretical, least)"), oa, ob, percent, Change::Points, false));
    auto [ma, mb] = either([](const store::EvaluationRecord& e) { return profiled(e.result, "achieved_occupancy"); });
    add(row(QStringLiteral("occupancy (achieved)"), ma, mb, percent, Change::Points, false));
    auto [ha, hb] = either([](const store::EvaluationRecord& e) { return resource(e.result, "shared_bytes"); });
    add(row(QStringLiteral("shared memory per block"), ha, hb, bytes, Change::Difference, true));
    auto [la, lb] = either([](const store::EvaluationRecord& e) { return resource(e.result, "local_bytes"); });
    add(row(QStringLiteral("local memory per thread (spills)"), la, lb, bytes, Change::Difference, true));
    auto [da, db] = either([](const store::EvaluationRecord& e) { return profiled(e.result, "dram_bytes"); });
    add(row(QStringLiteral("DRAM bytes (measured)"), da, db, bytes, Change::Percent, true));
    if (!da && !db) {
        auto [ba, bb] = either([](const store::EvaluationRecord& e) { return rooflineValue(e, "bytes"); });
        add(row(QStringLiteral("bytes moved (task's formula)"), ba, bb, bytes, Change::Percent, true));
    }
    auto [fa, fb] = either([](const store::EvaluationRecord& e) { return rooflineValue(e, "fraction_of_bound"); });
    add(row(QStringLiteral("of the roofline bound"), fa, fb, percent, Change::Points, false));
    return rows;
}

QString metricsTable(const QList<MetricRow>& rows, qint64 leftId, qint64 rightId, const QPalette& palette) {
    if (rows.isEmpty())
        return {};
    const QString good = theme::pick(palette, QColor(0x2e, 0x7d, 0x32), QColor(0x56, 0xd3, 0x64)).name();
    const QString bad = theme::pick(palette, QColor(0xc6, 0x28, 0x28), QColor(0xff, 0x7b, 0x72)).name();
    QString html = QStringLiteral("<table cellspacing=0 cellpadding=2><tr><th align=left></th><th align=right>#%1</th>"
                                  "<th align=right>#%2</th><th align=right>#%2 vs #%1</th></tr>")
                       .arg(leftId)
                       .arg(rightId);
    for (const MetricRow& m : rows) {
        QString change = m.change.toHtmlEscaped();
        if (m.better != 0 && !change.isEmpty())
            change = QStringLiteral("<span style=\"color:%1\">%2</span>").arg(m.better > 0 ? good : bad, change);
        html += QStringLiteral("<tr><td>%1&nbsp;&nbsp;</td><td align=right>%2&nbsp;&nbsp;</td><td "
                               "align=right>%3&nbsp;&nbsp;</td><td align=right>%4</td></tr>")
                    .arg(m.name.toHtmlEscaped(), m.left.toHtmlEscaped(), m.right.toHtmlEscaped(), change);
    }
    return html + QStringLiteral("</table>");
}

} // namespace kforge::ui
