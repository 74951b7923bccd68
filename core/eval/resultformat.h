#pragma once
// Human-readable and JSON forms of an evaluation result, for the command line and logs.

#include "protocol.h"

#include <QJsonObject>
#include <QString>

namespace kforge::eval {

QString formatResultText(const protocol::EvaluateResult& result, const QString& taskName, const QString& backend);
QJsonObject resultToJson(const protocol::EvaluateResult& result);

} // namespace kforge::eval
