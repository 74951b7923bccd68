#pragma once
// API keys: from the endpoint's environment variable or the system keyring (service "kforge",
// account = the endpoint's name), never from a kforge file. A key is never logged, stored by
// kforge or put in a message; redactSecrets() guards messages that might echo one back.

#include "expected.h"
#include "llm/llmtypes.h"

#include <QString>
#include <QStringList>

namespace kforge::llm {

// "" when the endpoint needs no key (no variable, no keyring) or its key is optional and absent;
// the key from $keyEnv, else from the keyring (waited for at most 5 s; needs a thread that can run
// a QEventLoop). Otherwise an error saying how to provide it: `export OPENAI_API_KEY=...` or
// `kforge llm set-key openai`.
spec::Expected<QString> resolveKey(const Endpoint& endpoint);

// Store or remove the keyring entry of an endpoint (synchronously, at most 5 s).
spec::Status storeKey(const QString& endpointName, const QString& key);
spec::Status deleteKey(const QString& endpointName);

// `text` with every non-empty secret replaced by "[redacted]".
QString redactSecrets(QString text, const QStringList& secrets);

} // namespace kforge::llm
