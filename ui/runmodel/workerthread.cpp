#include "workerthread.h"

#include <QDeadlineTimer>
#include <QList>
#include <QMutex>
#include <QThread>

namespace kforge::ui {

namespace {
QMutex g_mutex;
QList<QThread*> g_threads; // started and not yet ended
} // namespace

QThread* startWorkerThread(QObject* worker, const QString& name) {
    auto* thread = new QThread;
    thread->setObjectName(name);
    worker->moveToThread(thread);
    QObject::connect(thread, &QThread::finished, worker, &QObject::deleteLater);
    QObject::connect(
        thread, &QThread::finished, thread,
        [thread] {
            QMutexLocker lock(&g_mutex);
            g_threads.removeOne(thread);
        },
        Qt::DirectConnection);
    QObject::connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    {
        QMutexLocker lock(&g_mutex);
        g_threads.push_back(thread);
    }
    thread->start();
    return thread;
}

bool joinWorkerThreads(int timeoutMs) {
    const QDeadlineTimer deadline(timeoutMs);
    for (;;) {
        QThread* thread = nullptr;
        {
            QMutexLocker lock(&g_mutex);
            if (g_threads.isEmpty())
                return true;
            thread = g_threads.first();
        }
        // Still valid: its deleteLater needs the event loop this waits outside of.
        if (!thread->wait(deadline))
            return false;
        QMutexLocker lock(&g_mutex);
        g_threads.removeOne(thread);
    }
}

} // namespace kforge::ui
