#pragma once
// What a model costs: USD per million input and output tokens, per model name. The built-in table
// (resources/llm/prices.json) holds public list prices; the user's file overrides and extends it,
// so a changed price or a priced local model needs no rebuild. Local models are simply unknown:
// their cost stays unknown rather than pretending to be zero.

#include "expected.h"
#include "llm/llmtypes.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>

namespace kforge::llm {

struct Price {
    Price() = default;
    Price(double input, double output) : inputPerMillion(input), outputPerMillion(output) {}

    double inputPerMillion = 0.0;
    double outputPerMillion = 0.0;
    // Prompt tokens read from the API's prompt cache; unknown: the input price (no discount assumed).
    std::optional<double> cachedInputPerMillion;
    // Prompt tokens written to it (Anthropic); unknown: 1.25 times the input price, the Messages
    // API's five-minute cache write.
    std::optional<double> cacheWritePerMillion;
};

class PriceTable {
public:
    // resources/llm/prices.json, found through ResourceLocator.
    static spec::Expected<PriceTable> builtIn();
    // The built-in table merged with `userFile` when it exists (default userFile()).
    static spec::Expected<PriceTable> loadDefault(const QString& userFile = PriceTable::userFile());
    // Errors name the file and the key: "prices.json: models.gpt-4o.input: expected a number >= 0".
    static spec::Expected<PriceTable> load(const QString& path);
    static spec::Expected<PriceTable> fromJson(const QJsonObject& json, const QString& origin);
    // ~/.config/kforge/llm-prices.json (userconfig.h): where the user's file belongs.
    static QString userPath();
    // The user's file to read: userPath(), else the old ~/.config/kforge/kforge/ one (with a
    // warning); near misses are warned about. Empty when there is none.
    static QString userFile();

    // Entries of `other` replace those of the same model and add the others.
    void merge(const PriceTable& other);
    void set(const QString& model, Price price);
    QStringList models() const;
    bool isEmpty() const { return m_prices.empty(); }

    // Exact name, else the longest key that is a prefix of `model` ending at a word boundary, so
    // "claude-sonnet-4-5-20250929" finds "claude-sonnet-4-5" and "gpt-4o-mini-2024-07-18" finds
    // "gpt-4o-mini", while "gpt-4o" never finds "gpt-4".
    std::optional<Price> find(const QString& model) const;
    // Unknown when the usage is unknown or the model is not in the table. Cached and cache-written
    // prompt tokens are priced apart from the rest.
    std::optional<double> cost(const QString& model, const Usage& usage) const;

private:
    std::map<QString, Price> m_prices;
};

} // namespace kforge::llm
