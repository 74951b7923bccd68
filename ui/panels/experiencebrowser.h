#pragma once
// Browses the user's experience library: what kforge learned in earlier runs and from the user's
// pins, vetoes and edits. Searching and reading happen in a worker thread (SQLite never runs on
// the GUI thread); an answer to a superseded search is dropped. A kind filter narrows the answer
// without asking again; the detail pane shows an insight's summary and its diff.

#include "experience/experiencelibrary.h"

#include <QPointer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;
class QThread;
class QTimer;

namespace kforge::ui {

class ExperienceWorker;
class InsightModel;

class ExperienceBrowser : public QWidget {
    Q_OBJECT
public:
    explicit ExperienceBrowser(QWidget* parent = nullptr);
    ~ExperienceBrowser() override;

    QString libraryPath() const { return m_path; }
    // Another library file; reads it at once. Defaults to ExperienceLibrary::defaultPath(), read
    // when the browser is first shown.
    void setLibraryPath(const QString& path);

    InsightModel* model() const { return m_model; }
    QTableView* insightsView() const { return m_view; }
    QLineEdit* searchField() const { return m_search; }
    QComboBox* kindFilter() const { return m_kind; }
    QString shownDiff() const;

public slots:
    // Reads the library again with the current search words.
    void refresh();
    // Reads the library if the last read found none and the file exists now (a run has just
    // created it); cheap enough to call on every progress of a run.
    void refreshIfCreated();

signals:
    void loaded(int count); // an answer arrived and is shown: `count` insights before the kind filter
    void libraryMissing(const QString& path);
    void loadFailed(const QString& message);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void onLoaded(qint64 request, const QList<kforge::experience::Insight>& insights, int total);
    void onMissing(qint64 request, const QString& path);
    void onFailed(qint64 request, const QString& message);
    void updateKindFilter();
    void updateCount();
    void showInsight(const QModelIndex& proxyIndex);
    void showMessage(const QString& text);

    QString m_path;
    qint64 m_request = 0;     // the newest request; answers to older ones are stale
    bool m_requested = false; // anything asked yet (the first show asks)
    bool m_missing = false;   // the last answer: no library at m_path
    int m_total = 0;
    int m_received = 0;
    QPointer<QThread> m_thread;
    ExperienceWorker* m_worker = nullptr; // lives in m_thread

    InsightModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QLineEdit* m_search = nullptr;
    QTimer* m_searchDelay = nullptr;
    QComboBox* m_kind = nullptr;
    QLabel* m_count = nullptr;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_message = nullptr;
    QTableView* m_view = nullptr;
    QLabel* m_summary = nullptr;
    QPlainTextEdit* m_diff = nullptr;
};

} // namespace kforge::ui
