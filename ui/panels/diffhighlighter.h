#pragma once
// Colours a unified diff in a plain text pane: added lines green, removed lines red, hunk headers
// blue. For read-only panes that show a stored diff; side-by-side comparison lives in ui/code.

#include <QSyntaxHighlighter>

namespace kforge::ui {

class DiffHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit DiffHighlighter(QTextDocument* document);

protected:
    void highlightBlock(const QString& text) override;
};

} // namespace kforge::ui
