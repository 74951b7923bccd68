#pragma once
// Human-readable and JSON forms of an evaluation result, for the command line and logs.

#include "protocol.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace kforge::eval {

QString formatResultText(const protocol::EvaluateResult& result, const QString& taskName, const QString& backend);
QJsonObject resultToJson(const protocol::EvaluateResult& result);

// The verdict of a speedup timed side by side ("a tie, 95% interval 0.993x-1.004x over 20 paired
// rounds"), put into `form` at %1; empty where the speedup has none (timed apart).
QString verdictText(const std::optional<protocol::RatioInterval>& interval,
                    const QString& form = QStringLiteral(" (%1)"));

} // namespace kforge::eval
