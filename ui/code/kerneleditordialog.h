#pragma once
// Hand-editing a kernel into a new child candidate: the parent's source in an editable editor, an
// optional note on what changed, and a check of the kernel file (directives, launch plan, kernel
// signatures) before the dialog accepts, so that a broken file is fixed here rather than failing in
// the worker. The caller submits source() and note() to the engine.

#include "kernelfile.h"
#include "taskspec.h"

#include <optional>

#include <QDialog>

class QLabel;
class QLineEdit;
class QPushButton;
class QsciScintilla;

namespace kforge::ui {

class KernelEditorDialog : public QDialog {
    Q_OBJECT
public:
    KernelEditorDialog(qint64 parentId, const QString& source, spec::Dialect dialect, QWidget* parent = nullptr);

    qint64 parentId() const { return m_parentId; }
    QString source() const;
    QString note() const;
    QsciScintilla* editor() const { return m_editor; }
    QString errorText() const; // why the last submit() refused; empty after none did

    // The run's task at its sizes: submit() then also resolves the launch plan against it (every
    // kernel argument and launch expression names something the task has, parameters within
    // their choices), as the worker would before compiling. Without it only the file is parsed.
    void setTask(spec::TaskSpec task, spec::Sizes sizes);

public slots:
    // Checks the kernel file (and its launch plan against the task, when set) and accepts the
    // dialog if it passes and differs from the parent's.
    bool submit();

private:
    void showError(const QString& message, int line); // line 1-based, 0 for none

    qint64 m_parentId;
    QString m_original;
    spec::Dialect m_dialect;
    std::optional<spec::TaskSpec> m_task;
    spec::Sizes m_sizes;
    QsciScintilla* m_editor = nullptr;
    QLineEdit* m_note = nullptr;
    QLabel* m_error = nullptr;
    QPushButton* m_submitButton = nullptr;
};

} // namespace kforge::ui
