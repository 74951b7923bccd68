#pragma once
// Threads for the views' workers (the run reader, the engine, the experience library's queries)
// that the GUI never waits for: each deletes its worker and itself once it has finished. Only
// after the event loop has returned (the end of main(), a test's cleanup) does anything wait for
// them, so that none is cut off mid-write when the process exits.

#include <QString>

class QObject;
class QThread;

namespace kforge::ui {

// Moves `worker` (which must have no parent) to a new thread named `name` and starts it; quit()
// the thread to end it.
QThread* startWorkerThread(QObject* worker, const QString& name);

// Waits, at most `timeoutMs` in all, for every thread startWorkerThread() started to end. False
// when some did not.
bool joinWorkerThreads(int timeoutMs = 30000);

} // namespace kforge::ui
