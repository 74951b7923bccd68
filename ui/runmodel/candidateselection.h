#pragma once
// The candidate the user is looking at, shared by every view of a run: clicking a heatmap cell, a
// table row, a roofline point or a lineage link selects it everywhere. Also the pair being compared
// side by side.

#include <QObject>

namespace kforge::ui {

class CandidateSelection : public QObject {
    Q_OBJECT
public:
    explicit CandidateSelection(QObject* parent = nullptr) : QObject(parent) {}

    qint64 current() const { return m_current; } // 0: none
    qint64 compareLeft() const { return m_left; }
    qint64 compareRight() const { return m_right; }

public slots:
    void select(qint64 candidate) {
        if (candidate == m_current)
            return;
        m_current = candidate;
        emit currentChanged(candidate);
    }
    // Shows two candidates side by side (left: before, right: after).
    void compare(qint64 left, qint64 right) {
        m_left = left;
        m_right = right;
        emit compareRequested(left, right);
    }
    void clear() {
        m_left = m_right = 0;
        select(0);
    }

signals:
    void currentChanged(qint64 candidate);
    void compareRequested(qint64 left, qint64 right);

private:
    qint64 m_current = 0;
    qint64 m_left = 0;
    qint64 m_right = 0;
};

} // namespace kforge::ui
