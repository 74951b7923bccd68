#include "util/secretenvironment.h"

#include <QMutex>
#include <QMutexLocker>
#include <QSet>

namespace kforge::util {

namespace {

QMutex& registryMutex() {
    static QMutex mutex;
    return mutex;
}

QSet<QString>& registry() {
    static QSet<QString> names;
    return names;
}

bool matchesRule(const QString& name) {
    const QString upper = name.toUpper();
    if (upper.endsWith(QLatin1String("API_KEY")) || upper.endsWith(QLatin1String("APIKEY")))
        return true;
    static const QStringList secretEndings{QStringLiteral("TOKEN"),    QStringLiteral("TOKENS"),
                                           QStringLiteral("SECRET"),   QStringLiteral("SECRETS"),
                                           QStringLiteral("PASSWORD"), QStringLiteral("PASSWD")};
    const QStringList words = upper.split(QLatin1Char('_'), Qt::SkipEmptyParts);
    for (const QString& word : words)
        for (const QString& ending : secretEndings)
            if (word.endsWith(ending))
                return true;
    return false;
}

} // namespace

bool isSecretVariable(const QString& name) {
    if (name.isEmpty())
        return false;
    if (matchesRule(name))
        return true;
    const QMutexLocker lock(&registryMutex());
    return registry().contains(name);
}

void registerSecretVariable(const QString& name) {
    const QString trimmed = name.trimmed();
    if (trimmed.isEmpty())
        return;
    const QMutexLocker lock(&registryMutex());
    registry().insert(trimmed);
}

QStringList registeredSecretVariables() {
    QStringList names;
    {
        const QMutexLocker lock(&registryMutex());
        names = QStringList(registry().cbegin(), registry().cend());
    }
    names.sort();
    return names;
}

QProcessEnvironment withoutSecrets(const QProcessEnvironment& environment, QStringList* removed) {
    QProcessEnvironment out = environment;
    for (const QString& name : environment.keys())
        if (isSecretVariable(name)) {
            out.remove(name);
            if (removed)
                *removed << name;
        }
    return out;
}

} // namespace kforge::util
