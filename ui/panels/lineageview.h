#pragma once
// Where the current candidate comes from and what came of it: its facts (origin, island,
// generation, parameters, result), its parents and children, and its ancestry back to a seed.
// Clicking a listed candidate, or moving onto it with the keyboard, selects it; "Compare with parent" opens the pair
// side by side through the shared selection (for a crossover, its menu offers each parent).

#include <QListView>
#include <QPointer>
#include <QWidget>

class QLabel;
class QModelIndex;
class QPushButton;

namespace kforge::ui {

class CandidateListModel;
class CandidateSelection;
class RunData;

// A list of candidates that says in its own area why it is empty ("None: a kernel from the expert
// library"), instead of showing a blank box.
class CandidateListView : public QListView {
public:
    using QListView::QListView;
    void setEmptyText(const QString& text);
    QString emptyText() const { return m_emptyText; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QString m_emptyText;
};

class LineageView : public QWidget {
    Q_OBJECT
public:
    LineageView(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    qint64 candidate() const { return m_candidate; }
    CandidateListModel* parentsModel() const { return m_parents; }
    CandidateListModel* childrenModel() const { return m_children; }
    CandidateListModel* ancestryModel() const { return m_ancestry; }
    CandidateListView* parentsView() const { return m_parentsView; }
    CandidateListView* childrenView() const { return m_childrenView; }
    CandidateListView* ancestryView() const { return m_ancestryView; }
    QPushButton* compareButton() const { return m_compare; }

private:
    void setCandidate(qint64 candidate);
    void updateFacts();
    void updateCompareButton();
    void updateEmptyTexts();
    void onCandidatesAdded(int first, int last);
    void onCandidatesChanged(const QList<int>& rows);
    void activate(const QModelIndex& index);
    void compareWithParent();
    QList<qint64> ancestryOf(qint64 candidate) const;

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    qint64 m_candidate = 0;
    bool m_known = false;      // the current candidate has arrived in RunData
    bool m_rebuilding = false; // the lists are being refilled: their current rows move, not the user

    QLabel* m_title = nullptr;
    QLabel* m_origin = nullptr;
    QLabel* m_place = nullptr;
    QLabel* m_params = nullptr;
    QLabel* m_result = nullptr;
    QLabel* m_flags = nullptr;
    QPushButton* m_compare = nullptr;
    CandidateListModel* m_parents = nullptr;
    CandidateListModel* m_children = nullptr;
    CandidateListModel* m_ancestry = nullptr;
    CandidateListView* m_parentsView = nullptr;
    CandidateListView* m_childrenView = nullptr;
    CandidateListView* m_ancestryView = nullptr;
    QLabel* m_ancestryTitle = nullptr;
};

} // namespace kforge::ui
