#pragma once
// A one-line label that gives up width instead of forcing it on the window: while its text fits it
// shows it whole (rich text keeps its markup); when it does not, it shows as much as fits, ending
// in "…", with the whole text as its tooltip. Long names and summaries in headers and status bars
// then never make the window wider than the screen.

#include <QLabel>

namespace kforge::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);

    // QLabel::setText() is not virtual: the text goes through here. Qt::AutoText takes markup
    // for rich text when the text looks like it.
    void setFullText(const QString& text, Qt::TextFormat format = Qt::AutoText);
    QString fullText() const { return m_text; }
    // The whole text as plain text (what a tooltip or a test reads).
    QString plainText() const { return m_plain; }
    bool isElided() const { return m_elided; }
    // The tooltip while the text fits; when it is cut, the whole text comes first.
    void setHint(const QString& hint);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void fit();

    QString m_text;
    QString m_plain;
    QString m_hint;
    Qt::TextFormat m_format = Qt::AutoText;
    QSize m_natural; // the size the whole text asks for
    bool m_elided = false;
};

} // namespace kforge::ui
