#pragma once
// Which environment variables hold credentials, so that processes kforge starts (the workers, and
// the Python interpreter a worker starts for PyTorch references) never inherit an API key. A kernel
// under test is untrusted code: it must not be able to read the keys kforge calls models with.
//
// A variable is secret when its name, upper-cased:
//   - ends in API_KEY or APIKEY (OPENAI_API_KEY, ANTHROPIC_API_KEY, VLLM_API_KEY, ...),
//   - has a '_'-separated word ending in TOKEN(S), SECRET(S), PASSWORD or PASSWD (HF_TOKEN,
//     GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, CLIENT_SECRETS), or
//   - was registered: every endpoint's key variable (Endpoint::keyEnv) is, as endpoints are
//     loaded or given on the command line, whatever its name.
// Words rather than substrings, so that TOKENIZERS_PARALLELISM and the like are left alone.

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace kforge::util {

bool isSecretVariable(const QString& name);
// Adds a name that is secret whatever it looks like (an endpoint's key variable). Thread-safe.
void registerSecretVariable(const QString& name);
QStringList registeredSecretVariables();
// `environment` without its secret variables; `removed` (when given) receives their names.
QProcessEnvironment withoutSecrets(const QProcessEnvironment& environment, QStringList* removed = nullptr);

} // namespace kforge::util
