#include "eval/resultformat.h"

#include "util/text.h"

#include <QJsonDocument>

namespace kforge::eval {

namespace {

using util::q;

QString timingLine(const char* label, const protocol::TimingStats& t) {
    return QStringLiteral("  %1 %2 us median, %3 us min, %4 us max, spread %5% over %6 runs (%7)\n")
        .arg(QLatin1String(label), -10)
        .arg(t.medianUs, 0, 'f', 2)
        .arg(t.minUs, 0, 'f', 2)
        .arg(t.maxUs, 0, 'f', 2)
        .arg(100.0 * t.spread, 0, 'f', 2)
        .arg(t.count)
        .arg(q(t.method));
}

} // namespace

QString formatResultText(const protocol::EvaluateResult& r, const QString& taskName, const QString& backend) {
    QString out;
    out += QStringLiteral("%1 on %2 (%3): %4\n")
               .arg(taskName, backend, r.device.empty() ? QStringLiteral("no device") : q(r.device),
                    q(std::string(protocol::statusName(r.status))));
    out += QStringLiteral("  %1\n").arg(q(r.message));
    if (!r.host.empty())
        out += QStringLiteral("  ran on   %1, device %2\n").arg(q(r.host)).arg(r.deviceIndex);
    for (const auto& c : r.compile)
        out += QStringLiteral("  compile %1: %2 in %3 s\n")
                   .arg(q(c.role), c.ok ? QStringLiteral("ok") : QStringLiteral("failed"))
                   .arg(c.seconds, 0, 'f', 3);
    for (const auto& o : r.outputs) {
        out += QStringLiteral(
                   "  output %1: %2 elements checked, %3 wrong, %4 unwritten, max abs error %5, max rel error %6%7\n")
                   .arg(q(o.name))
                   .arg(o.checked)
                   .arg(o.mismatches)
                   .arg(o.unwritten)
                   .arg(o.maxAbsError, 0, 'g', 3)
                   .arg(o.maxRelError, 0, 'g', 3)
                   .arg(o.atol && o.rtol ? QStringLiteral(" (tolerance: atol %1, rtol %2)")
                                               .arg(*o.atol, 0, 'g', 3)
                                               .arg(*o.rtol, 0, 'g', 3)
                                         : QString());
        if (o.firstMismatch)
            out += QStringLiteral("    first mismatch at index %1 (seed %2): got %3, expected %4\n")
                       .arg(*o.firstMismatch)
                       .arg(o.firstSeed)
                       .arg(o.firstGot, 0, 'g', 7)
                       .arg(o.firstExpected, 0, 'g', 7);
    }
    for (const auto& c : r.checks)
        out += QStringLiteral("  check %1: %2%3\n")
                   .arg(q(c.name), c.passed ? QStringLiteral("passed") : QStringLiteral("FAILED"),
                        c.detail.empty() ? QString() : QStringLiteral(" (") + q(c.detail) + QLatin1Char(')'));
    if (r.candidateTiming)
        out += timingLine("candidate", *r.candidateTiming);
    if (r.baselineTiming)
        out += timingLine("baseline", *r.baselineTiming);
    if (r.speedup && r.speedupBase != "pytorch eager")
        out += QStringLiteral("  speedup  %1x over the baseline, timed in this run\n").arg(*r.speedup, 0, 'f', 3);
    if (r.eagerTiming)
        out += timingLine("pytorch eager", *r.eagerTiming);
    if (r.compileTiming)
        out += timingLine("torch.compile", *r.compileTiming);
    if (r.besideTiming)
        out += timingLine("candidate in PyTorch's process", *r.besideTiming);
    const QString how = r.besideTiming ? QStringLiteral("side by side in one process") : QStringLiteral("in this run");
    // Side by side, each speedup says whether it is one: "a tie" when the rounds vary by more.
    const QString sure = QStringLiteral(": %1");
    if (r.speedupVsEager)
        out += QStringLiteral("  speedup  %1x over PyTorch eager, timed %2%3\n")
                   .arg(*r.speedupVsEager, 0, 'f', 3)
                   .arg(how, verdictText(r.speedupVsEagerInterval, sure));
    if (r.speedupVsCompile)
        out += QStringLiteral("  speedup  %1x over torch.compile, timed %2%3\n")
                   .arg(*r.speedupVsCompile, 0, 'f', 3)
                   .arg(how, verdictText(r.speedupVsCompileInterval, sure));
    if (!r.pytorchNote.empty())
        out += QStringLiteral("  pytorch  %1\n").arg(q(r.pytorchNote));
    for (const auto& d : r.diagnostics) {
        QString where = d.role.empty() ? QString() : q(d.role);
        if (d.line > 0)
            where +=
                QStringLiteral(":%1").arg(d.line) + (d.column > 0 ? QStringLiteral(":%1").arg(d.column) : QString());
        out +=
            QStringLiteral("  %1 [%2]%3 %4\n")
                .arg(q(d.severity), q(d.kind), where.isEmpty() ? QString() : QStringLiteral(" ") + where, q(d.message));
    }
    return out;
}

QString verdictText(const std::optional<protocol::RatioInterval>& interval, const QString& form) {
    return interval ? form.arg(q(interval->describe())) : QString();
}

QJsonObject resultToJson(const protocol::EvaluateResult& r) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(protocol::encode(r))).object();
}

} // namespace kforge::eval
