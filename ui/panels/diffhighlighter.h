#pragma once
// Colours a unified diff in a plain text pane: added lines green, removed lines red, hunk headers
// blue. For read-only panes that show a stored diff; side-by-side comparison lives in ui/code.

#include <QPalette>
#include <QSyntaxHighlighter>

class QWidget;

namespace kforge::ui {

class DiffHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    // Colours for `view`'s palette, again whenever it changes; the application's without a view.
    explicit DiffHighlighter(QTextDocument* document, QWidget* view = nullptr);

protected:
    void highlightBlock(const QString& text) override;

private:
    QPalette palette() const;

    QWidget* m_view = nullptr;
};

} // namespace kforge::ui
