#pragma once
// Two kernel sources side by side, before on the left and after on the right: removed lines marked
// on the left, added lines on the right, both editors scrolled together along the diff's alignment
// so that matching code stays level, and F8 / Shift+F8 to walk from change to change.

#include "kernelfile.h"

#include <QList>
#include <QWidget>

class QAction;
class QLabel;
class QsciScintilla;

namespace kforge::ui {

class ElidedLabel;

class SideBySideDiff : public QWidget {
    Q_OBJECT
public:
    explicit SideBySideDiff(QWidget* parent = nullptr);

    // `paramChanges` ("BLOCK 64 → 32"): how the two kernels' parameters differ, which the summary
    // names where the two texts are the same (a tuner's child and its parent).
    void setTexts(const QString& leftTitle, const QString& left, const QString& rightTitle, const QString& right,
                  spec::Dialect dialect, const QString& paramChanges = QString());
    void clear();

    QsciScintilla* leftEditor() const { return m_left; }
    QsciScintilla* rightEditor() const { return m_right; }
    int addedLines() const { return m_added; }
    int removedLines() const { return m_removed; }
    int changeCount() const { return static_cast<int>(m_changes.size()); }
    int currentChange() const { return m_change; } // -1 before the first step
    QString summary() const;                       // "+3 −2 lines   2 changes", "identical", ...
    QAction* nextChangeAction() const { return m_nextAction; }
    QAction* previousChangeAction() const { return m_previousAction; }

public slots:
    void nextChange();     // wraps around after the last
    void previousChange(); // wraps around before the first

private:
    // Where a run of removed and/or added lines starts on either side (0-based editor lines).
    struct Change {
        int left = 0;
        int right = 0;
        bool removes = false;
    };

    void scrolled(QsciScintilla* from, int updated);
    void follow(QsciScintilla* from);
    void goToChange(int index);
    void updateSummary();

    ElidedLabel* m_leftTitle = nullptr; // cut short rather than widening the window
    ElidedLabel* m_rightTitle = nullptr;
    QLabel* m_summary = nullptr;
    QsciScintilla* m_left = nullptr;
    QsciScintilla* m_right = nullptr;
    QAction* m_nextAction = nullptr;
    QAction* m_previousAction = nullptr;
    QList<int> m_leftToRight; // for each left line, the right line level with it
    QList<int> m_rightToLeft;
    QList<Change> m_changes;
    int m_change = -1;
    int m_added = 0;
    int m_removed = 0;
    QString m_paramChanges; // as setTexts() was given them
    // The first line each editor was moved to by follow(): its own scroll notification, which comes
    // later, must not move the other editor back (the alignment is not one-to-one inside changes).
    int m_leftExpected = -1;
    int m_rightExpected = -1;
};

} // namespace kforge::ui
