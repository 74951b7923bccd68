#pragma once
// API keys: from the endpoint's environment variable or the system keyring (service "kforge",
// account = the endpoint's name), never from a kforge file. A key is never logged, stored by
// kforge or put in a message; redactSecrets() guards messages that might echo one back.

#include "expected.h"
#include "llm/llmtypes.h"

#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace kforge::llm {

// "" when the endpoint needs no key (no variable, no keyring) or its key is optional and absent;
// the key from $keyEnv, else from the keyring. Otherwise an error saying how to provide it:
// `export OPENAI_API_KEY=...` or `kforge llm set-key openai`. A keyring lookup waits (at most 5 s)
// in a local event loop: for the command line only; a run looks its keys up with KeyLookup.
spec::Expected<QString> resolveKey(const Endpoint& endpoint);
// The same without the keyring: nothing when only the keyring could say.
std::optional<spec::Expected<QString>> resolveKeyAtOnce(const Endpoint& endpoint);

// Looks up the keys of `endpoints` without blocking: environment variables at once, the keyring
// through its asynchronous jobs (each given at most 5 s). finished() follows start() exactly once
// (never from inside it), with the keys found by endpoint name ("" for none needed) and, for each
// endpoint whose required key is missing, the message resolveKey() would give.
class KeyLookup : public QObject {
    Q_OBJECT
public:
    explicit KeyLookup(QList<Endpoint> endpoints, QObject* parent = nullptr);
    void start();

signals:
    void finished(const QHash<QString, QString>& keys, const QHash<QString, QString>& problems);

private:
    void settle(const Endpoint& endpoint, const spec::Expected<QString>& key);
    void release();

    QList<Endpoint> m_endpoints;
    QHash<QString, QString> m_keys;
    QHash<QString, QString> m_problems;
    int m_pending = 0;
};

// Store or remove the keyring entry of an endpoint (synchronously, at most 5 s).
spec::Status storeKey(const QString& endpointName, const QString& key);
spec::Status deleteKey(const QString& endpointName);

// `text` with every non-empty secret replaced by "[redacted]".
QString redactSecrets(QString text, const QStringList& secrets);

} // namespace kforge::llm
