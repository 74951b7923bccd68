#pragma once
// A structured finding about an evaluated kernel: what is wrong or limiting, how sure, the numbers
// behind it, where in the source, and which way to go. Findings are what prompts, the GUI's
// diagnostics view and the experience library are built from.

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

namespace kforge::diagnose {

struct Finding {
    QString rule;      // id of the rule that produced it, e.g. "register-spills"
    QString kind;      // compile, correctness, integrity, resources, memory, compute, latency, timing
    QString severity;  // error, warning, info
    QString message;   // one line for people: "128 B spilled per thread"
    QString evidence;  // the facts it rests on: "local_bytes = 128, registers = 255"
    int line = 0;      // source line of the candidate when known, else 0
    QString direction; // suggested direction: "smaller register tiles or fewer live accumulators"

    QJsonObject toJson() const;
    static Finding fromJson(const QJsonObject& json);
};

using Findings = QList<Finding>;
QJsonArray toJson(const Findings& findings);
Findings findingsFromJson(const QJsonArray& json);

} // namespace kforge::diagnose
