#pragma once
// `kforge doctor`: which backends and devices this machine offers, and for whatever is missing,
// how to get it. Devices are probed by the workers; this process never touches a GPU driver, so for
// CUDA without a worker it reports only what the file system shows.

#include "model/kinds.h"
#include "protocol.h"

#include <QJsonObject>
#include <QObject>
#include <QPointer>

namespace kforge::eval {
class WorkerPool;
}

namespace kforge::doctor {

class Doctor : public QObject {
    Q_OBJECT
public:
    explicit Doctor(QObject* parent = nullptr);
    ~Doctor() override;

    // Probes every backend; emits finished() once all have answered or failed.
    void run();

    static QString formatText(const QJsonObject& report);

signals:
    void finished(const QJsonObject& report);

private:
    void probeBackend(model::Backend backend);
    void backendDone(const QString& backend, const QJsonObject& section);

    QJsonObject m_report;
    int m_pending = 0;
    QList<QPointer<eval::WorkerPool>> m_pools;
};

// File-system facts about the NVIDIA driver and CUDA toolkit (no driver calls).
QJsonObject cudaHostFacts();
// Where the built-in tasks and data are read from: {"tasks": [...], "resources": [...]}, the existing
// folders in the order searched (the first that has a file wins), and "user", the user's data folder.
QJsonObject dataFacts();

} // namespace kforge::doctor
