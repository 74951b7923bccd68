#pragma once
// A short list of a run's candidates — a candidate's parents, its children, its ancestry — each
// shown as one line ("#17 LLM · tiled 8x8 · 1.82×"). The rows are ids; what they show is read from
// RunData, so a candidate evaluated later updates in place.

#include <QAbstractListModel>
#include <QList>
#include <QPointer>

namespace kforge::ui {

class RunData;

class CandidateListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Role {
        CandidateRole = Qt::UserRole + 1, // qint64
    };

    explicit CandidateListModel(RunData* data, QObject* parent = nullptr);

    QList<qint64> candidates() const { return m_ids; }
    // Another list (another candidate's parents, say).
    void setCandidates(const QList<qint64>& ids);
    // More of the same list (a child born while the candidate is shown).
    void append(const QList<qint64>& ids);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

private:
    void onCandidatesChanged(const QList<int>& rows);

    QPointer<RunData> m_data;
    QList<qint64> m_ids;
};

} // namespace kforge::ui
