#include "experienceworker.h"

#include <QFileInfo>

namespace kforge::ui {

ExperienceWorker::ExperienceWorker(QObject* parent) : QObject(parent) {}

ExperienceWorker::~ExperienceWorker() = default;

void ExperienceWorker::load(qint64 request, const QString& path, const experience::Query& query) {
    if (m_library && m_library->path() != path)
        m_library.reset();
    if (!m_library) {
        // Opening creates the file; browsing must not leave an empty library behind.
        if (!QFileInfo::exists(path)) {
            emit missing(request, path);
            return;
        }
        auto opened = experience::ExperienceLibrary::open(path);
        if (!opened) {
            emit failed(request, QString::fromStdString(opened.error()));
            return;
        }
        m_library = std::move(*opened);
    }
    auto total = m_library->count();
    if (!total) {
        emit failed(request, QString::fromStdString(total.error()));
        m_library.reset(); // the next request opens it again, in case the file was replaced
        return;
    }
    auto insights = m_library->search(query, kLimit);
    if (!insights) {
        emit failed(request, QString::fromStdString(insights.error()));
        m_library.reset();
        return;
    }
    emit loaded(request, *insights, *total);
}

} // namespace kforge::ui
