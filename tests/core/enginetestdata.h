#pragma once
// Where the engine tests find their task, experts and the fake worker.

#include <QDir>
#include <QString>

namespace kforge::test {

// tests/core/data/engine: the fake_scale task and a small expert library.
inline QString engineDataDir() {
    return QStringLiteral(KFORGE_ENGINE_TEST_DATA);
}

inline QString fakeWorkerPath() {
    return QDir(qEnvironmentVariable("KFORGE_WORKER_DIR")).filePath(QStringLiteral("kforge-worker-fake"));
}

} // namespace kforge::test
