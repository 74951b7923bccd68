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
    bool settled = false; // an asynchronous lookup has been answered (job or timeout, whichever came first)

    void record(QKeychain::Job* job) {
        finished = true;
        error = job->error();
        errorString = job->errorString();
        if (auto* read = qobject_cast<QKeychain::ReadPasswordJob*>(job))
            text = read->textData();
    }
    // What a job that has not finished by the timeout is said to have done.
    void timedOut() {
        if (!finished)
            errorString = QStringLiteral("the keyring did not answer within %1 s").arg(kKeyringTimeoutMs / 1000);
    }
};

// Runs a keychain job to its end or the timeout. The job deletes itself when it finishes, even
// after we stopped waiting; the loop is the context of our connection, so a late finish does not
// touch our stack.
JobOutcome runJob(QKeychain::Job* job) {
    JobOutcome outcome;
    QEventLoop loop;
    job->setAutoDelete(true);
    QObject::connect(job, &QKeychain::Job::finished, &loop, [&](QKeychain::Job* j) {
        outcome.record(j);
        loop.quit();
    });
    QTimer::singleShot(kKeyringTimeoutMs, &loop, &QEventLoop::quit);
    job->start();
    if (!outcome.finished)
        loop.exec(QEventLoop::ExcludeUserInputEvents);
    outcome.timedOut();
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

namespace {

bool needsNoKey(const Endpoint& endpoint) {
    return endpoint.keyEnv.isEmpty() && !endpoint.keyring;
}

QString keyFromEnvironment(const Endpoint& endpoint) {
    if (endpoint.keyEnv.isEmpty())
        return {};
    return qEnvironmentVariable(endpoint.keyEnv.toLocal8Bit().constData()).trimmed();
}

// A key goes into an HTTP header: one with a control character (a line break would start a header
// of its own) or a space is refused, saying where it came from and where the character is, never
// what the key is.
spec::Expected<QString> checkedKey(const Endpoint& endpoint, const QString& key, const QString& from) {
    for (qsizetype i = 0; i < key.size(); ++i) {
        const char16_t c = key.at(i).unicode();
        if (c > 0x20 && c < 0x7f)
            continue;
        const QString what = c == u'\r' || c == u'\n' ? QStringLiteral("a line break")
                             : c == u' '              ? QStringLiteral("a space")
                             : c < 0x20 || c == 0x7f  ? QStringLiteral("a control character")
                                                      : QStringLiteral("a character that is not printable ASCII");
        return spec::fail(QStringLiteral("the API key of endpoint \"%1\" in %2 holds %3 (character %4 of %5): it "
                                         "was refused and nothing was sent. Set the key again without it.")
                              .arg(endpoint.name, from, what)
                              .arg(i + 1)
                              .arg(key.size())
                              .toStdString());
    }
    return key;
}

QKeychain::ReadPasswordJob* readJob(const Endpoint& endpoint) {
    auto* job = new QKeychain::ReadPasswordJob(kService);
    job->setKey(endpoint.name);
    return job;
}

// The key once the environment had none: from the keyring's answer (null: not asked), or "" when
// the key is optional, or an error saying how to provide it.
spec::Expected<QString> keyAfterKeyring(const Endpoint& endpoint, const JobOutcome* keyring) {
    QString keyringProblem;
    if (keyring) {
        if (keyring->finished && keyring->error == QKeychain::NoError && !keyring->text.trimmed().isEmpty())
            return checkedKey(endpoint, keyring->text.trimmed(), QStringLiteral("the system keyring"));
        if (!keyring->finished || (keyring->error != QKeychain::NoError && keyring->error != QKeychain::EntryNotFound))
            keyringProblem = QStringLiteral(" (the system keyring could not be read: %1)").arg(keyring->errorString);
    }
    if (!endpoint.keyRequired)
        return QString();
    QString where;
    if (!endpoint.keyEnv.isEmpty() && endpoint.keyring)
        where = QStringLiteral("%1 is not set and the system keyring has no key for it%2")
                    .arg(endpoint.keyEnv, keyringProblem);
    else if (!endpoint.keyEnv.isEmpty())
        where = QStringLiteral("%1 is not set").arg(endpoint.keyEnv);
    else
        where = QStringLiteral("the system keyring has no key for it%1").arg(keyringProblem);
    return spec::fail(QStringLiteral("no API key for endpoint \"%1\": %2. Provide one with %3.")
                          .arg(endpoint.name, where, howToProvide(endpoint))
                          .toStdString());
}

} // namespace

std::optional<spec::Expected<QString>> resolveKeyAtOnce(const Endpoint& endpoint) {
    if (needsNoKey(endpoint))
        return QString();
    if (const QString fromEnv = keyFromEnvironment(endpoint); !fromEnv.isEmpty())
        return checkedKey(endpoint, fromEnv, endpoint.keyEnv);
    if (!endpoint.keyring)
        return keyAfterKeyring(endpoint, nullptr);
    return std::nullopt;
}

spec::Expected<QString> resolveKey(const Endpoint& endpoint) {
    if (auto key = resolveKeyAtOnce(endpoint))
        return *key;
    const JobOutcome outcome = runJob(readJob(endpoint));
    return keyAfterKeyring(endpoint, &outcome);
}

KeyLookup::KeyLookup(QList<Endpoint> endpoints, QObject* parent) : QObject(parent), m_endpoints(std::move(endpoints)) {}

void KeyLookup::start() {
    m_pending = 1; // released below, so finished() never comes from inside start()
    for (const Endpoint& endpoint : std::as_const(m_endpoints)) {
        if (auto key = resolveKeyAtOnce(endpoint)) {
            settle(endpoint, *key);
            continue;
        }
        ++m_pending;
        auto* job = readJob(endpoint);
        job->setAutoDelete(true);
        auto outcome = std::make_shared<JobOutcome>();
        auto* timer = new QTimer(this);
        timer->setSingleShot(true);
        const auto done = [this, endpoint, outcome, timer] {
            if (outcome->settled) // the job and the timeout may both arrive
                return;
            outcome->settled = true;
            timer->stop();
            timer->deleteLater();
            outcome->timedOut();
            settle(endpoint, keyAfterKeyring(endpoint, outcome.get()));
            release();
        };
        connect(job, &QKeychain::Job::finished, timer, [outcome, done](QKeychain::Job* j) {
            outcome->record(j);
            done();
        });
        connect(timer, &QTimer::timeout, this, done);
        timer->start(kKeyringTimeoutMs);
        job->start();
    }
    QMetaObject::invokeMethod(this, &KeyLookup::release, Qt::QueuedConnection);
}

void KeyLookup::settle(const Endpoint& endpoint, const spec::Expected<QString>& key) {
    if (key)
        m_keys.insert(endpoint.name, *key);
    else
        m_problems.insert(endpoint.name, QString::fromStdString(key.error()));
}

void KeyLookup::release() {
    if (--m_pending == 0)
        emit finished(m_keys, m_problems);
}

spec::Status storeKey(const QString& endpointName, const QString& key) {
    Endpoint named;
    named.name = endpointName;
    if (auto checked = checkedKey(named, key, QStringLiteral("the key given")); !checked)
        return spec::Error{checked.error()};
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
