#pragma once
// Reading a JSON data file that people write (descriptor spaces, diagnosis rules): every error
// names the file and the path of the entry being read, and unknown keys are errors, because a
// misspelt key would otherwise silently take a default.

#include "expected.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace kforge::util {

class JsonReader {
public:
    // `keySeparator` joins an entry's path and one of its keys in messages: "." gives
    // "dimensions[1].key", ": " gives "rules[3] (id): kind".
    // Reads a file holding one JSON object. Errors name the file: "cannot read <what>: ...", "not
    // valid JSON at line L, column C: ...", "expected <shape>" when the top level is not an object.
    static spec::Expected<QJsonObject> readObjectFile(const QString& path, const QString& what, const QString& shape);

    JsonReader(QString origin, QString keySeparator)
        : m_origin(std::move(origin)), m_keySeparator(std::move(keySeparator)) {}

    // "<origin>: <path>: <what>", or "<origin>: <what>" at the top level.
    spec::Error error(const QString& path, const QString& what) const;
    // The path of `key` inside the entry at `path`.
    QString keyPath(const QString& path, const QString& key) const;

    // Fails on a key not in `known`; "comment" is always allowed.
    std::optional<spec::Error> checkKeys(const QJsonObject& o, const QString& path, const QStringList& known) const;
    // A non-empty string at `key`; absent is an error only when `required` (then `out` is left as is).
    std::optional<spec::Error> string(const QJsonObject& o, const QString& path, const QString& key, bool required,
                                      QString* out) const;

private:
    QString m_origin;
    QString m_keySeparator;
};

} // namespace kforge::util
