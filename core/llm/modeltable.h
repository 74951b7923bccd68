#pragma once
// What a model accepts in a request, per model family: OpenAI's reasoning models (o1, o3, o4-mini,
// gpt-5) refuse max_tokens and any temperature but their default; Anthropic's newer models can
// think before they answer. The built-in table (resources/llm/models.json) is overridden and
// extended, entry by entry, by the user's ~/.config/kforge/llm-models.json. A model in neither is
// sent max_tokens and the run's temperature, as chat models take them.

#include "expected.h"

#include <QJsonObject>
#include <QString>

#include <map>

namespace kforge::llm {

struct ModelParams {
    bool maxCompletionTokens = false; // send max_completion_tokens, not max_tokens (OpenAI reasoning models)
    bool temperature = true;          // false: only the model's default is accepted, so none is sent
    QString reasoningEffort;          // OpenAI reasoning models: minimal, low, medium, high; empty: the server's
    int thinkingBudget = 0;           // Anthropic extended thinking: tokens to think with; 0: off
};

class ModelTable {
public:
    // The built-in table merged with `userFile` when it exists (default userPath()).
    static spec::Expected<ModelTable> loadDefault(const QString& userFile = userPath());
    // Errors name the file and the key: "models.json: models.o3.maxTokensField: expected ...".
    static spec::Expected<ModelTable> load(const QString& path);
    static spec::Expected<ModelTable> fromJson(const QJsonObject& json, const QString& origin);
    // ~/.config/kforge/llm-models.json where it exists (userConfigFileToRead: an older or
    // near-miss location is read or named in a warning); empty when there is none.
    static QString userPath();

    // Entries of `other` replace those of the same name.
    void merge(const ModelTable& other);
    // Exact name, else the longest entry that is a prefix of `model` ending where a name part ends
    // ("gpt-5-mini-2025-08-07" is "gpt-5-mini", "o3-mini" is never "o3"); defaults when none.
    ModelParams find(const QString& model) const;
    bool isEmpty() const { return m_models.empty(); }

private:
    std::map<QString, ModelParams> m_models;
};

} // namespace kforge::llm
