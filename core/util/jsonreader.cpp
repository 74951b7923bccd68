#include "jsonreader.h"

#include <QJsonValue>

namespace kforge::util {

spec::Error JsonReader::error(const QString& path, const QString& what) const {
    return spec::fail(
        (m_origin + QStringLiteral(": ") + (path.isEmpty() ? QString() : path + QStringLiteral(": ")) + what).toStdString());
}

QString JsonReader::keyPath(const QString& path, const QString& key) const {
    return path.isEmpty() ? key : path + m_keySeparator + key;
}

std::optional<spec::Error> JsonReader::checkKeys(const QJsonObject& o, const QString& path, const QStringList& known) const {
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key() != QLatin1String("comment") && !known.contains(it.key()))
            return error(path,
                         QStringLiteral("unknown key \"%1\" (expected %2)").arg(it.key(), known.join(QStringLiteral(", "))));
    return std::nullopt;
}

std::optional<spec::Error> JsonReader::string(const QJsonObject& o, const QString& path, const QString& key, bool required,
                                              QString* out) const {
    const QJsonValue v = o.value(key);
    if (v.isUndefined()) {
        if (required)
            return error(path, QStringLiteral("missing \"%1\"").arg(key));
        return std::nullopt;
    }
    if (!v.isString() || v.toString().trimmed().isEmpty())
        return error(keyPath(path, key), QStringLiteral("expected a non-empty string"));
    *out = v.toString();
    return std::nullopt;
}

} // namespace kforge::util
