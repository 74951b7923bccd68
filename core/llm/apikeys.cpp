#include "llm/apikeys.h"

#include <qt6keychain/keychain.h>

#include <QEventLoop>
#include <QTimer>

#include <memory>

namespace kforge::llm {

namespace {

const QString kService = QStringLiteral("kforge");
constexpr int kKeyringTimeoutMs = 5000;

struct JobOutcome {
    bool finished = false;
    QKeychain::Error error = QKeychain::NoError;
    QString errorString;
    QString text;
};

// Runs a keychain job to its end or the timeout. The job deletes itself when it finishes, even
// after we stopped waiting; the loop is the context of our connection, so a late finish does not
// touch our stack.
JobOutcome runJob(QKeychain::Job* job) {
    JobOutcome outcome;
    QEventLoop loop;
    job->setAutoDelete(true);
    QObject::connect(job, &QKeychain::Job::finished, &loop, [&](QKeychain::Job* j) {
        outcome.finished = true;
        outcome.error = j->error();
        outcome.errorString = j->errorString();
        if (auto* read = qobject_cast<QKeychain::ReadPasswordJob*>(j))
            outcome.text = read->textData();
        loop.quit();
    });
    QTimer::singleShot(kKeyringTimeoutMs, &loop, &QEventLoop::quit);
    job->start();
    if (!outcome.finished)
        loop.exec(QEventLoop::ExcludeUserInputEvents);
    if (!outcome.finished)
        outcome.errorString = QStringLiteral("the keyring did not answer within %1 s").arg(kKeyringTimeoutMs / 1000);
    return outcome;
}

QString howToProvide(const Endpoint& endpoint) {
    QStringList ways;
    if (!endpoint.keyEnv.isEmpty())
        ways << QStringLiteral("`export %1=...`").arg(endpoint.keyEnv);
    ways << QStringLiteral("`kforge llm set-key %1` (stores it in the system keyring)").arg(endpoint.name);
    return ways.join(QStringLiteral(" or "));
}

} // namespace

spec::Expected<QString> resolveKey(const Endpoint& endpoint) {
    if (endpoint.keyEnv.isEmpty() && !endpoint.keyring)
        return QString();
    if (!endpoint.keyEnv.isEmpty()) {
        const QString fromEnv = qEnvironmentVariable(endpoint.keyEnv.toLocal8Bit().constData()).trimmed();
        if (!fromEnv.isEmpty())
            return fromEnv;
    }
    QString keyringProblem;
    if (endpoint.keyring) {
        auto* job = new QKeychain::ReadPasswordJob(kService);
        job->setKey(endpoint.name);
        const JobOutcome outcome = runJob(job);
        if (outcome.finished && outcome.error == QKeychain::NoError && !outcome.text.trimmed().isEmpty())
            return outcome.text.trimmed();
        if (!outcome.finished || (outcome.error != QKeychain::NoError && outcome.error != QKeychain::EntryNotFound))
            keyringProblem = QStringLiteral(" (the system keyring could not be read: %1)").arg(outcome.errorString);
    }
    if (!endpoint.keyRequired)
        return QString();
    QString where;
    if (!endpoint.keyEnv.isEmpty() && endpoint.keyring)
        where = QStringLiteral("%1 is not set and the system keyring has no key for it%2").arg(endpoint.keyEnv, keyringProblem);
    else if (!endpoint.keyEnv.isEmpty())
        where = QStringLiteral("%1 is not set").arg(endpoint.keyEnv);
    else
        where = QStringLiteral("the system keyring has no key for it%1").arg(keyringProblem);
    return spec::fail(QStringLiteral("no API key for endpoint \"%1\": %2. Provide one with %3.")
                          .arg(endpoint.name, where, howToProvide(endpoint))
                          .toStdString());
}

spec::Status storeKey(const QString& endpointName, const QString& key) {
    auto* job = new QKeychain::WritePasswordJob(kService);
    job->setKey(endpointName);
    job->setTextData(key);
    const JobOutcome outcome = runJob(job);
    if (!outcome.finished || outcome.error != QKeychain::NoError)
        return spec::fail(QStringLiteral("could not store the key of endpoint \"%1\" in the system keyring: %2")
                              .arg(endpointName, outcome.errorString)
                              .toStdString());
    return spec::success();
}

spec::Status deleteKey(const QString& endpointName) {
    auto* job = new QKeychain::DeletePasswordJob(kService);
    job->setKey(endpointName);
    const JobOutcome outcome = runJob(job);
    if (!outcome.finished || (outcome.error != QKeychain::NoError && outcome.error != QKeychain::EntryNotFound))
        return spec::fail(QStringLiteral("could not remove the key of endpoint \"%1\" from the system keyring: %2")
                              .arg(endpointName, outcome.errorString)
                              .toStdString());
    return spec::success();
}

QString redactSecrets(QString text, const QStringList& secrets) {
    for (const QString& secret : secrets)
        if (!secret.isEmpty())
            text.replace(secret, QStringLiteral("[redacted]"));
    return text;
}

} // namespace kforge::llm
