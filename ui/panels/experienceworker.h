#pragma once
// Reads the experience library off the GUI thread: lives in the ExperienceBrowser's thread, opens
// the library file once per path and answers each request with the matching insights. A request
// for a file that does not exist is answered as missing rather than creating an empty library.

#include "experience/experiencelibrary.h"

#include <QList>
#include <QObject>
#include <QString>

#include <memory>

namespace kforge::ui {

class ExperienceWorker : public QObject {
    Q_OBJECT
public:
    explicit ExperienceWorker(QObject* parent = nullptr);
    ~ExperienceWorker() override;

    // At most this many insights per answer; `total` in the answer says how many there are.
    static constexpr int kLimit = 2000;

    // Called in the worker's thread (queued through QMetaObject::invokeMethod).
    void load(qint64 request, const QString& path, const kforge::experience::Query& query);

signals:
    void loaded(qint64 request, const QList<kforge::experience::Insight>& insights, int total);
    void missing(qint64 request, const QString& path);
    void failed(qint64 request, const QString& message);

private:
    std::unique_ptr<experience::ExperienceLibrary> m_library;
};

} // namespace kforge::ui
