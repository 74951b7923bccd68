#pragma once
// Where the engine tests find their task, experts and the fake worker, and an engine set-up using them.

#include "eval/workerpool.h"
#include "search/engine.h"

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

// An engine set-up for `config` on the fake worker, with the test experts and an experience library
// beside the store (never the user's own).
inline search::Engine::Setup fakeEngineSetup(const QString& store, const search::RunConfig& config) {
    search::Engine::Setup s;
    s.storePath = store;
    s.config = config;
    s.expertRoots = {engineDataDir() + QStringLiteral("/experts")};
    s.experiencePath = store + QStringLiteral(".experience");
    s.executorFactory = [](const search::RunConfig& c, QObject* parent) -> spec::Expected<eval::Executor*> {
        return static_cast<eval::Executor*>(
            new eval::WorkerPool(QStringLiteral("fake"), fakeWorkerPath(), {}, c.workers, parent));
    };
    return s;
}

} // namespace kforge::test
