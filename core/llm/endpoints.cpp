#include "llm/endpoints.h"

#include "llm/userconfig.h"

#include "util/jsonreader.h"
#include "util/resourcelocator.h"
#include "util/secretenvironment.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QStandardPaths>
#include <QStringList>
#include <QUrl>

#include <algorithm>
#include <cmath>

namespace kforge::llm {

namespace {

const QString kUserFileName = QStringLiteral("llm-endpoints.json");

// The entries of one file as JSON objects, so that a user's partial entry can be laid over a preset
// before it is read as a whole.
spec::Expected<QList<QJsonObject>> readEntries(const QString& path) {
    auto json = util::JsonReader::readObjectFile(path, QStringLiteral("LLM endpoints"),
                                                 QStringLiteral("an object with \"endpoints\""));
    if (!json)
        return spec::Error{json.error()};
    const util::JsonReader reader(path, QStringLiteral("."));
    for (auto it = json->begin(); it != json->end(); ++it)
        if (!it.key().startsWith(QLatin1Char('_')) && it.key() != QLatin1String("comment")
            && it.key() != QLatin1String("endpoints"))
            return reader.error(QString(),
                                QStringLiteral("unknown key \"%1\" (expected endpoints, _comment)").arg(it.key()));
    const QJsonValue list = json->value(QStringLiteral("endpoints"));
    if (!list.isArray())
        return reader.error(QString(), QStringLiteral("missing \"endpoints\": a list of endpoint objects"));
    QList<QJsonObject> out;
    const QJsonArray a = list.toArray();
    for (qsizetype i = 0; i < a.size(); ++i) {
        const QString where = QStringLiteral("endpoints[%1]").arg(i);
        if (!a.at(i).isObject())
            return reader.error(where, QStringLiteral("expected an object"));
        const QJsonObject o = a.at(i).toObject();
        if (!o.value(QStringLiteral("name")).isString()
            || o.value(QStringLiteral("name")).toString().trimmed().isEmpty())
            return reader.error(where, QStringLiteral("name: expected a non-empty string"));
        out << o;
    }
    return out;
}

spec::Expected<QList<Endpoint>> toEndpoints(const QList<QJsonObject>& entries, const QString& origin) {
    QList<Endpoint> out;
    for (qsizetype i = 0; i < entries.size(); ++i) {
        QString error;
        auto e = Endpoint::fromJson(entries.at(i), &error);
        if (!e)
            return spec::fail(QStringLiteral("%1: endpoints[%2] (%3): %4")
                                  .arg(origin)
                                  .arg(i)
                                  .arg(entries.at(i).value(QStringLiteral("name")).toString(), error)
                                  .toStdString());
        if (findEndpoint(out, e->name))
            return spec::fail(QStringLiteral("%1: endpoints[%2]: the name \"%3\" is used twice")
                                  .arg(origin)
                                  .arg(i)
                                  .arg(e->name)
                                  .toStdString());
        out << *e;
    }
    return out;
}

spec::Expected<QString> builtInPath() {
    const QString relative = QStringLiteral("llm/endpoints.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("LLM endpoints")).toStdString());
    return path;
}

// An endpoint's key variable is secret whatever its name: the workers never inherit it.
void registerKeyVariables(const QList<Endpoint>& endpoints) {
    for (const Endpoint& e : endpoints)
        util::registerSecretVariable(e.keyEnv);
}

std::optional<bool> parseFlag(const QString& v) {
    if (v == QLatin1String("1") || v == QLatin1String("true") || v == QLatin1String("yes") || v == QLatin1String("on"))
        return true;
    if (v == QLatin1String("0") || v == QLatin1String("false") || v == QLatin1String("no") || v == QLatin1String("off"))
        return false;
    return std::nullopt;
}

} // namespace

const Endpoint* findEndpoint(const QList<Endpoint>& endpoints, const QString& name) {
    for (const Endpoint& e : endpoints)
        if (e.name == name)
            return &e;
    return nullptr;
}

spec::Expected<QList<Endpoint>> builtInEndpoints() {
    auto path = builtInPath();
    if (!path)
        return spec::Error{path.error()};
    return loadEndpointsFile(*path);
}

QString userEndpointsPath() {
    const QString dir = userConfigDir();
    return dir.isEmpty() ? QString() : QDir(dir).filePath(kUserFileName);
}

QString userEndpointsFile() {
    return userConfigFileToRead(kUserFileName, QStringLiteral("LLM endpoints"));
}

spec::Expected<QList<Endpoint>> loadEndpointsFile(const QString& path) {
    auto entries = readEntries(path);
    if (!entries)
        return spec::Error{entries.error()};
    auto endpoints = toEndpoints(*entries, path);
    if (endpoints)
        registerKeyVariables(*endpoints);
    return endpoints;
}

spec::Expected<QList<Endpoint>> loadEndpoints(const QString& userFile) {
    auto path = builtInPath();
    if (!path)
        return spec::Error{path.error()};
    auto presets = loadEndpointsFile(*path);
    if (!presets || userFile.isEmpty() || !QFileInfo::exists(userFile))
        return presets;
    auto user = readEntries(userFile);
    if (!user)
        return spec::Error{user.error()};
    QList<Endpoint> out = *presets;
    QStringList seen;
    for (qsizetype i = 0; i < user->size(); ++i) {
        QJsonObject o = user->at(i);
        const QString name = o.value(QStringLiteral("name")).toString().trimmed();
        if (seen.contains(name))
            return spec::fail(QStringLiteral("%1: endpoints[%2]: the name \"%3\" is used twice")
                                  .arg(userFile)
                                  .arg(i)
                                  .arg(name)
                                  .toStdString());
        seen << name;
        auto same = std::find_if(out.begin(), out.end(), [&](const Endpoint& e) { return e.name == name; });
        if (same != out.end()) {
            // A preset's entry changes only what it names.
            QJsonObject full = same->toJson(true);
            for (auto it = o.begin(); it != o.end(); ++it)
                full[it.key()] = it.value();
            o = full;
        }
        QString error;
        auto e = Endpoint::fromJson(o, &error);
        if (!e)
            return spec::fail(
                QStringLiteral("%1: endpoints[%2] (%3): %4").arg(userFile).arg(i).arg(name, error).toStdString());
        if (same != out.end())
            *same = *e;
        else
            out << *e;
    }
    registerKeyVariables(out);
    return out;
}

spec::Expected<Endpoint> parseEndpointSpec(const QString& spec, const QList<Endpoint>& known) {
    const QStringList parts = spec.split(QLatin1Char(','), Qt::KeepEmptyParts);
    auto bad = [&](int index, const QString& what) {
        return spec::fail(QStringLiteral("endpoint \"%1\": part %2 \"%3\": %4")
                              .arg(spec)
                              .arg(index + 1)
                              .arg(parts.value(index).trimmed(), what)
                              .toStdString());
    };
    const QString head = parts.value(0).trimmed();
    Endpoint e;
    const qsizetype eq = head.indexOf(QLatin1Char('='));
    if (eq < 0) {
        const Endpoint* base = findEndpoint(known, head);
        if (head.isEmpty() || !base) {
            QStringList names;
            for (const Endpoint& k : known)
                names << k.name;
            return bad(0, QStringLiteral("expected NAME=URL or the name of a known endpoint (%1)")
                              .arg(names.isEmpty() ? QStringLiteral("none known") : names.join(QStringLiteral(", "))));
        }
        e = *base;
    } else {
        e.name = head.left(eq).trimmed();
        e.baseUrl = head.mid(eq + 1).trimmed();
        if (e.name.isEmpty())
            return bad(0, QStringLiteral("the endpoint name before '=' is empty"));
        const QUrl url(e.baseUrl);
        if (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https"))
            || url.host().isEmpty())
            return bad(0, QStringLiteral("expected an http:// or https:// base URL after '='"));
        // Typed on a command line, usually a local server: no key unless one is asked for.
        e.keyring = false;
        e.keyRequired = false;
    }
    bool keyRequiredGiven = false;
    for (int i = 1; i < parts.size(); ++i) {
        const QString part = parts.at(i).trimmed();
        const qsizetype peq = part.indexOf(QLatin1Char('='));
        if (peq <= 0)
            return bad(i, QStringLiteral("expected KEY=VALUE"));
        const QString key = part.left(peq).trimmed().toLower();
        const QString value = part.mid(peq + 1).trimmed();
        bool ok = false;
        if (key == QLatin1String("api")) {
            const auto api = parseApi(value);
            if (!api)
                return bad(i, QStringLiteral("api must be openai or anthropic"));
            e.api = *api;
        } else if (key == QLatin1String("key-env")) {
            if (value.isEmpty() || value.contains(QLatin1Char(' ')))
                return bad(i, QStringLiteral("expected the name of an environment variable"));
            e.keyEnv = value;
            if (!keyRequiredGiven)
                e.keyRequired = true;
        } else if (key == QLatin1String("keyring") || key == QLatin1String("key-required")
                   || key == QLatin1String("stream") || key == QLatin1String("cache")) {
            const auto flag = parseFlag(value.toLower());
            if (!flag)
                return bad(i, QStringLiteral("expected 0 or 1"));
            if (key == QLatin1String("keyring"))
                e.keyring = *flag;
            else if (key == QLatin1String("stream"))
                e.stream = *flag;
            else if (key == QLatin1String("cache"))
                e.cachePrompts = *flag;
            else {
                e.keyRequired = *flag;
                keyRequiredGiven = true;
            }
        } else if (key == QLatin1String("concurrency") || key == QLatin1String("retries")) {
            const int n = value.toInt(&ok);
            const int minimum = key == QLatin1String("concurrency") ? 1 : 0;
            if (!ok || n < minimum)
                return bad(i, QStringLiteral("expected a whole number >= %1").arg(minimum));
            (key == QLatin1String("concurrency") ? e.maxConcurrent : e.maxRetries) = n;
        } else if (key == QLatin1String("connect-timeout") || key == QLatin1String("timeout")
                   || key == QLatin1String("backoff")) {
            const double s = value.toDouble(&ok);
            const bool zeroAllowed = key == QLatin1String("backoff");
            if (!ok || !std::isfinite(s) || s < 0 || (!zeroAllowed && s == 0))
                return bad(i, QStringLiteral("expected seconds (a number %1 0)")
                                  .arg(zeroAllowed ? QStringLiteral(">=") : QStringLiteral(">")));
            if (key == QLatin1String("connect-timeout"))
                e.connectTimeoutSeconds = s;
            else if (key == QLatin1String("timeout"))
                e.totalTimeoutSeconds = s;
            else
                e.backoffSeconds = s;
        } else {
            return bad(i,
                       QStringLiteral("unknown key \"%1\" (expected api, key-env, keyring, key-required, concurrency, "
                                      "connect-timeout, timeout, retries, backoff, stream, cache)")
                           .arg(key));
        }
    }
    util::registerSecretVariable(e.keyEnv);
    return e;
}

} // namespace kforge::llm
