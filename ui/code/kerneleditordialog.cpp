#include "kerneleditordialog.h"

#include "editorfactory.h"
#include "launchplan.h"
#include "theme.h"

#include <Qsci/qsciscintilla.h>

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QShortcut>
#include <QVBoxLayout>

namespace kforge::ui {

namespace {

// The source line a message names by `pattern` (its first group), or 0.
int lineNamed(const QString& message, const QRegularExpression& pattern) {
    const QRegularExpressionMatch match = pattern.match(message);
    return match.hasMatch() ? match.captured(1).toInt() : 0;
}

// Text compared for "unchanged": line endings and trailing blanks of the file do not count.
QString normalized(QString text) {
    text.replace(QLatin1String("\r\n"), QLatin1String("\n"));
    while (!text.isEmpty() && text.back().isSpace())
        text.chop(1);
    return text;
}

} // namespace

KernelEditorDialog::KernelEditorDialog(qint64 parentId, const QString& source, spec::Dialect dialect, QWidget* parent)
    : QDialog(parent), m_parentId(parentId), m_original(source), m_dialect(dialect) {
    setWindowTitle(tr("New Child of Kernel %1").arg(parentId));

    auto* intro =
        new QLabel(tr("Edit kernel %1 (%2). The result is evaluated as a new candidate whose parent is %1.")
                       .arg(parentId)
                       .arg(dialect == spec::Dialect::Cuda ? QStringLiteral("CUDA") : QStringLiteral("OpenCL C")),
                   this);
    intro->setWordWrap(true);

    m_editor = makeEditor(this, dialect, false);
    setEditorText(m_editor, source);

    m_note = new QLineEdit(this);
    m_note->setPlaceholderText(tr("optional, e.g. \u201cfloat4 loads of A\u201d"));
    m_note->setClearButtonEnabled(true);
    auto* form = new QFormLayout;
    form->addRow(tr("What did you change?"), m_note);

    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setTextFormat(Qt::PlainText);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const auto styleError = [this] {
        m_error->setStyleSheet(theme::isDark(palette())
                                   ? QStringLiteral("QLabel { color: #ffdcd7; background: #5a1e22; padding: 4px; }")
                                   : QStringLiteral("QLabel { color: #b3261e; background: #fde7e4; padding: 4px; }"));
    };
    styleError();
    theme::onPaletteChange(this, styleError);
    m_error->hide();

    auto* buttons = new QDialogButtonBox(this);
    m_submitButton = buttons->addButton(tr("Submit as New Child"), QDialogButtonBox::AcceptRole);
    m_submitButton->setToolTip(tr("Check the kernel file and submit it (Ctrl+Return)"));
    m_submitButton->setDefault(false); // Return belongs to the editor
    m_submitButton->setAutoDefault(false);
    buttons->addButton(QDialogButtonBox::Cancel);
    // The button box would accept on its own; acceptance goes through submit()'s checks instead.
    connect(m_submitButton, &QPushButton::clicked, this, &KernelEditorDialog::submit);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* shortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
    connect(shortcut, &QShortcut::activated, this, &KernelEditorDialog::submit);
    auto* enterShortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Enter), this);
    connect(enterShortcut, &QShortcut::activated, this, &KernelEditorDialog::submit);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(m_editor, 1);
    layout->addWidget(m_error);
    layout->addLayout(form);
    layout->addWidget(buttons);
    resize(900, 700);
    m_editor->setFocus();
}

QString KernelEditorDialog::source() const {
    return m_editor->text();
}

QString KernelEditorDialog::note() const {
    return m_note->text().trimmed();
}

QString KernelEditorDialog::errorText() const {
    return m_error->isHidden() ? QString() : m_error->text();
}

void KernelEditorDialog::setTask(spec::TaskSpec task, spec::Sizes sizes) {
    m_task = std::move(task);
    m_sizes = std::move(sizes);
}

bool KernelEditorDialog::submit() {
    clearMarks(m_editor);
    const QString text = source();
    if (normalized(text) == normalized(m_original)) {
        showError(
            tr("The source is the same as kernel %1's: change it before submitting it as a new child.").arg(m_parentId),
            0);
        return false;
    }
    const auto parsed = spec::KernelFile::parse(text.toStdString(), m_dialect);
    if (!parsed) {
        const QString message = QString::fromStdString(parsed.error());
        static const QRegularExpression leading(QStringLiteral("^line (\\d+):"));
        showError(tr("The kernel file does not parse: %1").arg(message), lineNamed(message, leading));
        return false;
    }
    if (m_task) {
        // The device's own limits are the worker's to check; these only keep what no device
        // allows (the largest shared memory, block and grid of current GPUs) from passing here.
        const auto plan = spec::LaunchPlan::resolve(
            *parsed, *m_task, m_sizes, {}, spec::DeviceLimits::anyCurrentGpu(m_dialect == spec::Dialect::Cuda));
        if (!plan) {
            const QString message = QString::fromStdString(plan.error());
            static const QRegularExpression anywhere(QStringLiteral("line (\\d+)"));
            showError(tr("The kernel does not fit task %1: %2").arg(QString::fromStdString(m_task->name), message),
                      lineNamed(message, anywhere));
            return false;
        }
    }
    m_error->hide();
    accept();
    return true;
}

void KernelEditorDialog::showError(const QString& message, int line) {
    m_error->setText(message);
    m_error->show();
    if (line > 0 && line <= m_editor->lines()) {
        markLine(m_editor, line - 1, Marker::Error);
        markColumn(m_editor, line - 1, -1);
        m_editor->setCursorPosition(line - 1, 0);
        m_editor->ensureLineVisible(line - 1);
    }
    m_editor->setFocus();
}

} // namespace kforge::ui
