#include "util/jsonreader.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>

namespace kforge::util {

spec::Expected<QJsonObject> JsonReader::readObjectFile(const QString& path, const QString& what, const QString& shape) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return spec::fail(QStringLiteral("%1: cannot read %2: %3").arg(path, what, file.errorString()).toStdString());
    const QByteArray data = file.readAll();
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(data, &parseError);
    if (parseError.error != QJsonParseError::NoError) {
        // People edit these files by hand: point at the line and column, not a byte offset.
        const QByteArray before = data.left(parseError.offset);
        const qsizetype line = before.count('\n') + 1;
        const qsizetype column = parseError.offset - (before.lastIndexOf('\n') + 1) + 1;
        return spec::fail(QStringLiteral("%1: not valid JSON at line %2, column %3: %4")
                              .arg(path)
                              .arg(line)
                              .arg(column)
                              .arg(parseError.errorString())
                              .toStdString());
    }
    if (!doc.isObject())
        return spec::fail(QStringLiteral("%1: expected %2").arg(path, shape).toStdString());
    return doc.object();
}

spec::Error JsonReader::error(const QString& path, const QString& what) const {
    return spec::fail(
        (m_origin + QStringLiteral(": ") + (path.isEmpty() ? QString() : path + QStringLiteral(": ")) + what)
            .toStdString());
}

QString JsonReader::keyPath(const QString& path, const QString& key) const {
    return path.isEmpty() ? key : path + m_keySeparator + key;
}

std::optional<spec::Error> JsonReader::checkKeys(const QJsonObject& o, const QString& path,
                                                 const QStringList& known) const {
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key() != QLatin1String("comment") && !known.contains(it.key()))
            return error(
                path,
                QStringLiteral("unknown key \"%1\" (expected %2)").arg(it.key(), known.join(QStringLiteral(", "))));
    return std::nullopt;
}

std::optional<spec::Error> JsonReader::string(const QJsonObject& o, const QString& path, const QString& key,
                                              bool required, QString* out) const {
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
