#include "util/logging.h"

Q_LOGGING_CATEGORY(lcWorker, "kforge.worker", QtInfoMsg)
Q_LOGGING_CATEGORY(lcTask, "kforge.task", QtInfoMsg)
Q_LOGGING_CATEGORY(lcApp, "kforge.app", QtInfoMsg)
Q_LOGGING_CATEGORY(lcSearch, "kforge.search", QtInfoMsg)
Q_LOGGING_CATEGORY(lcStore, "kforge.store", QtInfoMsg)
Q_LOGGING_CATEGORY(lcLlm, "kforge.llm", QtInfoMsg)
