#pragma once
// The prompt templates: text files under resources/llm/prompts (one per operator, plus partials)
// written in a small, strict template language, so that prompts can be read and changed without
// recompiling. The language:
//
//   {{name}}                 the value of `name`, inserted verbatim (never re-read as a template)
//   {{#name}}...{{/name}}    kept when the value of `name` is not blank
//   {{^name}}...{{/name}}    kept when the value of `name` is blank (empty or only whitespace)
//   {{>partial}}             another template of the same set (partial.md), rendered with the same values
//   {{! comment }}           dropped; notes for people who edit the template
//
// A line holding nothing but a section, partial or comment tag disappears with its line break, so
// templates can be laid out readably without leaving blank lines in the prompt. Strictness is the
// point: a misspelt variable would otherwise silently drop a part of every prompt, so an unknown
// variable, an unclosed or mismatched section and a missing partial are errors that name the file
// and line ("<dir>/mutate.md:12: unknown variable {{parnet}}").

#include "expected.h"

#include <QString>
#include <QStringList>

#include <map>
#include <memory>

namespace kforge::llm {

class PromptTemplates {
public:
    // Every *.md in `dir`; a template's name is its file name without ".md".
    static spec::Expected<PromptTemplates> load(const QString& dir);
    // Every *.md in each folder; a file in a later folder replaces one of the same name in an
    // earlier folder. Folders that do not exist are skipped, but the set must not end up empty.
    static spec::Expected<PromptTemplates> load(const QStringList& dirs);
    // The built-in templates (resources/llm/prompts, found by util::ResourceLocator), overridden
    // file by file from the user's <app data>/llm/prompts (ResourceLocator::userDir()).
    static spec::Expected<PromptTemplates> builtIn();
    // The user's folder that builtIn() reads overrides from.
    static QString userDir();

    PromptTemplates();
    ~PromptTemplates();
    PromptTemplates(const PromptTemplates&);
    PromptTemplates& operator=(const PromptTemplates&);
    PromptTemplates(PromptTemplates&&) noexcept;
    PromptTemplates& operator=(PromptTemplates&&) noexcept;

    // Renders template `name` (without ".md"). Every variable the template (or a partial it
    // includes) uses must be a key of `values`; sections test the value, so the caller passes an
    // empty string for what it does not have.
    spec::Expected<QString> render(const QString& name, const std::map<QString, QString>& values) const;
    // Renders `text` as a template of this set (it may include partials); errors name `origin`
    // as they would a file. For texts that are read elsewhere, such as the expert personas.
    spec::Expected<QString> renderText(const QString& origin, const QString& text,
                                       const std::map<QString, QString>& values) const;

    bool contains(const QString& name) const;
    QStringList names() const;                 // sorted
    QString fileOf(const QString& name) const; // the file a template was read from

    struct Data;

private:
    std::shared_ptr<const Data> m_data; // immutable once loaded, so copies share it
};

} // namespace kforge::llm
