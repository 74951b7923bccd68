#pragma once
// Model names as the price and parameter tables match them: a dated or suffixed name
// ("claude-sonnet-4-5-20250929", "gpt-4o-mini-2024-07-18") belongs to its family's entry.

#include "expected.h"
#include "util/jsonreader.h"

#include <QFileInfo>
#include <QString>

namespace kforge::llm {

// The entry of `table` (a map keyed by model name) for `model`: its exact name, else the longest
// key that is a prefix of `model` ending where a name part ends, so "gpt-4o" never finds "gpt-4".
// nullptr when there is none.
template <class Map> const typename Map::mapped_type* findModelEntry(const Map& table, const QString& model) {
    if (auto it = table.find(model); it != table.end())
        return &it->second;
    const typename Map::mapped_type* best = nullptr;
    qsizetype bestLength = 0;
    for (const auto& [key, value] : table) {
        if (key.size() <= bestLength || !model.startsWith(key))
            continue;
        if (model.at(key.size()).isLetterOrNumber())
            continue;
        best = &value;
        bestLength = key.size();
    }
    return best;
}

// A table of models (PriceTable, ModelTable) read from `path`, an object with "models"; `what`
// names it in errors ("model prices").
template <class Table> spec::Expected<Table> loadModelTableFile(const QString& path, const QString& what) {
    auto json = util::JsonReader::readObjectFile(path, what, QStringLiteral("an object with \"models\""));
    if (!json)
        return spec::Error{json.error()};
    return Table::fromJson(*json, path);
}

// `table` (the built-in one) with the user's file laid over it, entry by entry, when there is one.
template <class Table> spec::Expected<Table> withUserFile(spec::Expected<Table> table, const QString& userFile) {
    if (!table || userFile.isEmpty() || !QFileInfo::exists(userFile))
        return table;
    auto user = Table::load(userFile);
    if (!user)
        return user;
    table->merge(*user);
    return table;
}

} // namespace kforge::llm
