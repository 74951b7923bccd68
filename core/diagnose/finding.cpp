#include "diagnose/finding.h"

namespace kforge::diagnose {

QJsonObject Finding::toJson() const {
    return QJsonObject{
        {QStringLiteral("rule"), rule},           {QStringLiteral("kind"), kind},
        {QStringLiteral("severity"), severity},   {QStringLiteral("message"), message},
        {QStringLiteral("evidence"), evidence},   {QStringLiteral("line"), line},
        {QStringLiteral("direction"), direction},
    };
}

Finding Finding::fromJson(const QJsonObject& json) {
    Finding f;
    f.rule = json.value(QLatin1String("rule")).toString();
    f.kind = json.value(QLatin1String("kind")).toString();
    f.severity = json.value(QLatin1String("severity")).toString();
    f.message = json.value(QLatin1String("message")).toString();
    f.evidence = json.value(QLatin1String("evidence")).toString();
    f.line = json.value(QLatin1String("line")).toInt(0);
    f.direction = json.value(QLatin1String("direction")).toString();
    return f;
}

QJsonArray toJson(const Findings& findings) {
    QJsonArray json;
    for (const Finding& f : findings)
        json.append(f.toJson());
    return json;
}

Findings findingsFromJson(const QJsonArray& json) {
    Findings findings;
    for (const auto& v : json)
        findings.append(Finding::fromJson(v.toObject()));
    return findings;
}

} // namespace kforge::diagnose
