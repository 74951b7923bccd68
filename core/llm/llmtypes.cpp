#include "llm/llmtypes.h"

#include "llm/apiformat.h"
#include "util/numbers.h"

#include <QJsonValue>
#include <QStringList>
#include <QUrl>

#include <optional>

namespace kforge::llm {

QString apiName(Api api) {
    switch (api) {
    case Api::OpenAI:
        return QStringLiteral("openai");
    case Api::Anthropic:
        return QStringLiteral("anthropic");
    }
    return QStringLiteral("openai");
}

std::optional<Api> parseApi(const QString& name) {
    const QString n = name.trimmed().toLower();
    if (n == QLatin1String("openai"))
        return Api::OpenAI;
    if (n == QLatin1String("anthropic"))
        return Api::Anthropic;
    return std::nullopt;
}

QString errorKindName(ErrorKind kind) {
    switch (kind) {
    case ErrorKind::None:
        return QStringLiteral("none");
    case ErrorKind::Config:
        return QStringLiteral("config");
    case ErrorKind::Auth:
        return QStringLiteral("auth");
    case ErrorKind::Quota:
        return QStringLiteral("quota");
    case ErrorKind::RateLimited:
        return QStringLiteral("rate-limited");
    case ErrorKind::Server:
        return QStringLiteral("server");
    case ErrorKind::Request:
        return QStringLiteral("request");
    case ErrorKind::Network:
        return QStringLiteral("network");
    case ErrorKind::Timeout:
        return QStringLiteral("timeout");
    case ErrorKind::Malformed:
        return QStringLiteral("malformed");
    case ErrorKind::Truncated:
        return QStringLiteral("truncated");
    case ErrorKind::Cancelled:
        return QStringLiteral("cancelled");
    }
    return QStringLiteral("unknown");
}

QJsonObject Endpoint::toJson(bool withCredentials) const {
    QJsonObject o;
    o[QStringLiteral("name")] = name;
    o[QStringLiteral("api")] = apiName(api);
    o[QStringLiteral("baseUrl")] = baseUrl;
    if (!withCredentials) {
        const QString redacted = redactedUrl(baseUrl);
        if (redacted != QUrl(baseUrl).toString(QUrl::PrettyDecoded) || credentialsLeftOut) {
            o[QStringLiteral("baseUrl")] = redacted;
            o[QStringLiteral("credentialsLeftOut")] = true;
        }
    }
    o[QStringLiteral("keyEnv")] = keyEnv;
    o[QStringLiteral("keyring")] = keyring;
    o[QStringLiteral("keyRequired")] = keyRequired;
    o[QStringLiteral("maxConcurrent")] = maxConcurrent;
    o[QStringLiteral("connectTimeoutSeconds")] = connectTimeoutSeconds;
    o[QStringLiteral("totalTimeoutSeconds")] = totalTimeoutSeconds;
    o[QStringLiteral("maxRetries")] = maxRetries;
    o[QStringLiteral("backoffSeconds")] = backoffSeconds;
    o[QStringLiteral("stream")] = stream;
    o[QStringLiteral("cachePrompts")] = cachePrompts;
    return o;
}

namespace {

const QStringList& endpointKeys() {
    static const QStringList keys{QStringLiteral("name"),
                                  QStringLiteral("api"),
                                  QStringLiteral("baseUrl"),
                                  QStringLiteral("keyEnv"),
                                  QStringLiteral("keyring"),
                                  QStringLiteral("keyRequired"),
                                  QStringLiteral("maxConcurrent"),
                                  QStringLiteral("connectTimeoutSeconds"),
                                  QStringLiteral("totalTimeoutSeconds"),
                                  QStringLiteral("maxRetries"),
                                  QStringLiteral("backoffSeconds"),
                                  QStringLiteral("stream"),
                                  QStringLiteral("cachePrompts"),
                                  QStringLiteral("credentialsLeftOut")};
    return keys;
}

bool setError(QString* error, const QString& text) {
    if (error)
        *error = text;
    return false;
}

bool readBool(const QJsonObject& json, const QString& key, bool* out, QString* error) {
    const QJsonValue v = json.value(key);
    if (v.isUndefined())
        return true;
    if (!v.isBool())
        return setError(error, QStringLiteral("%1: expected true or false").arg(key));
    *out = v.toBool();
    return true;
}

bool readNumber(const QJsonObject& json, const QString& key, double minimum, double* out, QString* error) {
    const QJsonValue v = json.value(key);
    if (v.isUndefined())
        return true;
    if (!v.isDouble() || v.toDouble() < minimum)
        return setError(error, QStringLiteral("%1: expected a number of at least %2").arg(key).arg(minimum));
    *out = v.toDouble();
    return true;
}

bool readInt(const QJsonObject& json, const QString& key, int minimum, int* out, QString* error) {
    double d = *out;
    if (!readNumber(json, key, minimum, &d, error))
        return false;
    const std::optional<int> whole = util::wholeNumber<int>(d);
    if (!whole)
        return setError(error, QStringLiteral("%1: expected a whole number").arg(key));
    *out = *whole;
    return true;
}

} // namespace

std::optional<Endpoint> Endpoint::fromJson(const QJsonObject& json, QString* error) {
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!it.key().startsWith(QLatin1Char('_')) && it.key() != QLatin1String("comment")
            && !endpointKeys().contains(it.key())) {
            setError(error, QStringLiteral("unknown key \"%1\" (expected %2)")
                                .arg(it.key(), endpointKeys().join(QStringLiteral(", "))));
            return std::nullopt;
        }
    Endpoint e;
    const QJsonValue name = json.value(QStringLiteral("name"));
    if (!name.isString() || name.toString().trimmed().isEmpty()) {
        setError(error, QStringLiteral("name: expected a non-empty string"));
        return std::nullopt;
    }
    e.name = name.toString().trimmed();
    if (const QJsonValue api = json.value(QStringLiteral("api")); !api.isUndefined()) {
        const auto parsed = api.isString() ? parseApi(api.toString()) : std::nullopt;
        if (!parsed) {
            setError(error, QStringLiteral("api: expected \"openai\" or \"anthropic\""));
            return std::nullopt;
        }
        e.api = *parsed;
    }
    const QJsonValue base = json.value(QStringLiteral("baseUrl"));
    const QUrl url(base.toString());
    if (!base.isString() || !url.isValid()
        || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")) || url.host().isEmpty()) {
        setError(error, QStringLiteral("baseUrl: expected an http:// or https:// URL"));
        return std::nullopt;
    }
    e.baseUrl = base.toString();
    if (const QJsonValue keyEnv = json.value(QStringLiteral("keyEnv")); !keyEnv.isUndefined()) {
        if (!keyEnv.isString()) {
            setError(error, QStringLiteral("keyEnv: expected the name of an environment variable"));
            return std::nullopt;
        }
        e.keyEnv = keyEnv.toString().trimmed();
    }
    if (!readBool(json, QStringLiteral("keyring"), &e.keyring, error)
        || !readBool(json, QStringLiteral("keyRequired"), &e.keyRequired, error)
        || !readBool(json, QStringLiteral("stream"), &e.stream, error)
        || !readBool(json, QStringLiteral("cachePrompts"), &e.cachePrompts, error)
        || !readBool(json, QStringLiteral("credentialsLeftOut"), &e.credentialsLeftOut, error)
        || !readInt(json, QStringLiteral("maxConcurrent"), 1, &e.maxConcurrent, error)
        || !readInt(json, QStringLiteral("maxRetries"), 0, &e.maxRetries, error)
        || !readNumber(json, QStringLiteral("connectTimeoutSeconds"), 0.001, &e.connectTimeoutSeconds, error)
        || !readNumber(json, QStringLiteral("totalTimeoutSeconds"), 0.001, &e.totalTimeoutSeconds, error)
        || !readNumber(json, QStringLiteral("backoffSeconds"), 0.0, &e.backoffSeconds, error))
        return std::nullopt;
    return e;
}

} // namespace kforge::llm
