#include "llm/pricetable.h"

#include "llm/modelname.h"
#include "llm/userconfig.h"

#include "util/jsonreader.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonValue>
#include <QStandardPaths>

#include <algorithm>
#include <utility>

namespace kforge::llm {

namespace {
constexpr double kMaxUsdPerMillion = 1e6;
} // namespace

spec::Expected<PriceTable> PriceTable::builtIn() {
    const QString relative = QStringLiteral("llm/prices.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("model prices")).toStdString());
    return load(path);
}

spec::Expected<PriceTable> PriceTable::loadDefault(const QString& userFile) {
    return withUserFile(builtIn(), userFile);
}

spec::Expected<PriceTable> PriceTable::load(const QString& path) {
    return loadModelTableFile<PriceTable>(path, QStringLiteral("model prices"));
}

spec::Expected<PriceTable> PriceTable::fromJson(const QJsonObject& json, const QString& origin) {
    const util::JsonReader reader(origin, QStringLiteral("."));
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!it.key().startsWith(QLatin1Char('_')) && it.key() != QLatin1String("comment")
            && it.key() != QLatin1String("models"))
            return reader.error(QString(),
                                QStringLiteral("unknown key \"%1\" (expected models, _comment)").arg(it.key()));
    const QJsonValue models = json.value(QStringLiteral("models"));
    if (!models.isObject())
        return reader.error(QString(), QStringLiteral("missing \"models\": an object of model name -> "
                                                      "{\"input\": USD, \"output\": USD} per million tokens"));
    PriceTable table;
    const QJsonObject m = models.toObject();
    for (auto it = m.begin(); it != m.end(); ++it) {
        const QString path = QStringLiteral("models.") + it.key();
        if (it.key().trimmed().isEmpty())
            return reader.error(QStringLiteral("models"), QStringLiteral("a model name is empty"));
        if (!it.value().isObject())
            return reader.error(path, QStringLiteral("expected {\"input\": USD, \"output\": USD} per million tokens"));
        const QJsonObject entry = it.value().toObject();
        if (auto e = reader.checkKeys(entry, path,
                                      {QStringLiteral("input"), QStringLiteral("output"), QStringLiteral("cachedInput"),
                                       QStringLiteral("cacheWrite")}))
            return *e;
        Price price;
        const std::pair<QString, double*> required[] = {{QStringLiteral("input"), &price.inputPerMillion},
                                                        {QStringLiteral("output"), &price.outputPerMillion}};
        const std::pair<QString, std::optional<double>*> optional[] = {
            {QStringLiteral("cachedInput"), &price.cachedInputPerMillion},
            {QStringLiteral("cacheWrite"), &price.cacheWritePerMillion}};
        // No model costs a million dollars per million tokens: a larger figure is a typo, and
        // would make every cost infinite.
        auto read = [&](const QString& key) -> spec::Expected<double> {
            const QJsonValue v = entry.value(key);
            if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() > kMaxUsdPerMillion)
                return reader.error(reader.keyPath(path, key),
                                    QStringLiteral("expected a number from 0 to %1 (USD per million tokens)")
                                        .arg(kMaxUsdPerMillion, 0, 'f', 0));
            return v.toDouble();
        };
        for (const auto& [key, out] : required) {
            auto v = read(key);
            if (!v)
                return spec::Error{v.error()};
            *out = *v;
        }
        for (const auto& [key, out] : optional) {
            if (!entry.contains(key))
                continue;
            auto v = read(key);
            if (!v)
                return spec::Error{v.error()};
            *out = *v;
        }
        table.set(it.key().trimmed(), price);
    }
    return table;
}

QString PriceTable::userPath() {
    const QString dir = userConfigDir();
    return dir.isEmpty() ? QString() : QDir(dir).filePath(QStringLiteral("llm-prices.json"));
}

QString PriceTable::userFile() {
    return userConfigFileToRead(QStringLiteral("llm-prices.json"), QStringLiteral("LLM prices"));
}

void PriceTable::merge(const PriceTable& other) {
    for (const auto& [model, price] : other.m_prices)
        m_prices[model] = price;
}

void PriceTable::set(const QString& model, Price price) {
    m_prices[model] = price;
}

QStringList PriceTable::models() const {
    QStringList out;
    for (const auto& entry : m_prices)
        out << entry.first;
    return out;
}

std::optional<Price> PriceTable::find(const QString& model) const {
    if (const Price* p = findModelEntry(m_prices, model))
        return *p;
    return std::nullopt;
}

std::optional<double> PriceTable::cost(const QString& model, const Usage& usage) const {
    if (!usage.known())
        return std::nullopt;
    const auto price = find(model);
    if (!price)
        return std::nullopt;
    // The cached parts are within the prompt's count; a server that says otherwise is held to it.
    const double input = static_cast<double>(*usage.inputTokens);
    const double cached = std::min(static_cast<double>(usage.cachedInputTokens.value_or(0)), input);
    const double written = std::min(static_cast<double>(usage.cacheWriteTokens.value_or(0)), input - cached);
    const double fresh = input - cached - written;
    return (fresh * price->inputPerMillion + cached * price->cachedInputPerMillion.value_or(price->inputPerMillion)
            + written * price->cacheWritePerMillion.value_or(1.25 * price->inputPerMillion)
            + static_cast<double>(*usage.outputTokens) * price->outputPerMillion)
           / 1e6;
}

} // namespace kforge::llm
